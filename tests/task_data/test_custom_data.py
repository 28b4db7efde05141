"""The user-data pieces of run_classifier.py: file reading, labels, weights, metrics, loss math."""

import json
import os

import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from helpers import GOLDEN, VOCAB_UNCASED, load_script, tiny_bert_config, write_text

from bert_lib.export import predictor
from bert_lib.task_data import (
    classifier_data,
    classifier_features,
    classifier_metrics,
    classifier_output,
    classifier_tasks,
    custom_data,
    label_set,
)


@pytest.fixture(scope="module")
def rc():
    return load_script("run_classifier")


def test_csv_tsv_and_jsonl_give_the_same_rows_with_their_line_numbers(tmp_path):
    csv_path = write_text(
        tmp_path / "train.csv",
        'label,text\npos,"good, very good"\n\nneg,"two\nlines"\nneg,bad\n',
    )
    tsv_path = write_text(
        tmp_path / "a.tsv", 'label\ttext\npos\tgood, very good\n\nneg\ttwo\nneg\t"bad\n'
    )
    jsonl_path = write_text(
        tmp_path / "b.jsonl",
        '{"text": "good, very good", "label": "pos"}\n\n{"text": "bad", "label": 3}\n',
    )
    rows = custom_data.read_rows(csv_path)
    assert [dict(r) for r in rows] == [
        {"label": "pos", "text": "good, very good"},
        {"label": "neg", "text": "two\nlines"},
        {"label": "neg", "text": "bad"},
    ]
    assert [r.line_number for r in rows] == [2, 4, 6]
    rows = custom_data.read_rows(tsv_path)  # no quoting in TSV
    assert [r["text"] for r in rows] == ["good, very good", "two", '"bad']
    assert [r.line_number for r in rows] == [2, 4, 5]
    rows = custom_data.read_rows(jsonl_path)
    assert [r.line_number for r in rows] == [1, 3]
    assert custom_data.row_labels(rows[1], "label", False, "|") == "3"
    assert custom_data.row_labels(rows[0], "label", True, "|") == ("pos",)


def test_multi_label_fields_split_on_the_delimiter_or_come_as_json_lists(tmp_path):
    row = custom_data.Row({"y": " a | b||a ", "z": ["c", "a"], "e": ""}, "f", 1)
    assert custom_data.row_labels(row, "y", True, "|") == ("a", "b")
    assert custom_data.row_labels(row, "z", True, "|") == ("c", "a")
    assert custom_data.row_labels(row, "e", True, "|") == ()
    assert custom_data.row_labels(row, "missing", True, "|") is None


@pytest.mark.parametrize(
    "name,text,message",
    [
        ("train.csv", "text,label\na,b,c\n", "train.csv, line 2: 3 fields, but the header has 2"),
        ("train.tsv", "text\tlabel\nok\tx\nbad\n", "train.tsv, line 3: 1 fields, but the header"),
        ("train.jsonl", '{"text": "a"}\n{"text": \n', "train.jsonl, line 2: not JSON"),
        ("train.jsonl", '["a"]\n', "train.jsonl, line 1: not a JSON object"),
    ],
)
def test_malformed_rows_are_named_by_file_and_line(tmp_path, name, text, message):
    with pytest.raises(ValueError, match=message):
        custom_data.read_rows(write_text(tmp_path / name, text))


def test_split_files_are_found_by_extension(tmp_path):
    with pytest.raises(ValueError, match=r"no dev file \(looked for dev.csv, dev.tsv, dev.jsonl"):
        custom_data.find_split_file(str(tmp_path), "dev")
    write_text(tmp_path / "dev.jsonl", "")
    assert custom_data.find_split_file(str(tmp_path), "dev") == str(tmp_path / "dev.jsonl")
    write_text(tmp_path / "dev.csv", "")
    with pytest.raises(ValueError, match="several dev files"):
        custom_data.find_split_file(str(tmp_path), "dev")


