"""One function per check: run both codes on the same input, then compare what they wrote.

Each takes the Runner and a Report; the checks that need a trained model take
a checkpoint prefix.
"""

import json
import os
import shutil

from . import fixtures
from .common import GOLDEN, REPO, TINY_CONFIG, VOCAB, read_text
from .comparators import (
    Comparison,
    compare_adam_slots,
    compare_files_exactly,
    compare_json_files,
    compare_key_value_file,
    compare_records,
    compare_resumed_step,
    compare_softmax_rows,
    compare_tsv,
)
from .launcher import copy_checkpoint, newest_checkpoint
from .research import check_tf1_research

IMPLS = ("original", "ours")


class Report:
    """Collects the outcome of every comparison and prints each as it comes."""

    def __init__(self):
        self.rows = []

    def add(self, check, name, comparison):
        self.rows.append((check, name, comparison.ok, comparison.detail))
        tag = "SAME" if comparison.ok else "DIFF"
        print(f"[{tag}] {check}: {name}: {comparison.detail}", flush=True)

    def same(self):
        return sum(1 for row in self.rows if row[2])


PRETRAINING_DATA = os.path.join(GOLDEN, "pretraining", "default.tfrecord")


def write_config(path, **overrides):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dict(TINY_CONFIG, **overrides), f)


def pretrain(run, output_dir, log_name):
    """Six steps of ours on the golden pretraining data: the model the other checks start from."""
    run.ours(
        "run_pretraining",
        [
            f"--bert_config_file={run.path('bert_config.json')}",
            f"--input_file={PRETRAINING_DATA}",
            "--do_train",
            "--train_batch_size=8",
            "--num_train_steps=6",
            "--num_warmup_steps=2",
            "--learning_rate=1e-3",
            "--save_checkpoints_steps=3",
            f"--output_dir={output_dir}",
        ],
        log_name,
    )


def check_pretraining(run, report):
    common = [
        f"--bert_config_file={run.path('bert_config.json')}",
        f"--input_file={PRETRAINING_DATA}",
        "--max_seq_length=128",
        "--max_predictions_per_seq=20",
        "--eval_batch_size=8",
        "--max_eval_steps=3",
    ]
    train_flags = [
        "--do_train",
        "--train_batch_size=8",
        "--learning_rate=1e-3",
        "--save_checkpoints_steps=3",
    ]
    six_steps = ["--do_eval", "--num_train_steps=6", "--num_warmup_steps=2"]

    def train_and_evaluate_elsewhere(trainer, evaluator, trained, evaluated):
        """`trainer` trains 6 steps into `trained`; `evaluator` evaluates that checkpoint
        in `evaluated`. Returns both eval_results.txt paths, (trained, evaluated)."""
        trainer(
            "run_pretraining",
            [*common, *train_flags, *six_steps, f"--output_dir={run.path(trained)}"],
            trained + ".log",
        )
        copy_checkpoint(run.path(trained, "model.ckpt-6"), run.path(evaluated))
        evaluator(
            "run_pretraining",
            [*common, "--do_eval", f"--output_dir={run.path(evaluated)}"],
            evaluated + ".log",
        )
        return run.path(trained, "eval_results.txt"), run.path(evaluated, "eval_results.txt")

    # Ours trains; both evaluate its checkpoint.
    ours, by_original = train_and_evaluate_elsewhere(
        run.ours, run.original, "pt_ours", "pt_ours_by_orig"
    )
    report.add(
        "pretraining",
        "eval of our checkpoint (original vs ours)",
        compare_key_value_file(by_original, ours),
    )
    # The original trains; ours evaluates its checkpoint and resumes from it.
    original, by_ours = train_and_evaluate_elsewhere(
        run.original, run.ours, "pt_orig", "pt_orig_by_ours"
    )
    report.add(
        "pretraining",
        "eval of the original's checkpoint (original vs ours)",
        compare_key_value_file(original, by_ours),
    )
    copy_checkpoint(run.path("pt_orig", "model.ckpt-3"), run.path("pt_resume"))
    run.ours(
        "run_pretraining",
        [
            *common,
            *train_flags,
            "--do_eval",
            "--num_train_steps=4",
            "--num_warmup_steps=0",
            f"--output_dir={run.path('pt_resume')}",
        ],
        "pt_resume.log",
    )
    report.add(
        "pretraining",
        "resume from the original's checkpoint",
        compare_resumed_step(
            run.path("pt_resume", "model.ckpt-3"),
            run.path("pt_resume", "model.ckpt-4"),
            1e-3 * (1 - 3 / 4),
        ),
    )
    copy_checkpoint(run.path("pt_resume", "model.ckpt-4"), run.path("pt_resume_by_orig"))
    run.original(
        "run_pretraining",
        [*common, "--do_eval", f"--output_dir={run.path('pt_resume_by_orig')}"],
        "pt_resume_by_orig.log",
    )
    report.add(
        "pretraining",
        "eval of the resumed checkpoint (original vs ours)",
        compare_key_value_file(
            run.path("pt_resume_by_orig", "eval_results.txt"),
            run.path("pt_resume", "eval_results.txt"),
        ),
    )
    check_first_step(run, report)


