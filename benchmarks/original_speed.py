"""Times the original 2018 scripts (TensorFlow 1.15) and ours on the same jobs, one after another.

Both codes get the same data, the same randomly initialised checkpoint and
the same sizes; each job runs the original's script, then ours, each as a
fresh process whose wall time and CPU seconds (user + system, its own
children included) are measured. The original runs exactly as
benchmarks/compat_check.py runs it (see COMPATIBILITY.md for setting up
Python 3.7 with tensorflow 1.15.5 and the bert-tensorflow 1.0.4 wheel).

Jobs (--jobs, comma separated, default all):
  finetune  run_classifier --do_train --do_eval, one epoch, MRPC layout
  predict   run_classifier --do_eval --do_predict from the initial checkpoint
            with a classifier head added (as a fine-tuned one has)
  features  extract_features on single sentences, layers -1,-2,-3,-4 (fewer
            when the model has fewer)
  pretrain  run_pretraining --do_train --do_eval (steps and eval steps below)
            on records that our create_pretraining_data makes from the
            corpus beforehand (not timed)
With --train_only, finetune and pretrain train without evaluating (no
--do_eval): the training-only figure beside the one with evaluation. With
--predict_only, predict only predicts (no --do_eval): what a user who
serves a fine-tuned model from files runs.

Data: sentence pairs of natural length from demo_data/corpus/*.txt: the
first sentence is any line of a document, the second is the next line
(label 1) or a line drawn at random from the whole corpus (label 0), the
task being "is the second the next sentence", in the MRPC layout, so both
codes read it with --task_name=mrpc. extract_features gets the corpus lines.

Each line of the log files starts with the wall seconds since the process
started and the CPU seconds it had used by then, so where a run spends its
time can be read off them; the benchmark prints when the milestones both
codes log show up.

Example (the full benchmark, then a quick check of the machinery):
  .venv/bin/python benchmarks/original_speed.py --original_dir=/tmp/orig \\
      --original_python=/tmp/venv37/bin/python --work_dir=/tmp/original_speed
  .venv/bin/python benchmarks/original_speed.py --original_dir=/tmp/orig \\
      --original_python=/tmp/venv37/bin/python --work_dir=/tmp/os_quick --quick

Extra flags for one side: --ours_flags (every job of ours), --ours_<job>_flags
(one job), --original_flags, e.g. --ours_finetune_flags="--use_xla".
"""

import argparse
import glob
import json
import os
import random
import re
import resource
import shlex
import shutil
import subprocess
import sys
import time

from compat_check_lib.common import REPO, VOCAB
from compat_check_lib.fixtures import write_mrpc
from compat_check_lib.launcher import BASE_ENV, Runner, logged_command

JOBS = ["finetune", "predict", "features", "pretrain"]

# The speed targets: original wall time / ours, at least.
TARGETS = {"finetune": 2.0, "predict": 2.5, "features": 2.5, "pretrain": 1.5}

FULL = {
    "num_hidden_layers": 6,
    "hidden_size": 384,
    "num_attention_heads": 12,
    "intermediate_size": 1536,
    "max_seq_length": 128,
    "batch_size": 32,
    "train_examples": 512,
    "eval_examples": 256,
    "predict_examples": 256,
    "feature_sentences": 256,
    "pretrain_steps": 40,
    "pretrain_eval_steps": 10,
    "max_predictions_per_seq": 20,
}
QUICK = dict(
    FULL,
    num_hidden_layers=2,
    hidden_size=48,
    intermediate_size=96,
    max_seq_length=64,
    batch_size=8,
    train_examples=24,
    eval_examples=16,
    predict_examples=16,
    feature_sentences=16,
    pretrain_steps=2,
    pretrain_eval_steps=2,
    max_predictions_per_seq=10,
)

CORPUS = os.path.join(REPO, "demo_data", "corpus")

# Milestones both codes log (the 2018 scripts through tf.estimator, ours
# through the engine); the first line matching each pattern counts.
PHASES = [
    ("script logs", r"(run_classifier|run_pretraining|extract_features)\.py:\d+\]"),
    ("graph building", r"\*\*\* Features \*\*\*|Calling model_fn"),
    ("variables listed", r"\*\*\*\* Trainable Variables \*\*\*\*"),
    ("session ready", r"Done running local_init_op|Training from step"),
    ("step-0 checkpoint", r"Saving checkpoints for 0 "),
    ("training done", r"Loss for final step|Training done at step"),
    ("eval results", r"\*\*\*\*\* Eval results"),
    ("last line", None),
]


# ----------------------------------------------------------------------------
# Data


