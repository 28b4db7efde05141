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
  tf1          the original's run_classifier, run_squad, run_pretraining,
               extract_features and create_pretraining_data, unchanged (its
               modeling, optimization and tokenization beside them), through
               run_tf1.py on this project's TensorFlow: run_tf1 fine-tunes the
               classifier and the SQuAD model; the original (TF 1.15), run_tf1
               and this project's scripts evaluate and predict from the same
               checkpoints; each output of run_tf1 compared with both. Then
               TF 1.x research code written here (tests/data/tf1_scripts: a
               BERT + BiLSTM + CRF tagger, an ELECTRA-style tf.estimator.tpu
               fine-tuner, a tf.keras.layers classifier, RNN and Keras layer
               cases) under TF 1.15 and through run_tf1.py: each trains, each
               evaluates and predicts from both checkpoints.
  pretraining_data  create_pretraining_data on demo_data/corpus (six files)
               into two output files. (The bert-tensorflow 1.0.4 wheel's
               create_pretraining_data predates whole-word masking, so this
               check leaves it off; tests/data/golden pins that mode.)

Example:
  .venv/bin/python benchmarks/compat_check.py --original_dir=/tmp/orig \\
      --original_python=/tmp/venv37/bin/python --work_dir=/tmp/compat_run

The original runs only as subprocesses (its scripts, and compat_check_lib.worker for
what its scripts do not write to files), so nothing here needs Python 3.7
except compat_check_lib.common, compat_check_lib.fixtures and compat_check_lib.worker.
"""

import argparse
import os

from .checks import (
    Report,
    check_classifier,
    check_features,
    check_kernels,
    check_lr_schedule,
    check_pretraining,
    check_pretraining_data,
    check_processors,
    check_squad,
    check_squad_post,
    check_tf1,
    check_tricky,
    pretrain,
    write_config,
)
from .launcher import Runner, newest_checkpoint

CHECKS = [
    "pretraining",
    "classifier",
    "tricky",
    "squad",
    "squad_post",
    "processors",
    "features",
    "pretraining_data",
    "tf1",
    "lr_schedule",
    "kernels",
]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="compat_check.py",
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n", 2)[2],
    )
    parser.add_argument("--original_dir", required=True)
    parser.add_argument("--original_python", required=True)
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--checks", default=",".join(CHECKS))
    args = parser.parse_args(argv)
    args.checks = args.checks.split(",")
    unknown = sorted(set(args.checks) - set(CHECKS))
    if unknown:
        parser.error(f"unknown checks {unknown}; known: {CHECKS}")
    return args


def main(argv=None):
    args = parse_args(argv)
    checks = args.checks
    os.makedirs(args.work_dir, exist_ok=True)
    run = Runner(args.original_dir, args.original_python, args.work_dir)
    report = Report()
    write_config(run.path("bert_config.json"))
    pretrained = run.path("pt_ours", "model.ckpt-6")
    if "pretraining" in checks:
        check_pretraining(run, report)
    needs_model = {"classifier", "tricky", "squad", "features", "tf1"} & set(checks)
    if needs_model and not os.path.exists(pretrained + ".index"):
        pretrain(run, run.path("pt_ours"), "pt_ours.log")
    if "classifier" in checks or "tricky" in checks:
        if "classifier" in checks or not os.path.exists(run.path("cls_ours", "checkpoint")):
            check_classifier(run, report, pretrained)
    if "tricky" in checks:
        check_tricky(run, report, newest_checkpoint(run.path("cls_ours")))
    if "squad" in checks:
        check_squad(run, report, pretrained)
    if "squad_post" in checks:
        check_squad_post(run, report)
    if "processors" in checks:
        check_processors(run, report)
    if "features" in checks:
        check_features(run, report, pretrained)
    if "pretraining_data" in checks:
        check_pretraining_data(run, report)
    if "tf1" in checks:
        check_tf1(run, report, pretrained)
    if "lr_schedule" in checks:
        check_lr_schedule(run, report)
    if "kernels" in checks:
        check_kernels(run, report)
    print(
        f"\n{report.same()} of {len(report.rows)} comparisons same; "
        f"commands in {run.path('commands.log')}"
    )
