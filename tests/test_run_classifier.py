"""run_classifier.py: feature conversion, records, the model head and whole runs."""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from conftest import load_script

import tokenization

# id:     0       1       2       3       4        5      6      7     8        9      10
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "is", "hairy", "cat",
         "##s", "run", "good", "bad", "movie", "a", "very", "not", "."]  # fmt: skip


@pytest.fixture(scope="module")
def rc():
    return load_script("run_classifier")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("".join(token + "\n" for token in VOCAB), encoding="utf-8")
    return tokenization.FullTokenizer(str(path), do_lower_case=True)


def _convert(rc, tokenizer, text_a, text_b=None, label="1", max_seq_length=8, labels=("0", "1")):
    example = rc.InputExample("t-0", text_a, text_b, label)
    return rc.convert_single_example(
        0, example, None if labels is None else list(labels), max_seq_length, tokenizer
    )


def test_single_sentence_is_wrapped_and_padded(rc, tokenizer):
    f = _convert(rc, tokenizer, "The dog is hairy")
    # [CLS] the dog is hairy [SEP] then padding
    assert f.input_ids == [2, 5, 6, 7, 8, 3, 0, 0]
    assert f.input_mask == [1, 1, 1, 1, 1, 1, 0, 0]
    assert f.segment_ids == [0] * 8
    assert f.label_id == 1
    assert f.is_real_example is True


def test_single_sentence_is_cut_to_max_length_minus_two(rc, tokenizer):
    f = _convert(rc, tokenizer, "the dog is hairy .", max_seq_length=5)
    assert f.input_ids == [2, 5, 6, 7, 3]  # [CLS] the dog is [SEP]
    assert f.input_mask == [1] * 5


def test_pair_truncation_trims_the_longer_side_then_b_on_ties(rc, tokenizer):
    # a = the dog is hairy (4 pieces), b = cat ##s run (3); room for 8 - 3 = 5.
    # 4+3: a is longer -> a loses "hairy"; 3+3: tie -> b loses "run".
    f = _convert(rc, tokenizer, "the dog is hairy", "cats run", label="0")
    assert f.input_ids == [2, 5, 6, 7, 3, 9, 10, 3]
    assert f.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1]
    assert f.input_mask == [1] * 8
    assert f.label_id == 0


def test_pair_shorter_than_max_keeps_segments_and_pads(rc, tokenizer):
    f = _convert(rc, tokenizer, "good movie", "a bad cat", max_seq_length=10, label="1")
    # [CLS] good movie [SEP] a bad cat [SEP] pad pad
    assert f.input_ids == [2, 12, 14, 3, 15, 13, 9, 3, 0, 0]
    assert f.segment_ids == [0, 0, 0, 0, 1, 1, 1, 1, 0, 0]
    assert f.input_mask == [1] * 8 + [0, 0]


def test_unknown_word_and_regression_label(rc, tokenizer):
    f = _convert(rc, tokenizer, "zebra dog", "good", label="3.25", labels=None)
    assert f.input_ids == [2, 1, 6, 3, 12, 3, 0, 0]
    assert f.label_id == 3.25


def test_unknown_label_is_a_value_error(rc, tokenizer):
    with pytest.raises(ValueError, match="label '2' is not one of 0, 1"):
        _convert(rc, tokenizer, "the dog", label="2")


def test_padding_example_is_all_zeros_and_not_real(rc, tokenizer):
    f = rc.convert_single_example(0, rc.PaddingInputExample(), ["0", "1"], 6, tokenizer)
    assert f.input_ids == f.input_mask == f.segment_ids == [0] * 6
    assert f.label_id == 0
    assert f.is_real_example is False


def test_truncate_alias_stays_importable(rc):
    a, b = [1, 2, 3, 4], [5, 6]
    rc._truncate_seq_pair(a, b, 4)
    assert (a, b) == ([1, 2], [5, 6])


