"""benchmarks/precision_bisect.py's switches for grouping's parts change only their own part.

--post_shuffle=false must leave the same batches, in each window's length
order; --stratify=false must sort each window by length alone.
"""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf
from helpers import REPO

from bert_lib.task_data import dynamic_padding

BENCHMARKS = os.path.join(REPO, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import precision_bisect  # noqa: E402

BATCH, WINDOW_BATCHES, SEQ = 4, 4, 8


def _batches():
    """The real lengths of each training batch, as lists, in the order they come."""
    lengths = np.random.RandomState(0).randint(1, SEQ + 1, size=64)
    mask = np.array([[1] * n + [0] * (SEQ - n) for n in lengths], np.int32)
    dataset = tf.data.Dataset.from_tensor_slices(
        {
            "input_ids": mask,
            "input_mask": mask,
            "segment_ids": mask,
            "label_ids": np.arange(len(lengths)) % 2,
        }
    )
    tf.random.set_seed(3)
    out = dynamic_padding.batch(
        dataset,
        BATCH,
        True,
        dynamic_padding.Settings(1, WINDOW_BATCHES),
        True,
        label_key="label_ids",
    )
    return [sorted(b["input_mask"].numpy().sum(axis=1).tolist()) for b in out]


@pytest.fixture
def restore():
    batch, group = dynamic_padding.batch, dynamic_padding.group_by_length
    yield
    dynamic_padding.batch, dynamic_padding.group_by_length = batch, group


def _longest(batches):
    return [max(b) for b in batches]


def test_post_shuffle_false_keeps_the_batches_in_each_windows_length_order(restore):
    shuffled = _batches()
    precision_bisect.no_post_shuffle()
    unshuffled = _batches()
    # the same batches (the examples' shuffle and the grouping are untouched) ...
    assert sorted(map(tuple, unshuffled)) == sorted(map(tuple, shuffled))
    # ... in ascending order of length inside each window, which the shuffle had broken
    windows = [
        _longest(unshuffled[i : i + WINDOW_BATCHES])
        for i in range(0, len(unshuffled), WINDOW_BATCHES)
    ]
    assert all(w == sorted(w) for w in windows)
    assert any(
        _longest(shuffled[i : i + WINDOW_BATCHES])
        != sorted(_longest(shuffled[i : i + WINDOW_BATCHES]))
        for i in range(0, len(shuffled), WINDOW_BATCHES)
    )


def test_stratify_false_sorts_each_window_by_length_alone(restore):
    precision_bisect.unstratified()
    precision_bisect.no_post_shuffle()
    batches = _batches()
    for i in range(0, len(batches), WINDOW_BATCHES):
        flat = [n for b in batches[i : i + WINDOW_BATCHES] for n in b]
        assert flat == sorted(flat)
