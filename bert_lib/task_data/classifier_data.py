"""Sentence (pair) classification data: examples, the GLUE/XNLI and custom readers, metrics.

Everything run_classifier.py does with data that needs no flags and no
graph lives here, as Model Garden keeps classifier_data_lib apart from its
runner script: the InputExample / InputFeatures classes; a processor per
GLUE task and XNLI, and CustomProcessor for a user's own CSV, TSV or JSON
lines files read by column name (with the label set, class weights and
long-text window spans that go with them); the conversion of examples to
features and TFRecords; the tasks' official metrics; and the text of
test_results.tsv, of a GLUE submission and of an export's Predictor files.

It is apart from the script because it reads no flags: every value comes
in as an argument, so a notebook or another program (convert_checkpoint.py
takes a task's label names from here) can use it without defining the
script's flags. run_classifier.py keeps the original's names
(run_classifier.MrpcProcessor, ...) by assignment. A bad row is a
UsageError naming its file and line.
"""

import csv
import json
import math
import os

import numpy as np
import tensorflow as tf
from absl import logging

import tokenization

from ..plumbing import startup_checks
from ..plumbing.errors import UsageError
from ..plumbing.progress import Progress
from . import features

# The file extensions of a custom task's splits, and the file of its label set.
EXTENSIONS = (".csv", ".tsv", ".jsonl")
LABELS_FILE = "labels.txt"


class InputExample:
    """A single training/test example for simple sequence classification."""

    def __init__(self, guid, text_a, text_b=None, label=None):
        """Holds one example.

        Args:
          guid: unique id of the example (used in logs only).
          text_a: the untokenized text of the first sequence.
          text_b: optional untokenized text of the second sequence (pair tasks).
          label: the label as a string (a number as text for regression); test
            examples carry a placeholder.
        """
        self.guid = guid
        self.text_a = text_a
        self.text_b = text_b
        self.label = label

    def __repr__(self):
        return (
            f"InputExample(guid={self.guid!r}, text_a={self.text_a!r}, "
            f"text_b={self.text_b!r}, label={self.label!r})"
        )


class PaddingInputExample:
    """A fake example that pads the example count up to a multiple of the batch size.

    TPUs need every batch full, so eval and predict sets are padded with these
    instead of dropping the last partial batch. They turn into all-zero features
    with is_real_example=False and get weight 0 in every metric. A class rather
    than None, so that padding is never mistaken for a missing example.
    """


class InputFeatures:
    """A single set of features of data."""

    def __init__(self, input_ids, input_mask, segment_ids, label_id, is_real_example=True):
        self.input_ids = input_ids
        self.input_mask = input_mask
        self.segment_ids = segment_ids
        self.label_id = label_id
        self.is_real_example = is_real_example


class TsvRow(list):
    """The fields of one TSV line, remembering the file and line number for errors."""

    def __init__(self, fields, path, line_number):
        super().__init__(fields)
        self.path = path
        self.line_number = line_number


def _where(line, index):
    """Names the place of a row in error messages: 'file, line N' when known."""
    path = getattr(line, "path", None)
    if path is not None:
        return f"{path}, line {line.line_number}"
    return f"row {index}"


def _require_columns(line, index, count):
    """Raises ValueError naming the file and line if `line` has < `count` fields."""
    if len(line) < count:
        raise UsageError(
            f"{_where(line, index)}: expected at least {count} tab-separated "
            f"columns, found {len(line)}"
        )


def _field(line, index, column):
    """Returns column `column` of `line` as text; a short row is a ValueError."""
    _require_columns(line, index, column + 1)
    return tokenization.convert_to_unicode(line[column])


def _label(line, index, column, label_list):
    """Returns the label in `column`, checked against `label_list`.

    A None label_list means a regression task: the label must parse as a float.
    """
    label = _field(line, index, column)
    _check_label(line, index, label, label_list)
    return label


def _check_label(line, index, label, label_list):
    if label_list is None:
        try:
            float(label)
        except ValueError:
            raise UsageError(f"{_where(line, index)}: label {label!r} is not a number") from None
    elif label not in label_list:
        known = ", ".join(map(str, label_list))
        raise UsageError(f"{_where(line, index)}: label {label!r} is not one of {known}")


