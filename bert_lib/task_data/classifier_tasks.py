"""The classification tasks by name (--task_name): a processor for each."""

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