def test_custom_processor_checks_labels_and_allows_an_unlabeled_test_file(rc, tmp_path):
    write_text(tmp_path / "train.csv", "q,a,y\nhi,there,b\nyo,you,a\nx,z,b\n")
    write_text(
        tmp_path / "dev.jsonl", '{"q": "hi", "a": "x", "y": "a"}\n{"q": "o", "a": "p", "y": "c"}\n'
    )
    write_text(tmp_path / "test.tsv", "q\ta\nwhat\tnow\n")
    processor = custom_data.CustomProcessor(text_a_column="q", text_b_column="a", label_column="y")
    train = processor.get_train_examples(str(tmp_path))
    assert [(e.text_a, e.text_b, e.label) for e in train] == [
        ("hi", "there", "b"),
        ("yo", "you", "a"),
        ("x", "z", "b"),
    ]
    assert label_set.labels_from_examples([[e.label] for e in train]) == ["a", "b"]
    processor.set_labels(["a", "b"])
    with pytest.raises(ValueError, match=r"dev.jsonl, line 2: label 'c' is not one of a, b"):
        processor.get_dev_examples(str(tmp_path))
    (test,) = processor.get_test_examples(str(tmp_path))
    assert (test.text_a, test.text_b, test.label) == ("what", "now", "a")
    write_text(tmp_path / "train.csv", "q,y\nhi,b\n")
    with pytest.raises(ValueError, match=r"train.csv, line 2: no 'a' column"):
        processor.get_train_examples(str(tmp_path))


class _Example:
    def __init__(self, label):
        self.label = label


def test_balanced_class_weights_are_inverse_frequencies_counted_by_hand():
    examples = [_Example(y) for y in ["a", "a", "a", "b", "b", "c"]]
    # n / (k * count): 6 / (3 * 3), 6 / (3 * 2), 6 / (3 * 1)
    weights = custom_data.parse_class_weights("balanced", ["a", "b", "c"], examples, False)
    np.testing.assert_allclose(weights, [2 / 3, 1.0, 2.0])
    multi = [_Example(y) for y in [("a", "b"), ("a",), ("b",), ("a",)]]
    weights = custom_data.parse_class_weights("balanced", ["a", "b"], multi, True)
    np.testing.assert_allclose(weights, [4 / (2 * 3), 4 / (2 * 2)])
    assert custom_data.parse_class_weights("c:3, a:0.5", ["a", "b", "c"], None, False) == [
        0.5,
        1.0,
        3.0,
    ]
    with pytest.raises(ValueError, match="'d:2' is not label:weight with a label of a, b"):
        custom_data.parse_class_weights("d:2", ["a", "b"], None, False)
    with pytest.raises(ValueError, match="label 'c' never occurs in the training set"):
        custom_data.parse_class_weights("balanced", ["a", "b", "c"], examples[:5], False)


def test_multi_label_metrics_match_hand_counts():
    gold = [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 0]]
    probabilities = [[0.9, 0.2, 0.4], [0.1, 0.7, 0.5], [0.8, 0.6, 0.1], [0.2, 0.3, 0.1]]
    # Predicted at 0.5: [1,0,0], [0,1,1], [1,1,0], [0,0,0].
    # Class 0: tp 2. Class 1: tp 2. Class 2: fn 1, fp 1. Micro: tp 4, fp 1, fn 1.
    result = classifier_metrics.multi_label_metrics(gold, probabilities, 0.5)
    assert result["eval_micro_f1"] == pytest.approx(8 / 10)
    assert result["eval_macro_f1"] == pytest.approx((1 + 1 + 0) / 3)
    assert result["eval_subset_accuracy"] == pytest.approx(2 / 4)
    result = classifier_metrics.multi_label_metrics(gold, probabilities, 0.45)
    assert result["eval_subset_accuracy"] == pytest.approx(2 / 4)  # row 1 now [0,1,1]
    assert result["eval_micro_f1"] == pytest.approx(8 / 10)


