"""Dev accuracy of fine-tuning with and without the real-text speed flags, per task and seed.

Fine-tunes a pretrained model (--model_dir: bert_config.json, vocab.txt and
bert_model.ckpt, e.g. a Hugging Face MiniLM converted with
`convert_checkpoint.py --direction=hf_to_tf`) on real-text tasks, once per
(task, seed, variant), and prints one line per run (dev metric, wall seconds,
training steps) and a table of means and worst seeds:

  tasks     corpus_pairs  does the second sentence follow the first
                          (demo_data/corpus, next line or a random line;
                          the kind of task that `original_speed.py` times)
            senses        sentence pairs: is the example of this sense
                          (benchmarks/real_text/senses, from WordNet)
            domains       single sentences, six unbalanced classes
                          (benchmarks/real_text/domains)
            names         named entities, run_ner.py, entity F1
                          (benchmarks/real_text/names)
            next_sentence_pairs  does the second sentence follow the first, on
                          Python's docstrings and IDLE's changelog, MRPC
                          layout (benchmarks/real_text/next_sentence_pairs;
                          6,400 training pairs: one epoch is 200 steps of 32)
  variants  full          no speed flag (full length)
            cut           --dynamic_padding
            grouped       --dynamic_padding --group_by_length

--served=onnxruntime:int8,... (classifier tasks) also exports each
fine-tuned model (--export_dir, with --export_format=onnx or onnx_int8) and
scores the dev set once more through predictor.Predictor for each
runtime:precision listed (onnxruntime:fp32, onnxruntime:int8,
openvino:fp32, openvino:bf16, openvino:int8) and through the SavedModel
itself (tensorflow:fp32, always), the same heads served as an online
service would serve them; the second table gives each served accuracy
and its difference from the SavedModel's.

A variant with "@old" (grouped@old) runs the scripts of the checkout
--old_repo instead of this one, to compare versions of the code. Every run
gets its own output directory under --work_dir and its log there; a run
whose results are there already is not run again. Accuracy does not depend
on the machine's load, so --parallel runs several at once; the wall and
CPU seconds of such runs are not speed figures (original_speed.py's are).

  .venv/bin/python benchmarks/grouping_accuracy.py --model_dir=/tmp/minilm_tf \\
      --work_dir=/tmp/grouping --tasks=corpus_pairs,domains,names --seeds=1,2,3 \\
      --variants=full,grouped
  .venv/bin/python benchmarks/grouping_accuracy.py --model_dir=/tmp/minilm_tf \\
      --work_dir=/tmp/int8 --tasks=domains,corpus_pairs --seeds=1,2,3 --variants=grouped \\
      --served=onnxruntime:fp32,onnxruntime:int8,openvino:bf16,openvino:int8
"""

import argparse
import concurrent.futures
import json
import os
import queue
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from original_speed import read_documents, sentence_pairs  # noqa: E402

REAL_TEXT = os.path.join(HERE, "real_text")
VARIANTS = {
    "full": [],
    "cut": ["--dynamic_padding=true"],
    "grouped": ["--dynamic_padding=true", "--group_by_length=true"],
}
# task: (script, metric key in eval_results.txt, data flags, max_seq_length); WordNet's
# texts are short (95% of the pairs within 30 word pieces), the corpus pairs not.
TASKS = {
    "corpus_pairs": (
        "run_classifier.py",
        "eval_accuracy",
        ["--task_name=custom", "--text_a_column=first", "--text_b_column=second"],
        128,
    ),
    "senses": (
        "run_classifier.py",
        "eval_accuracy",
        ["--task_name=custom", "--text_a_column=definition", "--text_b_column=example"],
        64,
    ),
    "domains": (
        "run_classifier.py",
        "eval_accuracy",
        ["--task_name=custom", "--text_a_column=definition"],
        64,
    ),
    "names": ("run_ner.py", "eval_f1", ["--tag_scheme=IOB2"], 64),
    "next_sentence_pairs": ("run_classifier.py", "eval_accuracy", ["--task_name=mrpc"], 128),
}


