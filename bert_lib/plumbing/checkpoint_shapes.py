"""Comparing a checkpoint's variable shapes with a model's, for the engine and the scripts.

Resuming, exporting, warm starting and the start-up checks all refuse a
checkpoint whose variables do not fit the model, with one message:

    checkpoint <path> does not match the model: variable <name> has shape
    [a, b] in the model but [c, d] in the checkpoint<hint>

raised here as a UsageError; a checkpoint that cannot be read at all is
"<flag>: no checkpoint at <path>". modeling.py, a file users copy into their
own projects, keeps its own check with the same message
(modeling.check_variable_shapes, raising modeling.InputError): this module
knows nothing of BERT, so that the engine can use it.
"""

import os
import re

import tensorflow as tf

from . import checkpoint_files
from .errors import UsageError


def read_shapes(checkpoint_path, flag=None):
    """{variable name: shape list} of a checkpoint; UsageError if there is none to read,
    or if its files are not whole (checkpoint_files.damage: a data file cut short would
    otherwise fail only when the tensors are read)."""
    where = f"{flag}: " if flag else ""
    try:
        shapes = {name: list(shape) for name, shape in tf.train.list_variables(checkpoint_path)}
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        raise UsageError(
            f"{where}no checkpoint at {checkpoint_path}{_nearby(checkpoint_path)}"
        ) from None
    # A directory stands for the checkpoint its state file names.
    prefix = checkpoint_path
    if tf.io.gfile.isdir(checkpoint_path):
        prefix = tf.train.latest_checkpoint(checkpoint_path)
    if prefix and tf.io.gfile.exists(prefix + ".index"):
        why = checkpoint_files.damage(prefix)
        if why is not None:
            raise UsageError(f"{where}cannot read {prefix} (damaged): {why}")
    return shapes


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


def _fits(shape, saved):
    """A shape list fits only the same list; a tf.TensorShape, any it is compatible with."""
    if isinstance(shape, tf.TensorShape):
        return shape.is_compatible_with(saved)
    return list(shape) == list(saved)


def _as_list(shape):
    return shape.as_list() if isinstance(shape, tf.TensorShape) else list(shape)


def check_shapes(expected, checkpoint_path, in_checkpoint=None, hint="", flag=None):
    """Raises UsageError for the first variable of `expected` whose shape the checkpoint's
    does not fit (the message above).

    `expected` maps variable names to shape lists or tf.TensorShapes (a
    partly unknown TensorShape fits any shape it is compatible with).
    Variables the checkpoint lacks are not looked at; `in_checkpoint`
    ({name: shape list}) is read from `checkpoint_path` when not given.
    """
    if in_checkpoint is None:
        in_checkpoint = read_shapes(checkpoint_path, flag)
    for name, shape in expected.items():
        if name in in_checkpoint and not _fits(shape, in_checkpoint[name]):
            raise UsageError(
                f"checkpoint {checkpoint_path} does not match the model: variable {name} has "
                f"shape {_as_list(shape)} in the model but {list(in_checkpoint[name])} in the "
                f"checkpoint{hint}"
            )