class DataProcessor:
    """Base class for data converters for sequence classification data sets.

    `metric_names` lists the task's official metrics reported besides accuracy
    and loss: any of "mcc", "f1", "pearson", "spearman".
    """

    metric_names = ()

    def get_train_examples(self, data_dir):
        """Gets a collection of `InputExample`s for the train set."""
        raise NotImplementedError()

    def get_dev_examples(self, data_dir):
        """Gets a collection of `InputExample`s for the dev set."""
        raise NotImplementedError()

    def get_test_examples(self, data_dir):
        """Gets a collection of `InputExample`s for prediction."""
        raise NotImplementedError()

    def get_labels(self):
        """Gets the list of labels for this data set (None for regression)."""
        raise NotImplementedError()

    @classmethod
    def _read_tsv(cls, input_file, quotechar=None):
        """Reads a tab separated file into a list of rows (lists of fields).

        No quoting by default, as GLUE files contain bare quote characters. Each
        row is a TsvRow, a list that also knows its file and line number so that
        a bad row can be reported precisely. A missing file is a ValueError.
        """
        if not tf.io.gfile.exists(input_file):
            raise UsageError(f"{input_file}: no such file")
        lines = startup_checks.text_lines(input_file)
        reader = csv.reader(lines, delimiter="\t", quotechar=quotechar)
        return [TsvRow(fields, input_file, reader.line_num) for fields in reader]


class XnliProcessor(DataProcessor):
    """Processor for the XNLI data set (Chinese): MultiNLI train, XNLI dev/test."""

    def __init__(self):
        self.language = "zh"

    def get_train_examples(self, data_dir):
        """See base class."""
        lines = self._read_tsv(
            os.path.join(data_dir, "multinli", f"multinli.train.{self.language}.tsv")
        )
        examples = []
        for i, line in enumerate(lines):
            if i == 0:
                continue
            _require_columns(line, i, 3)
            text_a = _field(line, i, 0)
            text_b = _field(line, i, 1)
            label = _field(line, i, 2)
            if label == "contradictory":
                label = "contradiction"
            _check_label(line, i, label, self.get_labels())
            examples.append(InputExample(f"train-{i}", text_a, text_b, label))
        return examples

    def get_dev_examples(self, data_dir):
        """See base class."""
        return self._xnli_examples(os.path.join(data_dir, "xnli.dev.tsv"), "dev")

    def get_test_examples(self, data_dir):
        """The XNLI test set (same layout as dev); labels become a placeholder."""
        return self._xnli_examples(os.path.join(data_dir, "xnli.test.tsv"), "test")

    def _xnli_examples(self, path, set_type):
        examples = []
        for i, line in enumerate(self._read_tsv(path)):
            if i == 0:
                continue
            _require_columns(line, i, 8)
            if _field(line, i, 0) != self.language:
                continue
            text_a = _field(line, i, 6)
            text_b = _field(line, i, 7)
            if set_type == "test":
                label = self.get_labels()[0]
            else:
                label = _label(line, i, 1, self.get_labels())
            examples.append(InputExample(f"{set_type}-{i}", text_a, text_b, label))
        return examples

    def get_labels(self):
        """See base class."""
        return ["contradiction", "entailment", "neutral"]


class MnliProcessor(DataProcessor):
    """Processor for the MultiNLI data set (GLUE version), matched dev/test."""

    dev_file = "dev_matched.tsv"
    dev_set_type = "dev_matched"
    test_file = "test_matched.tsv"

    def get_train_examples(self, data_dir):
        """See base class."""
        return self._create_examples(self._read_tsv(os.path.join(data_dir, "train.tsv")), "train")

    def get_dev_examples(self, data_dir):
        """See base class."""
        return self._create_examples(
            self._read_tsv(os.path.join(data_dir, self.dev_file)), self.dev_set_type
        )

    def get_test_examples(self, data_dir):
        """See base class."""
        return self._create_examples(
            self._read_tsv(os.path.join(data_dir, self.test_file)), "test"
        )

    def get_labels(self):
        """See base class."""
        return ["contradiction", "entailment", "neutral"]

    def _create_examples(self, lines, set_type):
        """Texts in columns 8 and 9, the gold label in the last column (> 9)."""
        examples = []
        for i, line in enumerate(lines):
            if i == 0:
                continue
            _require_columns(line, i, 10 if set_type == "test" else 11)
            guid = f"{set_type}-{_field(line, i, 0)}"
            text_a = _field(line, i, 8)
            text_b = _field(line, i, 9)
            if set_type == "test":
                label = "contradiction"
            else:
                label = _label(line, i, len(line) - 1, self.get_labels())
            examples.append(InputExample(guid, text_a, text_b, label))
        return examples