def read_documents(corpus_dir):
    """The corpus files' documents (blank-line separated), each a list of its lines."""
    documents = []
    for path in sorted(glob.glob(os.path.join(corpus_dir, "*.txt"))):
        current = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = " ".join(line.replace("\t", " ").split())
                if line:
                    current.append(line)
                elif current:
                    documents.append(current)
                    current = []
        if current:
            documents.append(current)
    return documents


def sentence_pairs(documents, count, rng):
    """`count` (label, first, second) rows: the next line of the document (1) or a random line (0).

    A random second sentence that happens to be the true next one is drawn again,
    so every label is right.
    """
    starts = [(d, i) for d, doc in enumerate(documents) for i in range(len(doc) - 1)]
    every = [line for doc in documents for line in doc]
    rows = []
    for _ in range(count):
        d, i = starts[rng.randrange(len(starts))]
        first, following = documents[d][i], documents[d][i + 1]
        if rng.random() < 0.5:
            rows.append(("1", first, following))
            continue
        second = following
        while second == following:
            second = every[rng.randrange(len(every))]
        rows.append(("0", first, second))
    return rows


def write_data(work_dir, sizes, seed=12345):
    """The MRPC-layout task and the extract_features input; returns their paths."""
    rng = random.Random(seed)
    documents = read_documents(CORPUS)
    glue = os.path.join(work_dir, "pairs")
    write_mrpc(
        glue,
        {
            "train": sentence_pairs(documents, sizes["train_examples"], rng),
            "dev": sentence_pairs(documents, sizes["eval_examples"], rng),
            "test": sentence_pairs(documents, sizes["predict_examples"], rng),
        },
    )
    lines = [line for doc in documents for line in doc]
    sentences = os.path.join(work_dir, "sentences.txt")
    with open(sentences, "w", encoding="utf-8") as f:
        for k in range(sizes["feature_sentences"]):
            f.write(lines[k % len(lines)] + "\n")
    return glue, sentences


def bert_config(sizes):
    return {
        "vocab_size": 30522,
        "hidden_size": sizes["hidden_size"],
        "num_hidden_layers": sizes["num_hidden_layers"],
        "num_attention_heads": sizes["num_attention_heads"],
        "intermediate_size": sizes["intermediate_size"],
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
    }


# Run by this project's interpreter: a randomly initialised encoder, saved
# under the variable names both codes restore; with a fourth argument, also a
# classifier head of that many labels under run_classifier's names, standing
# for a fine-tuned checkpoint (prediction alone refuses one without a head).
_INIT_CHECKPOINT_CODE = """
import sys
sys.path.insert(0, sys.argv[1])
import tensorflow as tf
import modeling
tf.compat.v1.disable_eager_execution()
tf.compat.v1.set_random_seed(12345)
config = modeling.BertConfig.from_json_file(sys.argv[2])
ids = tf.compat.v1.placeholder(tf.int32, [1, 8])
modeling.BertModel(config=config, is_training=False, input_ids=ids)
if len(sys.argv) > 4:
    labels = int(sys.argv[4])
    tf.compat.v1.get_variable(
        "output_weights", [labels, config.hidden_size],
        initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.02))
    tf.compat.v1.get_variable(
        "output_bias", [labels], initializer=tf.compat.v1.zeros_initializer())
with tf.compat.v1.Session() as session:
    session.run(tf.compat.v1.global_variables_initializer())
    tf.compat.v1.train.Saver().save(session, sys.argv[3])
"""


# ----------------------------------------------------------------------------
# Commands


