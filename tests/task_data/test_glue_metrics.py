"""The official GLUE metrics and the result file formats, against independent references."""

import math

import numpy as np
import pytest

from bert_lib.plumbing import eval_results
from bert_lib.task_data import classifier_metrics, classifier_output, classifier_tasks

LABELS = [1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 1]
PREDS = [1, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 0]


def _mcc_from_signed_correlation(labels, preds):
    """Binary MCC is Pearson's r of the labels and predictions mapped to -1/+1."""
    x = [2 * v - 1 for v in labels]
    y = [2 * v - 1 for v in preds]
    return float(np.corrcoef(x, y)[0, 1])


def _mcc_from_one_hot_covariance(labels, preds, num_classes):
    """Multi-class MCC: sum of per-class covariances of the one-hot indicator columns."""

    def cov(a, b):
        n = len(a)
        total = 0.0
        for k in range(num_classes):
            col_a = [1.0 if v == k else 0.0 for v in a]
            col_b = [1.0 if v == k else 0.0 for v in b]
            mean_a = sum(col_a) / n
            mean_b = sum(col_b) / n
            total += sum((p - mean_a) * (q - mean_b) for p, q in zip(col_a, col_b))
        return total

    return cov(labels, preds) / math.sqrt(cov(labels, labels) * cov(preds, preds))


def _f1_from_precision_recall(labels, preds):
    tp = sum(1 for y, p in zip(labels, preds) if y == 1 and p == 1)
    predicted_positive = sum(1 for p in preds if p == 1)
    actual_positive = sum(1 for y in labels if y == 1)
    precision = tp / predicted_positive
    recall = tp / actual_positive
    return 2 * precision * recall / (precision + recall)


def _pearson_from_sums(x, y):
    n = len(x)
    sx, sy = sum(x), sum(y)
    sxx = sum(v * v for v in x)
    syy = sum(v * v for v in y)
    sxy = sum(a * b for a, b in zip(x, y))
    return (n * sxy - sx * sy) / math.sqrt((n * sxx - sx * sx) * (n * syy - sy * sy))


def _ranks_by_counting(values):
    """Rank = 1 + #smaller + (#equal - 1) / 2: ties share their average rank."""
    return [
        1 + sum(1 for w in values if w < v) + (sum(1 for w in values if w == v) - 1) / 2
        for v in values
    ]


def test_matthews_matches_the_signed_correlation():
    expected = _mcc_from_signed_correlation(LABELS, PREDS)
    assert classifier_metrics.matthews_corrcoef(LABELS, PREDS) == pytest.approx(
        expected, abs=1e-12
    )
    # A hand count as well: tp=5 tn=3 fp=2 fn=2 -> (15-4)/sqrt(7*7*5*5) = 11/35.
    assert classifier_metrics.matthews_corrcoef(LABELS, PREDS) == pytest.approx(11 / 35, abs=1e-12)


def test_matthews_for_three_classes_matches_one_hot_covariance():
    labels = [0, 1, 2, 2, 1, 0, 0, 2, 1, 1]
    preds = [0, 2, 2, 1, 1, 0, 1, 2, 1, 0]
    expected = _mcc_from_one_hot_covariance(labels, preds, 3)
    assert classifier_metrics.matthews_corrcoef(labels, preds) == pytest.approx(
        expected, abs=1e-12
    )


def test_matthews_is_zero_when_one_side_is_constant():
    assert classifier_metrics.matthews_corrcoef([0, 1, 1, 0], [1, 1, 1, 1]) == 0.0


def test_f1_and_accuracy():
    assert classifier_metrics.f1_score(LABELS, PREDS) == pytest.approx(
        _f1_from_precision_recall(LABELS, PREDS), abs=1e-12
    )
    assert classifier_metrics.f1_score(LABELS, PREDS) == pytest.approx(
        10 / 14, abs=1e-12
    )  # 2*5/(10+2+2)
    assert classifier_metrics.accuracy(LABELS, PREDS) == pytest.approx(8 / 12)
    assert classifier_metrics.f1_score([0, 0], [0, 0]) == 0.0


