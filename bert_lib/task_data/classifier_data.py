"""Sentence (pair) classification data: the examples and the GLUE / XNLI processors.

Everything run_classifier.py does with data that needs no flags and no
graph lives in bert_lib/task_data, as Model Garden keeps classifier_data_lib
apart from its engine script, one module per job: here the InputExample /
InputFeatures classes, the DataProcessor base and a processor per GLUE task
and XNLI; custom_data.py a user's own CSV, TSV or JSON lines files
(CustomProcessor, its label set, class weights); classifier_tasks.py the
processors by --task_name; classifier_features.py the conversion of
examples to features and TFRecords; classifier_metrics.py the tasks'
official metrics; classifier_output.py the text of test_results.tsv, of a
GLUE submission and of an export's Predictor files.

They read no flags: every value comes in as an argument, so a notebook or
another program (convert_checkpoint.py takes a task's label names from
classifier_tasks) can use them without defining the script's flags.
run_classifier.py keeps the original's names (run_classifier.MrpcProcessor,
...) by assignment. A bad row is a UsageError naming its file and line.
"""

import csv
import os

import tensorflow as tf

import tokenization

from ..plumbing import startup_checks
from ..plumbing.errors import UsageError


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


def row_place(line, index):
    """Names the place of a row in error messages: 'file, line N' when known."""
    path = getattr(line, "path", None)
    if path is not None:
        return f"{path}, line {line.line_number}"
    return f"row {index}"


def require_columns(line, index, count):
    """Raises ValueError naming the file and line if `line` has < `count` fields."""
    if len(line) < count:
        raise UsageError(
            f"{row_place(line, index)}: expected at least {count} tab-separated "
            f"columns, found {len(line)}"
        )


def tsv_field(line, index, column):
    """Returns column `column` of `line` as text; a short row is a ValueError."""
    require_columns(line, index, column + 1)
    return tokenization.convert_to_unicode(line[column])


def tsv_label(line, index, column, label_list):
    """Returns the label in `column`, checked against `label_list`.

    A None label_list means a regression task: the label must parse as a float.
    """
    label = tsv_field(line, index, column)
    check_label(line, index, label, label_list)
    return label


def check_label(line, index, label, label_list):
    if label_list is None:
        try:
            float(label)
        except ValueError:
            raise UsageError(
                f"{row_place(line, index)}: label {label!r} is not a number"
            ) from None
    elif label not in label_list:
        known = ", ".join(map(str, label_list))
        raise UsageError(f"{row_place(line, index)}: label {label!r} is not one of {known}")


class DataProcessor:
    """Base class for data converters for sequence classification data sets.

    `metric_names` lists the task's official metrics reported besides accuracy
    and loss: any of "mcc", "f1", "pearson", "spearman". A processor
    declares its kind of task: `is_regression` (a score an example; its
    get_labels is None), `multi_label` (any number of labels an example),
    and `is_custom` (the labels come from the user's data, settled by
    custom_data.resolve_labels and kept in output_dir/labels.txt).
    """

    metric_names = ()
    is_regression = False
    multi_label = False
    is_custom = False

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
            require_columns(line, i, 3)
            text_a = tsv_field(line, i, 0)
            text_b = tsv_field(line, i, 1)
            label = tsv_field(line, i, 2)
            if label == "contradictory":
                label = "contradiction"
            check_label(line, i, label, self.get_labels())
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
            require_columns(line, i, 8)
            if tsv_field(line, i, 0) != self.language:
                continue
            text_a = tsv_field(line, i, 6)
            text_b = tsv_field(line, i, 7)
            if set_type == "test":
                label = self.get_labels()[0]
            else:
                label = tsv_label(line, i, 1, self.get_labels())
            examples.append(InputExample(f"{set_type}-{i}", text_a, text_b, label))
        return examples

    def get_labels(self):
        """See base class."""
        return ["contradiction", "entailment", "neutral"]


# A label column that is each row's last.
LAST_COLUMN = -1