class MnliMismatchedProcessor(MnliProcessor):
    """MultiNLI with the mismatched dev/test sets (GLUE's MNLI-mm)."""

    dev_file = "dev_mismatched.tsv"
    dev_set_type = "dev_mismatched"
    test_file = "test_mismatched.tsv"


class _GlueProcessor(DataProcessor):
    """A GLUE task stored as train.tsv / dev.tsv / test.tsv.

    Subclasses give `_create_examples(lines, set_type)`; the file reading is
    shared.
    """

    def get_train_examples(self, data_dir):
        """See base class."""
        return self._create_examples(self._read_tsv(os.path.join(data_dir, "train.tsv")), "train")

    def get_dev_examples(self, data_dir):
        """See base class."""
        return self._create_examples(self._read_tsv(os.path.join(data_dir, "dev.tsv")), "dev")

    def get_test_examples(self, data_dir):
        """See base class."""
        return self._create_examples(self._read_tsv(os.path.join(data_dir, "test.tsv")), "test")


class MrpcProcessor(_GlueProcessor):
    """Processor for the MRPC data set (GLUE version)."""

    metric_names = ("f1",)

    def get_labels(self):
        """See base class."""
        return ["0", "1"]

    def _create_examples(self, lines, set_type):
        """Header skipped; label in column 0, texts in columns 3 and 4."""
        examples = []
        for i, line in enumerate(lines):
            if i == 0:
                continue
            _require_columns(line, i, 5)
            text_a = _field(line, i, 3)
            text_b = _field(line, i, 4)
            if set_type == "test":
                label = "0"
            else:
                label = _label(line, i, 0, self.get_labels())
            examples.append(InputExample(f"{set_type}-{i}", text_a, text_b, label))
        return examples


class ColaProcessor(_GlueProcessor):
    """Processor for the CoLA data set (GLUE version)."""

    metric_names = ("mcc",)

    def get_labels(self):
        """See base class."""
        return ["0", "1"]

    def _create_examples(self, lines, set_type):
        """Train/dev: no header, label column 1, text column 3. Test: header, text 1."""
        examples = []
        for i, line in enumerate(lines):
            if set_type == "test" and i == 0:
                continue
            _require_columns(line, i, 2 if set_type == "test" else 4)
            if set_type == "test":
                text_a = _field(line, i, 1)
                label = "0"
            else:
                text_a = _field(line, i, 3)
                label = _label(line, i, 1, self.get_labels())
            examples.append(InputExample(f"{set_type}-{i}", text_a, None, label))
        return examples


class Sst2Processor(_GlueProcessor):
    """SST-2: train/dev 'sentence<TAB>label', test 'index<TAB>sentence', headers."""

    def get_labels(self):
        """See base class."""
        return ["0", "1"]

    def _create_examples(self, lines, set_type):
        examples = []
        for i, line in enumerate(lines):
            if i == 0:
                continue
            _require_columns(line, i, 2)
            if set_type == "test":
                text_a = _field(line, i, 1)
                label = "0"
            else:
                text_a = _field(line, i, 0)
                label = _label(line, i, 1, self.get_labels())
            examples.append(InputExample(f"{set_type}-{i}", text_a, None, label))
        return examples


class QqpProcessor(_GlueProcessor):
    """QQP: 'id qid1 qid2 question1 question2 is_duplicate'; test 'id question1 question2'."""

    metric_names = ("f1",)

    def get_labels(self):
        """See base class."""
        return ["0", "1"]

    def _create_examples(self, lines, set_type):
        examples = []
        for i, line in enumerate(lines):
            if i == 0:
                continue
            _require_columns(line, i, 3 if set_type == "test" else 6)
            guid = f"{set_type}-{_field(line, i, 0)}"
            if set_type == "test":
                text_a = _field(line, i, 1)
                text_b = _field(line, i, 2)
                label = "0"
            else:
                text_a = _field(line, i, 3)
                text_b = _field(line, i, 4)
                label = _label(line, i, 5, self.get_labels())
            examples.append(InputExample(guid, text_a, text_b, label))
        return examples


