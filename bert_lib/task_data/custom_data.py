"""A user's own classification data (--task_name=custom): CSV, TSV or JSON lines files read
by column name, with the label set, class weights and its resolution.

The label set of a run comes from --labels, else from output_dir/labels.txt
of an earlier run, else from the training file (sorted), by label_set's
rule: resolve_labels settles it before any work, as the checkpoint's class
order follows labels.txt.
"""

import csv
import json
import os

import tensorflow as tf

import tokenization

from ..plumbing import startup_checks
from ..plumbing.errors import UsageError
from . import label_set
from .classifier_data import DataProcessor, InputExample, check_label

# The file extensions of a custom task's splits.
EXTENSIONS = (".csv", ".tsv", ".jsonl")


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
    lines = startup_checks.text_lines(path)
    if path.endswith(".jsonl"):
        return _json_rows(lines, path)
    if path.endswith(".tsv"):
        reader = csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE)
    else:
        reader = csv.reader(lines)
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
            _check_header(header, path, line_number)
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


def _check_header(header, path, line_number):
    """Each column named once: of two columns of one name, the second would be read."""
    seen = {}
    for column, name in enumerate(header, start=1):
        if name and name in seen:
            raise UsageError(
                f"{path}, line {line_number}: the header names column {name!r} twice "
                f"(columns {seen[name]} and {column})"
            )
        seen[name] = column


def _object_without_repeated_keys(path, line_number):
    """json's object_pairs_hook refusing a key given twice (json would keep the last)."""

    def hook(pairs):
        keys = [key for key, _ in pairs]
        repeated = [key for key in keys if keys.count(key) > 1]
        if repeated:
            raise UsageError(f"{path}, line {line_number}: key {repeated[0]!r} is given twice")
        return dict(pairs)

    return hook


def _json_rows(lines, path):
    rows = []
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(
                line, object_pairs_hook=_object_without_repeated_keys(path, line_number)
            )
        except UsageError:
            raise
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


class CustomProcessor(DataProcessor):
    """A user's own data: train/dev/test as .csv, .tsv or .jsonl, columns by name.

    Texts come from `text_a_column` (and `text_b_column` for pairs), labels
    from `label_column`: one name, or with `multi_label` several separated by
    `label_delimiter` (the example's label is then a tuple of names). The
    label set is given by `set_labels`; a test file may lack labels.
    """

    is_custom = True

    def __init__(
        self,
        text_a_column="text",
        text_b_column=None,
        label_column="label",
        multi_label=False,
        label_delimiter="|",
    ):
        self.text_a_column = text_a_column
        self.text_b_column = text_b_column
        self.label_column = label_column
        self.multi_label = multi_label
        self.label_delimiter = label_delimiter
        self.labels = None

    def set_labels(self, labels):
        self.labels = list(labels)

    def get_labels(self):
        """See base class; None until set_labels (custom tasks are never regression)."""
        return self.labels

    def get_train_examples(self, data_dir):
        """See base class."""
        return self._create_examples(find_split_file(data_dir, "train"), "train")

    def get_dev_examples(self, data_dir):
        """See base class."""
        return self._create_examples(find_split_file(data_dir, "dev"), "dev")

    def get_test_examples(self, data_dir):
        """See base class; rows without a label get a placeholder one."""
        return self._create_examples(find_split_file(data_dir, "test"), "test")

    def _create_examples(self, path, set_type):
        examples = []
        for i, row in enumerate(read_rows(path)):
            text_a = row_text(row, self.text_a_column)
            text_b = None
            if self.text_b_column:
                text_b = row_text(row, self.text_b_column)
            label = row_labels(row, self.label_column, self.multi_label, self.label_delimiter)
            if label is None:
                if set_type != "test":
                    raise UsageError(f"{row.where()}: no label in column {self.label_column!r}")
                label = () if self.multi_label else (self.labels or [""])[0]
            elif self.labels is not None:
                for name in label if self.multi_label else [label]:
                    check_label(row, i, name, self.labels)
            examples.append(InputExample(f"{set_type}-{row.line_number}", text_a, text_b, label))
        return examples


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


def resolve_labels(processor, data_dir, output_dir, labels_flag=None, do_train=False):
    """Settles a CustomProcessor's label set before any work, and sets it.

    The labels come from `labels_flag` (--labels), else from
    output_dir/labels.txt of an earlier run, else from the training file
    (sorted), by label_set.resolve's rule. A set of fewer than two labels
    (one for a multi-label task) is an error.
    """
    multi_label = processor.multi_label

    def from_training():
        if not do_train:
            try:
                find_split_file(data_dir, "train")
            except ValueError:
                raise UsageError(
                    f"--task_name=custom: no {label_set.labels_path(output_dir)} and no train "
                    f"file in --data_dir={data_dir} to take the labels from; pass --labels"
                ) from None
        train_examples = processor.get_train_examples(data_dir)
        labels = label_set.labels_from_examples(
            [example.label if multi_label else [example.label] for example in train_examples]
        )
        train_file = find_split_file(data_dir, "train")
        return labels, f"{train_file} ({len(train_examples)} rows)"

    labels, source = label_set.resolve(output_dir, labels_flag, from_training)
    if len(labels) < (1 if multi_label else 2):
        found = ", ".join(labels) if labels else "none"
        raise UsageError(
            f"--task_name=custom: {source} gives the labels {found}; a classifier needs at "
            "least two labels"
        )
    processor.set_labels(labels)
    return labels
