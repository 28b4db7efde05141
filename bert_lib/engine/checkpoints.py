"""Finding, restoring, initializing and saving the engine's checkpoints.

Checkpoints are plain name-based TF checkpoints (`checkpoint`,
`model.ckpt-STEP.*`). restore_or_initialize is the one path by which train,
evaluate and predict give a new session its variables: from a checkpoint
when there is one, else from the initializers (and the scaffolds' init_fn).
A checkpoint whose variables do not fit the graph is refused with one
message (plumbing/checkpoint_shapes.py) naming the variable.
"""

import collections
import os

import tensorflow as tf
from absl import logging

from ..plumbing import checkpoint_shapes, startup_checks
from .config import CHECKPOINT_BASENAME, NanLossError, UsageError


def newest_checkpoint(model_dir):
    """Returns the path prefix of the newest complete checkpoint in model_dir, or None."""
    if not model_dir or not tf.io.gfile.isdir(model_dir):
        return None
    state = tf.train.get_checkpoint_state(model_dir)
    if state is None:
        return None
    candidates = list(state.all_model_checkpoint_paths)
    if state.model_checkpoint_path and state.model_checkpoint_path not in candidates:
        candidates.append(state.model_checkpoint_path)
    for path in reversed(candidates):
        if tf.io.gfile.exists(path + ".index"):
            return path
    return None


def checkpoint_step(checkpoint_path):
    """Returns the global_step stored in a checkpoint (0 if it holds none)."""
    try:
        return int(tf.train.load_variable(checkpoint_path, "global_step"))
    except (tf.errors.NotFoundError, ValueError):
        suffix = checkpoint_path.rsplit("-", 1)[-1]
        return int(suffix) if suffix.isdigit() else 0


def check_model_dir(model_dir, create):
    """model_dir must be a directory (or not exist yet: with `create` it is made)."""
    startup_checks.check_output_dir(model_dir, "model_dir")
    if create:
        tf.io.gfile.makedirs(model_dir)


def _make_saver(max_to_keep=5):
    """A name-based Saver over every global variable, remembering what it saves."""
    var_list = tf.compat.v1.global_variables()
    saver = tf.compat.v1.train.Saver(
        var_list=var_list, max_to_keep=max_to_keep, save_relative_paths=True
    )
    saver.runner_var_list = var_list
    return saver


def _restore(saver, session, checkpoint_path, optional):
    """Restores all of the saver's variables, naming any the checkpoint lacks.

    Those of `optional` (the spec's optional_in_checkpoint: a float16 loss
    scale, which a checkpoint of a float32 run or of the original code has
    none of) may be missing: they then start from their initializers.
    """
    in_checkpoint = checkpoint_shapes.read_shapes(checkpoint_path)
    expected = {variable.op.name: variable.shape for variable in saver.runner_var_list}
    checkpoint_shapes.check_shapes(expected, checkpoint_path, in_checkpoint)
    optional = {variable.op.name for variable in optional}
    absent = {name for name in expected if name not in in_checkpoint}
    missing = sorted(absent - optional)
    if missing:
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        raise UsageError(
            f"checkpoint {checkpoint_path} does not match the model: it lacks "
            + ", ".join(missing[:5])
            + more
        )
    if not absent:
        saver.restore(session, checkpoint_path)
        return
    logging.info(
        "%s holds no %s; starting from the initial value.",
        checkpoint_path,
        ", ".join(sorted(absent)),
    )
    present = [v for v in saver.runner_var_list if v.op.name not in absent]
    tf.compat.v1.train.Saver(var_list=present).restore(session, checkpoint_path)
    session.run(
        tf.compat.v1.variables_initializer(
            [v for v in saver.runner_var_list if v.op.name in absent]
        )
    )


InitOps = collections.namedtuple("InitOps", ["global_init", "local_init", "iterator_init"])


def make_saver_and_init_ops(make_iterator_init, max_to_keep=5):
    """The saver and init ops of a finished graph; call once every variable exists."""
    saver = _make_saver(max_to_keep)
    init_ops = InitOps(
        global_init=tf.compat.v1.global_variables_initializer(),
        local_init=tf.group(
            tf.compat.v1.local_variables_initializer(), tf.compat.v1.tables_initializer()
        ),
        iterator_init=make_iterator_init(),
    )
    return saver, init_ops


def restore_or_initialize(
    session, saver, init_ops, scaffolds, checkpoint_path, model_dir=None, optional=()
):
    """Gives a new session its variables: from checkpoint_path, else from initializers.

    Scaffolds' init_fn run only when nothing is restored (a checkpoint
    already holds what they would load). With model_dir (training), the
    saver also takes over the checkpoints already there, so that
    keep_checkpoint_max counts them. The variables of `optional` may be
    missing from the checkpoint (see _restore).
    """
    if checkpoint_path:
        logging.info("Restoring parameters from %s", checkpoint_path)
        _restore(saver, session, checkpoint_path, optional)
        if model_dir is not None:
            state = tf.train.get_checkpoint_state(model_dir)
            saver.recover_last_checkpoints(list(state.all_model_checkpoint_paths))
    else:
        session.run(init_ops.global_init)
        for scaffold in scaffolds:
            if scaffold is not None and scaffold.init_fn is not None:
                scaffold.init_fn(scaffold, session)
    session.run(init_ops.local_init)
    session.run(init_ops.iterator_init)


def checkpoint_to_load(model_dir, checkpoint_path, what):
    """The checkpoint evaluate / predict use: checkpoint_path (a file or a directory), or
    the newest in model_dir; None (with a warning) when model_dir holds none."""
    if checkpoint_path:
        if not tf.io.gfile.exists(checkpoint_path + ".index"):
            if tf.io.gfile.isdir(checkpoint_path):
                found = newest_checkpoint(checkpoint_path)
                if found:
                    return found
            raise UsageError(f"checkpoint {checkpoint_path} not found")
        return checkpoint_path
    check_model_dir(model_dir, create=False)
    found = newest_checkpoint(model_dir)
    if found is None:
        logging.warning(
            "No checkpoint in %s; %s uses the variables as the model_fn initializes "
            "them (its init_checkpoint, if it loads one).",
            model_dir,
            what,
        )
    return found


def save_checkpoint(session, saver, weights_finite, model_dir, step, before_write=None):
    """Saves model_dir/model.ckpt-STEP, unless the weights hold NaN or Inf.

    before_write(path), when given, runs first with the checkpoint's path
    (to write a file that goes with it: it then exists whenever the
    checkpoint does).
    """
    if not session.run(weights_finite):
        raise NanLossError(
            f"weights hold NaN or Inf at step {step}; not saving. The newest good "
            f"checkpoint is {newest_checkpoint(model_dir) or '(none)'}"
        )
    prefix = os.path.join(model_dir, CHECKPOINT_BASENAME)
    if before_write is not None:
        before_write(f"{prefix}-{step}")
    path = saver.save(session, prefix, global_step=step)
    logging.info("Saved checkpoint for step %d: %s", step, path)
    return path
