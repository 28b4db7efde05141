"""Runs this project and the original 2018 BERT code side by side and compares outputs.

The original code is not part of this repository: point --original_dir at a
copy of it (either a directory holding the `bert` package, as the
bert-tensorflow wheel unpacks, or a flat checkout with modeling.py at the
top) and --original_python at an interpreter that can run it (for example
Python 3.7 with tensorflow==1.15.5). This project runs with the interpreter
that runs this script. Everything happens in --work_dir, with a tiny model
(2 layers, hidden 32) so that each check takes seconds on a CPU.

Checks (--checks, comma separated, default all):
  pretraining  train a few steps here, evaluate that checkpoint with both codes;
               train with the original, resume here (optimizer step re-derived
               from the two checkpoints), evaluate with both.
  classifier   MRPC-layout data: train here, eval + predict with both codes on
               the same checkpoint; compare eval_results.txt, test_results.tsv
               and the eval/predict TFRecords.
  tricky       classifier TFRecords for hard text (control characters, accents,
               CJK, emoji, very long words), cased and uncased, two lengths.
  squad        SQuAD v1.1 and v2.0: train features from both codes; predict with
               both on one checkpoint and compare the three JSON files.
  squad_post   the SQuAD features and write_predictions of both codes on
               synthetic logits (no model, so no float differences): files must
               be byte-identical.
  processors   the InputExamples and labels of the original's four tasks (cola,
               mnli, mrpc, xnli) read from files in the GLUE/XNLI layouts.
  features     extract_features JSON lines from both codes.
  lr_schedule  which learning rate the first train step of create_optimizer uses
               (global_step before or after its increment), 20 fresh sessions each.
  kernels      no BERT code: tf.nn.softmax of the same float32 inputs under both
               TensorFlows, to show how far the kernels alone differ.
  pretraining_data  create_pretraining_data on demo_data/corpus (six files)
               into two output files. (The bert-tensorflow 1.0.4 wheel's
               create_pretraining_data predates whole-word masking, so this
               check leaves it off; tests/data/golden pins that mode.)

Example:
  .venv/bin/python benchmarks/compat_check.py --original_dir=/tmp/orig \\
      --original_python=/tmp/venv37/bin/python --work_dir=/tmp/compat_run

This file also runs as a worker under either interpreter
(`--worker=squad_post`), so it stays Python 3.7 compatible and imports
TensorFlow only inside the worker.
"""

import argparse
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(REPO, "tests", "data", "vocab_uncased.txt")
GOLDEN = os.path.join(REPO, "tests", "data", "golden")

TINY_CONFIG = {
    "vocab_size": 30522,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 128,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}

RESULTS = []

# Importing TensorFlow 2 sets TF2_BEHAVIOR=1 (and more) in os.environ, which
# would switch a TensorFlow 1.15 child into v2 behaviour: children get this copy.
BASE_ENV = dict(os.environ)


# ----------------------------------------------------------------------------
# Running the two codes


class Runner:
    """Starts scripts of this project or of the original and logs each command."""

    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work_dir)
        orig = os.path.abspath(args.original_dir)
        if os.path.exists(os.path.join(orig, "bert", "run_classifier.py")):
            self.orig_package = True
        elif os.path.exists(os.path.join(orig, "run_classifier.py")):
            self.orig_package = False
        else:
            sys.exit(
                f"ERROR: --original_dir={orig} holds neither bert/run_classifier.py "
                "nor run_classifier.py"
            )
        self.orig_dir = orig
        self.log = open(os.path.join(self.work, "commands.log"), "a", encoding="utf-8")

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def _run(self, cmd, env, cwd, log_name):
        self.log.write(f"(cd {cwd} && {' '.join(cmd)})  > {log_name}\n")
        self.log.flush()
        with open(self.path(log_name), "w", encoding="utf-8") as out:
            proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        return proc.returncode

    def ours(self, script, flags, log_name):
        cmd = [sys.executable, os.path.join(REPO, script + ".py"), *flags]
        return self._run(cmd, dict(BASE_ENV), REPO, log_name)

    def original(self, script, flags, log_name):
        env = dict(BASE_ENV, PYTHONPATH=self.orig_dir)
        if self.orig_package:
            cmd = [self.args.original_python, "-m", "bert." + script, *flags]
        else:
            cmd = [self.args.original_python, os.path.join(self.orig_dir, script + ".py"), *flags]
        return self._run(cmd, env, self.work, log_name)

    def worker(self, python, impl, flags, log_name):
        env = dict(BASE_ENV)
        impl_dir = self.orig_dir if impl == "original" else REPO
        cmd = [
            python,
            os.path.abspath(__file__),
            f"--worker_impl={impl}",
            f"--worker_impl_dir={impl_dir}",
            *flags,
        ]
        return self._run(cmd, env, self.work, log_name)


def record(check, name, ok, detail):
    RESULTS.append((check, name, ok, detail))
    print(f"[{'SAME' if ok else 'DIFF'}] {check}: {name}: {detail}", flush=True)


def copy_checkpoint(prefix, directory):
    """Copies one checkpoint into a fresh directory whose `checkpoint` file names it."""
    if os.path.exists(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)
    base = os.path.basename(prefix)
    for name in os.listdir(os.path.dirname(prefix)):
        if name.startswith(base + "."):
            shutil.copy(os.path.join(os.path.dirname(prefix), name), directory)
    with open(os.path.join(directory, "checkpoint"), "w", encoding="utf-8") as f:
        f.write(f'model_checkpoint_path: "{base}"\nall_model_checkpoint_paths: "{base}"\n')


def newest_checkpoint(directory):
    """The checkpoint prefix a `checkpoint` file names; exits when there is none."""
    state = os.path.join(directory, "checkpoint")
    match = (
        re.search(r'^model_checkpoint_path: "(.*)"', read_text(state), re.M)
        if (os.path.exists(state))
        else None
    )
    if not match:
        sys.exit(f"ERROR: no checkpoint in {directory}; see the logs in it and next to it")
    return os.path.join(directory, match.group(1))


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ----------------------------------------------------------------------------
# Comparisons (TensorFlow of this project's interpreter)


