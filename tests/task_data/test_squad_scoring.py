"""The built-in SQuAD EM/F1 scorer on cases worked out by hand (v1.1 and v2.0 rules)."""

import pytest
from squad_helpers import load_run_squad, qa, squad_json

from bert_lib.plumbing import eval_results
from bert_lib.task_data import squad_scoring


@pytest.fixture(scope="module")
def rs():
    return load_run_squad()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The  Quick, brown fox!", "quick brown fox"),
        ("An apple a day", "apple day"),
        ("theatre", "theatre"),  # articles only as whole words
        ("A-b (c)", "ab c"),  # punctuation is removed, not turned into spaces
        ("\u201cquoted\u201d", "\u201cquoted\u201d"),  # only ASCII punctuation
        ("", ""),
    ],
)
def test_normalize_answer(rs, text, expected):
    assert squad_scoring.normalize_answer(text) == expected


def test_v1_scores_take_the_best_gold_and_count_missing_questions(rs):
    golds = {
        "q1": ["Steve Smith", "Smith"],
        "q2": ["the 1895 war"],
        "q3": ["blue"],
        "q4": ["x"],
    }
    preds = {"q1": "smith", "q2": "1895 war of", "q3": "red"}
    # q1: EM 1 and F1 1 via "Smith"; q2: F1 = 2 * (2/3 * 1) / (2/3 + 1) = 0.8;
    # q3 and the unanswered q4: 0.
    scores = squad_scoring.squad_v1_scores(golds, preds)
    assert scores == {"exact_match": pytest.approx(25.0), "f1": pytest.approx(45.0)}
    assert squad_scoring.compute_f1("steve smith", "smith") == pytest.approx(2 / 3)


def test_v1_scores_leave_out_questions_without_gold_answers(rs):
    scores = squad_scoring.squad_v1_scores(
        {"a": ["x"], "b": [], "c": ["y"]}, {"a": "x", "b": "", "c": "z"}
    )
    assert scores == {"exact_match": 50.0, "f1": 50.0}


def test_v1_and_v2_rules_differ_on_answers_that_normalise_to_nothing(rs):
    # v1.1: equal normal forms give EM 1 but no common token gives F1 0.
    assert squad_scoring.squad_v1_scores({"q": ["the"]}, {"q": "a"}) == {
        "exact_match": 100.0,
        "f1": 0.0,
    }
    # v2.0: golds that normalise to "" are dropped, leaving the no-answer gold "".
    v2 = squad_scoring.squad_v2_scores({"q": ["the"]}, {"q": "a"})
    assert (v2["exact"], v2["f1"]) == (100.0, 100.0)


def test_v2_scores_splits_and_best_threshold(rs):
    golds = {"h1": ["Steve Smith"], "h2": ["1895"], "n1": [], "n2": []}
    preds = {"h1": "steve smith", "h2": "1895 war", "n1": "", "n2": "1895"}
    null_odds = {"h1": -3.0, "n1": -2.0, "h2": -1.0, "n2": 5.0}
    scores = squad_scoring.squad_v2_scores(golds, preds, na_probs=null_odds)
    # Raw exact 1, 0, 1, 0; raw F1 1, 2/3 (P 1/2, R 1), 1, 0.
    expected = {
        "exact": 50.0,
        "f1": 100.0 * (2 + 2 / 3) / 4,
        "total": 4,
        "HasAns_exact": 50.0,
        "HasAns_f1": 100.0 * (1 + 2 / 3) / 2,
        "HasAns_total": 2,
        "NoAns_exact": 50.0,
        "NoAns_f1": 50.0,
        "NoAns_total": 2,
        # Start at 2 (every no-answer right), walk up the null odds:
        # exact: h1 +1 -> 3 at -3.0, n1 +0, h2 +0, n2 -1: best 3/4 at -3.0.
        # f1:    h1 +1 -> 3, n1 +0, h2 +2/3 -> 3.67 at -1.0, n2 -1.
        "best_exact": 75.0,
        "best_exact_thresh": -3.0,
        "best_f1": 100.0 * (3 + 2 / 3) / 4,
        "best_f1_thresh": -1.0,
    }
    assert sorted(scores) == sorted(expected)
    for key, value in expected.items():
        assert scores[key] == pytest.approx(value), key


def test_v2_without_null_odds_and_without_no_answer_questions(rs):
    scores = squad_scoring.squad_v2_scores({"a": ["x y"], "b": ["z"]}, {"a": "x", "b": "z"})
    assert sorted(scores) == ["HasAns_exact", "HasAns_f1", "HasAns_total", "exact", "f1", "total"]
    assert scores["exact"] == 50.0
    assert scores["f1"] == pytest.approx(100.0 * (2 / 3 + 1) / 2)


def test_gold_answers_are_found_only_when_the_file_has_them(rs):
    with_answers = squad_json([("a b", [qa("q1", "w", [("a", 0), ("b", 2)]), qa("q2", "w")])])
    assert squad_scoring.gold_answers(with_answers) == {"q1": ["a", "b"], "q2": []}
    test_file = squad_json([("a b", [{"id": "q1", "question": "w"}])])
    assert squad_scoring.gold_answers(test_file) is None
    all_empty = squad_json([("a b", [qa("q1", "w")])])
    assert squad_scoring.gold_answers(all_empty) is None
    v2_all_impossible = squad_json([("a b", [qa("q1", "w", is_impossible=True)])])
    assert squad_scoring.gold_answers(v2_all_impossible) == {"q1": []}


def test_eval_results_file_is_sorted_key_value_lines(rs, tmp_path):
    path = tmp_path / "eval_results.txt"
    eval_results.write_eval_results(
        str(path), {"f1": 60.5, "exact_match": 33.25, "HasAns_total": 2}
    )
    assert path.read_text() == "HasAns_total = 2\nexact_match = 33.25\nf1 = 60.5\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval_results.txt"]
