"""run_squad reading and windowing, checked against values worked out by hand."""

import pytest
import tensorflow as tf
from squad_helpers import load_run_squad, qa, squad_json, write_json, write_vocab

import tokenization
from bert_lib.task_data import squad_data, squad_features

# "a b playing c d played e f": ten word pieces
#   index: 0 1 2    3    4 5 6    7   8 9
#   piece: a b play ##ing c d play ##ed e f
# whose word indexes are 0 1 2 2 3 4 5 5 6 7.
WINDOW_CONTEXT = "a b playing c d played e f"


@pytest.fixture(scope="module")
def rs():
    return load_run_squad()


@pytest.fixture()
def tokenizer(tmp_path):
    return tokenization.FullTokenizer(write_vocab(tmp_path), do_lower_case=True)


def _features(rs, examples, tokenizer, max_seq_length, doc_stride, max_query_length, train):
    out = []
    rs.convert_examples_to_features(
        examples,
        tokenizer,
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
        max_query_length=max_query_length,
        is_training=train,
        output_fn=out.append,
    )
    return out


def _read(rs, tmp_path, paragraphs, train, v2=False):
    path = write_json(tmp_path / "squad.json", squad_json(paragraphs))
    return squad_data.read_squad_examples(path, is_training=train, version_2_with_negative=v2)


def test_context_splits_on_squad_whitespace_including_u202f(rs, tmp_path):
    # U+00A0 is not one of SQuAD's separators, so "x\u00a0y" stays one word.
    context = "Café\u202f(1895-1943).  x\u00a0y\tz\nw"
    examples = _read(rs, tmp_path, [(context, [qa("q1", "when ?")])], train=False)
    assert len(examples) == 1
    example = examples[0]
    assert example.doc_tokens == ["Café", "(1895-1943).", "x\u00a0y", "z", "w"]
    assert example.qas_id == "q1"
    assert example.question_text == "when ?"
    assert example.start_position is None and example.orig_answer_text is None

    _, char_to_word = squad_data.split_context(" ab c")
    assert char_to_word == [-1, 0, 0, 0, 1]


def test_training_answer_maps_to_words_and_is_refined_to_pieces(rs, tmp_path, tokenizer):
    context = "Café\u202f(1895-1943). steve smith's"
    # "1895" starts at character 6: C a f é U+202F ( 1
    examples = _read(rs, tmp_path, [(context, [qa("q1", "when ?", [("1895", 6)])])], train=True)
    example = examples[0]
    assert (example.start_position, example.end_position) == (1, 1)
    assert example.orig_answer_text == "1895"

    (feature,) = _features(rs, examples, tokenizer, 32, 8, 8, train=True)
    assert feature.tokens == [
        "[CLS]",
        "when",
        "?",
        "[SEP]",
        "cafe",
        "(",
        "1895",
        "-",
        "1943",
        ")",
        ".",
        "steve",
        "smith",
        "'",
        "s",
        "[SEP]",
    ]
    # The word "(1895-1943)." is pieces 1..6; the answer is piece 1895 alone.
    assert (feature.start_position, feature.end_position) == (6, 6)
    assert feature.token_to_orig_map == {
        4: 0,
        5: 1,
        6: 1,
        7: 1,
        8: 1,
        9: 1,
        10: 1,
        11: 2,
        12: 3,
        13: 3,
        14: 3,
    }
    assert all(feature.token_is_max_context.values())
    assert sorted(feature.token_is_max_context) == list(range(4, 15))
    vocab = tokenizer.vocab
    assert feature.input_ids == [vocab[t] for t in feature.tokens] + [0] * 16
    assert feature.input_mask == [1] * 16 + [0] * 16
    assert feature.segment_ids == [0] * 4 + [1] * 12 + [0] * 16
    assert feature.unique_id == 1000000000
    assert (feature.example_index, feature.doc_span_index) == (0, 0)


