"""Runs a corpus of public TF 1.x repositories on TensorFlow 1.15 and through run_tf1.py.

  .venv/bin/python benchmarks/tf1_corpus.py --clones=/path/to/clones \\
      --tf115_python=/tmp/venv37/bin/python --work_dir=/tmp/tf1_corpus [--only=a,b]

--clones holds one git clone per repository of benchmarks/tf1_corpus_lib/corpus.py
(and corpus_media.py: TF-Slim, vision, speech), in a folder named owner+name;
no code of theirs is in this project. Each repository's README pipeline runs
unchanged on both sides on tiny data of its own format (written by
benchmarks/tf1_corpus_lib/data.py or media_data.py), and the table
(repository, commit, pipeline steps, result, first ERROR line) is written to
--work_dir/table.md; every command and its output is in --work_dir/NAME/*.log.
The code lives in benchmarks/tf1_corpus_lib/ (see its __init__).
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from tf1_corpus_lib import (  # noqa: E402
    compare,
    corpus,
    corpus_libraries,
    corpus_media,
    corpus_vision,
    data,
    libraries_data,
    runner,
)

# The corpus, file by file.
REPOSITORIES = [
    *corpus.REPOSITORIES,
    *corpus_vision.REPOSITORIES,
    *corpus_libraries.REPOSITORIES,
    *corpus_media.REPOSITORIES,
]


def _commit(clone, commit=None):
    try:
        out = subprocess.run(
            ["git", "-C", clone, "log", "-1", "--format=%h %cs", commit or "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (subprocess.CalledProcessError, OSError):
        return "?"


def _last_training_step(steps):
    trained = [i for i, step in enumerate(steps) if step.trains]
    return trained[-1] if trained else -1


def _checkout(repo, clone, tree):
    """The repository's code in `tree` (under repo.checkout_as), its data beside it."""
    if os.path.exists(tree):
        shutil.rmtree(tree)
    runner.copy_clone(clone, os.path.join(tree, repo.checkout_as), repo.commit)
    repo.write_data(tree)


class _Sides:
    """The three copies of one repository and how a step runs in each (its output kept in
    work/<tree>.log): TF 1.x in "tf115", run_tf1.py in "run_tf1" and "cross"."""

    def __init__(self, repo, work, pythons):
        self.repo = repo
        self.work = work
        self.pythons = pythons
        self.trees = {side: os.path.join(work, side) for side in ("tf115", "run_tf1", "cross")}

    def run(self, step, tree):
        side = "tf115" if tree == "tf115" else "run_tf1"
        options = () if side == "tf115" else self.repo.run_tf1_options
        log = os.path.join(self.work, f"{tree}.log")
        return runner.run_step(step, side, self.trees[tree], self.pythons, log, options)


def run_repository(repo, clone, work, pythons):
    """(result, first ERROR line or detail, [comparison lines]) of one repository."""
    sides = _Sides(repo, work, pythons)
    trees = sides.trees
    for side in ("tf115", "run_tf1"):
        _checkout(repo, clone, trees[side])
    last_trained = _last_training_step(repo.steps)
    runs = {"tf115": [], "run_tf1": [], "cross": []}
    for index, step in enumerate(repo.steps):
        runs["tf115"].append(sides.run(step, "tf115"))
        if runs["tf115"][-1].returncode != step.exit_status:
            return _reference_failed(repo, sides, runs["tf115"][-1])
        if index == last_trained:
            runner.copy_clone(trees["tf115"], trees["cross"])
    if last_trained < 0:
        _checkout(repo, clone, trees["cross"])
    for tree, steps, result in (
        ("run_tf1", repo.steps, "ERROR"),
        ("cross", repo.steps[last_trained + 1 :], "ERROR (from TF 1.15's checkpoint)"),
    ):
        for step in steps:
            runs[tree].append(sides.run(step, tree))
            if runs[tree][-1].returncode != step.exit_status:
                return result, runner.first_error_line(runs[tree][-1].output), []
    return _compare(repo, trees, runs, last_trained)


def _reference_failed(repo, sides, failed):
    """The row of a repository whose pipeline TF 1.x itself could not run: its line, and
    the line run_tf1.py ends the same pipeline with."""
    line = runner.first_error_line(failed.output)
    for step in repo.steps:
        done = sides.run(step, "run_tf1")
        if done.returncode != step.exit_status:
            return (
                f"TF {repo.reference} failed: {line}",
                runner.first_error_line(done.output),
                [],
            )
    return f"TF {repo.reference} failed: {line}", "(run_tf1.py ran it)", []