SCORES_GOLD = [5.0, 3.8, 0.0, 2.5, 2.5, 4.2, 1.0, 0.4, 2.5, 3.0]
SCORES_PRED = [4.6, 3.1, 0.7, 2.0, 3.3, 4.4, 1.5, 0.7, 2.2, 3.1]


def test_pearson_matches_the_sums_formula():
    expected = _pearson_from_sums(SCORES_GOLD, SCORES_PRED)
    assert classifier_metrics.pearson_correlation(SCORES_GOLD, SCORES_PRED) == pytest.approx(
        expected, abs=1e-12
    )


def test_spearman_averages_tied_ranks():
    # Both vectors have ties (2.5 three times, 0.7 twice).
    assert _ranks_by_counting([2.5, 1.0, 2.5, 2.5, 0.0]) == [4.0, 2.0, 4.0, 4.0, 1.0]
    expected = _pearson_from_sums(_ranks_by_counting(SCORES_GOLD), _ranks_by_counting(SCORES_PRED))
    got = classifier_metrics.spearman_correlation(SCORES_GOLD, SCORES_PRED)
    assert got == pytest.approx(expected, abs=1e-12)
    # A monotone transform leaves Spearman unchanged but not Pearson.
    cubed = [v**3 for v in SCORES_PRED]
    assert classifier_metrics.spearman_correlation(SCORES_GOLD, cubed) == pytest.approx(
        got, abs=1e-12
    )
    assert classifier_metrics.pearson_correlation(SCORES_GOLD, cubed) != pytest.approx(
        classifier_metrics.pearson_correlation(SCORES_GOLD, SCORES_PRED), abs=1e-3
    )


def test_compute_metrics_names_keys_after_the_metric():
    result = classifier_metrics.compute_metrics(("mcc",), LABELS, PREDS)
    assert list(result) == ["eval_mcc"]
    result = classifier_metrics.compute_metrics(("pearson", "spearman"), SCORES_GOLD, SCORES_PRED)
    assert sorted(result) == ["eval_pearson", "eval_spearman"]


def test_eval_results_lines_are_sorted_and_print_float32(tmp_path):
    path = tmp_path / "eval_results.txt"
    eval_results.write_eval_results(
        str(path),
        {
            "loss": 0.4000000059604645,  # a float32 value widened to a Python float
            "global_step": np.int64(12),
            "eval_accuracy": np.float32(0.75),
            "eval_mcc": 11 / 35,
            "eval_loss": 0.1,
        },
    )
    assert path.read_text() == (
        "eval_accuracy = 0.75\n"
        "eval_loss = 0.1\n"
        "eval_mcc = 0.31428573\n"
        "global_step = 12\n"
        "loss = 0.4\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["eval_results.txt"]


def test_test_results_print_str_of_each_float32():
    outputs = [
        np.array([0.1, 0.9], dtype=np.float32),
        np.array([1 / 3, 2 / 3], dtype=np.float32),
    ]
    assert classifier_output.format_test_results(outputs) == "0.1\t0.9\n0.33333334\t0.6666667\n"
    assert (
        classifier_output.format_test_results([np.float32(2.5), np.float32(0.125)])
        == "2.5\n0.125\n"
    )


def test_glue_submission_uses_label_names_and_scores():
    outputs = [
        np.array([0.2, 0.7, 0.1], dtype=np.float32),
        np.array([0.5, 0.1, 0.4], dtype=np.float32),
    ]
    labels = ["contradiction", "entailment", "neutral"]
    task = classifier_tasks.task_kind(labels, multi_label=False)
    assert classifier_output.format_glue_submission(outputs, task) == (
        "index\tprediction\n0\tentailment\n1\tcontradiction\n"
    )
    assert classifier_output.format_glue_submission(
        [np.float32(3.14159), np.float32(0.5)], classifier_tasks.task_kind(None, False)
    ) == ("index\tprediction\n0\t3.142\n1\t0.500\n")
