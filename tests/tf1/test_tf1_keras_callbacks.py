"""tf.keras.callbacks.TensorBoard through run_tf1.py against TF 1.15's outputs
(tests/data/golden/tf1_15/apis/keras_tensorboard, made by
tests/data/tf1_scripts/keras_tensorboard/run_tensorboard.py on TF 1.15)."""

import importlib.util
import os

import pytest
from helpers import DATA, GOLDEN, run_tf1_for_json

SCRIPT = os.path.join(DATA, "tf1_scripts", "keras_tensorboard", "run_tensorboard.py")
WANT = os.path.join(GOLDEN, "tf1_15", "apis", "keras_tensorboard", "results.json")
HAS_TF_KERAS = importlib.util.find_spec("tf_keras") is not None


@pytest.mark.slow
@pytest.mark.skipif(not HAS_TF_KERAS, reason="tf.keras's Model.fit and callbacks need tf_keras")
def test_tensorboard_callback_writes_tf115s_files_profile_empty_events_file_included(tmp_path):
    """fit with the callback's defaults (the second batch profiled) writes TF 1.15's files
    in the log folder: the callback's events file, the profile, and the
    `events.out.tfevents.<time>.<host>.profile-empty` file, its one record TF 1.15's
    (file version, the name's whole second; the same 40 bytes)."""
    got, want = run_tf1_for_json(SCRIPT, tmp_path, WANT)
    assert "events.out.tfevents.TIME.HOST.profile-empty" in want["files"]
    assert got == want