def write_corpus_pairs(data_dir, train_examples, dev_examples, seed=2026):
    """The next-sentence task of demo_data/corpus as custom TSV files (train, dev)."""
    os.makedirs(data_dir, exist_ok=True)
    documents = read_documents(os.path.join(REPO, "demo_data", "corpus"))
    rng = random.Random(seed)
    for name, count in (("train", train_examples), ("dev", dev_examples)):
        with open(os.path.join(data_dir, f"{name}.tsv"), "w", encoding="utf-8") as f:
            f.write("first\tsecond\tlabel\n")
            for label, first, second in sentence_pairs(documents, count, rng):
                f.write(f"{first}\t{second}\t{label}\n")


def task_data_dir(task, work_dir, args):
    if task == "corpus_pairs":
        data_dir = os.path.join(work_dir, "data", task)
        if not os.path.exists(os.path.join(data_dir, "dev.tsv")):
            write_corpus_pairs(data_dir, args.corpus_train_examples, args.corpus_dev_examples)
        return data_dir
    return os.path.join(REAL_TEXT, task)


def read_metric(path, key):
    with open(path) as f:
        for line in f:
            name, _, value = line.partition(" = ")
            if name.strip() == key:
                return float(value)
    raise KeyError(f"{key} not in {path}")


# --one_core_each: the cores not running a run now; each run takes one.
FREE_CORES = queue.Queue()


def run_one(task, seed, variant, precision, args):
    script, metric, data_flags, max_seq_length = TASKS[task]
    flag_set, _, which = variant.partition("@")
    repo = args.old_repo if which == "old" else REPO
    # fp32 runs keep the directory names of the runs before --precisions existed.
    in_precision = "" if precision == "fp32" else f"-{precision}"
    out = os.path.join(
        args.work_dir,
        "runs",
        f"{task}-{flag_set}{'-old' if which else ''}{in_precision}-seed{seed}",
    )
    result_path = os.path.join(out, "eval_results.txt")
    if os.path.exists(result_path) and os.path.exists(out + ".json"):
        with open(out + ".json") as f:
            return json.load(f)
    os.makedirs(out, exist_ok=True)
    model = args.model_dir
    command = [
        args.python,
        os.path.join(repo, script),
        "--do_train=true",
        "--do_eval=true",
        f"--data_dir={task_data_dir(task, args.work_dir, args)}",
        f"--vocab_file={model}/vocab.txt",
        f"--bert_config_file={model}/bert_config.json",
        f"--init_checkpoint={model}/bert_model.ckpt",
        "--do_lower_case=true",
        f"--max_seq_length={args.max_seq_length or max_seq_length}",
        f"--train_batch_size={args.batch_size}",
        f"--learning_rate={args.learning_rate}",
        f"--num_train_epochs={args.epochs}",
        f"--tf_random_seed={seed}",
        "--save_checkpoints_steps=100000",
        f"--output_dir={out}",
        f"--precision={precision}",
        *data_flags,
        *VARIANTS[flag_set],
    ]
    served = _served(args)
    if served:
        int8 = any(p == "int8" for _, p in served)
        command += [f"--export_dir={out}/export", f"--export_format=onnx{'_int8' * int8}"]
    start = time.time()
    core = FREE_CORES.get() if args.one_core_each else None
    try:
        with open(os.path.join(out, "log.txt"), "w") as log:
            child = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=out,
                preexec_fn=None if core is None else lambda: os.sched_setaffinity(0, {core}),
            )
            _, status, usage = os.wait4(child.pid, 0)
    finally:
        if core is not None:
            FREE_CORES.put(core)
    wall = time.time() - start
    cpu = usage.ru_utime + usage.ru_stime
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{task} {variant} seed {seed} failed: see {out}/log.txt")
    row = {
        "task": task,
        "variant": variant,
        "precision": precision,
        "seed": seed,
        "metric": metric,
        "value": read_metric(result_path, metric),
        "max_seq_length": args.max_seq_length or max_seq_length,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "repo": repo,
    }
    if served:
        row["served"] = score_exports(task, data_flags, f"{out}/export", served, args)
    with open(out + ".json", "w") as f:
        json.dump(row, f)
    return row


def _served(args):
    """[(runtime, precision)] of --served, the SavedModel's own (tensorflow, fp32) first."""
    served = [("tensorflow", "fp32")]
    for item in filter(None, (args.served or "").split(",")):
        runtime, _, precision = item.partition(":")
        served.append((runtime, precision or "fp32"))
    return served if len(served) > 1 else []