def check_first_step(run, report):
    """One training step of each code from the same weights on the same batch.

    The batch is one record repeated (so the original's unseeded shuffling cannot
    change it) and dropout is off.
    """
    import tensorflow as tf

    one = run.path("one_record.tfrecord")
    with tf.io.TFRecordWriter(one) as writer:
        writer.write(next(iter(tf.data.TFRecordDataset(PRETRAINING_DATA).as_numpy_iterator())))
    write_config(
        run.path("bert_config_no_dropout.json"),
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
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
    report.add(
        "pretraining",
        "first training step from the same weights (adam slots)",
        compare_adam_slots(
            run.path("step_orig", "model.ckpt-1"), run.path("step_ours", "model.ckpt-1")
        ),
    )


def _mrpc_flags(run):
    """Writes the MRPC-layout data the classifier checks share; returns their common flags."""
    data = run.path("mrpc")
    rows = fixtures.MRPC_ROWS
    fixtures.write_mrpc(data, {"train": rows, "dev": rows[:5], "test": rows[2:] + rows[:2]})
    return [
        "--task_name=MRPC",
        f"--data_dir={data}",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={run.path('bert_config.json')}",
        "--max_seq_length=32",
        "--eval_batch_size=2",
        "--predict_batch_size=8",
    ]


def check_classifier(run, report, pretrained):
    common = _mrpc_flags(run)
    train = [
        f"--init_checkpoint={pretrained}",
        "--do_train",
        "--train_batch_size=4",
        "--learning_rate=1e-3",
        "--num_train_epochs=3",
    ]
    run.ours(
        "run_classifier",
        [*common, *train, "--do_eval", "--do_predict", f"--output_dir={run.path('cls_ours')}"],
        "cls_ours.log",
    )
    copy_checkpoint(newest_checkpoint(run.path("cls_ours")), run.path("cls_orig"))
    run.original(
        "run_classifier",
        [*common, "--do_eval", "--do_predict", f"--output_dir={run.path('cls_orig')}"],
        "cls_orig.log",
    )
    report.add(
        "classifier",
        "eval_results.txt",
        compare_key_value_file(
            run.path("cls_orig", "eval_results.txt"),
            run.path("cls_ours", "eval_results.txt"),
            extra_ok=("eval_f1",),
        ),
    )
    report.add(
        "classifier",
        "test_results.tsv",
        compare_tsv(
            run.path("cls_orig", "test_results.tsv"), run.path("cls_ours", "test_results.tsv")
        ),
    )
    for name in ("eval.tf_record", "predict.tf_record"):
        report.add(
            "classifier",
            name,
            compare_records(run.path("cls_orig", name), run.path("cls_ours", name)),
        )
    # The other way round: the original fine-tunes, this project predicts from it.
    run.original(
        "run_classifier",
        [*common, *train, "--do_predict", f"--output_dir={run.path('cls_orig_trained')}"],
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
    report.add(
        "classifier",
        "test_results.tsv from the original's fine-tuned checkpoint",
        compare_tsv(
            run.path("cls_orig_trained", "test_results.tsv"),
            run.path("cls_orig_trained_by_ours", "test_results.tsv"),
        ),
    )


def check_tricky(run, report, checkpoint):
    source = os.path.join(GOLDEN, "tokenization", "input.txt")
    data = run.path("tricky")
    fixtures.write_mrpc(data, {"test": fixtures.tricky_rows(read_text(source).split("\n"))})
    cased_vocab = run.path("vocab_cased.txt")
    fixtures.write_cased_vocab(VOCAB, cased_vocab)
    for lower in ("true", "false"):
        for length in (24, 64):
            tag = f"tricky_{lower}_{length}"
            flags = [
                "--task_name=mrpc",
                f"--data_dir={data}",
                f"--vocab_file={VOCAB if lower == 'true' else cased_vocab}",
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
            report.add(
                "tricky",
                f"predict.tf_record lower={lower} length={length}",
                compare_records(
                    run.path(tag + "_orig", "predict.tf_record"),
                    run.path(tag + "_ours", "predict.tf_record"),
                ),
            )


def check_squad(run, report, pretrained):
    for version in ("v1", "v2"):
        fixtures.write_squad(run.path(f"squad_{version}.json"), version == "v2")
    common = [
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={run.path('bert_config.json')}",
        *fixtures.SQUAD_FLAGS,
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
    report.add(
        "squad",
        "v2 train.tf_record",
        compare_records(
            run.path("sq_orig", "train.tf_record"), run.path("sq_ours", "train.tf_record")
        ),
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
            report.add(
                "squad",
                f"{version} {name}",
                compare_json_files(
                    run.path(f"sq_{version}_pred_orig", name),
                    run.path(f"sq_{version}_pred_ours", name),
                ),
            )
        report.add(
            "squad",
            f"{version} eval.tf_record",
            compare_records(
                run.path(f"sq_{version}_pred_orig", "eval.tf_record"),
                run.path(f"sq_{version}_pred_ours", "eval.tf_record"),
            ),
        )


def check_squad_post(run, report):
    for version in ("v1", "v2"):
        fixtures.write_squad(run.path(f"squad_{version}.json"), version == "v2")
    for case in fixtures.SQUAD_POST_CASES:
        name = case[0]
        outputs = {}
        for impl in IMPLS:
            out_dir = run.path(f"post_{name}_{impl}")
            os.makedirs(out_dir, exist_ok=True)
            code = run.worker(
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
            report.add(
                "squad_post", name, Comparison(False, f"{failed} failed; see post_{name}_*.log")
            )
            continue
        for file_name in sorted(os.listdir(outputs["original"])):
            a = os.path.join(outputs["original"], file_name)
            b = os.path.join(outputs["ours"], file_name)
            if file_name.endswith(".tf_record"):
                comparison = compare_records(a, b)
            else:
                comparison = compare_files_exactly(a, b)
            report.add("squad_post", f"{name} {file_name}", comparison)


def check_processors(run, report):
    fixtures.write_glue(run.path("glue"))
    outputs = {}
    for impl in IMPLS:
        out = run.path(f"processors_{impl}.json")
        run.worker(
            impl,
            ["--worker=processors", f"--work_dir={run.work}", f"--worker_out={out}"],
            f"processors_{impl}.log",
        )
        outputs[impl] = out
    if not all(os.path.exists(p) for p in outputs.values()):
        report.add(
            "processors", "examples", Comparison(False, "a worker failed; see processors_*.log")
        )
        return
    comparison = compare_files_exactly(outputs["original"], outputs["ours"])
    count = sum(len(v) for v in json.loads(read_text(outputs["ours"])).values())
    report.add(
        "processors",
        "cola/mnli/mrpc/xnli examples and labels",
        Comparison(
            comparison.ok, f"{count} entries, {'identical' if comparison.ok else 'DIFFER'}"
        ),
    )


def check_kernels(run, report):
    outputs = {}
    for impl in IMPLS:
        out = run.path(f"softmax_{impl}.txt")
        run.worker(impl, ["--worker=softmax", f"--worker_out={out}"], f"softmax_{impl}.log")
        outputs[impl] = [line.split() for line in read_text(out).splitlines()]
    report.add(
        "kernels",
        "tf.nn.softmax on 2000 fixed float32 rows of 2 logits",
        compare_softmax_rows(outputs["original"], outputs["ours"]),
    )


def check_lr_schedule(run, report):
    counts = {}
    for impl in IMPLS:
        out = run.path(f"lr_{impl}.json")
        run.worker(impl, ["--worker=lr_schedule", f"--worker_out={out}"], f"lr_{impl}.log")
        counts[impl] = json.loads(read_text(out))
    report.add(
        "lr_schedule",
        "learning rate of the first step (num_train_steps=2, no warmup)",
        Comparison(
            set(counts["ours"]) == {"step 0"},
            f"original: {counts['original']}; ours: {counts['ours']}",
        ),
    )


def check_features(run, report, checkpoint):
    input_file = run.path("features_input.txt")
    fixtures.write_feature_input(input_file)
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
    report.add(
        "features",
        "extract_features JSON lines",
        compare_json_files(run.path("ef_orig.jsonl"), run.path("ef_ours.jsonl"), json_lines=True),
    )


def _pretraining_data_flags():
    """create_pretraining_data's flags in both of its checks, but for --output_file:
    the demo corpus, short sequences and a fixed seed."""
    corpus = os.path.join(REPO, "demo_data", "corpus", "*.txt")
    return [
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


def check_pretraining_data(run, report):
    flags = _pretraining_data_flags()
    for side, start in (("orig", run.original), ("ours", run.ours)):
        outputs = ",".join(run.path(f"cpd_{side}_{x}.tfrecord") for x in "ab")
        start("create_pretraining_data", [*flags, f"--output_file={outputs}"], f"cpd_{side}.log")
    for x in "ab":
        report.add(
            "pretraining_data",
            f"output file {x}",
            compare_records(
                run.path(f"cpd_orig_{x}.tfrecord"), run.path(f"cpd_ours_{x}.tfrecord")
            ),
        )


# The three ways a script runs in the tf1 check: the original on TensorFlow 1.15, the
# original unchanged through run_tf1.py on this project's TensorFlow, and ours.
TF1_SIDES = ("orig", "tf1", "ours")


def _three_ways(run, script, flags, directory_of, log_prefix, checkpoint=None):
    """Runs `script` the three ways, each in its own output directory (holding a copy of
    `checkpoint` if given); directory_of(side) names the directory."""
    starts = {"orig": run.original, "tf1": run.tf1, "ours": run.ours}
    for side in TF1_SIDES:
        directory = directory_of(side)
        if checkpoint:
            copy_checkpoint(checkpoint, directory)
        elif os.path.exists(directory):
            shutil.rmtree(directory)
        starts[side](script, [*flags, f"--output_dir={directory}"], f"{log_prefix}_{side}.log")


def _add_both(report, name, compare, path_of):
    """The run_tf1 output against the original's, then against ours."""
    report.add("tf1", f"{name}: run_tf1 vs original", compare(path_of("orig"), path_of("tf1")))
    report.add("tf1", f"{name}: run_tf1 vs ours", compare(path_of("tf1"), path_of("ours")))


def check_tf1(run, report, pretrained):
    """The original's five scripts, unchanged, through run_tf1.py on TensorFlow 2, then
    TF 1.x research code written here (research.py)."""
    _check_tf1_classifier(run, report, pretrained)
    _check_tf1_pretraining(run, report, pretrained)
    _check_tf1_squad(run, report, pretrained)
    _check_tf1_file_writers(run, report, pretrained)
    check_tf1_research(run, report)


def _check_tf1_classifier(run, report, pretrained):
    """run_classifier: run_tf1 fine-tunes; the three evaluate and predict its checkpoint."""
    common = _mrpc_flags(run)
    trained = run.path("tf1_cls_trained")
    if os.path.exists(trained):
        shutil.rmtree(trained)
    run.tf1(
        "run_classifier",
        [
            *common,
            f"--init_checkpoint={pretrained}",
            "--do_train",
            "--train_batch_size=4",
            "--learning_rate=1e-3",
            "--num_train_epochs=3",
            f"--output_dir={trained}",
        ],
        "tf1_cls_trained.log",
    )
    _three_ways(
        run,
        "run_classifier",
        [*common, "--do_eval", "--do_predict"],
        lambda side: run.path(f"tf1_cls_{side}"),
        "tf1_cls",
        newest_checkpoint(trained),
    )
    _add_both(
        report,
        "run_classifier eval_results.txt",
        lambda a, b: compare_key_value_file(a, b, extra_ok=("eval_f1",)),
        lambda side: run.path(f"tf1_cls_{side}", "eval_results.txt"),
    )
    _add_both(
        report,
        "run_classifier test_results.tsv",
        compare_tsv,
        lambda side: run.path(f"tf1_cls_{side}", "test_results.tsv"),
    )


def _check_tf1_pretraining(run, report, pretrained):
    """run_pretraining: the three evaluate our pretrained checkpoint."""
    _three_ways(
        run,
        "run_pretraining",
        [
            f"--bert_config_file={run.path('bert_config.json')}",
            f"--input_file={PRETRAINING_DATA}",
            "--do_eval",
            "--eval_batch_size=8",
            "--max_eval_steps=3",
        ],
        lambda side: run.path(f"tf1_pt_{side}"),
        "tf1_pt",
        pretrained,
    )
    _add_both(
        report,
        "run_pretraining eval_results.txt",
        compare_key_value_file,
        lambda side: run.path(f"tf1_pt_{side}", "eval_results.txt"),
    )


def _check_tf1_file_writers(run, report, pretrained):
    """extract_features and create_pretraining_data: the files they write."""
    input_file = run.path("features_input.txt")
    fixtures.write_feature_input(input_file)
    flags = [
        f"--input_file={input_file}",
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={run.path('bert_config.json')}",
        f"--init_checkpoint={pretrained}",
        "--layers=-1,-2,0",
        "--max_seq_length=24",
        "--batch_size=3",
    ]
    starts = {"orig": run.original, "tf1": run.tf1, "ours": run.ours}
    for side in TF1_SIDES:
        starts[side](
            "extract_features",
            [*flags, f"--output_file={run.path(f'tf1_ef_{side}.jsonl')}"],
            f"tf1_ef_{side}.log",
        )
    _add_both(
        report,
        "extract_features JSON lines",
        lambda a, b: compare_json_files(a, b, json_lines=True),
        lambda side: run.path(f"tf1_ef_{side}.jsonl"),
    )
    flags = _pretraining_data_flags()
    for side in TF1_SIDES:
        starts[side](
            "create_pretraining_data",
            [*flags, f"--output_file={run.path(f'tf1_cpd_{side}.tfrecord')}"],
            f"tf1_cpd_{side}.log",
        )
    _add_both(
        report,
        "create_pretraining_data records",
        compare_records,
        lambda side: run.path(f"tf1_cpd_{side}.tfrecord"),
    )


def _check_tf1_squad(run, report, pretrained):
    """run_squad: run_tf1 trains (v2 data); the three predict v1 and v2 from that checkpoint."""
    for version in ("v1", "v2"):
        fixtures.write_squad(run.path(f"squad_{version}.json"), version == "v2")
    common = [
        f"--vocab_file={VOCAB}",
        f"--bert_config_file={run.path('bert_config.json')}",
        *fixtures.SQUAD_FLAGS,
    ]
    trained = run.path("tf1_sq_trained")
    if os.path.exists(trained):
        shutil.rmtree(trained)
    run.tf1(
        "run_squad",
        [
            *common,
            f"--init_checkpoint={pretrained}",
            "--do_train",
            "--train_batch_size=4",
            "--num_train_epochs=2",
            "--learning_rate=1e-3",
            "--version_2_with_negative",
            f"--train_file={run.path('squad_v2.json')}",
            f"--output_dir={trained}",
        ],
        "tf1_sq_trained.log",
    )
    checkpoint = newest_checkpoint(trained)
    for version in ("v1", "v2"):
        flags = [*common, "--do_predict", f"--predict_file={run.path(f'squad_{version}.json')}"]
        if version == "v2":
            flags.append("--version_2_with_negative")
        _three_ways(
            run,
            "run_squad",
            flags,
            lambda side, v=version: run.path(f"tf1_sq_{v}_{side}"),
            f"tf1_sq_{version}",
            checkpoint,
        )
        names = ["predictions.json", "nbest_predictions.json"]
        if version == "v2":
            names.append("null_odds.json")
        for name in names:
            _add_both(
                report,
                f"run_squad {version} {name}",
                compare_json_files,
                lambda side, v=version, n=name: run.path(f"tf1_sq_{v}_{side}", n),
            )
