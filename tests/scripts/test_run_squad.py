"""run_squad.py end to end: it learns a toy SQuAD task, and bad input fails in one line."""

import inspect
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from helpers import error_line
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
    write_vocab,
)

import modeling
import tokenization
from bert_lib.task_data import squad_answers, squad_data, squad_features, squad_scoring


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
            "exact",
            "f1",
            "total",
            "HasAns_exact",
            "HasAns_f1",
            "HasAns_total",
            "NoAns_exact",
            "NoAns_f1",
            "NoAns_total",
            "best_exact",
            "best_exact_thresh",
            "best_f1",
            "best_f1_thresh",
        ]
    )
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
    lines = [line for line in proc.stderr.splitlines() if line.startswith("ERROR: ")]
    assert len(lines) == 1, proc.stderr[-3000:]
    return error_line(proc)


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


# The original script's public names (and the private helpers user code imports),
# with the parameters of those whose settings came from flags.
ORIGINAL_NAMES = {
    "flags": None,
    "FLAGS": None,
    "SquadExample": None,
    "InputFeatures": None,
    "read_squad_examples": ["input_file", "is_training"],
    "convert_examples_to_features": None,
    "create_model": None,
    "model_fn_builder": None,
    "input_fn_builder": None,
    "RawResult": None,
    "write_predictions": [
        "all_examples",
        "all_features",
        "all_results",
        "n_best_size",
        "max_answer_length",
        "do_lower_case",
        "output_prediction_file",
        "output_nbest_file",
        "output_null_log_odds_file",
    ],
    "get_final_text": ["pred_text", "orig_text", "do_lower_case"],
    "FeatureWriter": None,
    "validate_flags_or_throw": ["bert_config"],
    "main": None,
    "_improve_answer_span": None,
    "_check_is_max_context": None,
    "_get_best_indexes": None,
    "_compute_softmax": None,
}
# Ours, which docs/squad.md documents in the data modules (the script keeps the original's
# names only).
DOCUMENTED_NAMES = {
    "squad_v1_scores": squad_scoring,
    "squad_v2_scores": squad_scoring,
    "read_simple_questions": squad_data,
}


def test_the_original_names_import_from_run_squad_with_their_parameters():
    rs = load_run_squad()
    for name, parameters in ORIGINAL_NAMES.items():
        assert hasattr(rs, name), name
        if parameters is not None:
            assert list(inspect.signature(getattr(rs, name)).parameters) == parameters, name
    for name, module in DOCUMENTED_NAMES.items():
        assert hasattr(module, name), name


@pytest.fixture
def parsed_flags():
    """Parses run_squad flags in-process; undone after the test."""
    from absl import flags

    load_run_squad()

    def parse(*args):
        flags.FLAGS.unparse_flags()
        flags.FLAGS(["run_squad.py", *args])

    yield parse
    flags.FLAGS.unparse_flags()


def test_the_original_signatures_take_their_settings_from_the_flags(parsed_flags, tmp_path):
    rs = load_run_squad()
    # A training question without "is_impossible" is refused only under SQuAD 2.0 rules.
    train = write_json(
        tmp_path / "train.json", squad_json([("a b", [qa("q1", "who", [("a", 0)])])])
    )
    parsed_flags()
    assert [e.qas_id for e in rs.read_squad_examples(train, True)] == ["q1"]
    parsed_flags("--version_2_with_negative")
    with pytest.raises(ValueError, match="missing key 'is_impossible'"):
        rs.read_squad_examples(train, True)

    # "[CLS] who [SEP] a b [SEP]": "a" (position 3) scores 3 + 3, no answer 1 + 1,
    # so null_odds.json holds 2 - 6 = -4, and only a threshold below that says "".
    predict = write_json(tmp_path / "predict.json", squad_json([("a b", [qa("q1", "who")])]))
    examples = rs.read_squad_examples(predict, False)
    features = []
    tokenizer = tokenization.FullTokenizer(write_vocab(tmp_path), do_lower_case=True)
    rs.convert_examples_to_features(examples, tokenizer, 16, 8, 8, False, features.append)
    logits = [1.0, 0.0, 0.0, 3.0] + [0.0] * 12
    results = [rs.RawResult(features[0].unique_id, logits, logits)]
    for args, answer, null_odds in (
        ([], "a", None),
        (["--version_2_with_negative"], "a", -4.0),
        (["--version_2_with_negative", "--null_score_diff_threshold=-5"], "", -4.0),
    ):
        parsed_flags(*args)
        out = tmp_path / str(len(args))
        out.mkdir()
        paths = [str(out / n) for n in ("predictions.json", "nbest.json", "null_odds.json")]
        rs.write_predictions(examples, features, results, 20, 30, True, *paths)
        with open(paths[0], encoding="utf-8") as f:
            assert json.load(f) == {"q1": answer}
        if null_odds is None:
            assert not os.path.exists(paths[2])
        else:
            with open(paths[2], encoding="utf-8") as f:
                assert json.load(f) == {"q1": null_odds}


@pytest.mark.parametrize("module", [squad_data, squad_features, squad_answers, squad_scoring])
def test_squad_data_takes_its_settings_as_arguments_not_flags(module):
    with open(module.__file__, encoding="utf-8") as f:
        source = f.read()
    assert "FLAGS" not in source
    assert "import flags" not in source