def job_flags(job, sizes, paths, evaluate=True):
    """The flags both codes' script takes for a job (without output locations); without
    `evaluate`, finetune and pretrain only train and predict only predicts."""
    # prediction starts from a checkpoint with the classifier's head, as after fine-tuning
    checkpoint = paths["classifier_checkpoint" if job == "predict" else "checkpoint"]
    common = [
        f"--vocab_file={VOCAB}",
        "--do_lower_case=True",
        f"--bert_config_file={paths['config']}",
        f"--init_checkpoint={checkpoint}",
        f"--max_seq_length={sizes['max_seq_length']}",
    ]
    batch = sizes["batch_size"]
    layers = sizes["num_hidden_layers"]
    if job in ("finetune", "predict"):
        todo = ["--do_train=True"] if job == "finetune" else ["--do_predict=True"]
        if evaluate:
            todo.append("--do_eval=True")
        return [
            "run_classifier",
            [
                "--task_name=mrpc",
                f"--data_dir={paths['glue']}",
                *common,
                *todo,
                f"--train_batch_size={batch}",
                f"--eval_batch_size={batch}",
                f"--predict_batch_size={batch}",
                "--learning_rate=2e-5",
                "--num_train_epochs=1.0",
            ],
        ]
    if job == "features":
        return [
            "extract_features",
            [
                f"--input_file={paths['sentences']}",
                *common,
                "--layers=" + ",".join(str(-k) for k in range(1, min(4, layers) + 1)),
                f"--batch_size={batch}",
            ],
        ]
    if job == "pretrain":
        return [
            "run_pretraining",
            [
                f"--input_file={paths['records']}",
                *[f for f in common if not f.startswith(("--vocab", "--do_lower"))],
                f"--max_predictions_per_seq={sizes['max_predictions_per_seq']}",
                "--do_train=True",
                *(["--do_eval=True"] if evaluate else []),
                f"--train_batch_size={batch}",
                f"--eval_batch_size={batch}",
                f"--num_train_steps={sizes['pretrain_steps']}",
                f"--num_warmup_steps={max(1, sizes['pretrain_steps'] // 10)}",
                f"--max_eval_steps={sizes['pretrain_eval_steps']}",
                "--learning_rate=1e-4",
            ],
        ]
    raise ValueError(f"unknown job {job}")


def side_command(job, side, sizes, paths, extra, evaluate=True):
    """(script, flags) of one side: the job's flags, where it writes, then that side's extras."""
    script, flags = job_flags(job, sizes, paths, evaluate)
    out = os.path.join(paths["work"], f"{job}_{side}")
    if job == "features":
        flags = [*flags, f"--output_file={out}.jsonl"]
    else:
        flags = [*flags, f"--output_dir={out}"]
    return script, [*flags, *extra], out


def expected_outputs(job, out, evaluate=True):
    """Files a finished run of the job must have written (both codes write the same names)."""
    if job == "features":
        return [out + ".jsonl"]
    if not evaluate and job in ("finetune", "pretrain"):
        return [os.path.join(out, "checkpoint")]
    if job == "predict":
        predictions = [os.path.join(out, "test_results.tsv")]
        return [os.path.join(out, "eval_results.txt"), *predictions] if evaluate else predictions
    return [os.path.join(out, "eval_results.txt")]


# ----------------------------------------------------------------------------
# Running and timing