def test_records_round_trip_through_the_input_fn(rc, tokenizer, tmp_path):
    examples = [
        rc.InputExample("a", "the dog", None, "1"),
        rc.InputExample("b", "cats", "good movie", "0"),
        rc.PaddingInputExample(),
    ]
    path = str(tmp_path / "eval.tf_record")
    rc.file_based_convert_examples_to_features(examples, ["0", "1"], 8, tokenizer, path)
    assert os.listdir(tmp_path) == ["eval.tf_record"]

    first = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(path))).numpy())
    assert sorted(first.features.feature) == [
        "input_ids", "input_mask", "is_real_example", "label_ids", "segment_ids"
    ]  # fmt: skip

    input_fn = rc.file_based_input_fn_builder(path, 8, is_training=False, drop_remainder=False)
    batches = list(input_fn({"batch_size": 2}))
    assert [b["input_ids"].shape[0] for b in batches] == [2, 1]
    batch = batches[0]
    assert batch["input_ids"].dtype == tf.int32
    np.testing.assert_array_equal(
        batch["input_ids"].numpy(), [[2, 5, 6, 3, 0, 0, 0, 0], [2, 9, 10, 3, 12, 14, 3, 0]]
    )
    np.testing.assert_array_equal(batch["segment_ids"].numpy()[1], [0, 0, 0, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(batch["label_ids"].numpy(), [1, 0])
    np.testing.assert_array_equal(batches[1]["is_real_example"].numpy(), [0])


def test_regression_records_hold_float_labels(rc, tokenizer, tmp_path):
    path = str(tmp_path / "train.tf_record")
    examples = [rc.InputExample("a", "the dog", "cats", "4.5")]
    rc.file_based_convert_examples_to_features(examples, None, 8, tokenizer, path)
    input_fn = rc.file_based_input_fn_builder(
        path, 8, is_training=False, drop_remainder=False, is_regression=True
    )
    batch = next(iter(input_fn({"batch_size": 4})))
    assert batch["label_ids"].dtype == tf.float32
    np.testing.assert_allclose(batch["label_ids"].numpy(), [4.5])


def _tiny_config(tmp_path, hidden=32):
    config = {
        "vocab_size": len(VOCAB),
        "hidden_size": hidden,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 64,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
    }
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(config))
    return str(path)


@pytest.mark.parametrize("is_regression", [False, True])
def test_head_variables_and_math(rc, tmp_path, is_regression):
    import modeling

    config = modeling.BertConfig.from_json_file(_tiny_config(tmp_path))
    num_labels = 1 if is_regression else 3
    graph = tf.Graph()
    with graph.as_default():
        ids = tf.constant([[2, 5, 6, 3, 0], [2, 9, 3, 12, 3]], dtype=tf.int32)
        mask = tf.constant([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=tf.int32)
        segments = tf.constant([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]], dtype=tf.int32)
        if is_regression:
            labels = tf.constant([1.5, 4.0], dtype=tf.float32)
        else:
            labels = tf.constant([2, 0], dtype=tf.int32)
        loss, per_example, logits, output = rc.create_model(
            config, False, ids, mask, segments, labels, num_labels, False,
            is_regression=is_regression,
        )  # fmt: skip
        head = {v.name: v for v in tf.compat.v1.global_variables() if "bert/" not in v.name}
        assert sorted(head) == ["output_bias:0", "output_weights:0"]
        assert head["output_weights:0"].shape.as_list() == [num_labels, 32]
        (pooled,) = [
            op.outputs[0]
            for op in graph.get_operations()
            if op.name.startswith("bert/pooler/") and op.type == "Tanh"
        ]
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(head["output_bias:0"].assign(np.arange(num_labels, dtype=np.float32) / 10))
            values = sess.run(
                [loss, per_example, logits, output, pooled, head["output_weights:0"],
                 head["output_bias:0"]]
            )  # fmt: skip
    loss_v, per_example_v, logits_v, output_v, pooled_v, w, b = values
    expected_logits = pooled_v.astype(np.float64) @ w.T.astype(np.float64) + b
    np.testing.assert_allclose(logits_v, expected_logits, rtol=1e-5, atol=1e-6)
    if is_regression:
        scores = expected_logits[:, 0]
        np.testing.assert_allclose(output_v, scores, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(per_example_v, (scores - [1.5, 4.0]) ** 2, rtol=1e-5)
    else:
        shifted = expected_logits - expected_logits.max(axis=1, keepdims=True)
        probs = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(output_v, probs, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            per_example_v, -np.log(probs[[0, 1], [2, 0]]), rtol=1e-5, atol=1e-6
        )
    assert loss_v == pytest.approx(float(np.mean(per_example_v)), rel=1e-6)
