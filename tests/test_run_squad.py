"""run_squad.py end to end: it learns a toy SQuAD task, and bad input fails in one line."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from squad_helpers import (
    QUESTION,
    TOY_CONFIG,
    TOY_VOCAB,
    load_run_squad,
    qa,
    run_squad_script,
    squad_json,
    toy_model_flags,
    toy_squad,
    write_json,
)

import modeling


def _read_results(path):
    results = {}
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    keys = [line.split(" = ")[0] for line in lines]
    assert keys == sorted(keys)
    for line in lines:
        key, value = line.split(" = ")
        results[key] = float(value)
    return results


TRAIN_FLAGS = [
    "--do_train",
    "--do_predict",
    "--max_seq_length=24",
    "--doc_stride=8",
    "--max_query_length=8",
    "--train_batch_size=16",
    "--predict_batch_size=8",
    "--learning_rate=1e-3",
    "--num_train_epochs=15",
    "--tf_random_seed=7",
]


@pytest.mark.slow
def test_train_and_predict_learns_the_toy_task(tmp_path):
    train, _ = toy_squad(640, seed=1)
    dev, golds = toy_squad(40, seed=2)
    out = tmp_path / "out"
    proc = run_squad_script(
        toy_model_flags(tmp_path)
        + TRAIN_FLAGS
        + [
            f"--train_file={write_json(tmp_path / 'train.json', train)}",
            f"--predict_file={write_json(tmp_path / 'dev.json', dev)}",
            f"--output_dir={out}",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    with open(out / "predictions.json", encoding="utf-8") as f:
        predictions = json.load(f)
    assert list(predictions) == list(golds)
    correct = sum(predictions[qid] == gold for qid, gold in golds.items())
    # Chance is about one word in nine.
    assert correct >= 32, predictions

    results = _read_results(out / "eval_results.txt")
    assert sorted(results) == ["exact_match", "f1"]
    assert results["exact_match"] == pytest.approx(100.0 * correct / len(golds))
    assert results["f1"] >= results["exact_match"]

    with open(out / "nbest_predictions.json", encoding="utf-8") as f:
        nbest = json.load(f)
    assert [e["text"] for e in nbest["q0"]][0] == predictions["q0"]
    assert sum(e["probability"] for e in nbest["q0"]) == pytest.approx(1.0)
    assert not (out / "null_odds.json").exists()
    names = os.listdir(out)
    assert "train.tf_record" in names and "eval.tf_record" in names
    assert "model.ckpt-600.index" in names  # int(640 / 16 * 15) steps
    assert not [n for n in names if ".tmp-" in n]
    variables = dict(tf.train.list_variables(str(out / "model.ckpt-600")))
    assert variables["cls/squad/output_weights"] == [2, 64]
    assert variables["cls/squad/output_bias"] == [2]
    assert variables["bert/encoder/layer_1/output/LayerNorm/gamma"] == [64]


@pytest.mark.slow
def test_v2_training_learns_when_there_is_no_answer(tmp_path):
    train, _ = toy_squad(640, seed=3, impossible_fraction=0.3)
    dev, golds = toy_squad(40, seed=4, impossible_fraction=0.3)
    out = tmp_path / "out"
    proc = run_squad_script(
        toy_model_flags(tmp_path)
        + TRAIN_FLAGS
        + [
            "--version_2_with_negative",
            f"--train_file={write_json(tmp_path / 'train.json', train)}",
            f"--predict_file={write_json(tmp_path / 'dev.json', dev)}",
            f"--output_dir={out}",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    with open(out / "predictions.json", encoding="utf-8") as f:
        predictions = json.load(f)
    with open(out / "null_odds.json", encoding="utf-8") as f:
        null_odds = json.load(f)
    assert list(null_odds) == list(golds)
    # The default threshold 0.0: "" exactly when the null odds are positive.
    assert all((predictions[q] == "") == (null_odds[q] > 0.0) for q in golds)
    correct = sum(predictions[qid] == gold for qid, gold in golds.items())
    assert correct >= 28, predictions

    results = _read_results(out / "eval_results.txt")
    assert sorted(results) == sorted(
        [
            "exact", "f1", "total",
            "HasAns_exact", "HasAns_f1", "HasAns_total",
            "NoAns_exact", "NoAns_f1", "NoAns_total",
            "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh",
        ]
    )  # fmt: skip
    num_no_ans = sum(1 for g in golds.values() if not g)
    assert results["total"] == 40
    assert results["NoAns_total"] == num_no_ans
    assert results["exact"] == pytest.approx(100.0 * correct / 40)
    assert results["best_exact"] >= results["exact"]


def test_create_model_head_is_a_two_row_projection_of_the_sequence_output():
    rs = load_run_squad()
    config = modeling.BertConfig.from_dict(dict(TOY_CONFIG, initializer_range=0.5))
    rng = np.random.RandomState(0)
    ids = rng.randint(0, len(TOY_VOCAB), size=[3, 7]).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 5:] = 0
    segments = np.zeros_like(ids)
    segments[:, 4:] = 1
    with tf.Graph().as_default():
        ids, mask, segments = (tf.constant(x) for x in (ids, mask, segments))
        start, end = rs.create_model(config, False, ids, mask, segments, False)
        names = sorted(v.name for v in tf.compat.v1.trainable_variables() if "cls" in v.name)
        assert names == ["cls/squad/output_bias:0", "cls/squad/output_weights:0"]
        # The same encoder again, sharing the weights, for its sequence output.
        with tf.compat.v1.variable_scope(tf.compat.v1.get_variable_scope(), reuse=True):
            twin = modeling.BertModel(config, False, ids, mask, segments, scope="bert")
            weights = tf.compat.v1.get_variable("cls/squad/output_weights")
            bias = tf.compat.v1.get_variable("cls/squad/output_bias")
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(bias.assign([0.5, -0.25]))
            start, end, hidden, w, b = sess.run(
                [start, end, twin.get_sequence_output(), weights, bias]
            )
    assert start.shape == end.shape == (3, 7)
    np.testing.assert_allclose(start, hidden @ w[0] + b[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(end, hidden @ w[1] + b[1], rtol=1e-5, atol=1e-5)


def _error_line(proc):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("ERROR: ")]
    assert len(lines) == 1, proc.stderr[-3000:]
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["not_json", "missing_qas", "two_answers", "no_steps", "bad_flags"]
)
def test_bad_input_is_a_one_line_error(tmp_path, case):
    out = tmp_path / "out"
    args = toy_model_flags(tmp_path) + [f"--output_dir={out}"]
    good = write_json(tmp_path / "good.json", toy_squad(4, seed=5)[0])
    if case == "not_json":
        bad = tmp_path / "dev.json"
        bad.write_text('{"data": [', encoding="utf-8")
        args += [
            "--do_predict",
            f"--predict_file={bad}",
            "--max_seq_length=24",
            "--max_query_length=8",
        ]
        expected = [str(bad), "not a valid SQuAD JSON file"]
    elif case == "missing_qas":
        bad = write_json(tmp_path / "train.json", {"data": [{"paragraphs": [{"context": "a"}]}]})
        args += [
            "--do_train",
            f"--train_file={bad}",
            "--max_seq_length=24",
            "--max_query_length=8",
        ]
        expected = [bad, "missing key 'qas'", "data[0].paragraphs[0]"]
    elif case == "two_answers":
        two = squad_json([("w1 w2", [qa("id-77", QUESTION, [("w1", 0), ("w2", 3)])])])
        bad = write_json(tmp_path / "train.json", two)
        args += [
            "--do_train",
            "--do_predict",
            f"--train_file={bad}",
            f"--predict_file={good}",
            "--max_seq_length=24",
            "--max_query_length=8",
        ]
        expected = [bad, "question id id-77 has 2 answers"]
    elif case == "no_steps":
        args += [
            "--do_train",
            f"--train_file={good}",
            "--max_seq_length=24",
            "--max_query_length=8",
        ]
        expected = [good, "4 usable training questions make 0 steps", "--train_batch_size=32"]
    else:
        args += ["--do_predict", f"--predict_file={good}", "--max_seq_length=10"]
        expected = ["max_seq_length (10)", "max_query_length (64) + 3"]
    line = _error_line(run_squad_script(args))
    for text in expected:
        assert text in line
    assert not (out / "train.tf_record").exists()
    assert not (out / "predictions.json").exists()
