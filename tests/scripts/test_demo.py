"""demo.sh end to end at a reduced size, checking what each step produced.

The demo runs the real scripts; here it runs with a small vocabulary, one
copy of the corpus, 10 pretraining steps and a fraction of an epoch of
fine-tuning, and every output is checked against what it must hold: counts
taken from the inputs, the specified result keys, the tokenizer's own view of
the sentences, and the exported SavedModel against the predictions file.
"""

import json
import os
import re
import sys

import numpy as np
import pytest
from helpers import REPO, run_command

SEQ = 32
STEPS = 10
EPOCHS = 0.2
VOCAB_SIZE = 600

# Every test here runs demo.sh.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "demo"
    env = dict(
        DEMO_OUTPUT=str(out),
        DEMO_VOCAB_SIZE=str(VOCAB_SIZE),
        DEMO_DUPE_FACTOR="1",
        DEMO_SEQ_LENGTH=str(SEQ),
        DEMO_PRETRAIN_STEPS=str(STEPS),
        DEMO_EPOCHS=str(EPOCHS),
        DEMO_CUSTOM_EPOCHS=str(EPOCHS),
        PYTHON=sys.executable,
    )
    result = run_command(["bash", os.path.join(REPO, "demo.sh")], env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out, result.stdout


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def _results(path):
    return dict(line.split(" = ") for line in _lines(path))


def test_every_step_ran_and_said_where_its_output_is(demo):
    out, stdout = demo
    for step in range(1, 8):
        assert f"=== {step}/7 " in stdout
    for script in (
        "create_vocab",
        "create_pretraining_data",
        "run_pretraining",
        "run_classifier",
        "run_ner",
        "extract_features",
    ):
        assert re.search(rf"^\$ \S*python\S* {script}\.py --", stdout, re.M), script
    assert "=== Summary" in stdout
    assert f"{out}/classifier/test_results.tsv" in stdout


def test_vocabulary_and_config(demo):
    out, _ = demo
    vocab = _lines(out / "vocab.txt")
    assert len(vocab) == VOCAB_SIZE
    for token in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"):
        assert token in vocab
    with open(out / "bert_config.json", encoding="utf-8") as f:
        config = json.load(f)
    assert config["vocab_size"] == len(vocab)
    assert config["max_position_embeddings"] >= SEQ


def test_pretraining_data_and_model(demo):
    import tensorflow as tf

    out, stdout = demo
    records = sum(1 for _ in tf.data.TFRecordDataset(str(out / "pretraining_data.tfrecord")))
    assert f"pretraining_data.tfrecord: {records} examples" in stdout
    assert records > 100
    first = tf.train.Example.FromString(
        next(iter(tf.data.TFRecordDataset(str(out / "pretraining_data.tfrecord")))).numpy()
    )
    assert len(first.features.feature["input_ids"].int64_list.value) == SEQ
    assert os.path.exists(out / "pretraining" / f"model.ckpt-{STEPS}.index")
    results = _results(out / "pretraining" / "eval_results.txt")
    assert sorted(results) == [
        "global_step",
        "loss",
        "masked_lm_accuracy",
        "masked_lm_loss",
        "next_sentence_accuracy",
        "next_sentence_loss",
    ]
    assert int(results["global_step"]) == STEPS


def test_classifier_eval_predict_and_export(demo):
    import tensorflow as tf

    import tokenization

    out, stdout = demo
    train_rows = len(_lines(os.path.join(REPO, "demo_data", "sentiment", "train.tsv"))) - 1
    results = _results(out / "classifier" / "eval_results.txt")
    assert sorted(results) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
    steps = int(train_rows / 32 * EPOCHS)
    assert int(results["global_step"]) == steps
    assert 0.0 <= float(results["eval_accuracy"]) <= 1.0
    # Fewer steps than --eval_every_n_steps: the one evaluation is the final one,
    # which is then the best, kept in best/ beside the one newest checkpoint.
    history = [json.loads(line) for line in _lines(out / "classifier" / "eval_history.jsonl")]
    assert [entry["global_step"] for entry in history] == [steps]
    assert _lines(out / "classifier" / "best" / "checkpoint")[0] == (
        f'model_checkpoint_path: "model.ckpt-{steps}"'
    )
    assert _results(out / "classifier" / "best" / "eval_results.txt") == results
    assert f"best checkpoint       {out}/classifier/best/model.ckpt-{steps}" in stdout

    test_rows = _lines(os.path.join(REPO, "demo_data", "sentiment", "test.tsv"))[1:]
    predictions = [
        [float(x) for x in line.split("\t")]
        for line in _lines(out / "classifier" / "test_results.tsv")
    ]
    assert len(predictions) == len(test_rows)
    np.testing.assert_allclose([sum(p) for p in predictions], 1.0, atol=1e-5)

    # The SavedModel gives the probabilities predict wrote, from ids built here.
    tokenizer = tokenization.FullTokenizer(str(out / "vocab.txt"), do_lower_case=True)
    ids, masks = [], []
    for row in test_rows[:4]:
        tokens = ["[CLS]"] + tokenizer.tokenize(row.split("\t")[1])[: SEQ - 2] + ["[SEP]"]
        token_ids = tokenizer.convert_tokens_to_ids(tokens)
        ids.append(token_ids + [0] * (SEQ - len(token_ids)))
        masks.append([1] * len(token_ids) + [0] * (SEQ - len(token_ids)))
    serve = tf.saved_model.load(str(out / "classifier_export")).signatures["serving_default"]
    served = serve(
        input_ids=tf.constant(ids, tf.int32),
        input_mask=tf.constant(masks, tf.int32),
        segment_ids=tf.zeros([len(ids), SEQ], tf.int32),
    )["probabilities"].numpy()
    np.testing.assert_allclose(served, predictions[:4], atol=1e-5)


def test_ner_tagger_eval_and_predictions(demo):
    import tensorflow as tf

    out, stdout = demo
    windows = sum(1 for _ in tf.data.TFRecordDataset(str(out / "ner" / "train.tf_record")))
    results = _results(out / "ner" / "eval_results.txt")
    assert sorted(results) == [
        "eval_f1",
        "eval_f1_LOC",
        "eval_f1_MISC",
        "eval_f1_ORG",
        "eval_f1_PER",
        "eval_loss",
        "eval_precision",
        "eval_recall",
        "eval_token_accuracy",
        "global_step",
    ]
    assert int(results["global_step"]) == int(windows / 32 * EPOCHS)
    assert all(0.0 <= float(v) <= 1.0 for k, v in results.items() if k.startswith("eval_f1"))
    test = _lines(os.path.join(REPO, "demo_data", "ner", "test.txt"))
    predicted = _lines(out / "ner" / "test_predictions.txt")
    assert len(predicted) == len(test)
    assert [p.rsplit(" ", 1)[0] if p else "" for p in predicted] == test
    assert "dev entity F1" in stdout


def test_features(demo):
    import tokenization

    out, stdout = demo
    tokenizer = tokenization.FullTokenizer(str(out / "vocab.txt"), do_lower_case=True)
    inputs = _lines(out / "sentences.txt")
    records = [json.loads(line) for line in _lines(out / "features.jsonl")]
    assert [r["linex_index"] for r in records] == list(range(len(inputs)))
    for text, record in zip(inputs, records):
        expected = ["[CLS]"]
        for part in text.split(" ||| "):
            expected += tokenizer.tokenize(part) + ["[SEP]"]
        assert [f["token"] for f in record["features"]] == expected
        for feature in record["features"]:
            assert [layer["index"] for layer in feature["layers"]] == [-1, -2]
            assert all(len(layer["values"]) == 128 for layer in feature["layers"])
        assert f"{len(expected)} tokens" in stdout


def test_refuses_an_output_directory_it_did_not_make(tmp_path):
    keep = tmp_path / "mine"
    keep.mkdir()
    (keep / "precious.txt").write_text("keep\n")
    result = run_command(["bash", os.path.join(REPO, "demo.sh")], env={"DEMO_OUTPUT": str(keep)})
    assert result.returncode != 0
    assert "was not made by demo.sh" in result.stderr
    assert (keep / "precious.txt").read_text() == "keep\n"


@pytest.mark.slow
def test_custom_data_step_reads_its_csv_and_jsonl_and_predicts_plain_text(demo):
    from bert_lib.export.predictor import Predictor

    out, stdout = demo
    sentiment = os.path.join(REPO, "demo_data", "sentiment")
    train_rows = len(_lines(os.path.join(sentiment, "train.tsv"))) - 1
    assert len(_lines(out / "sentiment_custom" / "train.csv")) == train_rows + 1
    assert _lines(out / "custom" / "labels.txt") == ["negative", "positive"]
    results = _results(out / "custom" / "eval_results.txt")
    assert sorted(results) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
    test_rows = len(_lines(os.path.join(sentiment, "test.tsv"))) - 1
    predictions = [
        [float(x) for x in line.split("\t")]
        for line in _lines(out / "custom" / "test_results.tsv")
    ]
    assert len(predictions) == test_rows

    texts = _lines(out / "texts.txt")
    records = [json.loads(line) for line in _lines(out / "custom" / "text_predictions.jsonl")]
    assert [r["text_a"] for r in records] == texts
    served = Predictor(str(out / "custom_export"))(texts)
    for record, answer in zip(records, served):
        assert record["label"] == answer["label"]
        assert list(record["probabilities"]) == ["negative", "positive"]
        np.testing.assert_allclose(
            list(record["probabilities"].values()),
            list(answer["probabilities"].values()),
            atol=1e-5,
        )
    assert "predictor.Predictor on" in stdout


@pytest.mark.slow
def test_pooled_sentence_vectors_are_the_mean_of_the_last_layer(demo):
    out, _ = demo
    records = [json.loads(line) for line in _lines(out / "features.jsonl")]
    pooled = np.load(out / "features.pooled.npy")
    assert pooled.shape == (len(records), 128)
    for record, vector in zip(records, pooled):
        last = np.array([f["layers"][0]["values"] for f in record["features"]])  # layer -1
        np.testing.assert_allclose(vector, last.mean(axis=0), atol=2e-6)