def parse_records(path):
    """Returns a list of {feature: values} for the tf.train.Examples in a TFRecord file."""
    import tensorflow as tf

    out = []
    for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
        example = tf.train.Example.FromString(raw)
        row = {}
        for key, feature in example.features.feature.items():
            kind = feature.WhichOneof("kind")
            row[key] = list(getattr(feature, kind).value)
        out.append(row)
    return out


def compare_records(check, name, path_a, path_b):
    a, b = parse_records(path_a), parse_records(path_b)
    differing = sum(1 for x, y in zip(a, b) if x != y)
    ok = len(a) == len(b) and differing == 0
    if read_bytes(path_a) == read_bytes(path_b):
        how = "bytes identical"
    else:
        how = "bytes differ (feature map order of the protobuf runtime)"
    record(check, name, ok, f"{len(a)} vs {len(b)} records, {differing} differ in content; {how}")


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def compare_json_files(check, name, path_a, path_b, json_lines=False):
    """Byte comparison, else structure + the largest float difference."""
    text_a, text_b = read_text(path_a), read_text(path_b)
    if text_a == text_b:
        record(check, name, True, "byte-identical")
        return
    stats = {"shape": [], "other": [], "floats": 0, "max_abs": 0.0}

    def walk(x, y, where):
        if isinstance(x, dict):
            if list(x) != list(y):
                stats["shape"].append(where)
            for key in x:
                if key in y:
                    walk(x[key], y[key], where + "/" + key)
        elif isinstance(x, list):
            if len(x) != len(y):
                stats["shape"].append(where)
            for i, (u, v) in enumerate(zip(x, y)):
                walk(u, v, f"{where}[{i}]")
        elif isinstance(x, float) and isinstance(y, float):
            if x != y:
                stats["floats"] += 1
                stats["max_abs"] = max(stats["max_abs"], abs(x - y))
        elif x != y or type(x) is not type(y):
            stats["other"].append((where, x, y))

    if json_lines:
        docs_a = [json.loads(t) for t in text_a.splitlines()]
        docs_b = [json.loads(t) for t in text_b.splitlines()]
    else:
        docs_a, docs_b = [json.loads(text_a)], [json.loads(text_b)]
    walk(docs_a, docs_b, "")
    ok = not stats["shape"] and not stats["other"]
    record(
        check,
        name,
        ok,
        f"bytes differ; structure, keys, order and non-float values "
        f"{'identical' if ok else 'DIFFER ' + repr((stats['shape'] + stats['other'])[:3])}; "
        f"{stats['floats']} floats differ, max |diff| {stats['max_abs']:.3g}",
    )


def compare_lines_of_json(check, name, path_a, path_b):
    compare_json_files(check, name, path_a, path_b, json_lines=True)


def compare_key_value_file(check, name, path_a, path_b, extra_ok=()):
    """eval_results.txt: same "key = value" layout; values compared as numbers."""

    def parse(path):
        pairs = []
        for line in read_text(path).splitlines():
            m = re.fullmatch(r"(\S+) = (\S+)", line)
            pairs.append((m.group(1), m.group(2)) if m else (None, line))
        return pairs

    a = parse(path_a)
    b = [(k, v) for k, v in parse(path_b) if k not in extra_ok]
    if read_text(path_a) == read_text(path_b):
        record(check, name, True, "byte-identical")
        return
    keys_same = [k for k, _ in a] == [k for k, _ in b]
    diffs = []
    for (k, x), (_, y) in zip(a, b):
        if x != y:
            diffs.append(f"{k}: {x} vs {y}")
    record(
        check,
        name,
        keys_same,
        f"keys {'identical' if keys_same else 'DIFFER'}"
        f"{' (ours adds ' + ', '.join(extra_ok) + ')' if extra_ok else ''}; "
        f"values differing: {'; '.join(diffs) if diffs else 'none'}",
    )


# ----------------------------------------------------------------------------
# Checks


def check_pretraining(run):
    data = os.path.join(GOLDEN, "pretraining", "default.tfrecord")
    common = [
        f"--bert_config_file={run.path('bert_config.json')}",
        f"--input_file={data}",
        "--max_seq_length=128",
        "--max_predictions_per_seq=20",
        "--eval_batch_size=8",
        "--max_eval_steps=3",
    ]
    train = [
        "--do_train",
        "--train_batch_size=8",
        "--learning_rate=1e-3",
        "--save_checkpoints_steps=3",
    ]
    # Ours trains; both evaluate its checkpoint.
    run.ours(
        "run_pretraining",
        [
            *common,
            *train,
            "--do_eval",
            "--num_train_steps=6",
            "--num_warmup_steps=2",
            f"--output_dir={run.path('pt_ours')}",
        ],
        "pt_ours.log",
    )
    copy_checkpoint(run.path("pt_ours", "model.ckpt-6"), run.path("pt_ours_by_orig"))
    run.original(
        "run_pretraining",
        [*common, "--do_eval", f"--output_dir={run.path('pt_ours_by_orig')}"],
        "pt_ours_by_orig.log",
    )
    compare_key_value_file(
        "pretraining",
        "eval of our checkpoint (original vs ours)",
        run.path("pt_ours_by_orig", "eval_results.txt"),
        run.path("pt_ours", "eval_results.txt"),
    )
    # The original trains; ours evaluates its checkpoint and resumes from it.
    run.original(
        "run_pretraining",
        [
            *common,
            *train,
            "--do_eval",
            "--num_train_steps=6",
            "--num_warmup_steps=2",
            f"--output_dir={run.path('pt_orig')}",
        ],
        "pt_orig.log",
    )
    copy_checkpoint(run.path("pt_orig", "model.ckpt-6"), run.path("pt_orig_by_ours"))
    run.ours(
        "run_pretraining",
        [*common, "--do_eval", f"--output_dir={run.path('pt_orig_by_ours')}"],
        "pt_orig_by_ours.log",
    )
    compare_key_value_file(
        "pretraining",
        "eval of the original's checkpoint (original vs ours)",
        run.path("pt_orig", "eval_results.txt"),
        run.path("pt_orig_by_ours", "eval_results.txt"),
    )
    copy_checkpoint(run.path("pt_orig", "model.ckpt-3"), run.path("pt_resume"))
    run.ours(
        "run_pretraining",
        [
            *common,
            *train,
            "--do_eval",
            "--num_train_steps=4",
            "--num_warmup_steps=0",
            f"--output_dir={run.path('pt_resume')}",
        ],
        "pt_resume.log",
    )
    check_resumed_step(
        run.path("pt_resume", "model.ckpt-3"),
        run.path("pt_resume", "model.ckpt-4"),
        1e-3 * (1 - 3 / 4),
    )
    copy_checkpoint(run.path("pt_resume", "model.ckpt-4"), run.path("pt_resume_by_orig"))
    run.original(
        "run_pretraining",
        [*common, "--do_eval", f"--output_dir={run.path('pt_resume_by_orig')}"],
        "pt_resume_by_orig.log",
    )
    compare_key_value_file(
        "pretraining",
        "eval of the resumed checkpoint (original vs ours)",
        run.path("pt_resume_by_orig", "eval_results.txt"),
        run.path("pt_resume", "eval_results.txt"),
    )
    check_first_step(run)


