"""The label set of a run whose labels come from the user's data: labels.txt, --labels
and the training set's labels, for the classifier's custom data and for run_ner.py.

The rule, once: the labels are --labels, else output_dir/labels.txt of an
earlier run, else the ones the training set uses; a --labels that differs
from labels.txt is an error, as the checkpoints in output_dir follow the
order of labels.txt. A run settles its set before any work (resolve) and
writes labels.txt once it starts (save), if an earlier run did not.
"""

import os

import tensorflow as tf

from ..plumbing import atomic_write
from ..plumbing.errors import UsageError

# The label names (or tags) a run trained on, one a line in class-id order, in its
# output directory.
LABELS_FILE = "labels.txt"


def labels_path(output_dir):
    """output_dir/labels.txt."""
    return os.path.join(output_dir, LABELS_FILE)


def read_labels_file(path):
    """The names of a labels.txt, one a line in class-id order (blank lines skipped, blanks
    around a name dropped)."""
    with tf.io.gfile.GFile(path, "r") as f:
        return [line.strip() for line in f if line.strip()]


def save(output_dir, labels):
    """Writes output_dir/labels.txt (whole or not at all), unless an earlier run did."""
    path = labels_path(output_dir)
    if not tf.io.gfile.exists(path):
        atomic_write.write_text(path, "".join(f"{name}\n" for name in labels))


def _checked(name, check, source):
    """`name`, after `check(name)` (None: any name); a ValueError it raises becomes a
    UsageError led by `source`."""
    if check is not None:
        try:
            check(name)
        except ValueError as e:
            raise UsageError(f"{source}: {e}") from None
    return name


def parse_labels_flag(value, check=None, noun="label"):
    """--labels=a,b,c as a list: blanks around names dropped, each name checked with
    `check` (for tags, the tag scheme); an empty or repeated name is an error."""
    labels = [name.strip() for name in value.split(",")]
    if any(not name for name in labels):
        raise UsageError(f"--labels={value}: empty {noun} name")
    labels = [_checked(name, check, "--labels") for name in labels]
    if len(set(labels)) != len(labels):
        raise UsageError(f"--labels={value}: a {noun} is given twice")
    return labels


def labels_from_examples(label_lists, first=()):
    """The label set the training examples use: the names in `first` (used or not), then
    the others sorted (as strings, so the order is the same on every run).

    label_lists: the label names of each example (a list each).
    """
    used = {name for names in label_lists for name in names}
    return list(first) + sorted(used - set(first))


def resolve(output_dir, labels_flag, from_training, check=None, noun="label"):
    """The run's labels and where they come from: (labels, source).

    From `labels_flag` (--labels), else output_dir/labels.txt of an earlier
    run, else `from_training()`, which returns (labels, source) from the
    training set or raises a UsageError saying none is there. A --labels
    that differs from labels.txt is an error; `check` (see parse_labels_flag)
    applies to the names of --labels and labels.txt.
    """
    path = labels_path(output_dir)
    saved = read_labels_file(path) if tf.io.gfile.exists(path) else None
    if labels_flag:
        labels = parse_labels_flag(labels_flag, check, noun)
        if saved is not None and saved != labels:
            raise UsageError(
                f"--labels={labels_flag} differs from {path} ({','.join(saved)}) of an earlier "
                "run; use another --output_dir"
            )
        return labels, "--labels"
    if saved is not None:
        return [_checked(name, check, path) for name in saved], path
    return from_training()
