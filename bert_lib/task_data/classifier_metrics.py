"""The classification tasks' official metrics, computed in numpy over every prediction of
the dev set (accuracy, F1, MCC, Pearson and Spearman correlations), and multi-label and
long-text window scores."""

import math

import numpy as np

from .classifier_features import multi_hot


def accuracy(labels, predictions):
    """Fraction of positions where the integer predictions equal the labels."""
    labels = np.asarray(labels)
    predictions = np.asarray(predictions)
    return float(np.mean(labels == predictions))


def f1_score(labels, predictions, positive=1):
    """F1 of the `positive` class: 2 TP / (2 TP + FP + FN); 0.0 when undefined."""
    labels = np.asarray(labels) == positive
    predictions = np.asarray(predictions) == positive
    tp = np.sum(labels & predictions)
    fp = np.sum(~labels & predictions)
    fn = np.sum(labels & ~predictions)
    denominator = 2 * tp + fp + fn
    return float(2 * tp / denominator) if denominator else 0.0


def matthews_corrcoef(labels, predictions):
    """Matthews correlation coefficient (any number of classes); 0.0 when undefined.

    From the confusion matrix C: (c*s - t.p) / sqrt((s^2 - p.p) (s^2 - t.t)),
    with t the true-class counts, p the predicted-class counts, c the correct
    count and s the total.
    """
    labels = np.asarray(labels, dtype=np.int64)
    predictions = np.asarray(predictions, dtype=np.int64)
    num_classes = int(max(labels.max(initial=0), predictions.max(initial=0))) + 1
    confusion = np.zeros((num_classes, num_classes), dtype=np.float64)
    np.add.at(confusion, (labels, predictions), 1.0)
    t = confusion.sum(axis=1)
    p = confusion.sum(axis=0)
    c = np.trace(confusion)
    s = confusion.sum()
    denominator = math.sqrt((s * s - p @ p) * (s * s - t @ t))
    if denominator == 0:
        return 0.0
    return float((c * s - t @ p) / denominator)


def pearson_correlation(x, y):
    """Pearson's r of two equal-length vectors; nan if either is constant."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    dx = x - x.mean()
    dy = y - y.mean()
    denominator = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if denominator == 0:
        return float("nan")
    return float(dx @ dy / denominator)


def _average_ranks(values):
    """1-based ranks of `values`, tied values sharing the mean of their ranks."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    sorted_values = values[order]
    # Start index of each run of equal values in sorted order.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], len(values)]
    run_ranks = (starts + 1 + ends) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(len(values), dtype=np.float64)
    ranks[order] = np.repeat(run_ranks, ends - starts)
    return ranks


def spearman_correlation(x, y):
    """Spearman's rho: Pearson's r of the ranks, ties given their average rank."""
    return pearson_correlation(_average_ranks(x), _average_ranks(y))


def compute_metrics(metric_names, labels, predictions):
    """Returns {"eval_<name>": value} for each official metric name.

    `predictions` are class ids for "mcc" and "f1", scores for "pearson" and
    "spearman"; `labels` the matching gold values.
    """
    functions = {
        "mcc": matthews_corrcoef,
        "f1": f1_score,
        "pearson": pearson_correlation,
        "spearman": spearman_correlation,
    }
    return {f"eval_{name}": functions[name](labels, predictions) for name in metric_names}


def official_metrics(metric_names, examples, outputs, task):
    """compute_metrics of one output per example against the examples' gold labels.

    `outputs` are probabilities (the argmax is the predicted class) or, for
    regression, scores, as `task` (classifier_tasks.TaskKind) says.
    """
    if task.is_regression:
        gold = [float(e.label) for e in examples]
        predicted = [float(o) for o in outputs]
    else:
        gold = [task.labels.index(e.label) for e in examples]
        predicted = [int(np.argmax(o)) for o in outputs]
    return compute_metrics(metric_names, gold, predicted)


def multi_label_metrics(gold, probabilities, threshold):
    """eval_micro_f1, eval_macro_f1 and eval_subset_accuracy of multi-label outputs.

    `gold` is [examples, classes] 0/1, `probabilities` the sigmoid outputs; a
    class is predicted when its probability is >= threshold. Micro F1 pools
    every (example, class) decision; macro F1 averages the per-class F1s,
    a class never in the gold nor the predictions scoring 0; subset accuracy
    counts examples whose predicted set equals the gold set exactly.
    """
    gold = np.asarray(gold) > 0
    predicted = np.asarray(probabilities) >= threshold
    tp = np.sum(gold & predicted, axis=0).astype(np.float64)
    fp = np.sum(~gold & predicted, axis=0).astype(np.float64)
    fn = np.sum(gold & ~predicted, axis=0).astype(np.float64)

    def f1(tp, fp, fn):
        denominator = 2 * tp + fp + fn
        return np.where(denominator > 0, 2 * tp / np.maximum(denominator, 1), 0.0)

    return {
        "eval_micro_f1": float(f1(tp.sum(), fp.sum(), fn.sum())),
        "eval_macro_f1": float(np.mean(f1(tp, fp, fn))),
        "eval_subset_accuracy": float(np.mean(np.all(gold == predicted, axis=1))),
    }


def window_metrics(outputs, examples, task):
    """eval_accuracy and eval_loss over whole examples from their averaged windows, of a
    classification or multi-label `task` (classifier_tasks.TaskKind)."""
    label_list = task.labels
    probabilities = np.clip(np.asarray(outputs, np.float64), 1e-12, 1 - 1e-12)
    if task.multi_label:
        gold = np.array([multi_hot(e, label_list) for e in examples], np.float64)
        losses = -(gold * np.log(probabilities) + (1 - gold) * np.log(1 - probabilities))
        return {"eval_loss": float(losses.mean())}
    gold = np.array([label_list.index(e.label) for e in examples])
    return {
        "eval_accuracy": accuracy(gold, probabilities.argmax(axis=1)),
        "eval_loss": float(-np.log(probabilities[np.arange(len(gold)), gold]).mean()),
    }


def combine_windows(outputs, owners, count):
    """The mean of the outputs of each example's windows: `count` outputs, in order."""
    totals = [None] * count
    sizes = [0] * count
    for output, owner in zip(outputs, owners):
        output = np.asarray(output, np.float64)
        totals[owner] = output if totals[owner] is None else totals[owner] + output
        sizes[owner] += 1
    return [(total / size).astype(np.float32) for total, size in zip(totals, sizes)]