def check_first_step(run):
    """One training step of each code from the same weights on the same batch.

    The batch is one record repeated (so the original's unseeded shuffling cannot
    change it) and dropout is off. After one step adam_m = 0.1 g and
    adam_v = 0.001 g^2 whatever the learning rate, so the slots compare the
    gradients (loss, heads, clipping) of the two codes.
    """
    import tensorflow as tf

    one = run.path("one_record.tfrecord")
    source = os.path.join(GOLDEN, "pretraining", "default.tfrecord")
    with tf.io.TFRecordWriter(one) as writer:
        writer.write(next(iter(tf.data.TFRecordDataset(source).as_numpy_iterator())))
    config = dict(TINY_CONFIG, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    with open(run.path("bert_config_no_dropout.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)
    flags = [
        f"--bert_config_file={run.path('bert_config_no_dropout.json')}",
        f"--input_file={one}",
        f"--init_checkpoint={run.path('pt_ours', 'model.ckpt-6')}",
        "--do_train",
        "--train_batch_size=8",
        "--max_seq_length=128",
        "--max_predictions_per_seq=20",
        "--num_train_steps=1",
        "--num_warmup_steps=0",
        "--learning_rate=1e-3",
    ]
    for side, start in (("orig", run.original), ("ours", run.ours)):
        directory = run.path(f"step_{side}")
        if os.path.exists(directory):
            shutil.rmtree(directory)
        start("run_pretraining", [*flags, f"--output_dir={directory}"], f"step_{side}.log")
    a = tf.train.load_checkpoint(run.path("step_orig", "model.ckpt-1"))
    b = tf.train.load_checkpoint(run.path("step_ours", "model.ckpt-1"))
    worst, count = 0.0, 0
    for name in sorted(a.get_variable_to_shape_map()):
        if not name.endswith(("/adam_m", "/adam_v")):
            continue
        x, y = a.get_tensor(name), b.get_tensor(name)
        scale = float(abs(x).max())
        # Key biases get no gradient (softmax ignores a per-query constant):
        # their slots hold round-off only.
        if "/key/bias" in name:
            continue
        count += 1
        worst = max(worst, float(abs(x - y).max()) / max(scale, 1e-30))
    record(
        "pretraining",
        "first training step from the same weights (adam slots)",
        worst < 1e-4,
        f"{count} slots compared; largest difference {worst:.2g} of the slot's largest value",
    )


def check_resumed_step(before, after, lr):
    """Re-derives our one training step after the original's checkpoint from the two files.

    The gradient follows from the first moments (g = (m4 - 0.9 m3) / 0.1); the second
    moments and the weights must then agree with it. Slots that did not load (zeros)
    or a global_step that did not carry over break the equalities.
    """
    import numpy as np
    import tensorflow as tf

    a, b = tf.train.load_checkpoint(before), tf.train.load_checkpoint(after)
    step_a, step_b = int(a.get_tensor("global_step")), int(b.get_tensor("global_step"))
    names = sorted(
        n[: -len("/adam_m")] for n in a.get_variable_to_shape_map() if n.endswith("/adam_m")
    )
    worst_w = worst_v = 0.0
    for name in names:
        m3, v3, w3 = (a.get_tensor(name + s) for s in ("/adam_m", "/adam_v", ""))
        m4, v4, w4 = (b.get_tensor(name + s) for s in ("/adam_m", "/adam_v", ""))
        grad = (m4 - 0.9 * m3) / 0.1
        v_expected = 0.999 * v3 + 0.001 * grad * grad
        update = m4 / (np.sqrt(v4) + 1e-6)
        if not re.search("LayerNorm|layer_norm|bias", name):
            update = update + 0.01 * w3
        worst_w = max(worst_w, float(np.max(np.abs(w3 - lr * update - w4))))
        worst_v = max(worst_v, float(np.max(np.abs(v_expected - v4) / (np.abs(v4) + 1e-12))))
    ok = step_a + 1 == step_b and names and worst_w < 1e-6 and worst_v < 1e-4
    record(
        "pretraining",
        "resume from the original's checkpoint",
        bool(ok),
        f"global_step {step_a} -> {step_b}; {len(names)} variables with adam_m/adam_v; "
        f"max |w - expected| {worst_w:.3g}, max rel. error of adam_v {worst_v:.3g}",
    )


MRPC_ROWS = [
    (
        "1",
        "He said the foodservice pie business doesn't fit the company's long-term growth "
        "strategy.",
        "The foodservice pie business does not fit our long-term growth strategy, he said.",
    ),
    (
        "0",
        "Magnarelli said Racicot hated the Iraqi regime and looked forward to using his long "
        "years of training in the war.",
        'His wife said he was "100 percent behind George Bush" '
        "and looked forward to using his years of training in the war.",
    ),
    (
        "1",
        "The dollar was at 116.92 yen against the yen, flat on the session.",
        "The dollar was flat at 116.92 yen.",
    ),
    (
        "0",
        "Caf\u00e9 owners in Z\u00fcrich met on Tuesday; \u6771\u4eac was mentioned twice.",
        "Nobody mentioned Tokyo at the meeting of supercalifragilisticexpialidocious owners.",
    ),
    ("1", "Shares of Genentech rose $1.61 to $59.70.", "Genentech shares rose 2.8 percent."),
    (
        "0",
        "The tech-heavy Nasdaq composite index fell 3.99, or 0.25 percent, to 1,616.77.",
        "The broad Standard & Poor's 500 Index fell 0.44 points.",
    ),
    ("1", "A BIG \u00c9CLAIR  with spaces?", "na\u00efve r\u00e9sum\u00e9 co\u00f6perate"),
]


def write_mrpc(directory, rows_by_split):
    os.makedirs(directory, exist_ok=True)
    for split, rows in rows_by_split.items():
        test = split == "test"
        with open(
            os.path.join(directory, split + ".tsv"), "w", encoding="utf-8", newline="\n"
        ) as f:
            f.write(("index" if test else "Quality") + "\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
            for i, (label, a, b) in enumerate(rows):
                f.write(f"{i if test else label}\t{1000 + i}\t{2000 + i}\t{a}\t{b}\n")


def check_classifier(run, pretrained):
    data = run.path("mrpc")
    write_mrpc(
        data, {"train": MRPC_ROWS, "dev": MRPC_ROWS[:5], "test": MRPC_ROWS[2:] + MRPC_ROWS[:2]}
    )
    common = [
        "--task_name=MRPC",
        f"--data_dir={data}",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={run.path('bert_config.json')}",
        "--max_seq_length=32",
        "--eval_batch_size=2",
        "--predict_batch_size=8",
    ]
    run.ours(
        "run_classifier",
        [
            *common,
            f"--init_checkpoint={pretrained}",
            "--do_train",
            "--do_eval",
            "--do_predict",
            "--train_batch_size=4",
            "--learning_rate=1e-3",
            "--num_train_epochs=3",
            f"--output_dir={run.path('cls_ours')}",
        ],
        "cls_ours.log",
    )
    copy_checkpoint(newest_checkpoint(run.path("cls_ours")), run.path("cls_orig"))
    run.original(
        "run_classifier",
        [*common, "--do_eval", "--do_predict", f"--output_dir={run.path('cls_orig')}"],
        "cls_orig.log",
    )
    compare_key_value_file(
        "classifier",
        "eval_results.txt",
        run.path("cls_orig", "eval_results.txt"),
        run.path("cls_ours", "eval_results.txt"),
        extra_ok=("eval_f1",),
    )
    compare_tsv(
        "classifier",
        "test_results.tsv",
        run.path("cls_orig", "test_results.tsv"),
        run.path("cls_ours", "test_results.tsv"),
    )
    for name in ("eval.tf_record", "predict.tf_record"):
        compare_records("classifier", name, run.path("cls_orig", name), run.path("cls_ours", name))
    # The other way round: the original fine-tunes, this project predicts from it.
    run.original(
        "run_classifier",
        [
            *common,
            f"--init_checkpoint={pretrained}",
            "--do_train",
            "--do_predict",
            "--train_batch_size=4",
            "--learning_rate=1e-3",
            "--num_train_epochs=3",
            f"--output_dir={run.path('cls_orig_trained')}",
        ],
        "cls_orig_trained.log",
    )
    copy_checkpoint(
        newest_checkpoint(run.path("cls_orig_trained")), run.path("cls_orig_trained_by_ours")
    )
    run.ours(
        "run_classifier",
        [*common, "--do_predict", f"--output_dir={run.path('cls_orig_trained_by_ours')}"],
        "cls_orig_trained_by_ours.log",
    )
    compare_tsv(
        "classifier",
        "test_results.tsv from the original's fine-tuned checkpoint",
        run.path("cls_orig_trained", "test_results.tsv"),
        run.path("cls_orig_trained_by_ours", "test_results.tsv"),
    )
    return newest_checkpoint(run.path("cls_ours"))


def compare_tsv(check, name, path_a, path_b):
    text_a, text_b = read_text(path_a), read_text(path_b)
    if text_a == text_b:
        record(check, name, True, "byte-identical")
        return
    rows_a = [line.split("\t") for line in text_a.split("\n")]
    rows_b = [line.split("\t") for line in text_b.split("\n")]
    shape_same = [len(r) for r in rows_a] == [len(r) for r in rows_b]
    numbers = [(x, y) for ra, rb in zip(rows_a, rows_b) for x, y in zip(ra, rb) if x]
    differing = [(x, y) for x, y in numbers if x != y]
    ulps = max((float32_ulps(float(x), float(y)) for x, y in differing), default=0)
    repr_ok = all(x == float32_str(float(x)) for x, _ in numbers) and all(
        y == float32_str(float(y)) for _, y in numbers
    )
    record(
        check,
        name,
        shape_same and repr_ok,
        f"lines and columns {'identical' if shape_same else 'DIFFER'}; every value is the "
        f"shortest repr of a float32 in both: {repr_ok}; {len(differing)} of {len(numbers)} "
        f"values differ, by at most {ulps} float32 ulp",
    )


def float32_bits(x):
    return struct.unpack("<i", struct.pack("<f", x))[0]


def float32_ulps(x, y):
    return abs(float32_bits(x) - float32_bits(y))


def float32_str(x):
    """Shortest decimal text that reads back as the same float32 (numpy's str(float32))."""
    bits = float32_bits(x)
    for digits in range(1, 10):
        text = repr(float(f"{x:.{digits}g}"))
        if float32_bits(float(text)) == bits:
            return text
    return repr(x)


TRICKY_EXTRA = "supercalifragilisticexpialidociouslyantidisestablishmentarianism " * 3 + "x" * 250


def check_tricky(run, checkpoint):
    source = os.path.join(GOLDEN, "tokenization", "input.txt")
    lines = [line for line in read_text(source).split("\n") if line.strip()]
    # TSV cells cannot hold tabs or line breaks, and csv readers differ on NUL.
    texts = [re.sub("[\t\r]", " ", line).replace("\x00", "") for line in lines]
    texts.append(TRICKY_EXTRA)
    rows = [("0", t, texts[(i + 3) % len(texts)]) for i, t in enumerate(texts)]
    data = run.path("tricky")
    write_mrpc(data, {"test": rows})
    for lower in ("true", "false"):
        for length in (24, 64):
            tag = f"tricky_{lower}_{length}"
            flags = [
                "--task_name=mrpc",
                f"--data_dir={data}",
                f"--vocab_file={VOCAB}",
                f"--bert_config_file={run.path('bert_config.json')}",
                "--do_predict",
                f"--max_seq_length={length}",
                f"--do_lower_case={lower}",
            ]
            for side in ("orig", "ours"):
                copy_checkpoint(checkpoint, run.path(f"{tag}_{side}"))
            run.original(
                "run_classifier",
                [*flags, f"--output_dir={run.path(tag + '_orig')}"],
                tag + "_orig.log",
            )
            run.ours(
                "run_classifier",
                [*flags, f"--output_dir={run.path(tag + '_ours')}"],
                tag + "_ours.log",
            )
            compare_records(
                "tricky",
                f"predict.tf_record lower={lower} length={length}",
                run.path(tag + "_orig", "predict.tf_record"),
                run.path(tag + "_ours", "predict.tf_record"),
            )


SQUAD_CONTEXTS = [
    "The Normans (Norman: Nourmands; French: Normands; Latin: Normanni) were the people who "
    "in the 10th and 11th centuries gave their name to Normandy, a region in France. They were "
    'descended from Norse ("Norman" comes from "Norseman") raiders and pirates from Denmark, '
    "Iceland and Norway who, under their leader Rollo, agreed to swear fealty to King Charles "
    "III of West Francia. Through generations of assimilation and mixing with the native "
    "Frankish and Roman-Gaulish populations, their descendants would gradually merge with the "
    "Carolingian-based cultures of West Francia.",
    "Z\u00fcrich's caf\u00e9 culture\u202fflourished in the 1890s; the Caf\u00e9 Od\u00e9on "
    "opened in 1911.  Its regulars included Albert Einstein, James Joyce and Lenin.\tTokyo "
    "(\u6771\u4eac\u90fd) hosts a similar scene, with \u55ab\u8336\u5e97 kissaten serving "
    "siphon-brewed coffee since the 1950s. Supercalifragilisticexpialidocious pastries cost "
    "3,50 CHF (about $3.80).",
    "\u0130stanbul's STRASSE and Stra\u00dfe meet at the \ufb01rst caf\u00e9 \u200b near "
    "ZERO\u200bWIDTH signs, \u00c5ngstr\u00f6m-scale \U0001f600 emoji and "
    "\u0627\u0644\u0639\u0631\u0628\u064a\u0629 text; na\u0131ve \u0301accents "
    "and [UNK]-like words such as xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    " end here. The \u0130stanbul caf\u00e9 opened in 1923.",
]
SQUAD_QUESTIONS = [
    [
        ("In what country is Normandy located?", "France"),
        ("When were the Normans in Normandy?", "10th and 11th centuries"),
        ("Who was the Norse leader?", "Rollo"),
        ("What did the descendants merge with?", "Carolingian-based cultures"),
        ("Who gave their name to the moon?", None),
        # answer_start points at another word: training skips the question
        ("Where were the raiders from?", "Denmark", "Iceland"),
    ],
    [
        ("When did the Caf\u00e9 Od\u00e9on open?", "1911"),
        ("Who were regulars?", "Albert Einstein, James Joyce and Lenin"),
        ("What do kissaten serve?", "siphon-brewed coffee"),
        ("How much do the pastries cost?", "3,50 CHF"),
        ("What is the capital of Mars?", None),
    ],
    [
        ("Which city has a STRASSE?", "\u0130stanbul's"),
        (
            "What scale is mentioned, along with emoji and Arabic text and accents and more words "
            "than the query limit allows?",
            "\u00c5ngstr\u00f6m-scale",
        ),
        ("When did the caf\u00e9 open?", "1923"),
        ("What is first?", "\ufb01rst caf\u00e9"),
        ("Where are the zero-width signs?", "ZERO\u200bWIDTH signs"),
    ],
]


def write_squad(path, version_2):
    paragraphs, qid = [], 0
    for context, questions in zip(SQUAD_CONTEXTS, SQUAD_QUESTIONS):
        qas = []
        for question, answer, *where in questions:
            qid += 1
            if answer is None and not version_2:
                continue
            qa = {"id": f"q{qid}", "question": question, "answers": []}
            if answer is not None:
                start = context.index(where[0] if where else answer)
                qa["answers"] = [{"text": answer, "answer_start": start}]
            if version_2:
                qa["is_impossible"] = answer is None
            qas.append(qa)
        paragraphs.append({"context": context, "qas": qas})
    doc = {
        "version": "v2.0" if version_2 else "1.1",
        "data": [{"title": "T", "paragraphs": paragraphs}],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False)


SQUAD_FLAGS = [
    "--max_seq_length=48",
    "--doc_stride=16",
    "--max_query_length=12",
    "--max_answer_length=10",
    "--predict_batch_size=4",
]


def check_squad(run, pretrained):
    for version in ("v1", "v2"):
        write_squad(run.path(f"squad_{version}.json"), version == "v2")
    common = [
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={run.path('bert_config.json')}",
        *SQUAD_FLAGS,
    ]
    train = [
        f"--init_checkpoint={pretrained}",
        "--do_train",
        "--train_batch_size=4",
        "--num_train_epochs=2",
        "--learning_rate=1e-3",
    ]
    v2 = ["--version_2_with_negative", f"--train_file={run.path('squad_v2.json')}"]
    run.ours(
        "run_squad", [*common, *train, *v2, f"--output_dir={run.path('sq_ours')}"], "sq_ours.log"
    )
    run.original(
        "run_squad", [*common, *train, *v2, f"--output_dir={run.path('sq_orig')}"], "sq_orig.log"
    )
    compare_records(
        "squad",
        "v2 train.tf_record",
        run.path("sq_orig", "train.tf_record"),
        run.path("sq_ours", "train.tf_record"),
    )
    checkpoint = newest_checkpoint(run.path("sq_ours"))
    for version in ("v1", "v2"):
        flags = [*common, "--do_predict", f"--predict_file={run.path(f'squad_{version}.json')}"]
        if version == "v2":
            flags.append("--version_2_with_negative")
        for side, start in (("orig", run.original), ("ours", run.ours)):
            directory = run.path(f"sq_{version}_pred_{side}")
            copy_checkpoint(checkpoint, directory)
            start(
                "run_squad", [*flags, f"--output_dir={directory}"], f"sq_{version}_pred_{side}.log"
            )
        names = ["predictions.json", "nbest_predictions.json"]
        if version == "v2":
            names.append("null_odds.json")
        for name in names:
            compare_json_files(
                "squad",
                f"{version} {name}",
                run.path(f"sq_{version}_pred_orig", name),
                run.path(f"sq_{version}_pred_ours", name),
            )
        compare_records(
            "squad",
            f"{version} eval.tf_record",
            run.path(f"sq_{version}_pred_orig", "eval.tf_record"),
            run.path(f"sq_{version}_pred_ours", "eval.tf_record"),
        )


SQUAD_POST_CASES = [
    # (name, version_2, do_lower_case, n_best_size, max_answer_length, threshold, spread)
    ("v1_lower", False, True, 20, 10, 0.0, 3.0),
    ("v1_cased_nbest3", False, False, 3, 5, 0.0, 3.0),
    ("v2_lower", True, True, 20, 10, 0.0, 3.0),
    ("v2_threshold", True, True, 20, 30, -1.5, 6.0),
    ("v2_cased_threshold", True, False, 7, 4, 2.0, 1.0),
]


def check_squad_post(run):
    for version in ("v1", "v2"):
        write_squad(run.path(f"squad_{version}.json"), version == "v2")
    for case in SQUAD_POST_CASES:
        name = case[0]
        outputs = {}
        for impl, python in (("original", run.args.original_python), ("ours", sys.executable)):
            out_dir = run.path(f"post_{name}_{impl}")
            os.makedirs(out_dir, exist_ok=True)
            code = run.worker(
                python,
                impl,
                [
                    "--worker=squad_post",
                    f"--worker_case={name}",
                    f"--work_dir={run.work}",
                    f"--worker_out={out_dir}",
                ],
                f"post_{name}_{impl}.log",
            )
            outputs[impl] = out_dir if code == 0 else None
        if not all(outputs.values()):
            failed = [impl for impl, out in outputs.items() if out is None]
            record("squad_post", name, False, f"{failed} failed; see post_{name}_*.log")
            continue
        for file_name in sorted(os.listdir(outputs["original"])):
            a = os.path.join(outputs["original"], file_name)
            b = os.path.join(outputs["ours"], file_name)
            if file_name.endswith(".tf_record"):
                compare_records("squad_post", f"{name} {file_name}", a, b)
            else:
                same = os.path.exists(b) and read_bytes(a) == read_bytes(b)
                record(
                    "squad_post",
                    f"{name} {file_name}",
                    same,
                    "byte-identical" if same else "bytes DIFFER",
                )


def squad_post_worker(args):
    """Features and write_predictions of one implementation on synthetic logits."""
    case = {c[0]: c for c in SQUAD_POST_CASES}[args.worker_case]
    _, version_2, lower, n_best, max_answer, threshold, spread = case
    sys.path.insert(0, args.worker_impl_dir)
    packaged = os.path.isdir(os.path.join(args.worker_impl_dir, "bert"))
    if args.worker_impl == "original" and packaged:
        from bert import run_squad, tokenization
    else:
        import run_squad
        import tokenization
    run_squad.FLAGS(
        [
            "worker",
            f"--version_2_with_negative={str(version_2).lower()}",
            f"--null_score_diff_threshold={threshold}",
            f"--do_lower_case={str(lower).lower()}",
            "--verbose_logging=false",
        ]
    )
    tokenizer = tokenization.FullTokenizer(vocab_file=VOCAB, do_lower_case=lower)
    input_file = os.path.join(args.work_dir, f"squad_{'v2' if version_2 else 'v1'}.json")
    out = args.worker_out
    for is_training in (True, False):
        examples = run_squad.read_squad_examples(input_file, is_training)
        if is_training:
            random.Random(12345).shuffle(examples)
        features = []
        writer = run_squad.FeatureWriter(
            os.path.join(out, f"{'train' if is_training else 'eval'}.tf_record"), is_training
        )

        def output_fn(feature, features=features, writer=writer):
            features.append(feature)
            writer.process_feature(feature)

        run_squad.convert_examples_to_features(
            examples, tokenizer, 48, 16, 12, is_training, output_fn
        )
        writer.close()
        dump = []
        for f in features:
            dump.append(
                {
                    "unique_id": f.unique_id,
                    "example_index": f.example_index,
                    "doc_span_index": f.doc_span_index,
                    "tokens": f.tokens,
                    "token_to_orig_map": sorted(f.token_to_orig_map.items()),
                    "token_is_max_context": sorted(f.token_is_max_context.items()),
                    "start_position": f.start_position,
                    "end_position": f.end_position,
                    "is_impossible": f.is_impossible,
                }
            )
        with open(os.path.join(out, f"features_{is_training}.json"), "w", encoding="utf-8") as f:
            json.dump(dump, f, indent=1, sort_keys=True)
    results = []
    for feature in features:
        rng = random.Random(feature.unique_id)
        logits = []
        for _ in range(2):
            row = [float32_round(rng.gauss(0.0, spread)) for _ in feature.input_ids]
            logits.append(row)
        results.append(
            run_squad.RawResult(
                unique_id=feature.unique_id, start_logits=logits[0], end_logits=logits[1]
            )
        )
    run_squad.write_predictions(
        examples,
        features,
        results,
        n_best,
        max_answer,
        lower,
        os.path.join(out, "predictions.json"),
        os.path.join(out, "nbest_predictions.json"),
        os.path.join(out, "null_odds.json"),
    )


GLUE_FILES = {
    "cola": {
        "train.tsv": "gj04\t1\t\tOur friends won't buy this analysis.\n"
        "gj04\t0\t*\tThey drank the pub.\n",
        "dev.tsv": "cj99\t1\t\tThe sailors rode the breeze clear of the rocks.\n",
        "test.tsv": "index\tsentence\n0\tBill whistled past the house.\n"
        "1\tZ\u00fcrich \u6771\u4eac caf\u00e9.\n",
    },
    "mnli": {
        "train.tsv": "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p\tsentence1"
        "\tsentence2\tlabel1\tgold_label\n"
        "0\t31193\t31193n\tgovernment\t(a)\t(b)\t(A)\t(B)\tConceptually cream "
        "skimming has two basic dimensions.\tProduct and geography are what make "
        "cream skimming work.\tneutral\tneutral\n",
        "dev_matched.tsv": "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p\tsentence1"
        "\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n"
        "0\t63735\t63735n\tslate\t(a)\t(b)\t(A)\t(B)\tThe new rights are "
        "nice enough\tEveryone really likes the newest benefits\tneutral"
        "\tentailment\tneutral\tneutral\tneutral\tneutral\n",
        "test_matched.tsv": "index\tpromptID\tpairID\tgenre\ts1b\ts2b\ts1p\ts2p"
        "\tsentence1\tsentence2\n"
        "0\t31493\t31493\ttravel\t(a)\t(b)\t(A)\t(B)\tHierbas, ans "
        "seco, ans dulce.\tHierbas is a name worth looking out for.\n",
    },
    "mrpc": None,
    "xnli": {
        "multinli/multinli.train.zh.tsv": "premise\thypo\tlabel\n"
        "\u4ed6\u8bf4\u4e86\tA\tcontradictory\n"
        "\u597d\tB\tentailment\n",
        "xnli.dev.tsv": "language\tgold_label\ts1b\ts2b\ts1p\ts2p\tsentence1\tsentence2"
        "\tpromptID\tpairID\n"
        "en\tneutral\t(a)\t(b)\t(A)\t(B)\tHe said\tShe said\t1\t1\n"
        "zh\tentailment\t(a)\t(b)\t(A)\t(B)\t\u4ed6\u8bf4\t\u5979\u8bf4"
        "\t2\t2\n",
    },
}


def check_processors(run):
    data = run.path("glue")
    for task, files in GLUE_FILES.items():
        if files is None:
            write_mrpc(
                os.path.join(data, task),
                {"train": MRPC_ROWS, "dev": MRPC_ROWS[:3], "test": MRPC_ROWS[3:]},
            )
            continue
        for name, text in files.items():
            path = os.path.join(data, task, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
    outputs = {}
    for impl, python in (("original", run.args.original_python), ("ours", sys.executable)):
        out = run.path(f"processors_{impl}.json")
        run.worker(
            python,
            impl,
            ["--worker=processors", f"--work_dir={run.work}", f"--worker_out={out}"],
            f"processors_{impl}.log",
        )
        outputs[impl] = out
    if not all(os.path.exists(p) for p in outputs.values()):
        record("processors", "examples", False, "a worker failed; see processors_*.log")
        return
    same = read_bytes(outputs["original"]) == read_bytes(outputs["ours"])
    count = sum(len(v) for v in json.loads(read_text(outputs["ours"])).values())
    record(
        "processors",
        "cola/mnli/mrpc/xnli examples and labels",
        same,
        f"{count} entries, {'identical' if same else 'DIFFER'}",
    )


def processors_worker(args):
    """Dumps every example and label list of the four original tasks as JSON."""
    sys.path.insert(0, args.worker_impl_dir)
    packaged = os.path.isdir(os.path.join(args.worker_impl_dir, "bert"))
    if args.worker_impl == "original" and packaged:
        from bert import run_classifier
    else:
        import run_classifier
    classes = {
        "cola": "ColaProcessor",
        "mnli": "MnliProcessor",
        "mrpc": "MrpcProcessor",
        "xnli": "XnliProcessor",
    }
    dump = {}
    for task, class_name in classes.items():
        processor = getattr(run_classifier, class_name)()
        data_dir = os.path.join(args.work_dir, "glue", task)
        dump[task + "/labels"] = list(processor.get_labels())
        splits = ["train", "dev"] + ([] if task == "xnli" else ["test"])
        for split in splits:
            examples = getattr(processor, f"get_{split}_examples")(data_dir)
            dump[f"{task}/{split}"] = [[e.guid, e.text_a, e.text_b, e.label] for e in examples]
    with open(args.worker_out, "w", encoding="utf-8") as f:
        json.dump(dump, f, indent=1, ensure_ascii=False)


def check_kernels(run):
    outputs = {}
    for impl, python in (("original", run.args.original_python), ("ours", sys.executable)):
        out = run.path(f"softmax_{impl}.txt")
        run.worker(
            python, impl, ["--worker=softmax", f"--worker_out={out}"], f"softmax_{impl}.log"
        )
        outputs[impl] = [line.split() for line in read_text(out).splitlines()]
    pairs = list(zip(outputs["original"], outputs["ours"]))
    differing = sum(1 for a, b in pairs if a != b)
    ulps = max(float32_ulps(float(x), float(y)) for a, b in pairs for x, y in zip(a, b))
    record(
        "kernels",
        "tf.nn.softmax on 2000 fixed float32 rows of 2 logits",
        True,
        f"{differing} rows differ between the two TensorFlows, by at most {ulps} ulp",
    )


def check_lr_schedule(run):
    counts = {}
    for impl, python in (("original", run.args.original_python), ("ours", sys.executable)):
        out = run.path(f"lr_{impl}.json")
        run.worker(python, impl, ["--worker=lr_schedule", f"--worker_out={out}"], f"lr_{impl}.log")
        counts[impl] = json.loads(read_text(out))
    ours_fixed = set(counts["ours"]) == {"step 0"}
    record(
        "lr_schedule",
        "learning rate of the first step (num_train_steps=2, no warmup)",
        ours_fixed,
        f"original: {counts['original']}; ours: {counts['ours']}",
    )


def lr_schedule_worker(args):
    """Counts, over fresh sessions, whether step one used lr(global_step=0) or lr(1)."""
    import numpy as np
    import tensorflow.compat.v1 as tf

    sys.path.insert(0, args.worker_impl_dir)
    packaged = os.path.isdir(os.path.join(args.worker_impl_dir, "bert"))
    if args.worker_impl == "original" and packaged:
        from bert import optimization
    else:
        import optimization
    counts = {}
    for _ in range(20):
        graph = tf.Graph()
        with graph.as_default():
            # A resource variable, as TPUEstimator creates it.
            tf.get_variable(
                "global_step",
                shape=[],
                dtype=tf.int64,
                trainable=False,
                initializer=tf.zeros_initializer(),
                use_resource=True,
                collections=[tf.GraphKeys.GLOBAL_VARIABLES, tf.GraphKeys.GLOBAL_STEP],
            )
            weights = tf.get_variable("w", initializer=tf.constant([1.0, 2.0]))
            loss = tf.reduce_sum(weights * tf.constant([0.5, -0.25]))
            train_op = optimization.create_optimizer(loss, 1e-3, 2, 0, False)
            with tf.Session(graph=graph) as session:
                session.run(tf.global_variables_initializer())
                before = session.run(weights)
                session.run(train_op)
                moved = float(np.max(np.abs(session.run(weights) - before)))
        # Adam's first update is about sqrt(10) = 3.16 times the learning rate:
        # lr(0) = 1e-3 moves the weights by ~3.2e-3, lr(1) = 5e-4 by ~1.6e-3.
        key = "step 0" if moved > 2.4e-3 else "step 1"
        counts[key] = counts.get(key, 0) + 1
    with open(args.worker_out, "w", encoding="utf-8") as f:
        json.dump(counts, f, sort_keys=True)


def softmax_worker(args):
    """tf.nn.softmax of fixed float32 logits, written as exact decimals."""
    import numpy as np
    import tensorflow as tf

    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    rng = random.Random(0)
    logits = np.array(
        [[float32_round(rng.gauss(0.0, 0.1)) for _ in range(2)] for _ in range(2000)],
        dtype=np.float32,
    )
    probs = tf.nn.softmax(tf.constant(logits), axis=-1)
    with tf1.Session() as session:
        values = session.run(probs)
    with open(args.worker_out, "w", encoding="utf-8") as f:
        for row in values:
            f.write(" ".join(repr(float(v)) for v in row) + "\n")


def float32_round(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def check_features(run, checkpoint):
    lines = [
        "Who was Jim Henson ? ||| Jim Henson was a puppeteer",
        "Caf\u00e9 Z\u00fcrich \u6771\u4eac na\u00efve r\u00e9sum\u00e9",
        "supercalifragilisticexpialidocious and a very long sentence that will surely be "
        "truncated because it goes on and on and on and on with many many words",
        "A BIG \u00c9CLAIR ||| with tabs\tinside",
        "a|||b",
        "",
        "  spaced ||| out  ",
        "x ||| y ||| z",
    ]
    input_file = run.path("features_input.txt")
    with open(input_file, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    flags = [
        f"--input_file={input_file}",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={run.path('bert_config.json')}",
        f"--init_checkpoint={checkpoint}",
        "--layers=-1,-2,0",
        "--max_seq_length=24",
        "--batch_size=3",
    ]
    run.original(
        "extract_features", [*flags, f"--output_file={run.path('ef_orig.jsonl')}"], "ef_orig.log"
    )
    run.ours(
        "extract_features", [*flags, f"--output_file={run.path('ef_ours.jsonl')}"], "ef_ours.log"
    )
    compare_lines_of_json(
        "features",
        "extract_features JSON lines",
        run.path("ef_orig.jsonl"),
        run.path("ef_ours.jsonl"),
    )


def check_pretraining_data(run):
    corpus = os.path.join(REPO, "demo_data", "corpus", "*.txt")
    flags = [
        f"--input_file={corpus}",
        f"--vocab_file={VOCAB}",
        "--do_lower_case=True",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--masked_lm_prob=0.2",
        "--short_seq_prob=0.3",
        "--random_seed=3",
        "--dupe_factor=2",
    ]
    for side, start in (("orig", run.original), ("ours", run.ours)):
        outputs = ",".join(run.path(f"cpd_{side}_{x}.tfrecord") for x in "ab")
        start("create_pretraining_data", [*flags, f"--output_file={outputs}"], f"cpd_{side}.log")
    for x in "ab":
        compare_records(
            "pretraining_data",
            f"output file {x}",
            run.path(f"cpd_orig_{x}.tfrecord"),
            run.path(f"cpd_ours_{x}.tfrecord"),
        )


CHECKS = [
    "pretraining",
    "classifier",
    "tricky",
    "squad",
    "squad_post",
    "processors",
    "features",
    "pretraining_data",
    "lr_schedule",
    "kernels",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original_dir")
    parser.add_argument("--original_python")
    parser.add_argument("--work_dir")
    parser.add_argument("--checks", default=",".join(CHECKS))
    parser.add_argument("--worker")
    parser.add_argument("--worker_impl")
    parser.add_argument("--worker_impl_dir")
    parser.add_argument("--worker_case")
    parser.add_argument("--worker_out")
    args = parser.parse_args()
    if args.worker == "squad_post":
        squad_post_worker(args)
        return
    if args.worker == "processors":
        processors_worker(args)
        return
    if args.worker == "softmax":
        softmax_worker(args)
        return
    if args.worker == "lr_schedule":
        lr_schedule_worker(args)
        return
    if not (args.original_dir and args.original_python and args.work_dir):
        parser.error("--original_dir, --original_python and --work_dir are required")
    checks = args.checks.split(",")
    unknown = sorted(set(checks) - set(CHECKS))
    if unknown:
        parser.error(f"unknown checks {unknown}; known: {CHECKS}")
    os.makedirs(args.work_dir, exist_ok=True)
    run = Runner(args)
    with open(run.path("bert_config.json"), "w", encoding="utf-8") as f:
        json.dump(TINY_CONFIG, f)
    pretrained = run.path("pt_ours", "model.ckpt-6")
    if "pretraining" in checks:
        check_pretraining(run)
    needs_model = {"classifier", "tricky", "squad", "features"} & set(checks)
    if needs_model and not os.path.exists(pretrained + ".index"):
        run.ours(
            "run_pretraining",
            [
                f"--bert_config_file={run.path('bert_config.json')}",
                f"--input_file={os.path.join(GOLDEN, 'pretraining', 'default.tfrecord')}",
                "--do_train",
                "--train_batch_size=8",
                "--num_train_steps=6",
                "--num_warmup_steps=2",
                "--learning_rate=1e-3",
                "--save_checkpoints_steps=3",
                f"--output_dir={run.path('pt_ours')}",
            ],
            "pt_ours.log",
        )
    if "classifier" in checks or "tricky" in checks:
        if "classifier" in checks or not os.path.exists(run.path("cls_ours", "checkpoint")):
            check_classifier(run, pretrained)
    if "tricky" in checks:
        check_tricky(run, newest_checkpoint(run.path("cls_ours")))
    if "squad" in checks:
        check_squad(run, pretrained)
    if "squad_post" in checks:
        check_squad_post(run)
    if "processors" in checks:
        check_processors(run)
    if "features" in checks:
        check_features(run, pretrained)
    if "pretraining_data" in checks:
        check_pretraining_data(run)
    if "lr_schedule" in checks:
        check_lr_schedule(run)
    if "kernels" in checks:
        check_kernels(run)
    print(
        f"\n{sum(r[2] for r in RESULTS)} of {len(RESULTS)} comparisons same; "
        f"commands in {run.path('commands.log')}"
    )


if __name__ == "__main__":
    main()
