"""tf.keras.callbacks.TensorBoard through run_tf1.py against TF 1.15's outputs
(tests/data/golden/tf1_15/apis/keras_tensorboard, made by
tests/data/tf1_scripts/keras_tensorboard/run_tensorboard.py on TF 1.15)."""

import os

import pytest
from helpers import DATA, GOLDEN, TF_KERAS_ENV, needs_tf_keras, run_tf1_for_json

SCRIPT = os.path.join(DATA, "tf1_scripts", "keras_tensorboard", "run_tensorboard.py")
WANT = os.path.join(GOLDEN, "tf1_15", "apis", "keras_tensorboard", "results.json")


@pytest.mark.slow
@needs_tf_keras
def test_tensorboard_callback_writes_tf115s_files_profile_empty_events_file_included(tmp_path):
    """fit with the callback's defaults (the second batch profiled) writes TF 1.15's files
    in the log folder: the callback's events file, the profile, and the
    `events.out.tfevents.<time>.<host>.profile-empty` file, its one record TF 1.15's
    (file version, the name's whole second; the same 40 bytes)."""
    got, want = run_tf1_for_json(SCRIPT, tmp_path, WANT, env=TF_KERAS_ENV)
    assert "events.out.tfevents.TIME.HOST.profile-empty" in want["files"]
    assert got == want
