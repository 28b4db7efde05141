"""Fine-tunes BERT on sentence (pair) classification: the GLUE tasks and XNLI.

Same flags, files and outputs as the original script: examples are read by a
per-task processor, turned into output_dir/{train,eval,predict}.tf_record,
trained with the runner, evaluated into eval_results.txt and predicted into
test_results.tsv. Beyond it: every GLUE task (STS-B as regression), each
task's official metric, a GLUE submission file and a SavedModel export; a
task of one's own without writing a processor (--task_name=custom: CSV, TSV
or JSON lines by column name, multi-label, class weights, long texts as
windows); and predictions on a plain text file.
"""

import collections
import csv
import json
import math
import os

import numpy as np
import tensorflow as tf
from absl import flags, logging

import atomic_write
import checkpoint_shapes
import custom_data
import dynamic_padding
import eval_results
import features
import modeling
import optimization
import predictor
import runner
import runner_evaluation
import script_flags
import serving
import startup_checks
import tokenization
from errors import UsageError
from progress import Progress

FLAGS = flags.FLAGS

# Required parameters.
script_flags.define_model_flags()
script_flags.define_fine_tuning_flags()
script_flags.define_runner_flags()
script_flags.define_flags("data_dir", "task_name", "labels", "window_stride")

# Other parameters.

# Beyond the original.
flags.DEFINE_string(
    "glue_submission_file",
    None,
    "With --do_predict: also write the test predictions here in the GLUE submission "
    "format (header 'index<TAB>prediction', the task's label names or STS-B scores).",
)

flags.DEFINE_string(
    "text_a_column",
    "text",
    "--task_name=custom: the column (or JSON key) holding the text of each example.",
)
flags.DEFINE_string(
    "text_b_column",
    None,
    "--task_name=custom: the column holding the second text of a pair; unset for single texts.",
)
flags.DEFINE_string(
    "label_column", "label", "--task_name=custom: the column holding the label(s)."
)
flags.DEFINE_bool(
    "multi_label",
    False,
    "--task_name=custom: each example has any number of labels (separated by "
    "--label_delimiter); one sigmoid per class and binary cross-entropy.",
)
flags.DEFINE_string("label_delimiter", "|", "With --multi_label: separates the labels of a row.")
flags.DEFINE_float(
    "multi_label_threshold",
    0.5,
    "With --multi_label: a class is predicted when its probability is at least this.",
)
flags.DEFINE_string(
    "class_weights",
    None,
    "Weights of the classes in the training loss: 'balanced' (n / (classes * count) "
    "from the training set) or 'label:weight,...' (unnamed classes weigh 1).",
)
flags.DEFINE_bool(
    "long_text_windows",
    False,
    "Cut a single text longer than max_seq_length into overlapping windows instead of "
    "truncating it: training uses every window, eval and predict average the windows' "
    "probabilities. Pairs are still truncated.",
)
flags.DEFINE_string(
    "predict_text_file",
    None,
    "Plain text to classify, one example a line ('text_a ||| text_b' for pairs); the "
    "predictions go to output_dir/text_predictions.jsonl.",
)

# Scripts imported later into the same process may redefine the shared names.


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
        with tf.io.gfile.GFile(input_file, "r") as f:
            reader = csv.reader(f, delimiter="\t", quotechar=quotechar)
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
        return self._create_examples(custom_data.find_split_file(data_dir, "train"), "train")

    def get_dev_examples(self, data_dir):
        """See base class."""
        return self._create_examples(custom_data.find_split_file(data_dir, "dev"), "dev")

    def get_test_examples(self, data_dir):
        """See base class; rows without a label get a placeholder one."""
        return self._create_examples(custom_data.find_split_file(data_dir, "test"), "test")

    def _create_examples(self, path, set_type):
        examples = []
        for i, row in enumerate(custom_data.read_rows(path)):
            text_a = custom_data.row_text(row, self.text_a_column)
            text_b = None
            if self.text_b_column:
                text_b = custom_data.row_text(row, self.text_b_column)
            label = custom_data.row_labels(
                row, self.label_column, self.multi_label, self.label_delimiter
            )
            if label is None:
                if set_type != "test":
                    raise UsageError(f"{row.where()}: no label in column {self.label_column!r}")
                label = () if self.multi_label else (self.labels or [""])[0]
            elif self.labels is not None:
                for name in label if self.multi_label else [label]:
                    _check_label(row, i, name, self.labels)
            examples.append(InputExample(f"{set_type}-{row.line_number}", text_a, text_b, label))
        return examples


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


