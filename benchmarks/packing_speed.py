"""Pre-training with --pack_sequences against unpacked and the original (TF 1.15), per instance.

For each corpus (short: documents of a few sentences, the paragraphs of
this Python's pydoc topics; long: demo_data/corpus and the licence texts
of /usr/share/common-licenses, whole) and each --seq_lengths, the records
are made once by create_pretraining_data.py (not timed) and cut to
--instances instances. Then, each a whole process, timed by wall and CPU
seconds (original_speed's TimedRunner):

  original   the 2018 run_pretraining.py under --original_python (skipped
             without it), batches of --batch_instances instances
  unpacked   ours, the same flags
  packed     ours with --pack_sequences, batches of rows holding about
             --batch_instances instances (the rows per batch are the
             batch divided by the instances per row the records pack to)

Every side trains the same instances once (the steps are the instances
divided by the batch; packed, the rows divided by the rows per batch) from
the same randomly initialised checkpoint, then evaluates every instance
once (packed, up to the end of its rows). The report gives instances
trained per wall second (from the log of ours: the instances its progress
counts; the original's: steps x batch), the ratios to the original and to
unpacked, and the four eval metrics of each side, over --seeds for ours
(--tf_random_seed; means over the seeds).

The issue's goals, on short documents: packed >= 2x the original per
instance at 128 and >= 3x at 512, packed metrics within 0.01 of unpacked
(means over three seeds); on long documents packing costs nothing.

    .venv/bin/python benchmarks/packing_speed.py --work_dir=/tmp/packing_speed \\
        --original_dir=/tmp/orig --original_python=/tmp/venv37/bin/python \\
        --seeds=1,2,3

    .venv/bin/python benchmarks/packing_speed.py --work_dir=/tmp/packing_quick --quick

(--quick: a 2-layer model, 64 instances at 64 and 128 tokens, one seed, to
check the machinery; its figures mean nothing. --records_only: the records
and their padding shares alone, no training: docs/pretraining.md's table.) See COMPATIBILITY.md for
setting up Python 3.7 with tensorflow 1.15.5 and the original's code.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import original_speed
from compat_check_lib.common import REPO, VOCAB
from compat_check_lib.launcher import BASE_ENV

SIZES = {"num_hidden_layers": 6, "hidden_size": 384, "num_attention_heads": 12}
SIZES["intermediate_size"] = 4 * SIZES["hidden_size"]
QUICK_SIZES = {
    "num_hidden_layers": 2,
    "hidden_size": 48,
    "num_attention_heads": 4,
    "intermediate_size": 96,
}
METRICS = ["masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss"]


def _sentences(text):
    text = " ".join(text.split())
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if len(s) > 1]


def write_corpus(kind, path):
    """Writes the short- or long-document corpus (a sentence a line, documents apart)."""
    documents = []
    if kind == "short":
        import pydoc_data.topics as topics

        for key in sorted(topics.topics):
            for paragraph in re.split(r"\n\s*\n", topics.topics[key]):
                if len(_sentences(paragraph)) >= 2:
                    documents.append(_sentences(paragraph))
    else:
        for name in sorted(glob.glob(os.path.join(REPO, "demo_data", "corpus", "*.txt"))):
            with open(name, encoding="utf-8") as f:
                documents.append(_sentences(f.read()))
        for name in sorted(glob.glob("/usr/share/common-licenses/*")):
            if os.path.isfile(name):
                with open(name, encoding="utf-8", errors="ignore") as f:
                    documents.append(_sentences(f.read()))
    with open(path, "w", encoding="utf-8") as f:
        for document in documents:
            f.write("\n".join(document) + "\n\n")


def _ours_python(code, *args):
    done = subprocess.run(
        [sys.executable, "-c", code, REPO, *args],
        env=dict(BASE_ENV, TF_CPP_MIN_LOG_LEVEL="3"),
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"ERROR: {done.stderr[-2000:]}")
    return done.stdout


# The first N records of a file into another, and what packing them gives.
_CUT_AND_COUNT = """
import sys, json
sys.path.insert(0, sys.argv[1])
import tensorflow as tf
from bert_lib.task_data import pretraining_packing
source, target, n, seq, predictions = sys.argv[2:7]
with tf.io.TFRecordWriter(target) as writer:
    for record in tf.data.TFRecordDataset(source).take(int(n)):
        writer.write(record.numpy())