class _IndexedPairProcessor(_GlueProcessor):
    """'index text_a text_b label' with a header; test rows have no label."""

    def _create_examples(self, lines, set_type):
        examples = []
        for i, line in enumerate(lines):
            if i == 0:
                continue
            _require_columns(line, i, 3 if set_type == "test" else 4)
            guid = f"{set_type}-{_field(line, i, 0)}"
            text_a = _field(line, i, 1)
            text_b = _field(line, i, 2)
            if set_type == "test":
                label = self.get_labels()[0]
            else:
                label = _label(line, i, 3, self.get_labels())
            examples.append(InputExample(guid, text_a, text_b, label))
        return examples


class QnliProcessor(_IndexedPairProcessor):
    """QNLI: 'index question sentence label'."""

    def get_labels(self):
        """See base class."""
        return ["entailment", "not_entailment"]


class RteProcessor(_IndexedPairProcessor):
    """RTE: 'index sentence1 sentence2 label'."""

    def get_labels(self):
        """See base class."""
        return ["entailment", "not_entailment"]


class WnliProcessor(_IndexedPairProcessor):
    """WNLI: 'index sentence1 sentence2 label' with labels 0/1."""

    def get_labels(self):
        """See base class."""
        return ["0", "1"]


class StsbProcessor(_GlueProcessor):
    """STS-B, a regression task: texts in columns 7 and 8, the score in column 9."""

    metric_names = ("pearson", "spearman")

    def get_labels(self):
        """None: STS-B is regression, with one output and float labels."""
        return None

    def _create_examples(self, lines, set_type):
        examples = []
        for i, line in enumerate(lines):
            if i == 0:
                continue
            _require_columns(line, i, 9 if set_type == "test" else 10)
            guid = f"{set_type}-{_field(line, i, 0)}"
            text_a = _field(line, i, 7)
            text_b = _field(line, i, 8)
            if set_type == "test":
                label = "0.0"
            else:
                label = _label(line, i, 9, None)
            examples.append(InputExample(guid, text_a, text_b, label))
        return examples


# ---------------------------------------------------------------------------
# A user's own data (--task_name=custom): files read by column name.


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
                    _check_label(row, i, name, self.labels)
            examples.append(InputExample(f"{set_type}-{row.line_number}", text_a, text_b, label))
        return examples


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


PROCESSORS = {
    "cola": ColaProcessor,
    "custom": CustomProcessor,
    "mnli": MnliProcessor,
    "mnli-mm": MnliMismatchedProcessor,
    "mrpc": MrpcProcessor,
    "qnli": QnliProcessor,
    "qqp": QqpProcessor,
    "rte": RteProcessor,
    "sst-2": Sst2Processor,
    "sts-b": StsbProcessor,
    "wnli": WnliProcessor,
    "xnli": XnliProcessor,
}


def get_processor(task_name):
    """Returns a processor for `task_name` (case-insensitive); unknown is a ValueError."""
    name = (task_name or "").lower()
    if name not in PROCESSORS:
        raise UsageError(
            f"Task not found: {task_name} (known tasks: {', '.join(sorted(PROCESSORS))})"
        )
    return PROCESSORS[name]()


# ---------------------------------------------------------------------------
# Examples to features and TFRecords.


def convert_single_example(
    ex_index, example, label_list, max_seq_length, tokenizer, multi_label=False
):
    """Converts one `InputExample` into one `InputFeatures`.

    Layout: [CLS] a [SEP] for singles, [CLS] a [SEP] b [SEP] for pairs (segment
    ids 0 through the first [SEP], then 1), zero-padded to max_seq_length. Pairs
    are cut to max_seq_length - 3 tokens by trimming the longer side, singles to
    max_seq_length - 2. A None label_list means regression: label_id is the
    float value of the label. With `multi_label`, the label is a tuple of names
    and label_id a 0/1 list over label_list. A PaddingInputExample gives
    all-zero features with is_real_example=False. An unknown label is a
    ValueError.
    """
    if isinstance(example, PaddingInputExample):
        return InputFeatures(
            input_ids=[0] * max_seq_length,
            input_mask=[0] * max_seq_length,
            segment_ids=[0] * max_seq_length,
            label_id=_padding_label_id(label_list, multi_label),
            is_real_example=False,
        )

    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = None
    if example.text_b:
        tokens_b = tokenizer.tokenize(example.text_b)

    tokens, input_ids, input_mask, segment_ids = features.pack_pair(
        tokenizer, tokens_a, tokens_b, max_seq_length
    )

    if label_list is None:
        label_id = float(example.label)
    elif multi_label:
        label_id = multi_hot(example, label_list)
    else:
        label_map = {label: i for i, label in enumerate(label_list)}
        if example.label not in label_map:
            raise UsageError(
                f"Example {example.guid}: label {example.label!r} is not one of "
                f"{', '.join(map(str, label_list))}"
            )
        label_id = label_map[example.label]

    if ex_index < 5:
        logging.info("*** Example ***")
        logging.info("guid: %s", example.guid)
        logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in tokens))
        logging.info("input_ids: %s", " ".join(str(x) for x in input_ids))
        logging.info("input_mask: %s", " ".join(str(x) for x in input_mask))
        logging.info("segment_ids: %s", " ".join(str(x) for x in segment_ids))
        logging.info("label: %s (id = %s)", example.label, label_id)

    return InputFeatures(
        input_ids=input_ids,
        input_mask=input_mask,
        segment_ids=segment_ids,
        label_id=label_id,
        is_real_example=True,
    )