def convert_example_windows(
    ex_index, example, label_list, max_seq_length, tokenizer, stride, multi_label=False
):
    """Converts one example into one InputFeatures per window of its text.

    A single text longer than max_seq_length - 2 word pieces becomes
    overlapping windows of that many pieces, starting `stride` apart (see
    custom_data.window_spans), each wrapped in [CLS] ... [SEP] and carrying
    the example's label. Pairs and texts that fit give one InputFeatures, as
    convert_single_example.
    """
    first = convert_single_example(
        ex_index, example, label_list, max_seq_length, tokenizer, multi_label
    )
    if isinstance(example, PaddingInputExample) or example.text_b:
        return [first]
    tokens = tokenizer.tokenize(example.text_a)
    spans = custom_data.window_spans(len(tokens), max_seq_length - 2, stride)
    # The first window is the text as convert_single_example truncates it.
    result = [first]
    for start, length in spans[1:]:
        _, input_ids, input_mask, segment_ids = features.pack_pair(
            tokenizer, tokens[start : start + length], None, max_seq_length
        )
        result.append(InputFeatures(input_ids, input_mask, segment_ids, first.label_id, True))
    return result


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
            if window_stride:
                converted = convert_example_windows(
                    ex_index, example, label_list, max_seq_length, tokenizer, window_stride,
                    multi_label,
                )  # fmt: skip
            else:
                converted = [
                    convert_single_example(
                        ex_index, example, label_list, max_seq_length, tokenizer, multi_label
                    )
                ]
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


def file_based_input_fn_builder(
    input_file,
    seq_length,
    is_training,
    drop_remainder,
    is_regression=False,
    num_labels=None,
    padding=dynamic_padding.OFF,
):
    """Returns an input_fn(params) reading `input_file` in batches of params["batch_size"].

    Training repeats the records and shuffles them (buffer 100); eval and
    predict read them once, in order. Integer features come out as int32;
    label_ids is float32 when `is_regression`, and [num_labels] 0/1 values
    when `num_labels` is given (multi-label records). `padding`
    (dynamic_padding.Settings) cuts and groups the batches.
    """
    label_shape = [] if num_labels is None else [num_labels]
    name_to_features = {
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature(label_shape, tf.float32 if is_regression else tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }

    return features.record_input_fn_builder(
        input_file, name_to_features, is_training, drop_remainder, padding
    )


# Kept under the original's name for code that imports it from here.
_truncate_seq_pair = features.truncate_seq_pair


def create_model(
    bert_config,
    is_training,
    input_ids,
    input_mask,
    segment_ids,
    labels,
    num_labels,
    use_one_hot_embeddings,
    is_regression=False,
    multi_label=False,
    class_weights=None,
):
    """Builds BERT plus a linear head on the pooled [CLS] output.

    The head is `output_weights` [num_labels, hidden] and `output_bias`
    [num_labels], at no variable scope, with 0.1 dropout on its input while
    training. Classification: softmax cross entropy. Regression (num_labels
    must be 1): the single logit is the score, loss is the squared error.
    Multi-label (`labels` [batch, num_labels] 0/1): one sigmoid per class,
    per-example loss the mean over classes of the binary cross-entropy.

    `class_weights` ([num_labels] floats) weigh the training loss only:
    loss = mean over examples of weight[label] * per_example_loss, or for
    multi-label the mean over examples and classes of weight[class] * BCE.
    per_example_loss stays unweighted, so eval_loss is comparable across
    weightings.

    Returns:
      (loss, per_example_loss, logits, probabilities): probabilities is
      [batch, num_labels] softmax (sigmoid) output, or the [batch] scores for
      regression. loss and per_example_loss are None when `labels` is None.
    """
    model = modeling.BertModel(
        config=bert_config,
        is_training=is_training,
        input_ids=input_ids,
        input_mask=input_mask,
        token_type_ids=segment_ids,
        use_one_hot_embeddings=use_one_hot_embeddings,
    )
    output_layer = model.get_pooled_output()
    hidden_size = tf.compat.v1.dimension_value(output_layer.shape[-1])

    output_weights = tf.compat.v1.get_variable(
        "output_weights",
        [num_labels, hidden_size],
        initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.02),
    )
    output_bias = tf.compat.v1.get_variable(
        "output_bias", [num_labels], initializer=tf.compat.v1.zeros_initializer()
    )

    with tf.compat.v1.variable_scope("loss"):
        if is_training:
            output_layer = tf.nn.dropout(output_layer, rate=0.1)
        logits = tf.matmul(output_layer, output_weights, transpose_b=True)
        logits = tf.nn.bias_add(logits, output_bias)

        if is_regression:
            probabilities = tf.squeeze(logits, axis=-1)
        elif multi_label:
            probabilities = tf.sigmoid(logits)
        else:
            probabilities = tf.nn.softmax(logits, axis=-1)

        if labels is None:
            return None, None, logits, probabilities

        if multi_label:
            return _multi_label_loss(logits, labels, class_weights) + (logits, probabilities)
        if is_regression:
            per_example_loss = tf.square(probabilities - tf.cast(labels, tf.float32))
        else:
            log_probs = tf.nn.log_softmax(logits, axis=-1)
            one_hot_labels = tf.one_hot(labels, depth=num_labels, dtype=tf.float32)
            per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
        if class_weights is None:
            loss = tf.reduce_mean(per_example_loss)
        else:
            weights = tf.gather(tf.constant(class_weights, tf.float32), labels)
            loss = tf.reduce_mean(weights * per_example_loss)
        return loss, per_example_loss, logits, probabilities


