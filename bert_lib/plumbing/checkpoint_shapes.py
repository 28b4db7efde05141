"""Comparing a checkpoint's variable shapes with the model's, for the scripts.

Warm starting, resuming, exporting and the start-up checks all refuse a
checkpoint whose variables do not fit the model, with the one message of
modeling.check_variable_shapes (which modeling.py, a file users copy into
their own projects, keeps to itself), raised here as a UsageError; a
checkpoint that cannot be read at all is "<flag>: no checkpoint at <path>".
"""

import tensorflow as tf

import modeling

from .errors import UsageError


def read_shapes(checkpoint_path, flag=None):
    """{variable name: shape list} of a checkpoint; UsageError if there is none to read."""
    try:
        return {name: list(shape) for name, shape in tf.train.list_variables(checkpoint_path)}
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        where = f"{flag}: " if flag else ""
        raise UsageError(f"{where}no checkpoint at {checkpoint_path}") from None


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


def check_task_head(output_dir, init_checkpoint, num_labels, hidden_size):
    """A checkpoint already in output_dir, and --init_checkpoint, must fit this task's head.

    Training resumes from the one in output_dir and eval / predict / export
    read it; a head with another number of labels (say an MNLI model under
    --task_name=mrpc) would otherwise be restored as it is, giving outputs of
    the wrong width. An --init_checkpoint fine-tuned on such a task would
    only be refused while warm starting, after the records were written.
    Either may hold no head at all (a pre-trained checkpoint has none).
    """
    expected = {"output_weights": [num_labels, hidden_size], "output_bias": [num_labels]}
    newest = tf.train.latest_checkpoint(output_dir) if output_dir else None
    if newest is not None:
        check_shapes(
            expected, newest, hint=" (it belongs to another task: use another --output_dir)"
        )
    if init_checkpoint:
        check_shapes(
            expected,
            init_checkpoint,
            hint=" (--init_checkpoint was fine-tuned on another task: start from a "
            "pre-trained checkpoint)",
            flag="--init_checkpoint",
        )
