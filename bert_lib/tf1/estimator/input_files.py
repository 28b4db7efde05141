"""The input-position files of a TF 1.x script's checkpoints, gone with their checkpoints.

The engine saves where the training input stands beside each checkpoint
(model.ckpt-N.input, engine/input_position.py) and deletes the files of
checkpoints it rotated away at its next save. TF 1.x code knows nothing
of those files: ALBERT-style scripts evaluate each checkpoint after
training and delete the ones they do not keep (model.ckpt-N.index,
.data-*, .meta), which would leave model.ckpt-N.input behind. So every
model_dir an Estimator of the script used is swept of such orphans when
the run ends, however it ends.
"""

import atexit

from ... import engine

_WATCHED = set()


def watch(model_dir):
    """Removes orphaned input-position files from `model_dir` when the process exits."""
    if model_dir in _WATCHED:
        return
    _WATCHED.add(model_dir)
    atexit.register(sweep, model_dir)


def sweep(model_dir):
    """Removes the input-position files of `model_dir` whose checkpoints are gone."""
    try:
        engine.remove_orphan_input_positions(model_dir)
    except Exception:  # a directory the script deleted or cannot reach any more
        pass
