"""run_squad n-best predictions on fixed logits, against answers worked out by hand."""

import collections
import json

import numpy as np
import numpy_reference as npr
import pytest
from squad_helpers import load_run_squad, qa, squad_json, write_json, write_vocab

import tokenization
from bert_lib.task_data import squad_answers, squad_data

# Pieces of "Steve Smith's cafe (1895-1943)." after "[CLS] who ? [SEP]":
#   4 steve | 5 smith 6 ' 7 s | 8 cafe | 9 ( 10 1895 11 - 12 1943 13 ) 14 .
SMITH_CONTEXT = "Steve Smith's cafe (1895-1943)."
# "a b playing c d played e f" with query "who is", max_seq_length 10, stride 3:
# windows of pieces [0, 5), [3, 8), [6, 10); see test_squad_features.py.
WINDOW_CONTEXT = "a b playing c d played e f"


@pytest.fixture(scope="module")
def rs():
    return load_run_squad()


@pytest.fixture()
def tokenizer(tmp_path):
    return tokenization.FullTokenizer(write_vocab(tmp_path), do_lower_case=True)


def _examples_and_features(rs, tmp_path, tokenizer, paragraphs, max_seq_length, stride=3):
    path = write_json(tmp_path / "predict.json", squad_json(paragraphs))
    examples = squad_data.read_squad_examples(
        path, is_training=False, version_2_with_negative=False
    )
    features = []
    rs.convert_examples_to_features(
        examples, tokenizer, max_seq_length, stride, 64, False, features.append
    )
    return examples, features


def _logits(length, default, **values):
    """A logit list of `length` filled with `default`, with p<i>=value overrides."""
    out = [default] * length
    for key, value in values.items():
        out[int(key[1:])] = value
    return out


def _write(rs, tmp_path, examples, features, results, n_best, max_len, v2=False, thresh=0.0):
    paths = [str(tmp_path / n) for n in ("pred.json", "nbest.json", "null.json")]
    squad_answers.write_predictions(
        examples,
        features,
        results,
        n_best,
        max_len,
        True,
        *paths,
        version_2_with_negative=v2,
        null_score_diff_threshold=thresh,
        verbose_logging=False,
    )
    loaded = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            loaded.append(None)
            continue
        obj = json.loads(text, object_pairs_hook=collections.OrderedDict)
        # Formatting: exactly json.dumps(indent=4) plus a newline.
        assert text == json.dumps(obj, indent=4) + "\n"
        loaded.append(obj)
    return loaded


def _check_nbest(entries, expected):
    """expected: [(text, start_logit, end_logit)], probabilities computed here."""
    probs = npr.softmax([s + e for _, s, e in expected])
    assert [e["text"] for e in entries] == [t for t, _, _ in expected]
    for entry, (_, start, end), prob in zip(entries, expected, probs):
        assert list(entry.keys()) == ["text", "probability", "start_logit", "end_logit"]
        assert entry["start_logit"] == start
        assert entry["end_logit"] == end
        assert entry["probability"] == pytest.approx(prob, rel=1e-12, abs=0)


def test_nbest_ranks_filters_and_recovers_original_text(rs, tmp_path, tokenizer):
    examples, features = _examples_and_features(
        rs, tmp_path, tokenizer, [(SMITH_CONTEXT, [qa("q1", "who ?")])], 16
    )
    assert len(features) == 1 and len(features[0].tokens) == 16
    # Top-3 starts: 1 (in the question: invalid), 4, 10. Top-3 ends: 5, 10, 14.
    start = _logits(16, -10.0, p0=1.0, p1=6.0, p4=5.0, p10=4.0)
    end = _logits(16, -10.0, p5=5.0, p10=3.0, p14=2.0)
    results = [rs.RawResult(unique_id=1000000000, start_logits=start, end_logits=end)]
    # Spans (4,5)=10, (4,10)=8, (10,10)=7, (10,14)=6; (4,14) is 11 > 8 long.
    preds, nbest, null = _write(rs, tmp_path, examples, features, results, 3, 8)
    assert null is None
    assert preds == {"q1": "Steve Smith"}
    _check_nbest(
        nbest["q1"],
        [("Steve Smith", 5.0, 5.0), ("Steve Smith's cafe (1895", 5.0, 3.0), ("1895", 4.0, 3.0)],
    )
    with open(tmp_path / "pred.json", encoding="utf-8") as f:
        assert f.read() == '{\n    "q1": "Steve Smith"\n}\n'

    # With room for all four and a longer max length, (4,14) joins and ranks third.
    _, nbest, _ = _write(rs, tmp_path, examples, features, results, 20, 30)
    assert [e["text"] for e in nbest["q1"][:5]] == [
        "Steve Smith",
        "Steve Smith's cafe (1895",
        "Steve Smith's cafe (1895-1943).",
        "1895",
        "1895-1943).",
    ]