def test_window_spans_cover_the_text_with_overlap():
    assert classifier_features.window_spans(3, 4, 2) == [(0, 3)]
    assert classifier_features.window_spans(10, 4, 3) == [(0, 4), (3, 4), (6, 4)]
    assert classifier_features.window_spans(9, 4, 3) == [(0, 4), (3, 4), (6, 3)]
    assert classifier_features.window_spans(6, 4, 4) == [(0, 4), (4, 2)]


def test_windows_of_a_long_text_carry_its_label(rc, tmp_path):
    import tokenization

    vocab = write_text(tmp_path / "v.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nb\nc\nd\ne\nf\n")
    tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=True)
    example = rc.InputExample("x", "a b c d e f", None, "1")
    windows = classifier_features.convert_example_windows(0, example, ["0", "1"], 6, tokenizer, 2)
    # Four pieces a window, starting 2 apart: a b c d | c d e f.
    assert [w.input_ids for w in windows] == [[2, 4, 5, 6, 7, 3], [2, 6, 7, 8, 9, 3]]
    assert all(w.label_id == 1 and w.input_mask == [1] * 6 for w in windows)
    short_example = rc.InputExample("y", "a b", None, "0")
    short = classifier_features.convert_example_windows(
        0, short_example, ["0", "1"], 6, tokenizer, 2
    )
    assert [w.input_ids for w in short] == [[2, 4, 5, 3, 0, 0]]
    combined = classifier_metrics.combine_windows(
        [[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]], [0, 0, 1], 2
    )
    np.testing.assert_allclose(combined, [[0.4, 0.6], [0.5, 0.5]], rtol=1e-6)


def _head_outputs(rc, labels, num_labels, **kwargs):
    import modeling

    config = modeling.BertConfig.from_dict(tiny_bert_config(20))
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(1)
        ids = tf.constant([[2, 5, 6, 3], [2, 9, 3, 0], [2, 7, 8, 3]], tf.int32)
        mask = tf.cast(ids > 0, tf.int32)
        loss, per_example, logits, probabilities = rc.create_model(
            config,
            False,
            ids,
            mask,
            tf.zeros_like(ids),
            tf.constant(labels),
            num_labels,
            False,
            **kwargs,
        )
        bias = [v for v in tf.compat.v1.global_variables() if v.op.name == "output_bias"][0]
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(bias.assign(np.linspace(-1, 1, num_labels).astype(np.float32)))
            return [
                np.asarray(v, np.float64)
                for v in sess.run([loss, per_example, logits, probabilities])
            ]


def test_multi_label_loss_with_class_weights_matches_numpy(rc):
    gold = np.array([[1, 0, 1], [0, 0, 0], [1, 1, 1]])
    weights = [0.5, 2.0, 1.5]
    loss, per_example, logits, probabilities = _head_outputs(
        rc, gold.astype(np.int32), 3, multi_label=True, class_weights=weights
    )
    sigmoid = 1 / (1 + np.exp(-logits))
    np.testing.assert_allclose(probabilities, sigmoid, rtol=1e-5)
    bce = -(gold * np.log(sigmoid) + (1 - gold) * np.log(1 - sigmoid))
    np.testing.assert_allclose(per_example, bce.mean(axis=1), rtol=1e-5)
    assert loss == pytest.approx(float((bce * weights).mean()), rel=1e-5)
    unweighted, *_ = _head_outputs(rc, gold.astype(np.int32), 3, multi_label=True)
    assert unweighted == pytest.approx(float(bce.mean()), rel=1e-5)


def test_single_label_class_weights_scale_each_example_loss(rc):
    labels = np.array([2, 0, 2], np.int32)
    weights = [0.25, 1.0, 3.0]
    loss, per_example, logits, probabilities = _head_outputs(rc, labels, 3, class_weights=weights)
    cross_entropy = -npr.log_softmax(logits, axis=1)[np.arange(3), labels]
    np.testing.assert_allclose(per_example, cross_entropy, rtol=1e-5)
    expected = np.mean(np.array(weights)[labels] * cross_entropy)
    assert loss == pytest.approx(float(expected), rel=1e-5)
    assert loss != pytest.approx(float(cross_entropy.mean()), rel=1e-3)


