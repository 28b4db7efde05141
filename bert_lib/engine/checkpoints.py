"""Finding, restoring, initializing and saving the engine's checkpoints.

Checkpoints are plain name-based TF checkpoints (`checkpoint`,
`model.ckpt-STEP.*`). restore_or_initialize is the one path by which train,
evaluate and predict give a new session its variables: from a checkpoint
when there is one, else from the initializers (and the scaffolds' init_fn).
A checkpoint whose variables do not fit the graph is refused with one
message (plumbing/checkpoint_shapes.py) naming the variable.
"""

import collections
import contextlib
import os
import re

import tensorflow as tf
from absl import logging

from ..plumbing import atomic_write, checkpoint_files, checkpoint_shapes, errors, startup_checks
from ..plumbing.errors import RunError
from .config import CHECKPOINT_BASENAME, NanLossError, UsageError


def _resolve(model_dir, path):
    """A path the state file names, which a Saver writes relative to model_dir."""
    if os.path.isabs(path) or "://" in path:
        return path
    return os.path.join(model_dir, path)


def _step_of(path):
    suffix = path.rsplit("-", 1)[-1]
    return int(suffix) if suffix.isdigit() else -1


def _on_disk(model_dir):
    """The engine's checkpoints in model_dir by their files (model.ckpt-STEP.index or
    .data-*), oldest first."""
    pattern = os.path.join(model_dir, f"{CHECKPOINT_BASENAME}-*")
    prefixes = set()
    for path in tf.io.gfile.glob(pattern):
        prefix = _FILE_OF_CHECKPOINT.match(path)
        if prefix:
            prefixes.add(prefix.group(1))
    return sorted(prefixes, key=_step_of)


# model.ckpt-STEP.index and model.ckpt-STEP.data-0000I-of-0000N (not .input, .meta, temps).
_FILE_OF_CHECKPOINT = re.compile(r"^(.*-\d+)\.(?:index|data-\d{5}-of-\d{5})$")

Found = collections.namedtuple("Found", ["newest", "whole", "damaged", "state_problem"])
# (path, reason) pairs already warned about, so that a reader asking again is quiet.
_WARNED = set()


def is_whole(path):
    """Whether every file of the checkpoint `path` is there, as long as its index says."""
    return checkpoint_files.damage(path) is None


def checkpoint_exists(path):
    """Whether any file of the checkpoint `path` is there (its index or data)."""
    return bool(tf.io.gfile.glob(path + ".index") or tf.io.gfile.glob(path + ".data-*"))


def find_checkpoints(model_dir):
    """What model_dir holds: Found(newest whole checkpoint or None, the whole ones (oldest
    first), the damaged ones newer than the newest whole [(path, why)], and why its
    state file cannot be read, or None).

    The state file (`checkpoint`) decides which checkpoints count, as for
    TensorFlow; when it is missing, empty or cut short, or names only
    checkpoints that are damaged, the engine's own checkpoints found on disk
    (model.ckpt-STEP) count instead, so that a damaged state file is never
    taken for "no checkpoint". Every candidate is checked whole
    (plumbing/checkpoint_files.py) before it is returned.
    """
    state_path = os.path.join(model_dir, checkpoint_files.STATE_FILE)
    listed, state_problem = [], None
    if tf.io.gfile.exists(state_path):
        try:
            with tf.io.gfile.GFile(state_path) as f:
                text = f.read()
            names = checkpoint_files.parse_state(text, state_path)
            listed = [_resolve(model_dir, name) for name in names]
        except (checkpoint_files.DamagedState, UnicodeDecodeError) as e:
            state_problem = str(e)
    state_usable = state_problem is None and tf.io.gfile.exists(state_path)
    found = _check_whole([p for p in listed if checkpoint_exists(p)])
    if not found.newest and (listed or not state_usable):
        # No whole checkpoint the state names: the engine's own on disk, if any.
        on_disk = _check_whole([p for p in _on_disk(model_dir) if p not in listed])
        if on_disk.newest or not found.damaged:
            found = on_disk._replace(damaged=found.damaged + on_disk.damaged)
    return found._replace(state_problem=state_problem)


def _check_whole(candidates):
    """Found over candidates (oldest first): the whole ones, and the damaged ones after
    the newest whole one."""
    whole, damaged = [], []
    for path in candidates:
        why = checkpoint_files.damage(path)
        if why is None:
            whole.append(path)
            damaged = []
        else:
            damaged.append((path, why))
    return Found(whole[-1] if whole else None, whole, damaged, None)


