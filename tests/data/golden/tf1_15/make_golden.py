"""Makes this directory's reference outputs of TensorFlow 1.15 (see tests/data/README.md).

    python tests/data/golden/tf1_15/make_golden.py --tf115_python=PY37 [--project_python=PY]
        [--only=layer_cases,bilstm_crf,...,apis]   (or one script of apis.json: --only=queue_input)

PY37 runs TensorFlow 1.15.5, PY this project (default: the interpreter running this).
For tests/data/tf1_scripts/layer_cases: TF 1.15's outputs and gradients (layer_cases.npz).
For each script of runs.json:
  tf115_ckpt/       TF 1.15 trains it; its last checkpoint (index and data only)
  tf115_on_tf115/   TF 1.15 evaluates and predicts from tf115_ckpt: the outputs of runs.json
  ours_ckpt/        run_tf1.py trains it; its last checkpoint
  tf115_on_ours/    TF 1.15 evaluates and predicts from ours_ckpt
For each script of apis.json (the contrib APIs beyond BERT's: learn, lookup, predictor,
graph_editor, seq2seq; queue-based input_fns; every form of input_fn result and
serving receiver): TF 1.15 runs it with --output_dir; its
outputs of apis.json are copied into apis/<name>/ (a pattern such as export/* copies its
one match, a directory).
Keeps to Python 3.7 (it may be run by either interpreter).
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
SCRIPTS = os.path.join(REPO, "tests", "data", "tf1_scripts")


def load_runs():
    with open(os.path.join(HERE, "runs.json")) as f:
        return json.load(f)


def load_apis():
    with open(os.path.join(HERE, "apis.json")) as f:
        return json.load(f)


def command(python, run, name, output_dir, work, mode_flags, through_run_tf1):
    script = os.path.join(SCRIPTS, run["script"])
    values = {"script_dir": os.path.dirname(script), "work": work}
    flags = [flag.format(**values) for flag in run["flags"]]
    head = [python, os.path.join(REPO, "run_tf1.py")] if through_run_tf1 else [python]
    return head + [script, f"--{run['output_flag']}={output_dir}"] + flags + mode_flags


def run_logged(cmd, log):
    with open(log, "w") as out:
        code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    if code != 0:
        sys.exit(f"failed (see {log}): {' '.join(cmd)}")


def newest_checkpoint(directory):
    with open(os.path.join(directory, "checkpoint")) as f:
        return re.search(r'model_checkpoint_path: "(.*)"', f.read()).group(1)


def copy_checkpoint(source_dir, target_dir):
    """The newest checkpoint of source_dir (index and data) into target_dir, named there."""
    name = os.path.basename(newest_checkpoint(source_dir))
    if os.path.exists(target_dir):
        shutil.rmtree(target_dir)
    os.makedirs(target_dir)
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(os.path.join(source_dir, name + suffix), target_dir)
    with open(os.path.join(target_dir, "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "{name}"\n')


def evaluate_and_predict(python, run, name, checkpoint_dir, results_dir, work):
    scratch = os.path.join(work, "from_" + os.path.basename(checkpoint_dir))
    copy_checkpoint(checkpoint_dir, scratch)
    run_logged(
        command(python, run, name, scratch, work, ["--do_eval", "--do_predict"], False),
        scratch + ".log",
    )
    if os.path.exists(results_dir):
        shutil.rmtree(results_dir)
    os.makedirs(results_dir)
    for output in run["outputs"]:
        shutil.copy(os.path.join(scratch, output), results_dir)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tf115_python", required=True)
    parser.add_argument("--project_python", default=sys.executable)
    parser.add_argument(
        "--only",
        default=None,
        help="parts to remake, comma-separated: layer_cases, runs.json's, apis (or one of "
        "apis.json's)",
    )
    args = parser.parse_args()
    runs = load_runs()
    parts = args.only.split(",") if args.only else ["layer_cases", *sorted(runs), "apis"]
    work = tempfile.mkdtemp(prefix="tf1_15_golden_")
    if "layer_cases" in parts:
        run_logged(
            [
                args.tf115_python,
                os.path.join(SCRIPTS, "layer_cases", "run_layer_cases.py"),
                "--output_file=" + os.path.join(HERE, "layer_cases.npz"),
            ],
            os.path.join(work, "layer_cases.log"),
        )
    for name in sorted(set(parts) & set(runs)):
        remake_run(name, runs[name], args, work)
    apis = load_apis()
    for name in sorted(apis if "apis" in parts else set(parts) & set(apis)):
        remake_api_outputs(name, apis[name], args.tf115_python, work)
    print(f"logs in {work}")


def remake_run(name, run, args, work):
    target = os.path.join(HERE, name)
    for trainer, python, through in (
        ("tf115", args.tf115_python, False),
        ("ours", args.project_python, True),
    ):
        trained = os.path.join(work, name + "_" + trainer)
        run_logged(
            command(python, run, name, trained, work, ["--do_train"], through),
            trained + ".log",
        )
        copy_checkpoint(trained, os.path.join(target, trainer + "_ckpt"))
        evaluate_and_predict(
            args.tf115_python,
            run,
            name,
            os.path.join(target, trainer + "_ckpt"),
            os.path.join(target, "tf115_on_" + trainer),
            work,
        )


def remake_api_outputs(name, script, python, work):
    """TF 1.15 runs one script of apis.json; its outputs go to apis/<name>/."""
    output_dir = os.path.join(work, "apis_" + name)
    run_logged(
        [python, os.path.join(SCRIPTS, script["script"]), "--output_dir=" + output_dir]
        + script["flags"],
        output_dir + ".log",
    )
    target = os.path.join(HERE, "apis", name)
    if os.path.exists(target):
        shutil.rmtree(target)
    os.makedirs(target)
    for pattern, destination in sorted(script["outputs"].items()):
        (source,) = glob.glob(os.path.join(output_dir, pattern))
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(target, destination))
        else:
            shutil.copy(source, os.path.join(target, destination))


if __name__ == "__main__":
    main()
