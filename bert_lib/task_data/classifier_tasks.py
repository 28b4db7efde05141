"""The classification tasks by name (--task_name): a processor for each, and the kind of
task its labels make."""

import collections

from ..plumbing.errors import UsageError
from .classifier_data import (
    ColaProcessor,
    MnliMismatchedProcessor,
    MnliProcessor,
    MrpcProcessor,
    QnliProcessor,
    QqpProcessor,
    RteProcessor,
    Sst2Processor,
    StsbProcessor,
    WnliProcessor,
    XnliProcessor,
)
from .custom_data import CustomProcessor

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


# The kinds of classification task: one label an example (a softmax over the
# labels), any number of them (--multi_label: a sigmoid each), or a score
# (regression: a task without label names, such as STS-B).
CLASSIFICATION = "classification"
MULTI_LABEL = "multi_label"
REGRESSION = "regression"

# The name of a model's prediction: a regression's score, else the probabilities.
SCORE_OUTPUT = "score"
PROBABILITIES_OUTPUT = "probabilities"


def kind_of(is_regression, multi_label):
    """The kind (CLASSIFICATION, MULTI_LABEL or REGRESSION) a processor or a model's
    arguments declare; both at once is a ValueError (a regression has one score)."""
    if is_regression and multi_label:
        raise ValueError("a task is a regression or multi-label, not both")
    if is_regression:
        return REGRESSION
    return MULTI_LABEL if multi_label else CLASSIFICATION


class TaskKind(collections.namedtuple("TaskKind", "kind labels num_outputs")):
    """What kind of task a run is, said once: its kind (CLASSIFICATION, MULTI_LABEL or
    REGRESSION), its label names (None for regression, or where only the model's
    outputs are known) and the model's number of outputs; the rest follows from the
    kind."""

    @property
    def is_regression(self):
        return self.kind == REGRESSION

    @property
    def multi_label(self):
        return self.kind == MULTI_LABEL

    @property
    def output_name(self):
        """The name of the model's prediction: "score" for regression, else
        "probabilities"."""
        return SCORE_OUTPUT if self.is_regression else PROBABILITIES_OUTPUT

    @property
    def has_accuracy(self):
        """Whether the evaluation reports eval_accuracy: one label of several an
        example (neither a score nor several labels)."""
        return self.kind == CLASSIFICATION


def task_kind(label_list, multi_label):
    """The TaskKind of a label set (None: a regression's score) and --multi_label."""
    if label_list is None:
        return TaskKind(REGRESSION, None, 1)
    return TaskKind(kind_of(False, multi_label), label_list, len(label_list))


def processor_task_kind(processor):
    """The TaskKind a processor declares (its is_regression and multi_label), with its
    labels (a CustomProcessor's once they are set)."""
    kind = kind_of(processor.is_regression, processor.multi_label)
    if kind == REGRESSION:
        return TaskKind(REGRESSION, None, 1)
    labels = processor.get_labels()
    return TaskKind(kind, labels, len(labels))