def _golden_records():
    with open(os.path.join(GOLDEN, "tokenization", "expected.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_predictor_encoder_gives_the_original_tokenizer_ids_on_the_golden_inputs(do_lower_case):
    records = [r for r in _golden_records() if r["do_lower_case"] == do_lower_case]
    assert records
    encode = predictor.TextEncoder(VOCAB_UNCASED, do_lower_case, 64)
    inputs = encode([r["text"] for r in records])
    cls, sep = 101, 102  # [CLS] and [SEP] in the uncased vocabulary
    for row, record in enumerate(records):
        expected = [cls] + record["ids"] + [sep]
        padding = [0] * (64 - len(expected))
        assert inputs["input_ids"][row].tolist() == expected + padding, record["text"]
        assert inputs["input_mask"][row].tolist() == [1] * len(expected) + padding
        assert inputs["segment_ids"][row].tolist() == [0] * 64
    pair = encode([(records[0]["text"], records[1]["text"])])
    expected = [cls] + records[0]["ids"] + [sep] + records[1]["ids"] + [sep]
    assert pair["input_ids"][0, : len(expected)].tolist() == expected
    assert pair["segment_ids"][0].tolist() == (
        [0] * (len(records[0]["ids"]) + 2)
        + [1] * (len(records[1]["ids"]) + 1)
        + [0] * (64 - len(expected))
    )


@pytest.fixture
def parse_flags(rc, tmp_path):
    """Parses run_classifier flags in-process with a tiny model; undone after the test."""
    from absl import flags
    from classifier_helpers import model_files

    vocab, config = model_files(tmp_path)

    def parse(*args):
        flags.FLAGS.unparse_flags()
        flags.FLAGS(
            [
                "run_classifier.py",
                f"--vocab_file={vocab}",
                f"--bert_config_file={config}",
                f"--data_dir={tmp_path}",
                f"--output_dir={tmp_path / 'out'}",
                "--max_seq_length=16",
                *args,
            ]
        )

    yield parse
    flags.FLAGS.unparse_flags()


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["--task_name=sst-2", "--do_train", "--multi_label"],
            "--multi_label needs --task_name=custom",
        ),
        (
            ["--task_name=custom", "--do_train", "--long_text_windows", "--window_stride=15"],
            "--window_stride=15 must be between 1 and max_seq_length - 2 = 14",
        ),
        (["--task_name=custom", "--do_predict"], "no train file in --data_dir="),
        (["--task_name=sts-b", "--do_eval", "--class_weights=balanced"], "is a regression task"),
        (["--task_name=custom", "--do_predict", "--labels=a,,b"], "--labels=a,,b: empty label"),
        (["--task_name=custom", "--do_predict", "--labels=a"], "needs at least two labels"),
        (
            ["--task_name=custom", "--predict_text_file=/no/such.txt"],
            "--predict_text_file: no such file: /no/such.txt",
        ),
    ],
)
def test_new_flag_errors_come_before_any_work(rc, parse_flags, tmp_path, args, message):
    parse_flags(*args)
    with pytest.raises(ValueError) as info:
        rc.main([])
    assert message in str(info.value)
    assert not (tmp_path / "out").exists()


