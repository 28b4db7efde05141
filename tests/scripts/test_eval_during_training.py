"""Evaluating while training, end to end in run_classifier.py, run_squad.py and
run_pretraining.py: the history file, output_dir/best and early stopping.

Whether a run should have stopped, and which checkpoint is best, is worked
out here from the numbers the history file records, by the rule as stated
(a new best is strictly better; loss-like keys lower, others higher); the
kept checkpoint is then checked by evaluating or serving it again.
"""

import json
import os
import random

import numpy as np
import pytest
import tensorflow as tf
from classifier_helpers import (
    model_files,
    read_eval_results,
    run_classifier_script,
    sst2_flags,
    synthetic_rows,
    write_sst2_data,
)
from helpers import GOLDEN, error_line, run_script, tiny_bert_config, write_bert_config
from squad_helpers import run_squad_script, toy_model_flags, toy_squad, write_json

from bert_lib import engine
from bert_lib.export.predictor import Predictor

pytestmark = pytest.mark.slow


def _history(output_dir):
    with open(os.path.join(output_dir, "eval_history.jsonl")) as f:
        return [json.loads(line) for line in f]


def _expected_run(history, metric, patience=None):
    """(best step, stop step or None) by the rule, from the recorded results."""
    lower = "loss" in metric
    best = best_step = None
    since = 0
    for entry in history:
        value = entry[metric]
        if best is None or (value < best if lower else value > best):
            best, best_step, since = value, entry["global_step"], 0
        else:
            since += 1
        if patience is not None and since == patience:
            return best_step, entry["global_step"]
    return best_step, None


def _best_step(output_dir):
    return engine.checkpoint_step(engine.newest_checkpoint(os.path.join(output_dir, "best")))


