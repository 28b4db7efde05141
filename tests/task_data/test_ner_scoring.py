"""ner_data's entity decoding and scores against hand-counted cases.

Each expected span list and count below was worked out by hand from
conlleval's rules: B- and S- open an entity; I- or E- opens one after O,
after E- / S-, or after another type; E- and S- close one, and so do O,
B-, S-, a type change and the end of the sentence.
"""

import pytest

from bert_lib.task_data import ner_data


@pytest.mark.parametrize(
    "tags,entities",
    [
        # IOB2: every entity opens with B-.
        ("B-PER B-PER", [("PER", 0, 1), ("PER", 1, 2)]),
        ("B-PER I-PER B-PER", [("PER", 0, 2), ("PER", 2, 3)]),
        ("O I-PER I-PER", [("PER", 1, 3)]),
        ("I-PER O", [("PER", 0, 1)]),
        ("B-PER I-LOC I-LOC", [("PER", 0, 1), ("LOC", 1, 3)]),
        ("O B-LOC I-LOC", [("LOC", 1, 3)]),
        ("O O", []),
        # IOB1: I- inside, B- only between adjacent entities of one type.
        ("I-PER I-PER B-PER I-PER", [("PER", 0, 2), ("PER", 2, 4)]),
        ("I-LOC I-ORG", [("LOC", 0, 1), ("ORG", 1, 2)]),
        ("O I-MISC", [("MISC", 1, 2)]),
        ("I-ORG O I-ORG", [("ORG", 0, 1), ("ORG", 2, 3)]),
        # IOBES.
        ("S-PER S-PER", [("PER", 0, 1), ("PER", 1, 2)]),
        ("B-PER E-PER B-PER E-PER", [("PER", 0, 2), ("PER", 2, 4)]),
        ("E-PER E-PER", [("PER", 0, 1), ("PER", 1, 2)]),
        ("S-LOC I-LOC E-LOC", [("LOC", 0, 1), ("LOC", 1, 3)]),
        ("O B-ORG I-ORG", [("ORG", 1, 3)]),
        ("B-PER E-LOC", [("PER", 0, 1), ("LOC", 1, 2)]),
        ("O I-ORG E-ORG O", [("ORG", 1, 3)]),
        ("B-MISC I-MISC I-MISC E-MISC S-MISC", [("MISC", 0, 4), ("MISC", 4, 5)]),
    ],
)
def test_entities_follow_conlleval_rules(tags, entities):
    assert ner_data.get_entities(tags.split()) == entities


def test_scores_count_whole_entities():
    gold = ["B-PER I-PER O B-LOC".split(), "B-ORG I-ORG I-ORG O B-PER".split()]
    predicted = ["B-PER I-PER O B-ORG".split(), "B-ORG I-ORG O O B-PER".split()]
    # Gold: PER, LOC, ORG(0-3), PER = 4. Predicted: PER, ORG, ORG(0-2), PER = 4.
    # Correct: the two PER. Words right: 3 of 4, 4 of 5.
    result = ner_data.conll_scores(gold, predicted, ["LOC", "MISC", "ORG", "PER"])
    assert result == pytest.approx(
        {
            "eval_precision": 2 / 4,
            "eval_recall": 2 / 4,
            "eval_f1": 0.5,
            "eval_token_accuracy": 7 / 9,
            "eval_f1_PER": 1.0,
            "eval_f1_LOC": 0.0,  # missed: recall 0, nothing guessed
            "eval_f1_ORG": 0.0,  # 0 of 2 guessed right
            "eval_f1_MISC": 0.0,  # in the tag set, seen nowhere
        }
    )


def test_same_span_under_other_tags_is_correct_but_not_for_token_accuracy():
    # IOB1 gold and IOB2 prediction of one entity: the span matches, one tag differs.
    result = ner_data.conll_scores([["I-PER", "I-PER"]], [["B-PER", "I-PER"]])
    assert result["eval_f1"] == 1.0
    assert result["eval_token_accuracy"] == 0.5


def test_type_change_inside_a_span_loses_the_entity():
    # Predicted PER(0-1) and LOC(1-2) against gold PER(0-2): 0 right of 2 guessed, 1 gold.
    result = ner_data.conll_scores([["B-PER", "I-PER"]], [["B-PER", "I-LOC"]])
    assert (result["eval_precision"], result["eval_recall"], result["eval_f1"]) == (0, 0, 0)
    assert result["eval_f1_LOC"] == 0.0


def test_precision_and_recall_differ_when_counts_do():
    # Gold: LOC(0-1), LOC(2-3), PER(4-5). Predicted: LOC(0-1) only -> P 1/1, R 1/3.
    result = ner_data.conll_scores(
        [["B-LOC", "O", "B-LOC", "O", "B-PER"]], [["B-LOC"] + ["O"] * 4]
    )
    assert result["eval_precision"] == 1.0
    assert result["eval_recall"] == pytest.approx(1 / 3)
    assert result["eval_f1"] == pytest.approx(2 * (1 / 3) / (1 + 1 / 3))
    assert result["eval_f1_PER"] == 0.0


@pytest.mark.parametrize(
    "scheme,good,bad",
    [
        ("IOB2", ["O", "B-PER", "I-MISC"], ["S-PER", "E-LOC", "X-PER", "B-", "PER", "o"]),
        ("IOB1", ["I-ORG", "B-ORG"], ["S-ORG", "BI-ORG"]),
        ("IOBES", ["S-PER", "E-LOC", "B-ORG", "I-ORG", "O"], ["L-PER", "U-PER"]),
    ],
)
def test_tags_outside_the_scheme_are_refused(scheme, good, bad):
    for tag in good:
        ner_data.check_tag(tag, scheme)
    for tag in bad:
        with pytest.raises(ValueError, match="tag"):
            ner_data.check_tag(tag, scheme)