def _multi_label_loss(logits, labels, class_weights):
    """(loss, per_example_loss) of independent sigmoids; see create_model."""
    per_class = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.float32), logits=logits
    )
    per_example_loss = tf.reduce_mean(per_class, axis=-1)
    if class_weights is None:
        return tf.reduce_mean(per_example_loss), per_example_loss
    weighted = per_class * tf.constant(class_weights, tf.float32)
    return tf.reduce_mean(weighted), per_example_loss


def model_fn_builder(
    bert_config,
    num_labels,
    init_checkpoint,
    learning_rate,
    num_train_steps,
    num_warmup_steps,
    use_tpu,
    use_one_hot_embeddings,
    is_regression=False,
    multi_label=False,
    class_weights=None,
):
    """Returns the model_fn(features, labels, mode, params) for runner.Estimator.

    Train: Adam with weight decay via optimization.create_optimizer. Eval:
    eval_accuracy (single-label classification) and eval_loss, padding
    examples weighted 0. Predict: {"probabilities": [num_labels] floats}, or
    {"score": float} for regression. `multi_label` and `class_weights` go to
    create_model.
    """

    def model_fn(features, labels, mode, params):
        del labels, params  # Labels travel inside `features`.
        logging.info("*** Features ***")
        for name in sorted(features.keys()):
            logging.info("  name = %s, shape = %s", name, features[name].shape)

        input_ids = features["input_ids"]
        input_mask = features["input_mask"]
        segment_ids = features["segment_ids"]
        label_ids = features.get("label_ids")  # absent in an export's serving graph
        if "is_real_example" in features:
            is_real_example = tf.cast(features["is_real_example"], dtype=tf.float32)
        else:
            is_real_example = tf.ones(tf.shape(input_ids)[:1], dtype=tf.float32)

        is_training = mode == runner.ModeKeys.TRAIN
        total_loss, per_example_loss, logits, probabilities = create_model(
            bert_config,
            is_training,
            input_ids,
            input_mask,
            segment_ids,
            label_ids,
            num_labels,
            use_one_hot_embeddings,
            is_regression=is_regression,
            multi_label=multi_label,
            class_weights=class_weights,
        )

        scaffold_fn = runner.warm_start_from_checkpoint(init_checkpoint, use_tpu)

        if mode == runner.ModeKeys.TRAIN:
            train_op = optimization.create_optimizer(
                total_loss, learning_rate, num_train_steps, num_warmup_steps, use_tpu
            )
            return runner.EstimatorSpec(
                mode=mode, loss=total_loss, train_op=train_op, scaffold_fn=scaffold_fn
            )

        if mode == runner.ModeKeys.EVAL:

            def metric_fn(per_example_loss, label_ids, logits, is_real_example):
                metrics = {
                    "eval_loss": tf.compat.v1.metrics.mean(
                        values=per_example_loss, weights=is_real_example
                    )
                }
                if not (is_regression or multi_label):
                    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
                    metrics["eval_accuracy"] = tf.compat.v1.metrics.accuracy(
                        labels=label_ids, predictions=predictions, weights=is_real_example
                    )
                return metrics

            return runner.EstimatorSpec(
                mode=mode,
                loss=total_loss,
                eval_metrics=(
                    metric_fn,
                    [per_example_loss, label_ids, logits, is_real_example],
                ),
                scaffold_fn=scaffold_fn,
            )

        output_name = "score" if is_regression else "probabilities"
        predictions = dynamic_padding.pass_index(features, {output_name: probabilities})
        return runner.EstimatorSpec(mode=mode, predictions=predictions, scaffold_fn=scaffold_fn)

    return model_fn


