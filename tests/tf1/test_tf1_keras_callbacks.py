"""tf.keras.callbacks.TensorBoard through run_tf1.py against TF 1.15's outputs
(tests/data/golden/tf1_15/apis/keras_tensorboard, made by
tests/data/tf1_scripts/keras_tensorboard/run_tensorboard.py on TF 1.15)."""

import importlib.util
import json
import os

import pytest
from helpers import DATA, GOLDEN, REPO, run_script

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
    result = run_script("run_tf1.py", SCRIPT, f"--output_dir={tmp_path}", cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(tmp_path / "results.json", encoding="utf-8") as f:
        got = json.load(f)
    with open(WANT, encoding="utf-8") as f:
        want = json.load(f)
    assert "events.out.tfevents.TIME.HOST.profile-empty" in want["files"]
    assert got == want