def test_windows_max_context_and_an_answer_split_across_windows(rs, tmp_path, tokenizer):
    # "c d played" starts at character 12 and covers pieces 4..7.
    examples = _read(
        rs,
        tmp_path,
        [(WINDOW_CONTEXT, [qa("q1", "who is", [("c d played", 12)])])],
        train=True,
    )
    # Query "who is" (2 pieces), max_seq_length 10: 5 document pieces a window,
    # stride 3 -> windows start at pieces 0, 3, 6 with lengths 5, 5, 4.
    features = _features(rs, examples, tokenizer, 10, 3, 64, train=True)
    assert [f.doc_span_index for f in features] == [0, 1, 2]
    assert [f.unique_id for f in features] == [1000000000, 1000000001, 1000000002]
    head = ["[CLS]", "who", "is", "[SEP]"]
    assert features[0].tokens == head + ["a", "b", "play", "##ing", "c", "[SEP]"]
    assert features[1].tokens == head + ["##ing", "c", "d", "play", "##ed", "[SEP]"]
    assert features[2].tokens == head + ["play", "##ed", "e", "f", "[SEP]"]

    assert features[0].token_to_orig_map == {4: 0, 5: 1, 6: 2, 7: 2, 8: 3}
    assert features[1].token_to_orig_map == {4: 2, 5: 3, 6: 4, 7: 5, 8: 5}
    assert features[2].token_to_orig_map == {4: 5, 5: 5, 6: 6, 7: 7}

    # Score min(left, right) + 0.01 * length per window, best window wins:
    # pieces 0-3 -> window 0, 4-6 -> window 1, 7-9 -> window 2.
    assert features[0].token_is_max_context == {4: True, 5: True, 6: True, 7: True, 8: False}
    assert features[1].token_is_max_context == {4: False, 5: True, 6: True, 7: True, 8: False}
    assert features[2].token_is_max_context == {4: False, 5: True, 6: True, 7: True}

    # Only the middle window holds all of pieces 4..7: positions 5..8 there.
    assert [(f.start_position, f.end_position) for f in features] == [(0, 0), (5, 8), (0, 0)]
    assert features[2].input_mask == [1] * 9 + [0]
    assert features[2].segment_ids == [0] * 4 + [1] * 5 + [0]
    assert features[0].input_mask == [1] * 10


def test_check_is_max_context_prefers_the_more_central_window(rs):
    spans = [squad_features.DocSpan(start=0, length=5), squad_features.DocSpan(start=3, length=5)]
    # Piece 3: window 0 has left 3 / right 1 (score 1.05), window 1 has 0 / 4 (0.05).
    assert rs._check_is_max_context(spans, 0, 3)
    assert not rs._check_is_max_context(spans, 1, 3)
    # Piece 4: window 0 gives 0.05, window 1 gives 1.05.
    assert rs._check_is_max_context(spans, 1, 4)
    # A tie goes to the first window: piece 3 of [0, 5) and of [2, 7) has
    # min(left, right) = 1 in both.
    tie = [squad_features.DocSpan(start=0, length=5), squad_features.DocSpan(start=2, length=5)]
    assert rs._check_is_max_context(tie, 0, 3)
    assert not rs._check_is_max_context(tie, 1, 3)


def test_window_length_breaks_equal_context(rs):
    # Piece 3 has min(left, right) = 1 in both [2, 6) and [0, 5); the longer
    # window scores 0.01 per token more, so it wins even though it is listed last.
    spans = [squad_features.DocSpan(start=2, length=4), squad_features.DocSpan(start=0, length=5)]
    assert not rs._check_is_max_context(spans, 0, 3)
    assert rs._check_is_max_context(spans, 1, 3)


def test_stride_longer_than_the_window_moves_by_the_window(rs, tmp_path, tokenizer):
    examples = _read(rs, tmp_path, [(WINDOW_CONTEXT, [qa("q1", "who is")])], train=False)
    # Five pieces a window; a stride of 8 would skip pieces, so windows abut.
    features = _features(rs, examples, tokenizer, 10, 8, 64, train=False)
    assert [f.tokens[4:-1] for f in features] == [
        ["a", "b", "play", "##ing", "c"],
        ["d", "play", "##ed", "e", "f"],
    ]
    assert all(all(f.token_is_max_context.values()) for f in features)