def test_spans_with_the_same_text_are_kept_once(rs, tmp_path, tokenizer):
    # The combining accent disappears in tokenization, so alignment fails and
    # every span inside the word falls back to the whole original word.
    context = "playe\u0301d c"
    examples, features = _examples_and_features(
        rs, tmp_path, tokenizer, [(context, [qa("q1", "who")])], 12
    )
    assert features[0].tokens[:6] == ["[CLS]", "who", "[SEP]", "play", "##ed", "c"]
    start = _logits(12, -10.0, p3=4.0, p4=3.0, p5=1.0)
    end = _logits(12, -10.0, p3=4.0, p4=3.5, p5=1.0)
    results = [rs.RawResult(1000000000, start, end)]
    # (3,3)=8, (3,4)=7.5, (4,4)=6.5, (3,5)=5, (4,5)=4, (5,5)=2.
    preds, nbest, _ = _write(rs, tmp_path, examples, features, results, 20, 30)
    assert preds == {"q1": context.split()[0]}
    _check_nbest(
        nbest["q1"],
        [("playe\u0301d", 4.0, 4.0), ("playe\u0301d c", 4.0, 1.0), ("c", 1.0, 1.0)],
    )


def test_only_max_context_starts_count_across_windows(rs, tmp_path, tokenizer):
    examples, features = _examples_and_features(
        rs, tmp_path, tokenizer, [(WINDOW_CONTEXT, [qa("q1", "who is")])], 10
    )
    assert len(features) == 3
    # Window 0 position 8 is "c" but window 1 gives "c" more context, so the
    # higher-scoring start there is dropped; window 1 position 5 is "c" too.
    # Ends need not be max-context: window 1 position 8 is "##ed".
    results = [
        rs.RawResult(1000000000, _logits(10, -9.0, p8=9.0), _logits(10, -9.0, p8=9.0)),
        rs.RawResult(1000000001, _logits(10, -9.0, p5=2.0), _logits(10, -9.0, p8=3.0)),
        rs.RawResult(1000000002, _logits(10, -9.0), _logits(10, -9.0)),
    ]
    preds, nbest, _ = _write(rs, tmp_path, examples, features, results, 1, 30)
    assert preds == {"q1": "c d played"}
    _check_nbest(nbest["q1"], [("c d played", 2.0, 3.0)])


def test_no_valid_span_gives_the_empty_placeholder(rs, tmp_path, tokenizer):
    examples, features = _examples_and_features(
        rs, tmp_path, tokenizer, [(SMITH_CONTEXT, [qa("q1", "who ?")])], 16
    )
    results = [rs.RawResult(1000000000, [0.5] * 16, [0.25] * 16)]
    # max_answer_length 0 rejects every span.
    preds, nbest, _ = _write(rs, tmp_path, examples, features, results, 20, 0)
    assert preds == {"q1": "empty"}
    assert nbest["q1"] == [
        {"text": "empty", "probability": 1.0, "start_logit": 0.0, "end_logit": 0.0}
    ]


def test_v2_null_score_is_the_minimum_over_windows(rs, tmp_path, tokenizer):
    examples, features = _examples_and_features(
        rs, tmp_path, tokenizer, [(WINDOW_CONTEXT, [qa("q1", "who is")])], 10
    )
    results = [
        # Null (position 0) scores 2.0, 0.75 and 1.5: window 1's 0.75 is taken.
        rs.RawResult(1000000000, _logits(10, -9.0, p0=1.0, p5=3.0), _logits(10, -9.0, p0=1.0)),
        rs.RawResult(1000000001, _logits(10, -9.0, p0=0.5), _logits(10, -9.0, p0=0.25, p6=2.0)),
        rs.RawResult(1000000002, _logits(10, -9.0, p0=0.75), _logits(10, -9.0, p0=0.75)),
    ]
    # Best span: window 0 "b" (position 5, max context there) = 3 + -9 = -6;
    # window 1 "c" or "d" to "d" score -9 + 2 = -7. Null 0.75 beats both.
    preds, nbest, null = _write(rs, tmp_path, examples, features, results, 20, 30, v2=True)
    assert preds == {"q1": ""}
    assert null == {"q1": 0.75 - (3.0 + -9.0)}
    assert nbest["q1"][0] == {
        "text": "",
        "probability": nbest["q1"][0]["probability"],
        "start_logit": 0.5,
        "end_logit": 0.25,
    }
    assert [e["text"] for e in nbest["q1"][1:3]] == ["b", "b play"]
    assert nbest["q1"][1]["start_logit"] == 3.0 and nbest["q1"][1]["end_logit"] == -9.0