def test_text_file_lines_become_examples_and_records(rc, tmp_path):
    path = write_text(tmp_path / "t.txt", "one text\n\n  a ||| b  \nx ||| y ||| z\n")
    examples = classifier_features.read_text_examples(
        path, classifier_tasks.task_kind(["neg", "pos"], False)
    )
    assert [(e.text_a, e.text_b) for e in examples] == [
        ("one text", None),
        ("a", "b"),
        ("x ||| y", "z"),
    ]
    records = classifier_output.prediction_records(
        [(e.text_a, e.text_b) for e in examples[:2]],
        [[0.3, 0.7], [0.9, 0.1]],
        classifier_tasks.task_kind(["neg", "pos"], False),
        0.5,
    )
    assert records == [
        {"text_a": "one text", "label": "pos", "probabilities": {"neg": 0.3, "pos": 0.7}},
        {"text_a": "a", "text_b": "b", "label": "neg", "probabilities": {"neg": 0.9, "pos": 0.1}},
    ]
    (multi,) = classifier_output.prediction_records(
        [("t", None)], [[0.6, 0.2, 0.5]], classifier_tasks.task_kind(["a", "b", "c"], True), 0.5
    )
    assert multi["labels"] == ["a", "c"]
    with pytest.raises(ValueError, match="no text in the file"):
        classifier_features.read_text_examples(
            write_text(tmp_path / "e.txt", "\n \n"), classifier_tasks.task_kind(None, False)
        )


def test_a_csv_saved_by_excel_with_a_byte_order_mark_is_read(tmp_path):
    """Excel's "CSV UTF-8" starts the file with U+FEFF; it is not part of the first name."""
    path = tmp_path / "train.csv"
    path.write_bytes("\ufefftext,label\nsehr gut,pos\n".encode("utf-8"))
    (row,) = custom_data.read_rows(str(path))
    assert custom_data.row_text(row, "text") == "sehr gut"
    assert custom_data.row_labels(row, "label", False, "|") == "pos"


def test_a_non_utf8_row_names_the_file_and_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_bytes(b"text\tlabel\ngood\tpos\ncaf\xe9\tneg\n")
    with pytest.raises(classifier_data.UsageError, match=r"train.tsv: line 3 is not UTF-8 text"):
        custom_data.read_rows(str(path))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda d: str(d / "missing"), "no such directory"),
        (lambda d: write_text(d / "file", "x"), "a file, not a SavedModel export"),
        (lambda d: write_text(d / "checkpoint", "x") and str(d), "a checkpoint directory"),
        (lambda d: str(d), r"not a SavedModel export \(no saved_model.pb\)"),
    ],
    ids=["missing", "file", "checkpoint_dir", "other_dir"],
)
def test_predictor_says_what_a_directory_that_is_no_export_is(tmp_path, make, message):
    path = make(tmp_path)
    with pytest.raises(predictor.UsageError, match=message):
        predictor.Predictor(path)


def test_labels_txt_is_read_whatever_its_line_ends_and_saved_only_once(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    write_text(out / "labels.txt", "neg\r\n pos \r\n\r\n")
    assert label_set.read_labels_file(str(out / "labels.txt")) == ["neg", "pos"]
    label_set.save(str(out), ["x", "y"])
    assert (out / "labels.txt").read_bytes() == b"neg\r\n pos \r\n\r\n"

    def no_training():
        raise AssertionError("labels.txt is there: the training set is not read")

    assert label_set.resolve(str(out), None, no_training) == (
        ["neg", "pos"],
        str(out / "labels.txt"),
    )
    assert label_set.resolve(str(out), "neg, pos", no_training) == (["neg", "pos"], "--labels")
    with pytest.raises(
        ValueError, match=r"--labels=pos,neg differs from .*labels.txt \(neg,pos\)"
    ):
        label_set.resolve(str(out), "pos,neg", no_training)
    with pytest.raises(ValueError, match=r"--labels=a,a: a label is given twice"):
        label_set.parse_labels_flag("a,a")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert label_set.resolve(str(fresh), None, lambda: (["b", "a"], "train")) == (
        ["b", "a"],
        "train",
    )
    label_set.save(str(fresh), ["b", "a"])
    assert (fresh / "labels.txt").read_text() == "b\na\n"
    assert label_set.labels_from_examples([["c"], ["a", "c"]], first=["O"]) == ["O", "a", "c"]