def _padding_label_id(label_list, multi_label):
    if label_list is None:
        return 0.0
    return [0] * len(label_list) if multi_label else 0


def multi_hot(example, label_list):
    """The 0/1 list over label_list of a multi-label example; unknown names are errors."""
    unknown = [name for name in example.label if name not in label_list]
    if unknown:
        raise UsageError(
            f"Example {example.guid}: label {unknown[0]!r} is not one of "
            f"{', '.join(map(str, label_list))}"
        )
    return [int(name in example.label) for name in label_list]


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


def convert_example_windows(
    ex_index, example, label_list, max_seq_length, tokenizer, stride, multi_label=False
):
    """Converts one example into one InputFeatures per window of its text.

    A single text longer than max_seq_length - 2 word pieces becomes
    overlapping windows of that many pieces, starting `stride` apart (see
    window_spans), each wrapped in [CLS] ... [SEP] and carrying the example's
    label. Pairs and texts that fit give one InputFeatures, as
    convert_single_example.
    """
    first = convert_single_example(
        ex_index, example, label_list, max_seq_length, tokenizer, multi_label
    )
    if isinstance(example, PaddingInputExample) or example.text_b:
        return [first]
    tokens = tokenizer.tokenize(example.text_a)
    spans = window_spans(len(tokens), max_seq_length - 2, stride)
    # The first window is the text as convert_single_example truncates it.
    result = [first]
    for start, length in spans[1:]:
        _, input_ids, input_mask, segment_ids = features.pack_pair(
            tokenizer, tokens[start : start + length], None, max_seq_length
        )
        result.append(InputFeatures(input_ids, input_mask, segment_ids, first.label_id, True))
    return result


def convert_example(
    ex_index, example, label_list, max_seq_length, tokenizer, multi_label=False, window_stride=None
):
    """The InputFeatures of one example: one per window with `window_stride`, else one."""
    if window_stride:
        return convert_example_windows(
            ex_index, example, label_list, max_seq_length, tokenizer, window_stride, multi_label
        )
    return [
        convert_single_example(
            ex_index, example, label_list, max_seq_length, tokenizer, multi_label
        )
    ]


def convert_examples_with_owners(
    examples, label_list, max_seq_length, tokenizer, multi_label=False, window_stride=None
):
    """(InputFeatures of every example, in order; the example index of each), in memory."""
    feature_list, owners = [], []
    for ex_index, example in enumerate(examples):
        converted = convert_example(
            ex_index, example, label_list, max_seq_length, tokenizer, multi_label, window_stride
        )
        feature_list.extend(converted)
        owners.extend([ex_index] * len(converted))
    return feature_list, owners


def file_based_convert_examples_to_features(
    examples,
    label_list,
    max_seq_length,
    tokenizer,
    output_file,
    multi_label=False,
    window_stride=None,
):
    """Converts `InputExample`s into a TFRecord file of tf.train.Examples.

    Features, in order: input_ids, input_mask, segment_ids, label_ids (int64, or
    float for regression, or a 0/1 list with `multi_label`) and
    is_real_example. The file appears only complete. With `window_stride`,
    long single texts become several records (convert_example_windows).

    Returns the example index of each record, in order.
    """
    owners = []
    progress = Progress("Writing", len(examples), "examples")
    with features.atomic_record_writers([output_file]) as (writer,):
        for ex_index, example in enumerate(examples):
            progress.update(ex_index)
            converted = convert_example(
                ex_index,
                example,
                label_list,
                max_seq_length,
                tokenizer,
                multi_label,
                window_stride,
            )
            owners.extend([ex_index] * len(converted))
            for feature in converted:
                writer.write(_feature_record(feature, label_list).SerializeToString())
    return owners