class _GlueProcessor(DataProcessor):
    """A GLUE task stored as TSV files, described by its columns.

    A subclass names the columns of a labelled (train or dev) row in
    `columns`, (text_a, text_b, label), and of a test row in `test_columns`,
    (text_a, text_b); text_b is None for single sentences, and a label column
    of LAST_COLUMN is the row's last (MNLI's gold label, after a varying
    number of annotator labels). The first row is a header, skipped, in
    every file with `header`, in test files only without it (CoLA). The guid
    is "<set_type>-<column `guid_column`>", or the row's index where that is
    None. Test rows get the first label (or "0.0" for regression) as a
    placeholder. A row must have every column that is read.
    """

    train_file = "train.tsv"
    dev_file = "dev.tsv"
    dev_set_type = "dev"
    test_file = "test.tsv"
    columns = None
    test_columns = None
    guid_column = 0
    header = True

    def get_train_examples(self, data_dir):
        """See base class."""
        return self._create_examples(
            self._read_tsv(os.path.join(data_dir, self.train_file)), "train"
        )

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

    def _create_examples(self, lines, set_type):
        """The InputExamples of `lines` (TsvRows of a `set_type` file), by the columns above."""
        labels = self.get_labels()
        is_test = set_type == "test"
        text_a_column, text_b_column = self.test_columns if is_test else self.columns[:2]
        label_column = None if is_test else self.columns[2]
        read = [c for c in (self.guid_column, text_a_column, text_b_column) if c is not None]
        if label_column not in (None, LAST_COLUMN):
            read.append(label_column)
        width = max(read) + 1
        if label_column == LAST_COLUMN:
            width += 1  # the label comes after every other column read
        examples = []
        for i, line in enumerate(lines):
            if i == 0 and (self.header or is_test):
                continue
            require_columns(line, i, width)
            guid = i if self.guid_column is None else tsv_field(line, i, self.guid_column)
            text_a = tsv_field(line, i, text_a_column)
            text_b = None if text_b_column is None else tsv_field(line, i, text_b_column)
            if is_test:
                label = labels[0] if labels else "0.0"
            else:
                column = len(line) - 1 if label_column == LAST_COLUMN else label_column
                label = tsv_label(line, i, column, labels)
            examples.append(InputExample(f"{set_type}-{guid}", text_a, text_b, label))
        return examples


class MnliProcessor(_GlueProcessor):
    """Processor for the MultiNLI data set (GLUE version), matched dev/test.

    Texts in columns 8 and 9, the gold label in the last column (> 9).
    """

    dev_file = "dev_matched.tsv"
    dev_set_type = "dev_matched"
    test_file = "test_matched.tsv"
    columns = (8, 9, LAST_COLUMN)
    test_columns = (8, 9)

    def get_labels(self):
        """See base class."""
        return ["contradiction", "entailment", "neutral"]


class MnliMismatchedProcessor(MnliProcessor):
    """MultiNLI with the mismatched dev/test sets (GLUE's MNLI-mm)."""

    dev_file = "dev_mismatched.tsv"
    dev_set_type = "dev_mismatched"
    test_file = "test_mismatched.tsv"


class MrpcProcessor(_GlueProcessor):
    """Processor for the MRPC data set (GLUE version).

    Header skipped; label in column 0, texts in columns 3 and 4.
    """

    metric_names = ("f1",)
    columns = (3, 4, 0)
    test_columns = (3, 4)
    guid_column = None

    def get_labels(self):
        """See base class."""
        return ["0", "1"]


class ColaProcessor(_GlueProcessor):
    """Processor for the CoLA data set (GLUE version).

    Train/dev: no header, label column 1, text column 3. Test: header, text 1.
    """

    metric_names = ("mcc",)
    columns = (3, None, 1)
    test_columns = (1, None)
    guid_column = None
    header = False

    def get_labels(self):
        """See base class."""
        return ["0", "1"]


class Sst2Processor(_GlueProcessor):
    """SST-2: train/dev 'sentence<TAB>label', test 'index<TAB>sentence', headers."""

    columns = (0, None, 1)
    test_columns = (1, None)
    guid_column = None

    def get_labels(self):
        """See base class."""
        return ["0", "1"]


class QqpProcessor(_GlueProcessor):
    """QQP: 'id qid1 qid2 question1 question2 is_duplicate'; test 'id question1 question2'."""

    metric_names = ("f1",)
    columns = (3, 4, 5)
    test_columns = (1, 2)

    def get_labels(self):
        """See base class."""
        return ["0", "1"]


class _IndexedPairProcessor(_GlueProcessor):
    """'index text_a text_b label' with a header; test rows have no label."""

    columns = (1, 2, 3)
    test_columns = (1, 2)


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
    is_regression = True
    columns = (7, 8, 9)
    test_columns = (7, 8)

    def get_labels(self):
        """None: STS-B is regression, with one output and float labels."""
        return None