def score_exports(task, data_flags, export_dir, served, args):
    """{"runtime:precision": dev accuracy} of the export in `export_dir`, in a child
    process (this one imports no TensorFlow)."""
    command = score_command(task, data_flags, export_dir, served, args)
    log = os.path.join(os.path.dirname(export_dir), "served.txt")
    with open(log, "w") as f:
        code = subprocess.call(command, stdout=f, stderr=subprocess.STDOUT, cwd=REPO)
    with open(log) as f:
        lines = [line for line in f if line.startswith("SERVED ")]
    if code or not lines:
        raise RuntimeError(f"scoring {export_dir} failed: see {log}")
    return json.loads(lines[-1][len("SERVED ") :])


def dev_texts_and_labels(args):
    """The dev set as the training script read it (--score_task_name's processor, a custom
    task's columns): [text or (text_a, text_b)], [label]."""
    sys.path.insert(0, REPO)
    from bert_lib.task_data import classifier_tasks, custom_data

    if args.score_task_name == "custom":
        processor = custom_data.CustomProcessor(
            text_a_column=args.score_text_a_column, text_b_column=args.score_text_b_column
        )
    else:
        processor = classifier_tasks.get_processor(args.score_task_name)
    examples = processor.get_dev_examples(args.score_data)
    texts = [e.text_a if e.text_b is None else (e.text_a, e.text_b) for e in examples]
    return texts, [e.label for e in examples]


def score_command(task, data_flags, export_dir, served, args):
    """The child process's command line that scores an export of `task`."""
    return [
        args.python,
        os.path.abspath(__file__),
        "--model_dir=-",
        "--work_dir=-",
        f"--score_export={export_dir}",
        f"--score_data={task_data_dir(task, args.work_dir, args)}",
        "--score_served=" + ",".join(f"{r}:{p}" for r, p in served),
        *(
            f"--score_{flag[2:]}"
            for flag in data_flags
            if flag.startswith(("--text_", "--task_name="))
        ),
    ]


def score_child(args):
    """The dev set's accuracy through Predictor, for each runtime:precision given."""
    sys.path.insert(0, REPO)
    from bert_lib.export import predictor

    texts, gold = dev_texts_and_labels(args)
    scores = {}
    for item in args.score_served.split(","):
        runtime, precision = item.split(":")
        model = predictor.Predictor(
            args.score_export,
            runtime=runtime,
            precision=None if runtime == "tensorflow" else precision,
        )
        predicted = [record["label"] for record in model(texts)]
        scores[item] = sum(p == g for p, g in zip(predicted, gold)) / len(gold)
        print(item, scores[item], flush=True)
    print("SERVED " + json.dumps(scores), flush=True)


def served_table(rows):
    """Markdown: per task, variant and served runtime, each seed's dev accuracy and its
    difference from the SavedModel's (tensorflow:fp32) on the same fine-tuned head."""
    lines = [
        "| task | variant | served | per seed (difference from the SavedModel) | "
        "largest difference |",
        "|---|---|---|---|---|",
    ]
    rows = [r for r in rows if r.get("served")]
    for task, variant in sorted({(r["task"], r["variant"]) for r in rows}):
        mine = sorted(
            (r for r in rows if (r["task"], r["variant"]) == (task, variant)),
            key=lambda r: r["seed"],
        )
        for name in mine[0]["served"]:
            cells = []
            worst = 0.0
            for r in mine:
                value, base = r["served"][name], r["served"]["tensorflow:fp32"]
                cells.append(f"{r['seed']}: {value:.4f} ({value - base:+.4f})")
                worst = max(worst, abs(value - base))
            lines.append(f"| {task} | {variant} | {name} | {', '.join(cells)} | {worst:.4f} |")
    return "\n".join(lines)


