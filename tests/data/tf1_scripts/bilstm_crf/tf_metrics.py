# coding=utf-8
"""Streaming precision, recall and F1 for tagging, on TensorFlow's internals.

In the manner of the metrics modules NER code on BERT copies around: the
confusion matrix comes from metrics_impl's private
_streaming_confusion_matrix, the arithmetic from math_ops / array_ops, and
a token counter is a local variable made with variable_scope.variable.
Each function returns (value, update_op), as tf.metrics do.
"""

from tensorflow.python.framework import dtypes
from tensorflow.python.framework import ops
from tensorflow.python.ops import array_ops
from tensorflow.python.ops import init_ops
from tensorflow.python.ops import math_ops
from tensorflow.python.ops import state_ops
from tensorflow.python.ops import variable_scope
from tensorflow.python.ops.metrics_impl import _streaming_confusion_matrix


def precision(labels, predictions, num_classes, pos_indices=None, weights=None,
              average="micro"):
  cm, op = _streaming_confusion_matrix(labels, predictions, num_classes, weights)
  value, _, _ = metrics_from_confusion_matrix(cm, pos_indices, average=average)
  update, _, _ = metrics_from_confusion_matrix(op, pos_indices, average=average)
  return value, update


def recall(labels, predictions, num_classes, pos_indices=None, weights=None,
           average="micro"):
  cm, op = _streaming_confusion_matrix(labels, predictions, num_classes, weights)
  _, value, _ = metrics_from_confusion_matrix(cm, pos_indices, average=average)
  _, update, _ = metrics_from_confusion_matrix(op, pos_indices, average=average)
  return value, update


def f1(labels, predictions, num_classes, pos_indices=None, weights=None, average="micro"):
  return fbeta(labels, predictions, num_classes, pos_indices, weights, average)


def fbeta(labels, predictions, num_classes, pos_indices=None, weights=None,
          average="micro", beta=1):
  if beta < 0:
    raise ValueError("beta should be >=0 in the F-beta score")
  cm, op = _streaming_confusion_matrix(labels, predictions, num_classes, weights)
  _, _, value = metrics_from_confusion_matrix(cm, pos_indices, average=average, beta=beta)
  _, _, update = metrics_from_confusion_matrix(op, pos_indices, average=average, beta=beta)
  return value, update


def safe_div(numerator, denominator):
  numerator, denominator = math_ops.to_float(numerator), math_ops.to_float(denominator)
  zeros = array_ops.zeros_like(numerator, dtype=numerator.dtype)
  denominator_is_zero = math_ops.equal(denominator, zeros)
  return array_ops.where(denominator_is_zero, zeros, numerator / denominator)


def pr_re_fbeta(cm, pos_indices, beta=1):
  """Precision, recall and F-beta of the classes pos_indices (rows gold, columns predicted)."""
  true_positives = math_ops.reduce_sum(array_ops.stack([cm[i, i] for i in pos_indices]))
  predicted = math_ops.reduce_sum(
      array_ops.stack([math_ops.reduce_sum(cm[:, i]) for i in pos_indices]))
  gold = math_ops.reduce_sum(
      array_ops.stack([math_ops.reduce_sum(cm[i, :]) for i in pos_indices]))
  pr = safe_div(true_positives, predicted)
  re = safe_div(true_positives, gold)
  fbeta = safe_div((1.0 + beta ** 2) * pr * re, beta ** 2 * pr + re)
  return pr, re, fbeta


def metrics_from_confusion_matrix(cm, pos_indices=None, average="micro", beta=1):
  num_classes = cm.shape[0]
  if pos_indices is None:
    pos_indices = [i for i in range(num_classes)]
  if average == "micro":
    return pr_re_fbeta(cm, pos_indices, beta)
  if average in {"macro", "weighted"}:
    precisions, recalls, fbetas, n_golds = [], [], [], []
    for idx in pos_indices:
      pr, re, fbeta = pr_re_fbeta(cm, [idx], beta)
      precisions.append(pr)
      recalls.append(re)
      fbetas.append(fbeta)
      cm_mask = [[0.0] * num_classes for _ in range(num_classes)]
      cm_mask[idx] = [1.0] * num_classes
      cm_mask = ops.convert_to_tensor(cm_mask, dtype=dtypes.float64)
      n_golds.append(math_ops.to_float(math_ops.reduce_sum(cm * cm_mask)))
    if average == "macro":
      return (math_ops.reduce_mean(precisions), math_ops.reduce_mean(recalls),
              math_ops.reduce_mean(fbetas))
    n_gold = math_ops.reduce_sum(n_golds)
    weighted = [safe_div(p * n, n_gold) for p, n in zip(precisions, n_golds)]
    return (math_ops.reduce_sum(weighted),
            math_ops.reduce_sum([safe_div(r * n, n_gold) for r, n in zip(recalls, n_golds)]),
            math_ops.reduce_sum([safe_div(f * n, n_gold) for f, n in zip(fbetas, n_golds)]))
  raise NotImplementedError("average must be micro, macro or weighted")


def token_count(weights, name=None):
  """How many tokens (sum of weights) the evaluation has seen: (value, update_op)."""
  with variable_scope.variable_scope(name, "token_count", [weights]):
    total = variable_scope.variable(
        init_ops.zeros_initializer()([], dtype=dtypes.float32), trainable=False,
        collections=[ops.GraphKeys.LOCAL_VARIABLES, ops.GraphKeys.METRIC_VARIABLES],
        name="total")
    update = state_ops.assign_add(total, math_ops.reduce_sum(math_ops.to_float(weights)))
    return array_ops.identity(total), update
