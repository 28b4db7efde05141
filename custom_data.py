"""Reading a user's own classification data for run_classifier.py --task_name=custom.

A GLUE task needs a processor written for its file layout; a user's data
should need only flags. This module holds the pieces that are not tied to
the classifier's graph: finding train/dev/test files by extension, reading
CSV, TSV and JSON lines by column name, the label set (from the training
file, --labels or output_dir/labels.txt), class weights, the multi-label
metrics and the window spans of long texts. Every problem in a file is a
ValueError naming the file and line.
"""

import csv
import json
import os

import numpy as np
import tensorflow as tf

import tokenization
from errors import UsageError

EXTENSIONS = (".csv", ".tsv", ".jsonl")
LABELS_FILE = "labels.txt"


class Row(dict):
    """One record of a data file by column name, remembering its file and line."""

    def __init__(self, fields, path, line_number):
        super().__init__(fields)
        self.path = path
        self.line_number = line_number

    def where(self):
        return f"{self.path}, line {self.line_number}"


def find_split_file(data_dir, split):
    """The one `split`.csv/.tsv/.jsonl in `data_dir`; none or several is a ValueError."""
    found = [
        os.path.join(data_dir, split + ext)
        for ext in EXTENSIONS
        if tf.io.gfile.exists(os.path.join(data_dir, split + ext))
    ]
    if not found:
        names = ", ".join(split + ext for ext in EXTENSIONS)
        raise UsageError(f"--data_dir={data_dir}: no {split} file (looked for {names})")
    if len(found) > 1:
        raise UsageError(f"--data_dir={data_dir}: several {split} files ({', '.join(found)})")
    return found[0]


def read_rows(path):
    """Returns the Rows of a .csv/.tsv file (with a header row) or a .jsonl file.

    CSV follows the usual quoting rules; TSV has no quoting (like the GLUE
    files); each JSON line is one object, blank lines are skipped. A row
    whose field count differs from the header's is a ValueError.
    """
    with tf.io.gfile.GFile(path, "r") as f:
        if path.endswith(".jsonl"):
            return _json_rows(f, path)
        if path.endswith(".tsv"):
            reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        else:
            reader = csv.reader(f)
        return _table_rows(reader, path)


def _table_rows(reader, path):
    rows = []
    header = None
    next_line = 1
    for fields in reader:
        line_number = next_line
        next_line = reader.line_num + 1
        if header is None:
            header = [tokenization.convert_to_unicode(name).strip() for name in fields]
            continue
        if not fields:
            continue
        if len(fields) != len(header):
            raise UsageError(
                f"{path}, line {line_number}: {len(fields)} fields, but the header has "
                f"{len(header)}"
            )
        values = [tokenization.convert_to_unicode(v) for v in fields]
        rows.append(Row(zip(header, values), path, line_number))
    return rows


def _json_rows(lines, path):
    rows = []
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as e:
            raise UsageError(f"{path}, line {line_number}: not JSON ({e})") from None
        if not isinstance(record, dict):
            raise UsageError(f"{path}, line {line_number}: not a JSON object")
        rows.append(Row(record, path, line_number))
    return rows


def row_text(row, column, required=True):
    """The text in `column` of `row`; a missing (required) or non-text value is an error."""
    value = row.get(column)
    if value is None:
        if required:
            raise UsageError(f"{row.where()}: no {column!r} column")
        return None
    if not isinstance(value, str):
        raise UsageError(f"{row.where()}: {column!r} is {value!r}, not text")
    return value


def row_labels(row, column, multi_label, delimiter):
    """The label of `row` as text, or a tuple of label names when `multi_label`.

    None when the row has no label (allowed for test files). A multi-label
    field is split on `delimiter` (JSON lines may give a list instead);
    blanks around names are dropped, and an empty field means no label.
    """
    value = row.get(column)
    if value is None:
        return None
    if multi_label:
        if isinstance(value, list):
            names = [str(v).strip() for v in value]
        else:
            names = [part.strip() for part in str(value).split(delimiter)]
        return tuple(dict.fromkeys(name for name in names if name))
    if isinstance(value, (list, dict)):
        raise UsageError(f"{row.where()}: label {value!r} is not a single label")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    label = str(value).strip()
    if not label:
        return None
    return label


def labels_from_examples(examples, multi_label):
    """The sorted set of labels used by `examples` (strings, so sorted stably)."""
    names = set()
    for example in examples:
        if multi_label:
            names.update(example.label)
        else:
            names.add(example.label)
    return sorted(names)


def parse_labels_flag(value):
    """--labels=a,b,c as a list; duplicates or empty names are errors."""
    labels = [name.strip() for name in value.split(",")]
    if any(not name for name in labels):
        raise UsageError(f"--labels={value}: empty label name")
    if len(set(labels)) != len(labels):
        raise UsageError(f"--labels={value}: a label is listed twice")
    return labels


def read_labels_file(path):
    """The label names of a labels.txt, one a line, in class-id order."""
    with tf.io.gfile.GFile(path, "r") as f:
        return [line.rstrip("\n") for line in f if line.rstrip("\n")]


def parse_class_weights(spec, label_list, train_examples, multi_label):
    """One loss weight per class, in label_list order, from --class_weights.

    "balanced": n / (k * count_c), n training examples, k classes and count_c
    the examples of class c (for multi-label: the examples carrying c), so
    that the weights average 1 over the training examples of a single-label
    task. "name:weight,...": the given weights, 1.0 for classes not named.
    """
    if spec == "balanced":
        if train_examples is None:
            raise UsageError("--class_weights=balanced needs --do_train (it counts the train set)")
        counts = dict.fromkeys(label_list, 0)
        for example in train_examples:
            for name in example.label if multi_label else [example.label]:
                counts[name] += 1
        missing = [name for name, count in counts.items() if count == 0]
        if missing:
            raise UsageError(
                f"--class_weights=balanced: label {missing[0]!r} never occurs in the training "
                "set; give the weights explicitly"
            )
        total = len(train_examples)
        return [total / (len(label_list) * counts[name]) for name in label_list]
    weights = dict.fromkeys(label_list, 1.0)
    for part in spec.split(","):
        name, sep, number = part.rpartition(":")
        name = name.strip()
        if not sep or name not in weights:
            raise UsageError(
                f"--class_weights={spec}: {part!r} is not label:weight with a label of "
                f"{', '.join(label_list)}"
            )
        try:
            weight = float(number)
        except ValueError:
            raise UsageError(f"--class_weights={spec}: {number!r} is not a number") from None
        if not weight >= 0:
            raise UsageError(f"--class_weights={spec}: weight {number} is negative")
        weights[name] = weight
    return [weights[name] for name in label_list]


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


def window_spans(num_tokens, window, stride):
    """(start, length) of the windows covering `num_tokens` tokens.

    Windows hold `window` tokens and start `stride` apart; the last one ends
    at the last token. A text that fits is one window.
    """
    spans = []
    start = 0
    while True:
        length = min(window, num_tokens - start)
        spans.append((start, length))
        if start + length >= num_tokens:
            return spans
        start += min(length, stride)
