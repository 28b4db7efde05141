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


class TaskKind(collections.namedtuple("TaskKind", "kind labels num_outputs output_name")):
    """What kind of task a run is, said once: its kind (CLASSIFICATION, MULTI_LABEL or
    REGRESSION), its label names (None for regression), the model's number of outputs
    and the name of its prediction ("probabilities", or "score" for regression)."""

    @property
    def is_regression(self):
        return self.kind == REGRESSION

    @property
    def multi_label(self):
        return self.kind == MULTI_LABEL


def task_kind(label_list, multi_label):
    """The TaskKind of a processor's labels (None: regression) and --multi_label."""
    if label_list is None:
        return TaskKind(REGRESSION, None, 1, "score")
    kind = MULTI_LABEL if multi_label else CLASSIFICATION
    return TaskKind(kind, label_list, len(label_list), "probabilities")