def input_fn_builder(features, seq_length, is_training, drop_remainder):
    """Returns an input_fn over in-memory `InputFeatures` (small data sets only).

    The whole set becomes graph constants, so this does not scale; the
    script itself reads TFRecords through file_based_input_fn_builder.
    """
    label_dtype = tf.float32 if any(isinstance(f.label_id, float) for f in features) else tf.int32
    num_examples = len(features)
    columns = {
        "input_ids": [f.input_ids for f in features],
        "input_mask": [f.input_mask for f in features],
        "segment_ids": [f.segment_ids for f in features],
        "label_ids": [f.label_id for f in features],
    }

    def input_fn(params):
        batch_size = params["batch_size"]
        tensors = {
            name: tf.constant(values, shape=[num_examples, seq_length], dtype=tf.int32)
            for name, values in columns.items()
            if name != "label_ids"
        }
        tensors["label_ids"] = tf.constant(
            columns["label_ids"], shape=[num_examples], dtype=label_dtype
        )
        d = tf.data.Dataset.from_tensor_slices(tensors)
        if is_training:
            d = d.repeat()
            d = d.shuffle(buffer_size=100)
        return d.batch(batch_size=batch_size, drop_remainder=drop_remainder)

    return input_fn


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


# ---------------------------------------------------------------------------
# Outputs.


# Kept under this module's name for code that imports it from here.
write_eval_results = eval_results.write_eval_results


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


# ---------------------------------------------------------------------------
# SavedModel export.


# Kept under its earlier name; the check lives with the shared export code.
_check_checkpoint_holds = serving.check_checkpoint_holds


def export_saved_model(
    export_dir,
    checkpoint_path,
    bert_config,
    num_labels,
    max_seq_length,
    is_regression=False,
    multi_label=False,
    predictor_files=None,
    precision="fp32",
):
    """Exports the classifier in `checkpoint_path` as a SavedModel for serving.

    The "serving_default" signature takes input_ids, input_mask and
    segment_ids (int32 [batch, length], any length up to the model's
    max_position_embeddings: callers need not pad to `max_seq_length`, which
    is recorded for the Predictor only) and returns "probabilities"
    ([batch, num_labels], sigmoids with `multi_label`) or, for regression,
    "score" ([batch]). The graph is model_fn_builder's in PREDICT mode, with
    its Transformer layers computing in `precision` (its outputs float32),
    exported through runner.Estimator.export_saved_model as main does.
    `predictor_files` (see predictor_files) go to assets.extra/ for
    predictor.Predictor. `export_dir` must not exist; a checkpoint without
    the classifier's variables is a UsageError.
    """
    model_fn = model_fn_builder(
        bert_config, num_labels, None, 0.0, None, None, False, False,
        is_regression=is_regression, multi_label=multi_label,
    )  # fmt: skip
    config = runner.RunConfig(
        model_dir=os.path.dirname(os.path.abspath(checkpoint_path)), precision=precision
    )
    runner.Estimator(model_fn, config).export_saved_model(
        export_dir, serving.id_inputs, checkpoint_path, predictor_files
    )


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


# ---------------------------------------------------------------------------
# main


def _check_file_flag(name):
    startup_checks.check_input_file(getattr(FLAGS, name), f"--{name}")


def _nonempty(examples, split):
    if not examples:
        raise UsageError(
            f"--data_dir={FLAGS.data_dir}: the {split} set of task {FLAGS.task_name} "
            "has no examples"
        )
    return examples


def _predict_outputs(estimator, input_fn, output_name, count, owners=None, checkpoint_path=None):
    """The first `count` predictions (padding examples come last and are dropped).

    With `owners` (the example index of each record, from long-text windows)
    the records of each example are averaged into one output per example.
    checkpoint_path: the weights to use (default: the newest in output_dir).
    """
    if owners is not None:
        num_records = sum(1 for owner in owners if owner < count)
        records = _predict_outputs(
            estimator, input_fn, output_name, num_records, checkpoint_path=checkpoint_path
        )
        return combine_windows(records, owners[:num_records], count)
    predictions = estimator.predict(input_fn=input_fn, checkpoint_path=checkpoint_path)
    # Batches grouped by length come back in input order.
    outputs = runner.first_predictions(
        dynamic_padding.in_input_order(predictions), output_name, count
    )
    return outputs


def combine_windows(outputs, owners, count):
    """The mean of the outputs of each example's windows: `count` outputs, in order."""
    totals = [None] * count
    sizes = [0] * count
    for output, owner in zip(outputs, owners):
        output = np.asarray(output, np.float64)
        totals[owner] = output if totals[owner] is None else totals[owner] + output
        sizes[owner] += 1
    return [(total / size).astype(np.float32) for total, size in zip(totals, sizes)]