def summary_table(rows):
    """Markdown: per task, precision and variant, the metric per seed, its mean, worst and time."""
    lines = [
        "| task | precision | variant | metric | per seed | mean | worst | median wall s "
        "| median CPU s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (task, precision, variant), mine in sorted(_groups(rows).items()):
        values = [r["value"] for r in mine]
        seeds = ", ".join(f"{r['seed']}: {r['value']:.3f}" for r in mine)
        lines.append(
            f"| {task} | {precision} | {variant} | {mine[0]['metric']} | {seeds} | "
            f"{statistics.mean(values):.3f} | {min(values):.3f} | "
            f"{statistics.median(r['wall_s'] for r in mine):.0f} | "
            f"{statistics.median(r.get('cpu_s', 0) for r in mine):.0f} |"
        )
    return "\n".join(lines)


def _groups(rows):
    """{(task, precision, variant): the rows of its seeds, by seed}."""
    groups = {}
    for row in sorted(rows, key=lambda r: r["seed"]):
        key = (row["task"], row.get("precision", "fp32"), row["variant"])
        groups.setdefault(key, []).append(row)
    return groups


# The goals a speed flag and a precision are held to: the flags' mean within
# 0.015 of full length's at the same precision and their worst seed within
# 0.03 of full length's worst; a precision's mean within 0.015 of fp32's.
MEAN_TOLERANCE = 0.015
WORST_TOLERANCE = 0.03


def _signed(difference):
    """+0.012 / -0.012, and +0.000 for a difference that rounds to nothing."""
    return f"{round(difference, 3) + 0.0:+.3f}"


def goal_lines(rows, reference_variant="full", reference_precision="fp32"):
    """One line per comparison the goals make, each ending in 'met' or 'NOT met'."""
    groups = _groups(rows)
    lines = []
    for (task, precision, variant), mine in sorted(groups.items()):
        values = [r["value"] for r in mine]
        full = groups.get((task, precision, reference_variant))
        if variant != reference_variant and full and len(full) == len(mine):
            full_values = [r["value"] for r in full]
            mean_gap = statistics.mean(full_values) - statistics.mean(values)
            worst_gap = min(full_values) - min(values)
            met = mean_gap <= MEAN_TOLERANCE and worst_gap <= WORST_TOLERANCE
            lines.append(
                f"{task} {precision} {variant} against {precision} {reference_variant}: mean "
                f"{_signed(-mean_gap)}, worst seed {_signed(-worst_gap)}: "
                f"{'met' if met else 'NOT met'}"
            )
        reference = groups.get((task, reference_precision, variant))
        if precision != reference_precision and reference and len(reference) == len(mine):
            gap = statistics.mean(r["value"] for r in reference) - statistics.mean(values)
            lines.append(
                f"{task} {precision} {variant} against {reference_precision} {variant}: mean "
                f"{_signed(-gap)}: {'met' if gap <= MEAN_TOLERANCE else 'NOT met'}"
            )
    return lines


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--tasks", default="corpus_pairs,senses,domains,names,next_sentence_pairs")
    parser.add_argument("--variants", default="full,grouped")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument(
        "--precisions", default="fp32", help="values of --precision: fp32, bf16, fp16"
    )
    parser.add_argument("--old_repo", help="the checkout the @old variants run")
    parser.add_argument("--parallel", type=int, default=1, help="runs at once")
    parser.add_argument(
        "--one_core_each",
        action="store_true",
        help="pin each run to a core of its own (TensorFlow then runs it single-threaded); "
        "--parallel at most the cores this process may use",
    )
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--max_seq_length", type=int, default=None, help="default: the task's")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--corpus_train_examples", type=int, default=3200)
    parser.add_argument("--corpus_dev_examples", type=int, default=800)
    parser.add_argument(
        "--served",
        default=None,
        help="runtime:precision list to score each export through (classifier tasks)",
    )
    for name in ("export", "data", "served", "task_name", "text_a_column", "text_b_column"):
        parser.add_argument(f"--score_{name}", default=None, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.score_export:
        score_child(args)
        return
    jobs = [
        (task, int(seed), variant, precision)
        for task in args.tasks.split(",")
        for precision in args.precisions.split(",")
        for seed in args.seeds.split(",")
        for variant in args.variants.split(",")
    ]
    if any(variant.endswith("@old") for _, _, variant, _ in jobs) and not args.old_repo:
        raise SystemExit("an @old variant needs --old_repo")
    if args.one_core_each:
        for core in sorted(os.sched_getaffinity(0))[: args.parallel]:
            FREE_CORES.put(core)
    print("load average before:", os.getloadavg(), flush=True)
    rows, failed = [], []
    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        futures = {pool.submit(run_one, *job, args): job for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            try:
                row = future.result()
            except RuntimeError as e:
                print(e, flush=True)
                failed.append(futures[future])
                continue
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("load average after:", os.getloadavg())
    if failed:
        print("failed:", failed)
    print(summary_table(rows))
    print("\n".join(goal_lines(rows)))
    if any(r.get("served") for r in rows):
        print()
        print(served_table(rows))


if __name__ == "__main__":
    main()