def _compare(repo, trees, runs, last_trained):
    lines = []
    ok = True
    for index, step in enumerate(repo.steps):
        # After training, what a step writes (and names: Kyubyong's test file carries its
        # BLEU) depends on the weights: it is compared where they are TF 1.15's own.
        ours = (
            runs["run_tf1"][index]
            if index <= last_trained
            else runs["cross"][index - last_trained - 1]
        )
        missing = compare.missing_files(
            runs["tf115"][index].written,
            ours.written,
            any_step=step.interrupt_after is not None,
        )
        if missing:
            ok = False
            lines.append(
                f"step {index + 1}: run_tf1 wrote fewer files than TF 1.15: {missing[:5]}"
            )
        if step.trains:
            for name, result in compare.compare_checkpoints(
                trees["tf115"],
                runs["tf115"][index].written,
                trees["run_tf1"],
                runs["run_tf1"][index].written,
            ):
                ok &= result.ok
                lines.append(f"step {index + 1}: {name}: {result.detail}")
    for offset, step in enumerate(repo.steps[last_trained + 1 :]):
        index = last_trained + 1 + offset
        for pattern in step.compare:
            for name, result in compare.compare_files(trees["tf115"], trees["cross"], pattern):
                ok &= result.ok
                lines.append(f"step {index + 1}: {name}: {result.detail}")
        if step.printed:
            result = compare.compare_printed(
                runs["tf115"][index].output, runs["cross"][offset].output, step.printed
            )
            ok &= result.ok
            lines.append(f"step {index + 1}: printed {step.printed!r}: {result.detail}")
    return ("same" if ok else "differs"), "", lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clones", required=True, help="folder of owner+name clones")
    parser.add_argument("--tf115_python", required=True, help="Python 3.7 with tensorflow 1.15")
    parser.add_argument(
        "--tf113_python",
        default="",
        help="Python 3.7 with tensorflow 1.13, for the repositories TF 1.15 no longer ran",
    )
    parser.add_argument(
        "--run_tf1_python",
        default=sys.executable,
        help="the Python that runs run_tf1.py (this project's requirements plus what the "
        "repositories import beside TensorFlow, as the TF 1.15 side has it)",
    )
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--only", default="", help="comma-separated owner+name folders")
    args = parser.parse_args()
    # Started in the background (nohup, a job of a script), Python keeps SIGINT ignored,
    # and the steps would inherit that: those that train until Ctrl-C need it delivered.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    only = {name for name in args.only.split(",") if name}
    data.SENTENCEPIECE_PYTHON = args.tf115_python
    libraries_data.SIDE_PYTHONS.update(tf115=args.tf115_python, run_tf1=args.run_tf1_python)
    os.makedirs(args.work_dir, exist_ok=True)
    rows = []
    for repo in REPOSITORIES:
        if only and repo.folder not in only:
            continue
        clone = os.path.join(args.clones, repo.folder)
        if not os.path.isdir(clone):
            sys.exit(f"ERROR: --clones={args.clones}: no clone {repo.folder} of {repo.slug}")
        work = os.path.join(args.work_dir, repo.folder)
        os.makedirs(work, exist_ok=True)
        for log in ("tf115.log", "run_tf1.log", "cross.log"):
            if os.path.exists(os.path.join(work, log)):
                os.remove(os.path.join(work, log))
        print(f"== {repo.slug}", flush=True)
        reference = args.tf115_python if repo.reference == "1.15" else args.tf113_python
        if not reference:
            sys.exit(
                f"ERROR: {repo.slug} is compared with TF {repo.reference}: give --tf113_python"
            )
        pythons = {"tf115": reference, "run_tf1": args.run_tf1_python}
        try:
            result, error, details = run_repository(repo, clone, work, pythons)
        except Exception as e:  # the harness's own failure: the row says so, the rest runs
            result, error, details = "harness failed", f"{type(e).__name__}: {e}", []
        for line in details:
            print(f"   {line}", flush=True)
        print(f"   {result} {error}", flush=True)
        steps = "; ".join(step.script() for step in repo.steps)
        if repo.reference != "1.15":
            result += f" (against TF {repo.reference})"
        if repo.run_tf1_options:
            result += f" (run_tf1.py {' '.join(repo.run_tf1_options)})"
        rows.append((repo.slug, _commit(clone, repo.commit), repo.kind, steps, result, error))
    table = [
        "| repository | commit | kind | pipeline steps | result | first ERROR line |",
        "|---|---|---|---|---|---|",
    ]
    for slug, commit, kind, steps, result, error in rows:
        cells = [slug, commit, kind, f"`{steps}`", result, f"`{error}`" if error else ""]
        table.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    same = sum(1 for row in rows if row[4].startswith("same"))
    table.append("")
    table.append(f"{same} of {len(rows)} ran unchanged with TF 1.15's outputs.")
    with open(os.path.join(args.work_dir, "table.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    main()
