"""Comparing a checkpoint's variable shapes with the model's, for the scripts.

Warm starting, resuming, exporting and the start-up checks all refuse a
checkpoint whose variables do not fit the model, with the one message of
modeling.check_variable_shapes (which modeling.py, a file users copy into
their own projects, keeps to itself), raised here as a UsageError; a
checkpoint that cannot be read at all is "<flag>: no checkpoint at <path>".
"""

import os
import re

import tensorflow as tf

import modeling

from .errors import UsageError


def read_shapes(checkpoint_path, flag=None):
    """{variable name: shape list} of a checkpoint; UsageError if there is none to read."""
    try:
        return {name: list(shape) for name, shape in tf.train.list_variables(checkpoint_path)}
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        where = f"{flag}: " if flag else ""
        raise UsageError(
            f"{where}no checkpoint at {checkpoint_path}{_nearby(checkpoint_path)}"
        ) from None


def _nearby(checkpoint_path):
    """ " (<dir> holds model.ckpt-300, ...)" when the checkpoints beside a wrong prefix share
    its name with a step added (model.ckpt for model.ckpt-300), else ""."""
    directory, base = os.path.split(checkpoint_path)
    if not base or "://" in checkpoint_path or not os.path.isdir(directory or "."):
        return ""
    steps = re.compile(re.escape(base) + r"-\d+\.index$")
    found = sorted(
        name[: -len(".index")] for name in os.listdir(directory or ".") if steps.match(name)
    )
    if not found:
        return ""
    return f" ({directory or '.'} holds {', '.join(found[-3:])}: give one of those)"


def check_shapes(expected, checkpoint_path, in_checkpoint=None, hint="", flag=None):
    """Raises UsageError for the first variable that does not fit (modeling's message).

    Variables the checkpoint lacks are not looked at; `in_checkpoint` is
    read from `checkpoint_path` when not given.
    """
    if in_checkpoint is None:
        in_checkpoint = read_shapes(checkpoint_path, flag)
    try:
        modeling.check_variable_shapes(expected, checkpoint_path, in_checkpoint, hint)
    except modeling.InputError as e:
        raise UsageError(str(e)) from None