def test_classifier_keeps_the_best_stops_early_and_serves_the_best(tmp_path):
    rng = random.Random(7)
    train, dev, test = (synthetic_rows(rng, n) for n in (96, 40, 8))
    data = write_sst2_data(tmp_path / "data", train, dev, test)
    vocab, config = model_files(tmp_path)
    out = tmp_path / "out"
    common = [
        *sst2_flags(data, vocab, config),
        "--max_seq_length=16",
    ]
    proc = run_classifier_script(
        *common,
        "--do_train",
        "--do_eval",
        "--train_batch_size=16",
        "--learning_rate=2e-3",
        "--num_train_epochs=10",  # 60 steps
        "--tf_random_seed=1",
        f"--output_dir={out}",
        "--eval_every_n_steps=6",
        "--best_checkpoint_metric=eval_accuracy",
        "--early_stopping_patience=3",
        "--keep_checkpoint_max=1",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    history = _history(out)
    best_step, stop_step = _expected_run(history, "eval_accuracy", patience=3)
    # This seed learns the task at step 24 and then cannot beat accuracy 1.0.
    assert stop_step is not None and stop_step < 60
    assert [entry["global_step"] for entry in history] == list(range(6, stop_step + 1, 6))
    assert f"Early stopping at step {stop_step}" in proc.stderr
    # Rotation keeps one checkpoint in output_dir, the stop step; best/ keeps its own.
    state = tf.train.get_checkpoint_state(str(out))
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        f"model.ckpt-{stop_step}"
    ]
    assert best_step != stop_step
    assert not (out / f"model.ckpt-{best_step}.index").exists()
    assert _best_step(out) == best_step
    best_results = read_eval_results(out / "best" / "eval_results.txt")
    entry = next(e for e in history if e["global_step"] == best_step)
    assert sorted(best_results) == sorted(entry)
    for key, value in entry.items():
        assert float(best_results[key]) == pytest.approx(value, rel=1e-6)
    # eval_results.txt is the final (stop) checkpoint's, as without the new flags.
    final = read_eval_results(out / "eval_results.txt")
    assert int(final["global_step"]) == stop_step
    assert float(final["eval_loss"]) == pytest.approx(history[-1]["eval_loss"], rel=1e-6)
    assert sorted(os.listdir(out / "eval"))

    # The best directory as --init_checkpoint: the same dev numbers, and an export of it.
    again = tmp_path / "again"
    export = tmp_path / "export"
    proc = run_classifier_script(
        *common,
        "--do_eval",
        f"--output_dir={again}",
        f"--init_checkpoint={out / 'best'}",
        f"--export_dir={export}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    evaluated = read_eval_results(again / "eval_results.txt")
    for key in ("eval_accuracy", "eval_loss"):
        assert float(evaluated[key]) == pytest.approx(float(best_results[key]), rel=1e-5)
    # The export serves the best weights: its dev accuracy and loss, in numpy.
    probabilities = np.array(
        [
            [row["probabilities"][label] for label in ("0", "1")]
            for row in Predictor(str(export))([text for text, _ in dev])
        ]
    )
    gold = np.array([label for _, label in dev])
    accuracy = np.mean(probabilities.argmax(axis=1) == gold)
    loss = -np.mean(np.log(probabilities[np.arange(len(gold)), gold]))
    assert accuracy == pytest.approx(float(best_results["eval_accuracy"]), abs=1e-6)
    assert loss == pytest.approx(float(best_results["eval_loss"]), rel=1e-4)


def test_squad_keeps_the_checkpoint_of_the_best_f1(tmp_path):
    train, _ = toy_squad(160, seed=1)
    dev, _ = toy_squad(24, seed=2)
    out = tmp_path / "out"
    proc = run_squad_script(
        toy_model_flags(tmp_path)
        + [
            "--do_train",
            "--do_predict",
            "--max_seq_length=24",
            "--doc_stride=8",
            "--max_query_length=8",
            "--train_batch_size=16",
            "--learning_rate=1e-3",
            "--num_train_epochs=2",  # 20 steps
            "--tf_random_seed=7",
            f"--train_file={write_json(tmp_path / 'train.json', train)}",
            f"--predict_file={write_json(tmp_path / 'dev.json', dev)}",
            f"--output_dir={out}",
            "--eval_every_n_steps=8",
            "--best_checkpoint_metric=f1",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    history = _history(out)
    # Every 8 steps and the last step.
    assert [entry["global_step"] for entry in history] == [8, 16, 20]
    assert all(sorted(entry) == ["exact_match", "f1", "global_step"] for entry in history)
    best_step, _ = _expected_run(history, "f1")
    assert _best_step(out) == best_step
    best = (out / "best" / "eval_results.txt").read_text()
    entry = next(e for e in history if e["global_step"] == best_step)
    # eval_results.txt holds float32 text ("20.833334" for 20.833333333333332).
    lines = [line.split(" = ") for line in best.splitlines()]
    assert [key for key, _ in lines] == ["exact_match", "f1"]
    for key, value in lines:
        assert float(value) == pytest.approx(entry[key], rel=1e-6), key
    # The output_dir files are the final checkpoint's, predicted once more by no one.
    final = [line.split(" = ") for line in (out / "eval_results.txt").read_text().splitlines()]
    assert [key for key, _ in final] == ["exact_match", "f1"]
    for key, value in final:
        assert float(value) == pytest.approx(history[-1][key], rel=1e-6), key
    assert proc.stderr.count("Writing predictions to") == 3


def test_squad_refuses_periodic_evaluation_without_gold_answers(tmp_path):
    train, _ = toy_squad(16, seed=1)
    plain = tmp_path / "questions.jsonl"
    plain.write_text('{"context": "w1 marker w2", "question": "what follows marker ?"}\n')
    proc = run_squad_script(
        toy_model_flags(tmp_path)
        + [
            "--do_train",
            "--do_predict",
            f"--train_file={write_json(tmp_path / 'train.json', train)}",
            f"--predict_file={plain}",
            f"--output_dir={tmp_path / 'out'}",
            "--max_seq_length=24",
            "--max_query_length=8",
            "--eval_every_n_steps=8",
        ]
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"ERROR: --eval_every_n_steps scores the predictions on --predict_file, but {plain} "
        "has no gold answers"
    )
    assert not (tmp_path / "out" / "train.tf_record").exists()


def test_pretraining_keeps_the_lowest_masked_lm_loss(tmp_path):
    config = write_bert_config(
        tmp_path / "bert_config.json",
        **tiny_bert_config(
            30522,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            max_position_embeddings=128,
        ),
    )
    out = tmp_path / "out"
    proc = run_script(
        "run_pretraining.py",
        f"--bert_config_file={config}",
        f"--input_file={os.path.join(GOLDEN, 'pretraining', 'default.tfrecord')}",
        f"--output_dir={out}",
        "--do_train",
        "--do_eval",
        "--train_batch_size=4",
        "--eval_batch_size=4",
        "--num_train_steps=12",
        "--num_warmup_steps=2",
        "--learning_rate=2e-3",
        "--max_eval_steps=3",
        "--tf_random_seed=11",
        "--eval_every_n_steps=4",
        "--best_checkpoint_metric=masked_lm_loss",
        "--early_stopping_patience=5",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    history = _history(out)
    assert [entry["global_step"] for entry in history] == [4, 8, 12]
    best_step, _ = _expected_run(history, "masked_lm_loss")
    assert _best_step(out) == best_step
    entry = next(e for e in history if e["global_step"] == best_step)
    best = dict(
        line.split(" = ") for line in (out / "best" / "eval_results.txt").read_text().splitlines()
    )
    assert sorted(best) == sorted(entry)
    assert float(best["masked_lm_loss"]) == pytest.approx(entry["masked_lm_loss"], rel=1e-6)
    final = (out / "eval_results.txt").read_text()
    assert "global_step = 12\n" in final
    # Loss is minimised: no recorded step has a lower masked LM loss than the best.
    assert min(e["masked_lm_loss"] for e in history) == entry["masked_lm_loss"]


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            ["--do_train", "--do_eval", "--distribution_strategy=multi_worker"],
            "--eval_every_n_steps does not run under --distribution_strategy=multi_worker; "
            "evaluate the saved checkpoints in a separate job",
        ),
        (["--do_train"], "--eval_every_n_steps needs --do_train and --do_eval"),
    ],
)
def test_pretraining_refuses_evaluation_it_cannot_run_before_any_work(tmp_path, flags, message):
    config = write_bert_config(tmp_path / "bert_config.json", 30522, max_position_embeddings=128)
    out = tmp_path / "out"
    proc = run_script(
        "run_pretraining.py",
        f"--bert_config_file={config}",
        f"--input_file={os.path.join(GOLDEN, 'pretraining', 'default.tfrecord')}",
        f"--output_dir={out}",
        "--eval_every_n_steps=2",
        *flags,
    )
    assert error_line(proc) == f"ERROR: {message}"
    assert not out.exists()