def _warn(found, model_dir):
    """Says once what find_checkpoints skipped."""
    if found.state_problem and (model_dir, found.state_problem) not in _WARNED:
        _WARNED.add((model_dir, found.state_problem))
        if found.newest or found.damaged:
            logging.warning(
                "%s; the checkpoints are taken from the files in %s instead.",
                found.state_problem,
                model_dir,
            )
    if found.newest is None:
        return
    for path, why in found.damaged:
        if (path, why) not in _WARNED:
            _WARNED.add((path, why))
            logging.warning(
                "Checkpoint %s is damaged: %s; using %s, the newest whole checkpoint.",
                path,
                why,
                found.newest,
            )


def newest_checkpoint(model_dir):
    """Returns the path prefix of the newest whole checkpoint in model_dir, or None.

    Damaged newer ones are skipped, with a warning (see find_checkpoints).
    """
    if not model_dir or not tf.io.gfile.isdir(model_dir):
        return None
    found = find_checkpoints(model_dir)
    _warn(found, model_dir)
    return found.newest


def no_whole_checkpoint_error(model_dir, found):
    """The UsageError for a model_dir whose checkpoints are all damaged."""
    named = "; ".join(why for _, why in found.damaged)
    return UsageError(
        f"no whole checkpoint in {model_dir}: {named}. Move the damaged checkpoint's "
        "files away to go on from an older one (or from step 0 if there is none)"
    )


def checkpoint_to_resume(model_dir, repair_state=True):
    """The checkpoint training resumes from: the newest whole one in model_dir, or None
    when it holds none. Raises UsageError when it holds checkpoints but none is whole
    (never a silent start from step 0). With repair_state, a damaged or missing state
    file beside whole checkpoints is written again, naming them."""
    if not tf.io.gfile.isdir(model_dir):
        return None
    found = find_checkpoints(model_dir)
    _warn(found, model_dir)
    if found.newest is None:
        if found.damaged:
            raise no_whole_checkpoint_error(model_dir, found)
        return None
    state_path = os.path.join(model_dir, checkpoint_files.STATE_FILE)
    if repair_state and (found.state_problem or not tf.io.gfile.exists(state_path)):
        write_checkpoint_state(model_dir, [os.path.basename(p) for p in found.whole])
        logging.warning("Wrote %s again, naming %s.", state_path, found.newest)
    return found.newest


def write_checkpoint_state(directory, names):
    """Writes directory's state file naming `names` (relative to it; the newest last),
    through a temporary name."""
    atomic_write.write_text(
        os.path.join(directory, checkpoint_files.STATE_FILE), checkpoint_files.format_state(names)
    )


def whole_checkpoints(model_dir):
    """The whole checkpoints in model_dir, oldest first (what a resumed Saver takes over)."""
    return find_checkpoints(model_dir).whole


def checkpoint_step(checkpoint_path):
    """Returns the global_step stored in a checkpoint (0 if it holds none)."""
    try:
        return int(tf.train.load_variable(checkpoint_path, "global_step"))
    except (tf.errors.OpError, ValueError, IndexError, RuntimeError):
        return max(_step_of(checkpoint_path), 0)


def remove_unfinished_saves(model_dir):
    """Removes what saves a killed training left unfinished in model_dir: TensorFlow's
    temporary files of a checkpoint (model.ckpt-N.data-*.tempstateN, ...), which no later
    save takes up, and this code's staging directories of dead processes. Call it holding
    the directory's training lock, so that no save is under way there."""
    if "://" in model_dir or not os.path.isdir(model_dir):
        return
    atomic_write.remove_stale(model_dir)
    for name in os.listdir(model_dir):
        if atomic_write.TENSORFLOW_TEMPORARY.search(name):
            logging.info("Removing %s, left by a save that did not finish.", name)
            with contextlib.suppress(OSError):
                os.remove(os.path.join(model_dir, name))


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
    saver.engine_var_list = var_list
    return saver


