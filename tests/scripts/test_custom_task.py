"""Whole runs of run_classifier.py --task_name=custom on files the tests write."""

import ast
import csv
import json
import random

import numpy as np
import pytest
from classifier_helpers import FILLER, model_files, read_eval_results, run_classifier_script
from helpers import error_line

import tokenization
from bert_lib.export.predictor import Predictor

pytestmark = pytest.mark.slow

COMMON = [
    "--max_seq_length=16",
    "--train_batch_size=16",
    "--learning_rate=2e-3",
    "--tf_random_seed=1",
]


def _sentences(rng, count, extra_words=(), p=0.5):
    rows = []
    for _ in range(count):
        words = [rng.choice(FILLER) for _ in range(rng.randint(3, 7))]
        for word in extra_words:
            if rng.random() < p:
                words.insert(rng.randint(0, len(words)), word)
        rows.append(" ".join(words))
    return rows


def _sentiment(text):
    return "pos" if "good" in text.split() else "neg"


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)


def _test_results(path):
    return np.array([[float(v) for v in line.split("\t")] for line in open(path)])


def _jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def single_label_run(tmp_path_factory):
    """Train, eval, predict, predict a text file and export on an unbalanced csv task."""
    root = tmp_path_factory.mktemp("custom")
    rng = random.Random(3)
    data = root / "data"
    data.mkdir()
    # About one text in four holds "good": the classes are unbalanced.
    train, dev, test = (_sentences(rng, n, ["good"], p=0.25) for n in (96, 40, 20))
    _write_csv(
        data / "train.csv",
        ["id", "review", "sentiment"],
        [(i, t, _sentiment(t)) for i, t in enumerate(train)],
    )
    _write_csv(
        data / "dev.csv",
        ["id", "review", "sentiment"],
        [(i, t, _sentiment(t)) for i, t in enumerate(dev)],
    )
    _write_csv(data / "test.csv", ["id", "review"], [(i, t) for i, t in enumerate(test)])
    (root / "texts.txt").write_text("\n".join(test) + "\n\n", encoding="utf-8")
    vocab, config = model_files(root)
    out = root / "out"
    model_flags = [f"--vocab_file={vocab}", f"--bert_config_file={config}", *COMMON]
    proc = run_classifier_script(
        "--task_name=custom",
        "--do_train",
        "--do_eval",
        "--do_predict",
        f"--data_dir={data}",
        f"--output_dir={out}",
        "--text_a_column=review",
        "--label_column=sentiment",
        "--class_weights=balanced",
        "--num_train_epochs=10",
        f"--predict_text_file={root / 'texts.txt'}",
        f"--export_dir={root / 'export'}",
        *model_flags,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {
        "root": root,
        "out": out,
        "data": data,
        "test": test,
        "dev": dev,
        "train": train,
        "flags": model_flags,
        "log": proc.stderr,
    }


def test_labels_come_sorted_from_the_training_file_and_are_written(single_label_run):
    assert (single_label_run["out"] / "labels.txt").read_text() == "neg\npos\n"
    # Balanced weights n / (2 * count) from the training file.
    counts = [sum(_sentiment(t) == y for t in single_label_run["train"]) for y in ("neg", "pos")]
    expected = {y: 96 / (2 * c) for y, c in zip(("neg", "pos"), counts)}
    line = [ln for ln in single_label_run["log"].splitlines() if "Class weights:" in ln][0]
    logged = ast.literal_eval(line.split("Class weights: ", 1)[1])
    assert logged == pytest.approx(expected)


def test_custom_run_learns_and_writes_the_usual_outputs(single_label_run):
    result = read_eval_results(single_label_run["out"] / "eval_results.txt")
    assert sorted(result) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
    assert float(result["eval_accuracy"]) >= 0.9
    probabilities = _test_results(single_label_run["out"] / "test_results.tsv")
    assert probabilities.shape == (20, 2)
    gold = [_sentiment(t) == "pos" for t in single_label_run["test"]]
    assert np.mean(probabilities.argmax(axis=1) == gold) >= 0.9


def test_text_file_predictions_match_the_test_set_run(single_label_run):
    out = single_label_run["out"]
    records = _jsonl(out / "text_predictions.jsonl")
    probabilities = _test_results(out / "test_results.tsv")
    assert [r["text_a"] for r in records] == single_label_run["test"]  # blank line skipped
    for record, row in zip(records, probabilities):
        assert list(record) == ["text_a", "label", "probabilities"]
        assert list(record["probabilities"]) == ["neg", "pos"]
        np.testing.assert_allclose(list(record["probabilities"].values()), row, atol=1e-5)
        assert record["label"] == ["neg", "pos"][int(row.argmax())]
    assert not (out / "text.tf_record").exists()


def test_predictor_answers_raw_strings_like_the_script(single_label_run):
    predictor = Predictor(str(single_label_run["root"] / "export"))
    assert predictor.labels == ["neg", "pos"]
    texts = single_label_run["test"]
    records = predictor(texts)
    expected = _jsonl(single_label_run["out"] / "text_predictions.jsonl")
    assert [r["label"] for r in records] == [r["label"] for r in expected]
    for got, want in zip(records, expected):
        np.testing.assert_allclose(
            list(got["probabilities"].values()), list(want["probabilities"].values()), atol=1e-5
        )
    assert predictor([]) == []


def test_a_later_predict_run_reuses_labels_txt(single_label_run, tmp_path):
    # Only a test file, in JSON lines; the labels come from output_dir/labels.txt.
    data = tmp_path / "data"
    data.mkdir()
    with open(data / "test.jsonl", "w", encoding="utf-8") as f:
        for text in single_label_run["test"]:
            f.write(json.dumps({"review": text}) + "\n")
    out = single_label_run["out"]
    before = (out / "test_results.tsv").read_text()
    (out / "test_results.tsv").unlink()
    args = [
        "--task_name=custom",
        "--do_predict",
        f"--data_dir={data}",
        f"--output_dir={out}",
        "--text_a_column=review",
        *single_label_run["flags"],
    ]
    proc = run_classifier_script(*args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    np.testing.assert_allclose(
        _test_results(out / "test_results.tsv"),
        np.array([[float(v) for v in ln.split("\t")] for ln in before.splitlines()]),
        atol=1e-6,
    )
    proc = run_classifier_script(*args, "--labels=pos,neg")
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == (
        f"ERROR: --labels=pos,neg differs from {out / 'labels.txt'} (neg,pos) of an earlier "
        "run; use another --output_dir"
    )


def test_bad_dev_row_is_named_and_nothing_is_trained(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _write_csv(data / "train.csv", ["text", "label"], [("good movie", "pos"), ("bad", "neg")])
    _write_csv(data / "dev.csv", ["text", "label"], [("a dog", "neg"), ("a cat", "maybe")])
    vocab, config = model_files(tmp_path)
    out = tmp_path / "out"
    proc = run_classifier_script(
        "--task_name=custom",
        "--do_train",
        "--do_eval",
        f"--data_dir={data}",
        f"--output_dir={out}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        *COMMON,
    )
    assert error_line(proc) == (
        f"ERROR: {data / 'dev.csv'}, line 3: label 'maybe' is not one of neg, pos"
    )
    assert not out.exists()


def _topics(text):
    words = text.split()
    topics = []
    if "good" in words:
        topics.append("praise")
    if "dog" in words or "cat" in words:
        topics.append("pets")
    if "not" in words:
        topics.append("negation")
    return topics


def _numpy_multi_label_metrics(gold, probabilities, threshold):
    """Micro/macro F1 and subset accuracy, counted here independently of classifier_data."""
    predicted = probabilities >= threshold
    f1s, tp_all, fp_all, fn_all = [], 0, 0, 0
    for c in range(gold.shape[1]):
        tp = int(np.sum(gold[:, c] & predicted[:, c]))
        fp = int(np.sum(~gold[:, c] & predicted[:, c]))
        fn = int(np.sum(gold[:, c] & ~predicted[:, c]))
        f1s.append(2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0)
        tp_all, fp_all, fn_all = tp_all + tp, fp_all + fp, fn_all + fn
    return {
        "eval_micro_f1": 2 * tp_all / (2 * tp_all + fp_all + fn_all),
        "eval_macro_f1": sum(f1s) / len(f1s),
        "eval_subset_accuracy": float(np.mean([all(g == p) for g, p in zip(gold, predicted)])),
    }


def test_multi_label_run_reports_f1_and_subset_accuracy_of_its_probabilities(tmp_path):
    rng = random.Random(5)
    data = tmp_path / "data"
    data.mkdir()
    train, dev = _sentences(rng, 96, ["good"]), _sentences(rng, 30, ["good"])
    with open(data / "train.jsonl", "w", encoding="utf-8") as f:
        for text in train:
            f.write(json.dumps({"text": text, "label": ";".join(_topics(text))}) + "\n")
    with open(data / "dev.jsonl", "w", encoding="utf-8") as f:
        for text in dev:
            f.write(json.dumps({"text": text, "label": _topics(text)}) + "\n")  # a JSON list
    with open(data / "test.jsonl", "w", encoding="utf-8") as f:
        for text in dev:
            f.write(json.dumps({"text": text}) + "\n")  # unlabeled
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(dev[:6]) + "\n", encoding="utf-8")
    vocab, config = model_files(tmp_path)
    out = tmp_path / "out"
    proc = run_classifier_script(
        "--task_name=custom",
        "--multi_label",
        "--label_delimiter=;",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--num_train_epochs=8",
        "--multi_label_threshold=0.4",
        "--class_weights=praise:2",
        f"--data_dir={data}",
        f"--output_dir={out}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        *COMMON,
        f"--predict_text_file={texts}",
        f"--export_dir={tmp_path / 'export'}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    labels = ["negation", "pets", "praise"]
    assert (out / "labels.txt").read_text() == "".join(f"{x}\n" for x in labels)
    result = read_eval_results(out / "eval_results.txt")
    assert sorted(result) == [
        "eval_loss",
        "eval_macro_f1",
        "eval_micro_f1",
        "eval_subset_accuracy",
        "global_step",
        "loss",
    ]
    probabilities = _test_results(out / "test_results.tsv")  # the dev texts again
    assert probabilities.shape == (30, 3)
    gold = np.array([[x in _topics(t) for x in labels] for t in dev])
    expected = _numpy_multi_label_metrics(gold, probabilities, 0.4)
    for key, value in expected.items():
        assert float(result[key]) == pytest.approx(value, abs=1e-6), key
    p = np.clip(probabilities, 1e-7, 1 - 1e-7)
    bce = -(gold * np.log(p) + (1 - gold) * np.log(1 - p))
    assert float(result["eval_loss"]) == pytest.approx(float(bce.mean()), rel=1e-3)
    assert expected["eval_micro_f1"] >= 0.6  # the topics are learnable

    # Plain-text predictions and the Predictor name every class at or above the threshold.
    records = _jsonl(out / "text_predictions.jsonl")
    served = Predictor(str(tmp_path / "export"))(dev[:6])
    for record, answer, row in zip(records, served, probabilities[:6]):
        assert list(record) == ["text_a", "labels", "probabilities"]
        assert record["labels"] == [x for x, p in zip(labels, row) if p >= 0.4]
        assert answer["labels"] == record["labels"]
        np.testing.assert_allclose(list(record["probabilities"].values()), row, atol=1e-5)
        np.testing.assert_allclose(list(answer["probabilities"].values()), row, atol=1e-5)


def test_long_texts_average_the_probabilities_of_their_windows(tmp_path, monkeypatch):
    import tensorflow as tf

    rng = random.Random(9)
    data = tmp_path / "data"
    data.mkdir()
    texts = [
        " ".join(rng.choice(FILLER + ["good"]) for _ in range(rng.randint(4, 15)))
        for _ in range(64)
    ]
    _write_csv(data / "train.csv", ["text", "label"], [(t, _sentiment(t)) for t in texts[:48]])
    _write_csv(data / "dev.csv", ["text", "label"], [(t, _sentiment(t)) for t in texts[48:]])
    _write_csv(data / "test.csv", ["text"], [(t,) for t in texts[48:]])
    vocab, config = model_files(tmp_path)
    out = tmp_path / "out"
    proc = run_classifier_script(
        "--task_name=custom",
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--long_text_windows",
        "--window_stride=3",
        "--max_seq_length=8",
        "--num_train_epochs=2",
        "--train_batch_size=16",
        "--learning_rate=2e-3",
        "--tf_random_seed=1",
        f"--data_dir={data}",
        f"--output_dir={out}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        f"--export_dir={tmp_path / 'export'}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    probabilities = _test_results(out / "test_results.tsv")
    assert probabilities.shape == (16, 2)

    # Windows of 6 pieces starting 3 apart, served one by one, then averaged here.
    tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=True)
    serve = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    expected = []
    for text in texts[48:]:
        pieces = tokenizer.tokenize(text)
        starts = [0]
        while starts[-1] + 6 < len(pieces):
            starts.append(starts[-1] + 3)
        windows = [["[CLS]"] + pieces[s : s + 6] + ["[SEP]"] for s in starts]
        ids = [tokenizer.convert_tokens_to_ids(w) + [0] * (8 - len(w)) for w in windows]
        masks = [[1] * len(w) + [0] * (8 - len(w)) for w in windows]
        served = serve(
            input_ids=tf.constant(ids),
            input_mask=tf.constant(masks),
            segment_ids=tf.zeros([len(ids), 8], tf.int32),
        )["probabilities"]
        expected.append(served.numpy().mean(axis=0))
    assert max(len(tokenizer.tokenize(t)) for t in texts[48:]) > 9  # some have 3+ windows
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)

    result = read_eval_results(out / "eval_results.txt")
    gold = np.array([_sentiment(t) == "pos" for t in texts[48:]], int)
    assert float(result["eval_accuracy"]) == pytest.approx(
        float(np.mean(probabilities.argmax(axis=1) == gold)), abs=1e-6
    )
    loss = -np.log(probabilities[np.arange(16), gold]).mean()
    assert float(result["eval_loss"]) == pytest.approx(float(loss), rel=1e-4)
