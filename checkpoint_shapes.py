"""Comparing a checkpoint's variable shapes with the model's, in one message.

Warm starting, resuming, exporting and the start-up checks all refuse a
checkpoint whose variables do not fit the model; each says so as

    checkpoint <path> does not match the model: variable <name> has shape
    [a, b] in the model but [c, d] in the checkpoint<hint>

and a checkpoint that cannot be read at all as "<flag>: no checkpoint at <path>".
"""

import tensorflow as tf

from errors import UsageError


def read_shapes(checkpoint_path, flag=None):
    """{variable name: shape list} of a checkpoint; UsageError if there is none to read."""
    try:
        return {name: list(shape) for name, shape in tf.train.list_variables(checkpoint_path)}
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        where = f"{flag}: " if flag else ""
        raise UsageError(f"{where}no checkpoint at {checkpoint_path}") from None


def _as_list(shape):
    return shape.as_list() if isinstance(shape, tf.TensorShape) else list(shape)


def mismatch_message(checkpoint_path, name, model_shape, checkpoint_shape, hint=""):
    """The one message for a variable whose shape differs between model and checkpoint."""
    return (
        f"checkpoint {checkpoint_path} does not match the model: variable {name} has shape "
        f"{_as_list(model_shape)} in the model but {list(checkpoint_shape)} in the checkpoint"
        f"{hint}"
    )


def find_mismatches(expected, in_checkpoint):
    """[(name, model shape, checkpoint shape)] for names in both whose shapes do not fit.

    `expected` maps names to shape lists or tf.TensorShapes (a partly
    unknown TensorShape fits any shape it is compatible with).
    """
    found = []
    for name, shape in expected.items():
        if name not in in_checkpoint:
            continue
        saved = in_checkpoint[name]
        if isinstance(shape, tf.TensorShape):
            fits = shape.is_compatible_with(saved)
        else:
            fits = list(shape) == list(saved)
        if not fits:
            found.append((name, _as_list(shape), list(saved)))
    return found


def check_shapes(expected, checkpoint_path, in_checkpoint=None, hint="", flag=None):
    """Raises UsageError (mismatch_message) for the first variable that does not fit.

    Variables the checkpoint lacks are not looked at; `in_checkpoint` is
    read from `checkpoint_path` when not given.
    """
    if in_checkpoint is None:
        in_checkpoint = read_shapes(checkpoint_path, flag)
    mismatches = find_mismatches(expected, in_checkpoint)
    if mismatches:
        raise UsageError(mismatch_message(checkpoint_path, *mismatches[0], hint=hint))


def check_head_of_newest_checkpoint(output_dir, num_labels, hidden_size):
    """A checkpoint already in output_dir must have this task's head, or nothing fits.

    Training resumes from it and eval / predict / export read it; a head
    with another number of labels (say an MNLI model under --task_name=mrpc)
    would otherwise be restored as it is, giving outputs of the wrong width.
    """
    checkpoint_path = tf.train.latest_checkpoint(output_dir) if output_dir else None
    if checkpoint_path is None:
        return
    expected = {"output_weights": [num_labels, hidden_size], "output_bias": [num_labels]}
    check_shapes(
        expected, checkpoint_path, hint=" (it belongs to another task: use another --output_dir)"
    )