def process_cpu_seconds(pid):
    """User + system CPU seconds of a running process (all its threads) so far; -1 if unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return -1.0
    # Fields after the command name: state is 3rd in the full list, utime 14th, stime 15th.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class TimedRunner(Runner):
    """compat's Runner, with each log line stamped and each process's wall and CPU time kept.

    A log line starts with the wall seconds since the process started and the
    CPU seconds it had used when the line arrived (CPU is what to compare on
    a loaded machine).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.last = None

    def _run(self, cmd, env, cwd, log_name):
        env = dict(env, PYTHONUNBUFFERED="1")
        self.log.write(f"{logged_command(cmd, env, cwd)}  > {log_name}\n")
        self.log.flush()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        # Line-buffered, so a long run can be followed with tail -f.
        with open(self.path(log_name), "w", encoding="utf-8", buffering=1) as out:
            proc = subprocess.Popen(
                cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
            for raw in proc.stdout:
                text = raw.decode("utf-8", "replace")
                cpu_now = process_cpu_seconds(proc.pid)
                out.write(f"{time.perf_counter() - start:9.3f} {cpu_now:8.2f} {text}")
            returncode = proc.wait()
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        self.last = {"wall": wall, "cpu": cpu, "returncode": returncode, "log": log_name}
        return returncode


def prepare(run, sizes, paths):
    """Data, config, initial checkpoint and pretraining records (none of it timed)."""
    paths["glue"], paths["sentences"] = write_data(paths["work"], sizes)
    with open(paths["config"], "w", encoding="utf-8") as f:
        json.dump(bert_config(sizes), f, indent=2)
    for key, head in (("checkpoint", []), ("classifier_checkpoint", ["2"])):
        os.makedirs(os.path.dirname(paths[key]), exist_ok=True)
        code = run._run(
            [
                sys.executable,
                "-c",
                _INIT_CHECKPOINT_CODE,
                REPO,
                paths["config"],
                paths[key],
                *head,
            ],
            dict(BASE_ENV),
            paths["work"],
            f"{key}.log",
        )
        if code:
            sys.exit(f"ERROR: writing {paths[key]} failed; see {run.path(run.last['log'])}")
    code = run.ours(
        "create_pretraining_data",
        [
            f"--input_file={os.path.join(CORPUS, '*.txt')}",
            f"--output_file={paths['records']}",
            f"--vocab_file={VOCAB}",
            "--do_lower_case=True",
            f"--max_seq_length={sizes['max_seq_length']}",
            f"--max_predictions_per_seq={sizes['max_predictions_per_seq']}",
            "--dupe_factor=2",
        ],
        "create_pretraining_data.log",
    )
    if code:
        sys.exit(f"ERROR: create_pretraining_data failed; see {run.path(run.last['log'])}")


def run_job(run, job, sizes, paths, side_flags, evaluate=True):
    """Runs each side of a job once, in order; returns {side: timing}."""
    timings = {}
    for side, extra in side_flags.items():
        script, flags, out = side_command(job, side, sizes, paths, extra, evaluate)
        # A checkpoint left by an earlier run would make training a no-op.
        for stale in (out, out + ".jsonl"):
            if os.path.isdir(stale):
                shutil.rmtree(stale)
            elif os.path.exists(stale):
                os.remove(stale)
        start = run.original if side == "original" else run.ours
        load_before = os.getloadavg()[0]
        start(script, flags, f"{job}_{side}.log")
        timing = dict(run.last, load=(load_before, os.getloadavg()[0]))
        missing = [p for p in expected_outputs(job, out, evaluate) if not os.path.exists(p)]
        if timing["returncode"] == 0 and missing:
            timing["returncode"] = "no " + os.path.basename(missing[0])
        timings[side] = timing
        print(
            f"  {job} {side}: {timing['wall']:.1f} s wall, {timing['cpu']:.1f} CPU s, "
            f"load {load_before:.2f}, status {timing['returncode']}",
            flush=True,
        )
    return timings


# ----------------------------------------------------------------------------
# Reporting


def _ratio(a, b):
    return f"{a / b:.2f}x" if b > 0 else "-"


def results_table(results, judge_targets=True):
    """Markdown table: per job and side, wall and CPU seconds, and original / ours.

    The targets are for the full sizes only: with other sizes the last column
    says so instead of judging.
    """
    lines = [
        "| job | side | wall s | CPU s | load before-after | original / ours, wall"
        " | original / ours, CPU | target (wall) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for job, timings in results.items():
        original = timings.get("original")
        for side, t in timings.items():
            load = f"{t['load'][0]:.2f} - {t['load'][1]:.2f}"
            if t["returncode"] != 0:
                lines.append(
                    f"| {job} | {side} | failed ({t['returncode']}; {t['log']}) | | {load} | | | |"
                )
                continue
            wall_ratio = cpu_ratio = target = ""
            if side != "original" and original and original["returncode"] == 0:
                wall_ratio = _ratio(original["wall"], t["wall"])
                cpu_ratio = _ratio(original["cpu"], t["cpu"])
                met = original["wall"] >= TARGETS[job] * t["wall"]
                verdict = ("met" if met else "not met") if judge_targets else "not judged"
                target = f">= {TARGETS[job]}x: {verdict}"
            lines.append(
                f"| {job} | {side} | {t['wall']:.1f} | {t['cpu']:.1f} | {load} | "
                f"{wall_ratio} | {cpu_ratio} | {target} |"
            )
    return "\n".join(lines)


def log_phases(path):
    """(wall, CPU) seconds of the process when each milestone of PHASES first shows in a log."""
    found = {}
    last = None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            match = re.match(r"\s*(\d+\.\d+)\s+(-?\d+\.\d+) (.*)", line)
            if not match:
                continue
            seconds = (float(match.group(1)), float(match.group(2)))
            text = match.group(3)
            last = seconds
            for name, pattern in PHASES:
                if pattern and name not in found and re.search(pattern, text):
                    found[name] = seconds
    if last is not None:
        found["last line"] = last
    return found


def phases_table(work_dir, results):
    names = [name for name, _ in PHASES]
    lines = ["| run | " + " | ".join(names) + " | exit |", "|---" * (len(names) + 2) + "|"]
    for job, timings in results.items():
        for side, t in timings.items():
            found = log_phases(os.path.join(work_dir, t["log"]))
            cells = [
                f"{found[n][0]:.1f} ({found[n][1]:.1f})" if n in found else "-" for n in names
            ]
            end = f"{t['wall']:.1f} ({t['cpu']:.1f})"
            lines.append(f"| {job} {side} | " + " | ".join(cells) + f" | {end} |")
    return "\n".join(lines)


def parse_lscpu(text):
    """(model name, set of flags) from lscpu's output."""
    model, flags = "unknown", set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Model name":
            model = value.strip()
        elif key.strip() == "Flags":
            flags = set(value.split())
    return model, flags


SIMD_FLAGS = ["avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16"]


def has_bf16_hardware(flags):
    return "avx512_bf16" in flags or "amx_bf16" in flags


def machine_facts(lscpu_text):
    model, flags = parse_lscpu(lscpu_text)
    simd = ", ".join(f"{f} {'yes' if f in flags else 'no'}" for f in SIMD_FLAGS)
    return (
        f"CPU: {model}, {os.cpu_count()} logical CPUs; {simd}\n"
        f"All CPU flags: {' '.join(sorted(flags))}"
    )


# ----------------------------------------------------------------------------
# Command line


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="original_speed.py",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 2)[2],
    )
    parser.add_argument("--original_dir", required=True)
    parser.add_argument("--original_python", required=True)
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--jobs", default=",".join(JOBS))
    parser.add_argument("--quick", action="store_true", help="tiny model and sizes, to test")
    parser.add_argument(
        "--train_only", action="store_true", help="finetune and pretrain without --do_eval"
    )
    parser.add_argument("--predict_only", action="store_true", help="predict without --do_eval")
    for name, value in FULL.items():
        parser.add_argument(f"--{name}", type=int, default=None, help=f"default {value}")
    parser.add_argument("--original_flags", default="")
    parser.add_argument("--ours_flags", default="")
    for job in JOBS:
        parser.add_argument(f"--ours_{job}_flags", default="")
    parser.add_argument(
        "--bf16_rows",
        choices=["auto", "yes", "no"],
        default="auto",
        help="add ours with --precision=bf16 (auto: when lscpu lists avx512_bf16 or amx_bf16)",
    )
    args = parser.parse_args(argv)
    args.jobs = args.jobs.split(",")
    unknown = sorted(set(args.jobs) - set(JOBS))
    if unknown:
        parser.error(f"unknown jobs {unknown}; known: {JOBS}")
    base = QUICK if args.quick else FULL
    args.sizes = {k: v if getattr(args, k) is None else getattr(args, k) for k, v in base.items()}
    if args.sizes["hidden_size"] % args.sizes["num_attention_heads"]:
        parser.error("--hidden_size must be a multiple of --num_attention_heads")
    return args