def _feature_record(feature, label_list):
    """The tf.train.Example of one InputFeatures."""
    if label_list is None:
        label_feature = features.create_float_feature([feature.label_id])
    else:
        label_feature = features.create_int_feature(np.atleast_1d(feature.label_id))
    return features.make_example(
        [
            ("input_ids", features.create_int_feature(feature.input_ids)),
            ("input_mask", features.create_int_feature(feature.input_mask)),
            ("segment_ids", features.create_int_feature(feature.segment_ids)),
            ("label_ids", label_feature),
            ("is_real_example", features.create_int_feature([int(feature.is_real_example)])),
        ]
    )


def convert_examples_to_features(examples, label_list, max_seq_length, tokenizer):
    """Converts `InputExample`s into a list of `InputFeatures`."""
    progress = Progress("Converting", len(examples), "examples")
    result = []
    for ex_index, example in enumerate(examples):
        progress.update(ex_index)
        result.append(
            convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer)
        )
    return result


def read_text_examples(path, label_list, multi_label):
    """InputExamples of a plain text file: one a line, "a ||| b" for pairs.

    Blank lines are skipped. Labels are placeholders (the first label, no
    label for multi-label, 0 for regression); only the texts matter.
    """
    if label_list is None:
        placeholder = "0"
    else:
        placeholder = () if multi_label else label_list[0]
    examples = []
    for line_number, line in enumerate(startup_checks.text_lines(path), start=1):
        if not line.strip():
            continue
        text_a, text_b = features.split_text_pair(line)
        examples.append(InputExample(f"text-{line_number}", text_a, text_b, placeholder))
    if not examples:
        raise UsageError(f"--predict_text_file={path}: no text in the file")
    return examples


# ---------------------------------------------------------------------------
# Metrics: computed in numpy over every prediction of the dev set.


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


def official_metrics(metric_names, examples, outputs, label_list):
    """compute_metrics of one output per example against the examples' gold labels.

    `outputs` are probabilities (the argmax is the predicted class) or, for
    regression (label_list None), scores.
    """
    if label_list is None:
        gold = [float(e.label) for e in examples]
        predicted = [float(o) for o in outputs]
    else:
        gold = [label_list.index(e.label) for e in examples]
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


def window_metrics(outputs, examples, label_list, multi_label):
    """eval_accuracy and eval_loss over whole examples from their averaged windows."""
    probabilities = np.clip(np.asarray(outputs, np.float64), 1e-12, 1 - 1e-12)
    if multi_label:
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


# ---------------------------------------------------------------------------
# Outputs: test_results.tsv, a GLUE submission, an export's predictor files.


def format_test_results(outputs):
    """test_results.tsv text: per example, its probabilities (or score) tab-joined.

    Each value prints as str() of a float32, as the original.
    """
    lines = []
    for output in outputs:
        values = np.atleast_1d(np.asarray(output, dtype=np.float32))
        lines.append("\t".join(str(v) for v in values) + "\n")
    return "".join(lines)


def format_glue_submission(outputs, label_list):
    """GLUE submission text: 'index<TAB>prediction', one row per test example.

    The prediction is the label name of the most probable class, or the
    score itself (3 decimals) for regression (label_list None). Indices count
    the test examples from 0, as the GLUE test files do.
    """
    lines = ["index\tprediction\n"]
    for index, output in enumerate(outputs):
        if label_list is None:
            prediction = f"{float(np.asarray(output).reshape(())):.3f}"
        else:
            prediction = label_list[int(np.argmax(output))]
        lines.append(f"{index}\t{prediction}\n")
    return "".join(lines)


def predictor_files(
    vocab_file, do_lower_case, label_list, multi_label, threshold, max_seq_length=None
):
    """The assets.extra/ files predictor.Predictor reads: the vocabulary and its settings.

    `max_seq_length` is where the Predictor cuts texts (the exported graph
    takes any length, so its signature does not say).
    """
    with tf.io.gfile.GFile(vocab_file, "r") as f:
        vocab = f.read()
    settings = {
        "task": "classifier",
        "do_lower_case": bool(do_lower_case),
        "labels": label_list,
        "multi_label": bool(multi_label),
        "multi_label_threshold": float(threshold),
    }
    if max_seq_length is not None:
        settings["max_seq_length"] = int(max_seq_length)
    return {"vocab.txt": vocab, "predictor.json": json.dumps(settings, indent=2) + "\n"}