print(json.dumps(pretraining_packing.padding_shares([target], int(seq), int(predictions),
      pretraining_packing.DEFAULT_MAX_INSTANCES_PER_ROW)))
"""


def make_records(run, corpus, seq, predictions, instances, work):
    """(records path, padding_shares) of `instances` instances of the corpus at `seq`."""
    full = os.path.join(work, f"{os.path.basename(corpus)}_{seq}_all.tfrecord")
    code = run.ours(
        "create_pretraining_data",
        [
            f"--input_file={corpus}",
            f"--output_file={full}",
            f"--vocab_file={VOCAB}",
            "--do_lower_case=True",
            f"--max_seq_length={seq}",
            f"--max_predictions_per_seq={predictions}",
            "--dupe_factor=10",
        ],
        f"create_{os.path.basename(corpus)}_{seq}.log",
    )
    if code:
        sys.exit(f"ERROR: create_pretraining_data failed; see {run.path(run.last['log'])}")
    records = full.replace("_all", "")
    shares = json.loads(
        _ours_python(_CUT_AND_COUNT, full, records, str(instances), str(seq), str(predictions))
    )
    if shares["instances"] < instances:
        sys.exit(
            f"ERROR: {corpus} gives {shares['instances']} instances at {seq}, not {instances}"
        )
    return records, shares


def _eval_results(out):
    path = os.path.join(out, "eval_results.txt")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return {k: float(v) for k, v in re.findall(r"(\w+) = (\S+)", f.read())}


def _instances_trained(log_path):
    """The last count of instances the progress lines of ours give, or None."""
    with open(log_path, encoding="utf-8", errors="replace") as f:
        counts = re.findall(r", ([\d,]+) examples,", f.read())
    return int(counts[-1].replace(",", "")) if counts else None


def run_case(run, args, config, checkpoint, records, shares, seq, predictions, label):
    """Runs every side on one record set; returns {side: result}."""
    batch = args.batch_instances
    per_row = shares["instances"] / shares["packed_rows"]
    rows_per_batch = max(1, round(batch / per_row))
    sides = {
        "unpacked": ([f"--train_batch_size={batch}", f"--eval_batch_size={batch}"], batch),
        "packed": (
            [
                "--pack_sequences=True",
                f"--train_batch_size={rows_per_batch}",
                f"--eval_batch_size={rows_per_batch}",
            ],
            rows_per_batch,
        ),
    }
    results = {}
    for side in ["original", "unpacked", "packed"]:
        if side not in args.sides or side == "original" and not args.original_python:
            continue
        seeds = [None] if side == "original" else args.seeds
        for seed in seeds:
            flags, side_batch = sides.get(side, sides["unpacked"])
            rows = shares["instances"] if side != "packed" else shares["packed_rows"]
            steps = max(1, rows // side_batch)
            out = run.path(f"{label}_{side}" + (f"_seed{seed}" if seed is not None else ""))
            shutil.rmtree(out, ignore_errors=True)
            common = [
                f"--input_file={records}",
                f"--output_dir={out}",
                f"--bert_config_file={config}",
                f"--init_checkpoint={checkpoint}",
                f"--max_seq_length={seq}",
                f"--max_predictions_per_seq={predictions}",
                "--do_train=True",
                "--do_eval=True",
                f"--num_train_steps={steps}",
                f"--num_warmup_steps={max(1, steps // 10)}",
                f"--max_eval_steps={steps if side != 'packed' else 10 * steps + 10}",
                "--learning_rate=1e-4",
                f"--save_checkpoints_steps={steps}",
                *flags,
            ]
            if seed is not None:
                common.append(f"--tf_random_seed={seed}")
            log = f"{os.path.basename(out)}.log"
            start = run.original if side == "original" else run.ours
            start("run_pretraining", common, log)
            timing = dict(run.last)
            trained = steps * side_batch if side != "packed" else _instances_trained(run.path(log))
            result = {
                "wall": timing["wall"],
                "cpu": timing["cpu"],
                "returncode": timing["returncode"],
                "steps": steps,
                "batch": side_batch,
                "instances_trained": trained,
                "instances_per_wall_second": (trained or 0) / timing["wall"],
                "eval": _eval_results(out),
                "log": log,
            }
            results.setdefault(side, []).append(result)
            print(
                f"  {label} {side} seed {seed}: {timing['wall']:.1f} s wall, "
                f"{timing['cpu']:.1f} CPU s, {trained} instances, status {timing['returncode']}",
                flush=True,
            )
    return results


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else float("nan")


def report(cases):
    """A markdown table of every case: instances/s per side, ratios, eval metric means."""
    lines = [
        "| corpus | length | padding unpacked / packed | side | instances/s (wall) | "
        "x original | x unpacked | " + " | ".join(METRICS) + " |",
        "|---" * (7 + len(METRICS)) + "|",
    ]
    for label, case in cases.items():
        shares, results = case["shares"], case["results"]
        rate = {
            side: _mean([r["instances_per_wall_second"] for r in runs])
            for side, runs in results.items()
        }
        for side, runs in results.items():
            if any(r["returncode"] != 0 for r in runs):
                lines.append(f"| {label} | | | {side} | failed: {runs[0]['log']} |")
                continue
            metrics = [_mean([(r["eval"] or {}).get(name) for r in runs]) for name in METRICS]
            versus = {
                base: f"{rate[side] / rate[base]:.2f}"
                if base in rate and side not in (base, "original")
                else ""
                for base in ("original", "unpacked")
            }
            lines.append(
                f"| {case['corpus']} | {case['seq']} | {shares['padding']:.0%} / "
                f"{shares['packed_padding']:.0%} | {side} | {rate[side]:.1f} | "
                f"{versus['original']} | {versus['unpacked']} | "
                + " | ".join(f"{m:.4f}" for m in metrics)
                + " |"
            )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--original_dir", help="the original's code (with --original_python)")
    parser.add_argument("--original_python", help="Python 3.7 with tensorflow 1.15")
    parser.add_argument("--seq_lengths", default="128,512")
    parser.add_argument("--corpora", default="short,long")
    parser.add_argument("--instances", type=int, default=2048)
    parser.add_argument("--batch_instances", type=int, default=32)
    parser.add_argument("--seeds", default="1")
    parser.add_argument(
        "--sides",
        default="original,unpacked,packed",
        help="which of the three runs to make (a long case can be split over processes)",
    )
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--records_only",
        action="store_true",
        help="make the records and print their padding shares, no training",
    )
    args = parser.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",")]
    args.sides = args.sides.split(",")
    sizes = dict(QUICK_SIZES if args.quick else SIZES)
    seq_lengths = [int(s) for s in args.seq_lengths.split(",")]
    if args.quick:
        seq_lengths, args.instances, args.batch_instances = [64, 128], 64, 8
    if args.original_python and not args.original_dir:
        sys.exit("ERROR: --original_python needs --original_dir")
    os.makedirs(args.work_dir, exist_ok=True)
    run = original_speed.TimedRunner(
        args.original_dir or REPO, args.original_python, args.work_dir
    )
    config = run.path("bert_config.json")
    with open(config, "w", encoding="utf-8") as f:
        json.dump(original_speed.bert_config(sizes), f, indent=2)
    checkpoint = run.path("init", "bert_model.ckpt")
    os.makedirs(os.path.dirname(checkpoint), exist_ok=True)
    _ours_python(original_speed._INIT_CHECKPOINT_CODE, config, checkpoint)

    cases = {}
    for corpus_kind in args.corpora.split(","):
        corpus = run.path(f"{corpus_kind}.txt")
        write_corpus(corpus_kind, corpus)
        for seq in seq_lengths:
            # The original's at 128 and 512; elsewhere 15% of the tokens, rounded up.
            predictions = {128: 20, 512: 80}.get(seq, -(-15 * seq // 100))
            records, shares = make_records(
                run, corpus, seq, predictions, args.instances, args.work_dir
            )
            label = f"{corpus_kind}{seq}"
            print(
                f"{label}: padding {shares['padding']:.1%} unpacked, "
                f"{shares['packed_padding']:.1%} packed ({shares['packed_rows']} rows)",
                flush=True,
            )
            if args.records_only:
                continue
            cases[label] = {
                "corpus": corpus_kind,
                "seq": seq,
                "shares": shares,
                "results": run_case(
                    run, args, config, checkpoint, records, shares, seq, predictions, label
                ),
            }
    if args.records_only:
        return
    with open(run.path("results.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, indent=2)
    print(report(cases))


if __name__ == "__main__":
    main()