def test_v2_threshold_decides_between_null_and_best_span(rs, tmp_path, tokenizer):
    examples, features = _examples_and_features(
        rs, tmp_path, tokenizer, [(SMITH_CONTEXT, [qa("q1", "who ?")])], 16
    )
    start = _logits(16, -10.0, p0=1.0, p4=3.0)
    end = _logits(16, -10.0, p0=0.5, p5=2.0)
    results = [rs.RawResult(1000000000, start, end)]
    # Null 1.5, best span "Steve Smith" 5.0: diff -3.5.
    preds, nbest, null = _write(rs, tmp_path, examples, features, results, 1, 30, v2=True)
    assert preds == {"q1": "Steve Smith"}
    assert null == {"q1": -3.5}
    # n_best_size 1 keeps only the span; the null answer is appended after it.
    _check_nbest(nbest["q1"], [("Steve Smith", 3.0, 2.0), ("", 1.0, 0.5)])

    preds, _, null = _write(rs, tmp_path, examples, features, results, 1, 30, v2=True, thresh=-4)
    assert preds == {"q1": ""}
    assert null == {"q1": -3.5}
    preds, _, _ = _write(rs, tmp_path, examples, features, results, 1, 30, v2=True, thresh=-3.5)
    assert preds == {"q1": "Steve Smith"}  # strictly greater is needed


def test_v2_without_any_valid_span_predicts_no_answer(rs, tmp_path, tokenizer):
    examples, features = _examples_and_features(
        rs, tmp_path, tokenizer, [(SMITH_CONTEXT, [qa("q1", "who ?")])], 16
    )
    results = [rs.RawResult(1000000000, [0.5] * 16, [0.25] * 16)]
    preds, nbest, null = _write(rs, tmp_path, examples, features, results, 20, 0, v2=True)
    assert preds == {"q1": ""}
    assert null == {"q1": 0.75}
    _check_nbest(nbest["q1"], [("", 0.5, 0.25)])


def test_predictions_keep_question_order_and_unicode(rs, tmp_path, tokenizer):
    paragraphs = [("Café steve", [qa("z", "who"), qa("a", "who")])]
    examples, features = _examples_and_features(rs, tmp_path, tokenizer, paragraphs, 12)
    assert [f.example_index for f in features] == [0, 1]
    results = [
        rs.RawResult(1000000000, _logits(12, -5.0, p3=1.0), _logits(12, -5.0, p3=1.0)),
        rs.RawResult(1000000001, _logits(12, -5.0, p4=1.0), _logits(12, -5.0, p4=1.0)),
    ]
    preds, _, _ = _write(rs, tmp_path, examples, features, results, 2, 30)
    assert list(preds.items()) == [("z", "Café"), ("a", "steve")]
    with open(tmp_path / "pred.json", encoding="utf-8") as f:
        assert f.read() == '{\n    "z": "Caf\\u00e9",\n    "a": "steve"\n}\n'


@pytest.mark.parametrize(
    "pred, orig, lower, expected",
    [
        ("steve smith", "Steve Smith's", True, "Steve Smith"),
        ("1895", "(1895-1943).", True, "1895"),
        ("1895 - 1943", "(1895-1943).", True, "1895-1943"),
        ("cafe", "Café", True, "Café"),
        ("Steve", "Steve's", False, "Steve"),
        # Not found in the tokenized original: the original comes back.
        ("xyz", "Abc", True, "Abc"),
        ("steve", "Steve", False, "Steve"),
        # Lengths differ once the combining accent is dropped: fallback.
        ("eclair", "e\u0301clair", True, "e\u0301clair"),
        # Starts on a space, which has no character to map to: fallback.
        (" smith", "Steve Smith", True, "Steve Smith"),
    ],
)
def test_get_final_text(rs, pred, orig, lower, expected):
    assert squad_answers.get_final_text(pred, orig, lower, verbose_logging=True) == expected


def test_best_indexes_and_softmax(rs):
    # Ties keep index order.
    assert rs._get_best_indexes([1.0, 3.0, 3.0, 2.0], 3) == [1, 2, 3]
    assert rs._get_best_indexes([1.0, 2.0], 5) == [1, 0]
    assert rs._compute_softmax([]) == []
    probs = rs._compute_softmax([1000.0, 999.0, 0.0])
    expected = [1 / (1 + np.exp(-1.0)), np.exp(-1.0) / (1 + np.exp(-1.0)), 0.0]
    assert probs == pytest.approx(expected, rel=1e-12, abs=1e-300)
