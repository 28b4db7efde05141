"""extract_features.py against a direct BertModel run on the same tiny checkpoint."""

import collections
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from extract_features_helpers import (
    CONFIG,
    LINES,
    SEQ_LENGTH,
    VOCAB,
    run_extract_features,
    write_model_files,
)
from helpers import error_line, load_script

import modeling

# Word pieces and type ids worked out by hand (line 2 keeps its first 10 pieces).
EXPECTED = [
    (["[CLS]", "steve", "smith", "was", "born", "[SEP]"], [0] * 6),
    (["[CLS]", "who", "is", "[SEP]", "steve", "smith", "[SEP]"], [0] * 4 + [1] * 3),
    (
        ["[CLS]", "cafe", "(", "1895", "-", "1943", ")", ".", "was", "born", "who", "[SEP]"],
        [0] * 12,
    ),
    (["[CLS]", "[UNK]", "[SEP]", "was", "[SEP]"], [0, 0, 0, 1, 1]),
]


@pytest.fixture(scope="module")
def model_files(tmp_path_factory):
    return write_model_files(tmp_path_factory.mktemp("tiny_bert"))


def _reference_layers(model_files, token_lists, type_lists):
    """All encoder layers for the given inputs, from BertModel and the checkpoint."""
    vocab = {t: i for i, t in enumerate(VOCAB)}
    ids = np.zeros([len(token_lists), SEQ_LENGTH], np.int32)
    mask = np.zeros_like(ids)
    types = np.zeros_like(ids)
    for row, (tokens, type_ids) in enumerate(zip(token_lists, type_lists)):
        ids[row, : len(tokens)] = [vocab[t] for t in tokens]
        mask[row, : len(tokens)] = 1
        types[row, : len(tokens)] = type_ids
    config = modeling.BertConfig.from_dict(CONFIG)
    with tf.Graph().as_default():
        placeholders = [tf.compat.v1.placeholder(tf.int32, [None, SEQ_LENGTH]) for _ in range(3)]
        model = modeling.BertModel(
            config,
            is_training=False,
            input_ids=placeholders[0],
            input_mask=placeholders[1],
            token_type_ids=placeholders[2],
        )
        with tf.compat.v1.Session() as sess:
            tf.compat.v1.train.Saver().restore(sess, str(model_files / "model.ckpt"))
            feed = dict(zip(placeholders, (ids, mask, types)))
            return sess.run(model.get_all_encoder_layers(), feed)