def test_improve_answer_span_tightens_or_keeps_the_word_span(rs, tokenizer):
    pieces = ["a", "b", "play", "##ing", "c"]
    # "play" annotated inside "playing": the piece "play" alone matches.
    assert rs._improve_answer_span(pieces, 2, 3, tokenizer, "play") == (2, 2)
    # "pla" tokenizes to [UNK], which matches nothing: the word span stays.
    assert rs._improve_answer_span(pieces, 2, 3, tokenizer, "pla") == (2, 3)
    assert rs._improve_answer_span(pieces, 0, 4, tokenizer, "b playing") == (1, 3)


def test_impossible_questions_point_at_cls_in_every_window(rs, tmp_path, tokenizer):
    examples = _read(
        rs,
        tmp_path,
        [(WINDOW_CONTEXT, [qa("q1", "who is", [], is_impossible=True)])],
        train=True,
        v2=True,
    )
    example = examples[0]
    assert example.is_impossible is True
    assert (example.start_position, example.end_position) == (-1, -1)
    assert example.orig_answer_text == ""
    features = _features(rs, examples, tokenizer, 10, 3, 64, train=True)
    assert len(features) == 3
    assert all((f.start_position, f.end_position) == (0, 0) for f in features)
    assert all(f.is_impossible for f in features)


def test_unfindable_answer_is_skipped_and_query_is_truncated(rs, tmp_path, tokenizer):
    paragraphs = [
        # The annotated text "cafe" is not in the word "café": skipped.
        ("a café b", [qa("skip", "what", [("cafe", 2)]), qa("keep", "what", [("b", 7)])]),
        # "Japanese"-style sub-word annotation is kept (find() succeeds).
        ("playing c", [qa("sub", "who is the what", [("play", 0)])]),
    ]
    examples = _read(rs, tmp_path, paragraphs, train=True)
    assert [e.qas_id for e in examples] == ["keep", "sub"]
    assert examples[0].doc_tokens == ["a", "café", "b"]
    assert (examples[0].start_position, examples[0].end_position) == (2, 2)

    features = _features(rs, examples[1:], tokenizer, 16, 8, 2, train=True)
    assert features[0].tokens[:4] == ["[CLS]", "who", "is", "[SEP]"]
    assert (features[0].start_position, features[0].end_position) == (4, 4)


def test_uncased_unicode_question_and_prediction_mode(rs, tmp_path, tokenizer):
    examples = _read(rs, tmp_path, [("STEVE Smith's", [qa("q", "WHO Is?")])], train=False)
    (feature,) = _features(rs, examples, tokenizer, 16, 8, 64, train=False)
    assert feature.tokens == [
        "[CLS]",
        "who",
        "is",
        "?",
        "[SEP]",
        "steve",
        "smith",
        "'",
        "s",
        "[SEP]",
    ]
    assert feature.token_to_orig_map == {5: 0, 6: 1, 7: 1, 8: 1}
    assert feature.start_position is None and feature.end_position is None