def sides_for(args, job, bf16):
    """{side: extra flags} for a job, original first."""
    ours = shlex.split(args.ours_flags) + shlex.split(getattr(args, f"ours_{job}_flags"))
    sides = {"original": shlex.split(args.original_flags), "ours": ours}
    if bf16:
        sides["ours bf16"] = [*ours, "--precision=bf16"]
    return sides


def main(argv=None):
    args = parse_args(argv)
    work = os.path.abspath(args.work_dir)
    os.makedirs(work, exist_ok=True)
    run = TimedRunner(args.original_dir, args.original_python, work)
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    bf16 = args.bf16_rows == "yes" or (
        args.bf16_rows == "auto" and has_bf16_hardware(parse_lscpu(lscpu)[1])
    )
    paths = {
        "work": work,
        "config": os.path.join(work, "bert_config.json"),
        "checkpoint": os.path.join(work, "init", "bert_model.ckpt"),
        "classifier_checkpoint": os.path.join(work, "classifier", "model.ckpt"),
        "records": os.path.join(work, "pretraining.tfrecord"),
    }
    print(f"sizes: {json.dumps(args.sizes)}", flush=True)
    prepare(run, args.sizes, paths)
    results = {}
    for job in args.jobs:
        sides = sides_for(args, job, bf16)
        alone = args.predict_only if job == "predict" else args.train_only
        results[job] = run_job(run, job, args.sizes, paths, sides, not alone)
        with open(os.path.join(work, "results.json"), "w", encoding="utf-8") as f:
            json.dump({"sizes": args.sizes, "results": results}, f, indent=2)
    print()
    print(machine_facts(lscpu))
    if not bf16:
        print(
            "No bf16 rows (--bf16_rows=no)."
            if args.bf16_rows == "no"
            else "No avx512_bf16 / amx_bf16 on this CPU: no bf16 rows."
        )
    print(f"Load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    judge = args.sizes == FULL
    if not judge:
        print("Sizes differ from the targets' (6 layers, 384 wide, ...): targets not judged.")
    print(results_table(results, judge_targets=judge))
    print()
    print("Wall (CPU) seconds of each process when each milestone shows in its log:")
    print(phases_table(work, results))
    print(f"\nCommands in {run.path('commands.log')}; logs and results.json in {work}")
    failed = [job for job, t in results.items() for s in t.values() if s["returncode"] != 0]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