def unreadable_checkpoint_error(checkpoint_path, error):
    """The UsageError for a checkpoint that was found whole but could not be read: removed
    or damaged since (by another process: a training's rotation, a clean-up), or else
    unreadable for the reason TensorFlow gives, never its guess about graph keys."""
    if not checkpoint_exists(checkpoint_path):
        directory = os.path.dirname(checkpoint_path)
        newest = find_checkpoints(directory).newest if tf.io.gfile.isdir(directory) else None
        now = f"the newest there now is {newest}" if newest else "none is left there"
        return UsageError(
            f"checkpoint {checkpoint_path} was removed while this run read it ({now})"
        )
    why = checkpoint_files.damage(checkpoint_path)
    if why is not None:
        return UsageError(
            f"checkpoint {checkpoint_path} was damaged while this run read it: {why}"
        )
    message = str(getattr(error, "message", "") or error)
    # TensorFlow's restore puts its guess (a graph key missing) before the reason.
    original = message.rpartition("Original error:")[2]
    reason = f"{type(error).__name__}: {errors.first_line(original)}"
    if isinstance(error, tf.errors.DataLossError):  # a tensor that fails its checksum
        return UsageError(f"checkpoint {checkpoint_path} is damaged: {reason}")
    return UsageError(f"cannot read checkpoint {checkpoint_path}: {reason}")


def _restore(saver, session, checkpoint_path, optional):
    """Restores all of the saver's variables, naming any the checkpoint lacks.

    Those of `optional` (the spec's optional_in_checkpoint: a float16 loss
    scale, which a checkpoint of a float32 run or of the original code has
    none of) may be missing: they then start from their initializers. A
    checkpoint removed or damaged while it is read is named
    (unreadable_checkpoint_error).
    """
    try:
        in_checkpoint = checkpoint_shapes.read_shapes(checkpoint_path)
    except UsageError as e:
        raise unreadable_checkpoint_error(checkpoint_path, e) from None
    expected = {variable.op.name: variable.shape for variable in saver.engine_var_list}
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
    restorer = saver
    if absent:
        logging.info(
            "%s holds no %s; starting from the initial value.",
            checkpoint_path,
            ", ".join(sorted(absent)),
        )
        present = [v for v in saver.engine_var_list if v.op.name not in absent]
        restorer = tf.compat.v1.train.Saver(var_list=present)
    try:
        restorer.restore(session, checkpoint_path)
    except (tf.errors.OpError, ValueError) as e:
        raise unreadable_checkpoint_error(checkpoint_path, e) from None
    if not absent:
        return
    session.run(
        tf.compat.v1.variables_initializer(
            [v for v in saver.engine_var_list if v.op.name in absent]
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
            saver.recover_last_checkpoints(whole_checkpoints(model_dir))
    else:
        session.run(init_ops.global_init)
        for scaffold in scaffolds:
            if scaffold is not None and scaffold.init_fn is not None:
                scaffold.init_fn(scaffold, session)
    session.run(init_ops.local_init)
    session.run(init_ops.iterator_init)


def checkpoint_to_load(model_dir, checkpoint_path, what):
    """The checkpoint evaluate / predict use: checkpoint_path (a file or a directory), or
    the newest whole one in model_dir; None (with a warning) when model_dir holds none.
    A damaged checkpoint given, or a model_dir holding only damaged ones, is a
    UsageError naming the files."""
    if checkpoint_path:
        if not checkpoint_exists(checkpoint_path):
            if tf.io.gfile.isdir(checkpoint_path):
                found = checkpoint_to_resume(checkpoint_path, repair_state=False)
                if found:
                    return found
            raise UsageError(f"checkpoint {checkpoint_path} not found")
        why = checkpoint_files.damage(checkpoint_path)
        if why is not None:
            raise UsageError(f"checkpoint {checkpoint_path} is damaged: {why}")
        return checkpoint_path
    check_model_dir(model_dir, create=False)
    found = checkpoint_to_resume(model_dir, repair_state=False)
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
    try:
        if before_write is not None:
            before_write(f"{prefix}-{step}")
        path = saver.save(session, prefix, global_step=step)
    except (tf.errors.OpError, ValueError) as e:
        if isinstance(e, ValueError) and tf.io.gfile.isdir(model_dir):
            raise  # not the directory gone: a bug
        raise save_error(model_dir, f"{prefix}-{step}", e) from None
    logging.info("Saved checkpoint for step %d: %s", step, path)
    return path


def save_error(model_dir, checkpoint_path, error):
    """The one-line error for a checkpoint that could not be written: the checkpoint and
    why (the directory gone, a full disk), not the temporary file TensorFlow names."""
    if not tf.io.gfile.isdir(model_dir):
        return UsageError(
            f"cannot save checkpoint {checkpoint_path}: the directory {model_dir} no longer "
            "exists (was it removed while training ran?)"
        )
    reason = errors.first_line(error)
    reason = re.sub(r"[^\s;:,]*tempstate[^\s;:,]*", "its temporary file", reason)
    return RunError(f"cannot save checkpoint {checkpoint_path}: {type(error).__name__}: {reason}")