def test_feature_writer_records_and_input_fn(rs, tmp_path, tokenizer):
    examples = _read(
        rs,
        tmp_path,
        [(WINDOW_CONTEXT, [qa("q1", "who is", [("c d played", 12)])])],
        train=True,
    )
    features = _features(rs, examples, tokenizer, 10, 3, 64, train=True)
    path = str(tmp_path / "train.tf_record")
    writer = rs.FeatureWriter(path, is_training=True)
    for feature in features:
        writer.process_feature(feature)
    assert not tf.io.gfile.exists(path)  # only a temporary name until close()
    writer.close()
    assert writer.num_features == 3

    records = list(tf.compat.v1.io.tf_record_iterator(path))
    parsed = [tf.train.Example.FromString(r).features.feature for r in records]
    assert sorted(parsed[1].keys()) == [
        "end_positions",
        "input_ids",
        "input_mask",
        "is_impossible",
        "segment_ids",
        "start_positions",
        "unique_ids",
    ]
    assert [p["start_positions"].int64_list.value[0] for p in parsed] == [0, 5, 0]
    assert [p["end_positions"].int64_list.value[0] for p in parsed] == [0, 8, 0]
    assert list(parsed[2]["input_ids"].int64_list.value) == features[2].input_ids
    assert [p["unique_ids"].int64_list.value[0] for p in parsed] == [
        1000000000,
        1000000001,
        1000000002,
    ]

    with tf.Graph().as_default():
        input_fn = rs.input_fn_builder(path, 10, is_training=False, drop_remainder=False)
        batch = tf.compat.v1.data.make_one_shot_iterator(input_fn({"batch_size": 2})).get_next()
        assert sorted(batch) == ["input_ids", "input_mask", "segment_ids", "unique_ids"]
        with tf.compat.v1.Session() as sess:
            first = sess.run(batch)
            second = sess.run(batch)
    assert first["input_ids"].dtype.name == "int32"
    assert first["unique_ids"].tolist() == [1000000000, 1000000001]
    assert second["segment_ids"].tolist() == [features[2].segment_ids]


def test_feature_writer_leaves_nothing_when_conversion_fails(rs, tmp_path):
    path = str(tmp_path / "eval.tf_record")
    with pytest.raises(RuntimeError):
        with rs.FeatureWriter(path, is_training=False):
            raise RuntimeError("conversion failed")
    assert tf.io.gfile.listdir(str(tmp_path)) == []


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not a valid SQuAD JSON file"),
        ('{"version": "1.1"}', "missing key 'data' in the top level"),
        ('{"data": [{"title": "x"}]}', "missing key 'paragraphs' in data[0]"),
        (
            '{"data": [{"paragraphs": [{"qas": []}]}]}',
            "missing key 'context' in data[0].paragraphs[0]",
        ),
        (
            '{"data": [{"paragraphs": [{"context": "a"}]}]}',
            "missing key 'qas' in data[0].paragraphs[0]",
        ),
        (
            '{"data": [{"paragraphs": [{"context": "a", "qas": [{"question": "q"}]}]}]}',
            "missing key 'id' in data[0].paragraphs[0].qas[0]",
        ),
        (
            '{"data": [{"paragraphs": [{"context": "a", "qas": [{"id": "x"}]}]}]}',
            "missing key 'question' in data[0].paragraphs[0].qas[0]",
        ),
    ],
)
def test_malformed_files_name_the_file_and_key(rs, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError) as err:
        squad_data.read_squad_examples(str(path), is_training=False, version_2_with_negative=False)
    assert str(path) in str(err.value)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_training_question_needs_exactly_one_answer(rs, tmp_path):
    two = [qa("abc-123", "who", [("a", 0), ("b", 2)])]
    path = write_json(tmp_path / "train.json", squad_json([("a b", two)]))
    with pytest.raises(ValueError, match=r"question id abc-123 has 2 answers"):
        squad_data.read_squad_examples(path, is_training=True, version_2_with_negative=False)
    # Prediction does not look at answers at all.
    assert len(
        squad_data.read_squad_examples(path, is_training=False, version_2_with_negative=False)
    )

    no_flag = [qa("v2-q", "who", [("a", 0)])]
    path = write_json(tmp_path / "train2.json", squad_json([("a b", no_flag)]))
    with pytest.raises(ValueError, match=r"missing key 'is_impossible'"):
        squad_data.read_squad_examples(path, is_training=True, version_2_with_negative=True)

    past_end = [qa("far", "who", [("b c", 2)])]
    path = write_json(tmp_path / "train3.json", squad_json([("a b", past_end)]))
    with pytest.raises(ValueError, match=r"question id far: answer_start 2"):
        squad_data.read_squad_examples(path, is_training=True, version_2_with_negative=False)