def _check_custom_flags(is_custom):
    """The flags of the user-data features, checked before any work."""
    if FLAGS.multi_label and not is_custom:
        raise UsageError("--multi_label needs --task_name=custom")
    if not 0 < FLAGS.multi_label_threshold < 1:
        raise UsageError(
            f"--multi_label_threshold={FLAGS.multi_label_threshold}: must be between 0 and 1"
        )
    if (
        FLAGS.long_text_windows
        and FLAGS.window_stride is not None
        and not 1 <= FLAGS.window_stride <= FLAGS.max_seq_length - 2
    ):
        raise UsageError(
            f"--window_stride={FLAGS.window_stride}: must be between 1 and max_seq_length - 2 "
            f"({FLAGS.max_seq_length - 2})"
        )
    if FLAGS.predict_text_file:
        _check_file_flag("predict_text_file")


def _window_stride():
    """The stride of long-text windows, or None when texts are truncated."""
    if not FLAGS.long_text_windows:
        return None
    return FLAGS.window_stride or max(1, (FLAGS.max_seq_length - 2) // 2)


def _custom_processor():
    """A CustomProcessor from the flags, its label set resolved.

    The labels come from --labels, else from output_dir/labels.txt of an
    earlier run, else from the training file (sorted); a --labels that
    differs from labels.txt is an error, as the checkpoint's class order
    follows labels.txt.
    """
    processor = CustomProcessor(
        text_a_column=FLAGS.text_a_column,
        text_b_column=FLAGS.text_b_column,
        label_column=FLAGS.label_column,
        multi_label=FLAGS.multi_label,
        label_delimiter=FLAGS.label_delimiter,
    )
    labels_path = os.path.join(FLAGS.output_dir, custom_data.LABELS_FILE)
    saved = None
    if tf.io.gfile.exists(labels_path):
        saved = custom_data.read_labels_file(labels_path)
    if FLAGS.labels:
        labels = custom_data.parse_labels_flag(FLAGS.labels)
        if saved is not None and saved != labels:
            raise UsageError(
                f"--labels={FLAGS.labels} differs from {labels_path} ({','.join(saved)}) of an "
                "earlier run; use another --output_dir"
            )
    elif saved is not None:
        labels = saved
    else:
        if not FLAGS.do_train:
            try:
                custom_data.find_split_file(FLAGS.data_dir, "train")
            except ValueError:
                raise UsageError(
                    f"--task_name=custom: no {labels_path} and no train file in "
                    f"--data_dir={FLAGS.data_dir} to take the labels from; pass --labels"
                ) from None
        train_examples = processor.get_train_examples(FLAGS.data_dir)
        labels = custom_data.labels_from_examples(train_examples, FLAGS.multi_label)
    if len(labels) < (1 if FLAGS.multi_label else 2):
        raise UsageError(f"--task_name=custom: needs at least two labels, found {labels}")
    processor.set_labels(labels)
    return processor


def _window_metrics(outputs, examples, label_list, multi_label):
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


# A dev set ready to evaluate: its examples (TPU padding last), how many are
# real, its input_fn and steps, and each record's example index when long texts
# are cut into windows (else None).
DevSet = collections.namedtuple(
    "DevSet", ["examples", "num_actual", "input_fn", "steps", "owners"]
)


def prepare_dev_set(eval_examples, label_list, tokenizer, multi_label, window_stride):
    """Writes output_dir/eval.tf_record from the dev examples; returns its DevSet."""
    is_regression = label_list is None
    label_width = len(label_list) if multi_label else None
    num_actual_eval_examples = len(eval_examples)
    if FLAGS.use_tpu:
        # TPUs need full batches: pad with examples that weigh 0 in every metric.
        while len(eval_examples) % FLAGS.eval_batch_size != 0:
            eval_examples.append(PaddingInputExample())
    eval_file = os.path.join(FLAGS.output_dir, "eval.tf_record")
    eval_owners = file_based_convert_examples_to_features(
        eval_examples, label_list, FLAGS.max_seq_length, tokenizer, eval_file,
        multi_label=multi_label, window_stride=window_stride,
    )  # fmt: skip
    if not window_stride:
        eval_owners = None
    logging.info("***** Running evaluation *****")
    logging.info(
        "  Num examples = %d (%d actual, %d padding)",
        len(eval_examples),
        num_actual_eval_examples,
        len(eval_examples) - num_actual_eval_examples,
    )
    logging.info("  Batch size = %d", FLAGS.eval_batch_size)
    eval_steps = None
    if FLAGS.use_tpu:
        eval_steps = len(eval_examples) // FLAGS.eval_batch_size
    eval_input_fn = file_based_input_fn_builder(
        input_file=eval_file,
        seq_length=FLAGS.max_seq_length,
        is_training=False,
        drop_remainder=bool(FLAGS.use_tpu),
        is_regression=is_regression,
        num_labels=label_width,
        padding=script_flags.padding_from_flags(is_training=False),
    )
    return DevSet(eval_examples, num_actual_eval_examples, eval_input_fn, eval_steps, eval_owners)


def evaluate_dev_set(
    estimator, dev_set, metric_names, label_list, output_name, multi_label, checkpoint_path=None
):
    """The eval_results.txt dict of one checkpoint (default: the newest in output_dir).

    The streaming metrics of the model_fn, then the task's official metrics
    (metric_names) and, for multi-label or windowed data, the scores over
    whole examples, all from predictions of the same checkpoint.
    """
    is_regression = label_list is None
    result = dict(
        estimator.evaluate(
            input_fn=dev_set.input_fn, steps=dev_set.steps, checkpoint_path=checkpoint_path
        )
    )
    real = dev_set.examples[: dev_set.num_actual]

    def outputs():
        return _predict_outputs(
            estimator,
            dev_set.input_fn,
            output_name,
            dev_set.num_actual,
            dev_set.owners,
            checkpoint_path=checkpoint_path,
        )

    if metric_names:
        # The official metrics need every prediction at once (Spearman does
        # not stream), so predict over the dev set and score it in numpy.
        predictions = outputs()
        if is_regression:
            gold = [float(e.label) for e in real]
            predicted = [float(o) for o in predictions]
        else:
            gold = [label_list.index(e.label) for e in real]
            predicted = [int(np.argmax(o)) for o in predictions]
        result.update(compute_metrics(metric_names, gold, predicted))

    if multi_label or dev_set.owners is not None:
        # Scores over whole examples, from each example's averaged windows.
        predictions = outputs()
        if dev_set.owners is not None and not is_regression:
            result.update(_window_metrics(predictions, real, label_list, multi_label))
        if multi_label:
            gold = [multi_hot(e, label_list) for e in real]
            result.update(
                custom_data.multi_label_metrics(gold, predictions, FLAGS.multi_label_threshold)
            )
    return result


def _text_input_fn(feature_list, seq_length, label_shape, label_dtype, padding):
    """An input_fn streaming in-memory InputFeatures, in order, with no TFRecord."""

    def generate():
        for f in feature_list:
            yield {
                "input_ids": f.input_ids,
                "input_mask": f.input_mask,
                "segment_ids": f.segment_ids,
                "label_ids": f.label_id,
            }

    def input_fn(params):
        spec = {
            name: tf.TensorSpec([seq_length], tf.int32)
            for name in ("input_ids", "input_mask", "segment_ids")
        }
        spec["label_ids"] = tf.TensorSpec(label_shape, label_dtype)
        dataset = tf.data.Dataset.from_generator(generate, output_signature=spec)
        return dynamic_padding.batch(dataset, params["batch_size"], False, padding, False)

    return input_fn


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
    with tf.io.gfile.GFile(path, "r") as f:
        for line_number, line in enumerate(f, start=1):
            line = tokenization.convert_to_unicode(line)
            if not line.strip():
                continue
            text_a, text_b = features.split_text_pair(line)
            examples.append(InputExample(f"text-{line_number}", text_a, text_b, placeholder))
    if not examples:
        raise UsageError(f"--predict_text_file={path}: no text in the file")
    return examples


def predict_text_file(estimator, tokenizer, label_list, output_name, multi_label):
    """Classifies --predict_text_file into output_dir/text_predictions.jsonl."""
    examples = read_text_examples(FLAGS.predict_text_file, label_list, multi_label)
    feature_list, owners = [], []
    for ex_index, example in enumerate(examples):
        if _window_stride():
            converted = convert_example_windows(
                ex_index, example, label_list, FLAGS.max_seq_length, tokenizer,
                _window_stride(), multi_label,
            )  # fmt: skip
        else:
            converted = [
                convert_single_example(
                    ex_index, example, label_list, FLAGS.max_seq_length, tokenizer, multi_label
                )
            ]
        feature_list.extend(converted)
        owners.extend([ex_index] * len(converted))
    if label_list is None:
        label_shape, label_dtype = [], tf.float32
    else:
        label_shape, label_dtype = ([len(label_list)] if multi_label else []), tf.int32
    input_fn = _text_input_fn(
        feature_list,
        FLAGS.max_seq_length,
        label_shape,
        label_dtype,
        script_flags.padding_from_flags(is_training=False),
    )
    logging.info("***** Predicting %d texts of %s *****", len(examples), FLAGS.predict_text_file)
    outputs = _predict_outputs(estimator, input_fn, output_name, len(examples), owners)
    records = predictor.prediction_records(
        [(e.text_a, e.text_b) for e in examples],
        outputs,
        label_list,
        multi_label,
        FLAGS.multi_label_threshold,
    )
    path = os.path.join(FLAGS.output_dir, "text_predictions.jsonl")
    atomic_write.write_text(
        path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    )
    logging.info("Wrote %d predictions to %s", len(records), path)


def main(_):
    logging.set_verbosity(logging.INFO)

    tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)

    if not (
        FLAGS.do_train
        or FLAGS.do_eval
        or FLAGS.do_predict
        or FLAGS.export_dir
        or FLAGS.predict_text_file
    ):
        raise UsageError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True "
            "(or --export_dir or --predict_text_file set)."
        )
    if FLAGS.glue_submission_file and not FLAGS.do_predict:
        raise UsageError("--glue_submission_file needs --do_predict")
    eval_options = script_flags.evaluation_options_from_flags(
        FLAGS.do_train and FLAGS.do_eval, "--do_train and --do_eval"
    )

    script_flags.check_padding_flags()
    _check_file_flag("bert_config_file")
    bert_config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
    startup_checks.check_seq_length(FLAGS.max_seq_length, bert_config)
    if FLAGS.init_checkpoint:
        modeling.check_checkpoint_shapes(FLAGS.init_checkpoint, bert_config)
    startup_checks.check_output_dir(FLAGS.output_dir)

    processor = get_processor(FLAGS.task_name)
    is_custom = isinstance(processor, CustomProcessor)
    _check_custom_flags(is_custom)
    if is_custom:
        processor = _custom_processor()
    label_list = processor.get_labels()
    is_regression = label_list is None
    multi_label = FLAGS.multi_label
    if FLAGS.class_weights and is_regression:
        raise UsageError(f"--class_weights: task {FLAGS.task_name} is a regression task")
    window_stride = _window_stride()
    label_width = len(label_list) if multi_label else None
    num_labels = 1 if is_regression else len(label_list)
    output_name = "score" if is_regression else "probabilities"

    if FLAGS.export_dir and tf.io.gfile.exists(FLAGS.export_dir):
        raise UsageError(f"--export_dir={FLAGS.export_dir} already exists; choose a new directory")
    checkpoint_shapes.check_head_of_newest_checkpoint(
        FLAGS.output_dir, num_labels, bert_config.hidden_size
    )
    tokenizer = startup_checks.load_tokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)

    run_config = script_flags.run_config_from_flags()

    # Read every needed set before any work, so that a bad row stops the run
    # before hours of training rather than after.
    train_examples = eval_examples = predict_examples = None
    if FLAGS.do_train:
        train_examples = _nonempty(processor.get_train_examples(FLAGS.data_dir), "train")
    if FLAGS.do_eval:
        eval_examples = _nonempty(processor.get_dev_examples(FLAGS.data_dir), "dev")
    if FLAGS.do_predict:
        predict_examples = _nonempty(processor.get_test_examples(FLAGS.data_dir), "test")

    class_weights = None
    if FLAGS.class_weights:
        class_weights = custom_data.parse_class_weights(
            FLAGS.class_weights, label_list, train_examples, multi_label
        )
        logging.info("Class weights: %s", dict(zip(label_list, class_weights)))

    tf.io.gfile.makedirs(FLAGS.output_dir)
    labels_path = os.path.join(FLAGS.output_dir, custom_data.LABELS_FILE)
    if is_custom and not tf.io.gfile.exists(labels_path):
        atomic_write.write_text(labels_path, "".join(f"{name}\n" for name in label_list))

    num_train_steps = None
    num_warmup_steps = None
    if FLAGS.do_train:
        num_train_steps = int(
            len(train_examples) / FLAGS.train_batch_size * FLAGS.num_train_epochs
        )
        num_warmup_steps = int(num_train_steps * FLAGS.warmup_proportion)

    model_fn = model_fn_builder(
        bert_config=bert_config,
        num_labels=num_labels,
        init_checkpoint=FLAGS.init_checkpoint,
        learning_rate=FLAGS.learning_rate,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        use_tpu=FLAGS.use_tpu,
        use_one_hot_embeddings=FLAGS.use_tpu,
        is_regression=is_regression,
        multi_label=multi_label,
        class_weights=class_weights,
    )
    estimator = runner.Estimator(
        model_fn=model_fn,
        config=run_config,
        train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size,
    )

    dev_set = None
    if FLAGS.do_eval:
        dev_set = prepare_dev_set(eval_examples, label_list, tokenizer, multi_label, window_stride)

    def evaluate(checkpoint_path=None):
        return evaluate_dev_set(
            estimator,
            dev_set,
            processor.metric_names,
            label_list,
            output_name,
            multi_label,
            checkpoint_path,
        )

    final_result = None
    if FLAGS.do_train:
        train_file = os.path.join(FLAGS.output_dir, "train.tf_record")
        file_based_convert_examples_to_features(
            train_examples, label_list, FLAGS.max_seq_length, tokenizer, train_file,
            multi_label=multi_label, window_stride=window_stride,
        )  # fmt: skip
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d", len(train_examples))
        logging.info("  Batch size = %d", FLAGS.train_batch_size)
        logging.info("  Num steps = %d", num_train_steps)
        train_input_fn = file_based_input_fn_builder(
            input_file=train_file,
            seq_length=FLAGS.max_seq_length,
            is_training=True,
            drop_remainder=True,
            is_regression=is_regression,
            num_labels=label_width,
            padding=script_flags.padding_from_flags(is_training=True),
        )
        final_result = runner_evaluation.train_and_evaluate(
            estimator, train_input_fn, num_train_steps, evaluate, write_eval_results, eval_options
        )

    if FLAGS.do_eval:
        result = final_result or evaluate()
        write_eval_results(os.path.join(FLAGS.output_dir, "eval_results.txt"), result)

    if FLAGS.do_predict:
        num_actual_predict_examples = len(predict_examples)
        if FLAGS.use_tpu:
            while len(predict_examples) % FLAGS.predict_batch_size != 0:
                predict_examples.append(PaddingInputExample())
        predict_file = os.path.join(FLAGS.output_dir, "predict.tf_record")
        predict_owners = file_based_convert_examples_to_features(
            predict_examples, label_list, FLAGS.max_seq_length, tokenizer, predict_file,
            multi_label=multi_label, window_stride=window_stride,
        )  # fmt: skip
        if not window_stride:
            predict_owners = None
        logging.info("***** Running prediction*****")
        logging.info(
            "  Num examples = %d (%d actual, %d padding)",
            len(predict_examples),
            num_actual_predict_examples,
            len(predict_examples) - num_actual_predict_examples,
        )
        logging.info("  Batch size = %d", FLAGS.predict_batch_size)
        predict_input_fn = file_based_input_fn_builder(
            input_file=predict_file,
            seq_length=FLAGS.max_seq_length,
            is_training=False,
            drop_remainder=bool(FLAGS.use_tpu),
            is_regression=is_regression,
            num_labels=label_width,
            padding=script_flags.padding_from_flags(is_training=False),
        )
        outputs = _predict_outputs(
            estimator, predict_input_fn, output_name, num_actual_predict_examples, predict_owners
        )
        logging.info("***** Predict results *****")
        atomic_write.write_text(
            os.path.join(FLAGS.output_dir, "test_results.tsv"), format_test_results(outputs)
        )
        if FLAGS.glue_submission_file:
            submission_dir = os.path.dirname(FLAGS.glue_submission_file)
            if submission_dir:
                tf.io.gfile.makedirs(submission_dir)
            atomic_write.write_text(
                FLAGS.glue_submission_file, format_glue_submission(outputs, label_list)
            )

    if FLAGS.predict_text_file:
        predict_text_file(estimator, tokenizer, label_list, output_name, multi_label)

    if FLAGS.export_dir:
        # As for predict: the newest checkpoint in output_dir, else init_checkpoint
        # (e.g. a classifier fine-tuned elsewhere).
        checkpoint_path = runner.newest_checkpoint(FLAGS.output_dir) or FLAGS.init_checkpoint
        if not checkpoint_path:
            raise UsageError(
                f"--export_dir: no checkpoint in --output_dir={FLAGS.output_dir} and no "
                "--init_checkpoint to export"
            )
        estimator.export_saved_model(
            FLAGS.export_dir,
            serving.id_inputs,
            checkpoint_path,
            assets_extra=predictor_files(
                FLAGS.vocab_file,
                FLAGS.do_lower_case,
                label_list,
                multi_label,
                FLAGS.multi_label_threshold,
                FLAGS.max_seq_length,
            ),
        )


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("task_name")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