@pytest.mark.slow
def test_output_equals_a_direct_bert_model_run(model_files, tmp_path):
    proc = run_extract_features(model_files, tmp_path, "-1,0,-2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert os.listdir(tmp_path / "out") == ["features.jsonl"]
    with open(tmp_path / "out" / "features.jsonl", encoding="utf-8") as f:
        lines = f.read().splitlines()
    assert len(lines) == len(LINES)

    reference = _reference_layers(model_files, *zip(*EXPECTED))
    for line_index, (line, (tokens, _)) in enumerate(zip(lines, EXPECTED)):
        record = json.loads(line, object_pairs_hook=collections.OrderedDict)
        assert line == json.dumps(record)  # default separators, keys in this order
        assert list(record) == ["linex_index", "features"]
        assert record["linex_index"] == line_index
        assert [f["token"] for f in record["features"]] == tokens
        for position, token_features in enumerate(record["features"]):
            assert list(token_features) == ["token", "layers"]
            assert [list(layer) for layer in token_features["layers"]] == [["index", "values"]] * 3
            assert [layer["index"] for layer in token_features["layers"]] == [-1, 0, -2]
            for layer in token_features["layers"]:
                values = np.array(layer["values"])
                expected = reference[layer["index"]][line_index, position]
                assert values.shape == (CONFIG["hidden_size"],)
                np.testing.assert_allclose(values, np.round(expected, 6), rtol=0, atol=1.5e-6)
                # Six decimals at most.
                assert all(v == round(v, 6) for v in layer["values"])
    # The layers really differ, so a wrong index would be caught.
    assert np.abs(reference[1] - reference[0]).max() > 0.1


def test_conversion_and_reading_in_process(model_files, tmp_path):
    ef = load_script("extract_features")
    import tokenization

    path = tmp_path / "in.txt"
    path.write_text("a ||| b\n\nsolo |||\n", encoding="utf-8")
    examples = ef.read_examples(str(path))
    assert [(e.unique_id, e.text_a, e.text_b) for e in examples] == [
        (0, "a", "b"),
        (1, "", None),
        (2, "solo |||", None),  # stripped first, so no " ||| " separator is left
    ]

    tokenizer = tokenization.FullTokenizer(str(model_files / "vocab.txt"), do_lower_case=True)
    pair = ef.InputExample(7, "steve smith was born", "who is")
    (feature,) = ef.convert_examples_to_features([pair], 8, tokenizer)
    # Five pieces fit: the longer text loses its tail first.
    assert feature.tokens == ["[CLS]", "steve", "smith", "was", "[SEP]", "who", "is", "[SEP]"]
    assert feature.input_type_ids == [0, 0, 0, 0, 0, 1, 1, 1]
    assert feature.unique_id == 7
    (feature,) = ef.convert_examples_to_features([ef.InputExample(0, "who", None)], 6, tokenizer)
    assert feature.input_ids == [2, 9, 3, 0, 0, 0]
    assert feature.input_mask == [1, 1, 1, 0, 0, 0]

    assert ef.parse_layers("-1,-2", 2) == [-1, -2]
    assert ef.parse_layers("0, 1", 2) == [0, 1]
    with pytest.raises(ValueError, match=r"--layers=-1,x: 'x' is not an integer"):
        ef.parse_layers("-1,x", 2)


@pytest.mark.slow
def test_a_layer_the_model_lacks_is_a_one_line_error(model_files, tmp_path):
    proc = run_extract_features(model_files, tmp_path, "-1,-2,-3,-4")
    expected = (
        "ERROR: --layers=-1,-2,-3,-4: layer -3 does not exist in a model with 2 layers (use -2..1)"
    )
    assert error_line(proc) == expected
    assert [line for line in proc.stderr.splitlines() if line.startswith("ERROR: ")] == [expected]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_pooled_vectors_match_numpy_over_the_per_token_output(model_files, tmp_path, pooling):
    proc = run_extract_features(model_files, tmp_path, "-2,-1", f"--pooling={pooling}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "out"
    assert sorted(os.listdir(out)) == [
        "features.jsonl",
        "features.pooled.jsonl",
        "features.pooled.npy",
    ]
    with open(out / "features.jsonl", encoding="utf-8") as f:
        per_token = [json.loads(line) for line in f]
    with open(out / "features.pooled.jsonl", encoding="utf-8") as f:
        pooled = [json.loads(line) for line in f]
    matrix = np.load(out / "features.pooled.npy")
    assert matrix.shape == (len(LINES), CONFIG["hidden_size"]) and matrix.dtype == np.float32
    for i, (tokens_record, record) in enumerate(zip(per_token, pooled)):
        assert list(record) == ["linex_index", "embedding"] and record["linex_index"] == i
        # The first layer of --layers (-2), over the word pieces the per-token output lists.
        vectors = np.array([t["layers"][0]["values"] for t in tokens_record["features"]])
        assert [t["layers"][0]["index"] for t in tokens_record["features"]] == [-2] * len(vectors)
        expected = vectors[0] if pooling == "cls" else vectors.mean(axis=0)
        np.testing.assert_allclose(record["embedding"], expected, rtol=0, atol=2e-6)
        np.testing.assert_allclose(matrix[i], record["embedding"], rtol=0, atol=1e-6)
    # Padding must not count: the mean over all 12 positions would differ.
    if pooling == "mean":
        short = np.array([t["layers"][0]["values"] for t in per_token[0]["features"]])
        assert len(short) < SEQ_LENGTH
        reference = _reference_layers(model_files, *zip(*EXPECTED))[-2][0]
        assert np.abs(reference.mean(axis=0) - short.mean(axis=0)).max() > 1e-3
