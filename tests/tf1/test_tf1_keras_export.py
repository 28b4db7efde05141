"""tf.keras's SavedModel export and h5 files between TF 1.15 and run_tf1.py, against TF 1.15's
outputs (tests/data/golden/tf1_15/apis/keras_export, made by
tests/data/tf1_scripts/keras_export/run_keras_export.py on TF 1.15)."""

import json
import os
import re

import pytest
from helpers import DATA, GOLDEN, HAS_TF_KERAS, REPO, TF_KERAS_ENV, needs_tf_keras, run_script

SCRIPTS = os.path.join(DATA, "tf1_scripts", "keras_export")
WANT = os.path.join(GOLDEN, "tf1_15", "apis", "keras_export")


def _run(script, *args, env=None):
    return run_script("run_tf1.py", os.path.join(SCRIPTS, script), *args, env=env, cwd=REPO)


def _json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _close(got, want):
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert a == pytest.approx(b, abs=1e-6)


def _shards(name):
    """A checkpoint data file's name without its shard count: TF 1.15's saver wrote one
    shard per device (the object graph's tensor on /cpu:0, the variables on none: two),
    today's writes one; either reads from the index."""
    return re.sub(r"\.data-\d+-of-\d+$", ".data", name)


@pytest.mark.slow
@needs_tf_keras
def test_export_saved_model_writes_tf115s_savedmodel(tmp_path):
    """tf.keras.experimental.export_saved_model of a compiled, trained Sequential writes
    TF 1.15's SavedModel: the same files, the same graphs ("serve", "train", "eval") and
    signatures, the same variables (object-graph names, the optimizer's slots) with the
    same shapes; its serving signature and load_from_saved_model predict TF 1.15's numbers."""
    result = _run("run_keras_export.py", f"--output_dir={tmp_path}", env=TF_KERAS_ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    got = _json(tmp_path / "results.json")
    want = _json(os.path.join(WANT, "results.json"))
    assert sorted({_shards(f) for f in got["files"]}) == sorted(
        {_shards(f) for f in want["files"]}
    )
    assert got["graphs"] == want["graphs"]
    assert got["variables"] == want["variables"]
    for key in ("predictions", "served", "loaded"):
        _close(got[key], want[key])


@pytest.mark.slow
@needs_tf_keras
def test_h5_written_by_tf115_loads_with_its_predictions(tmp_path):
    """TF 1.15's model.save h5 file loads through load_model (its RMSprop optimizer with
    it) and through load_weights into the model built anew, and both predict TF 1.15's
    numbers."""
    h5 = os.path.join(WANT, "model.h5")
    result = _run("load_h5.py", f"--h5={h5}", f"--output_dir={tmp_path}", env=TF_KERAS_ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    got = _json(tmp_path / "loaded.json")
    want = _json(os.path.join(WANT, "results.json"))["predictions"]
    assert got["optimizer"] == "RMSprop"
    _close(got["load_model"], want)
    _close(got["load_weights"], want)


@pytest.mark.slow
@pytest.mark.skipif(HAS_TF_KERAS, reason="with tf_keras, h5 files load (the test above)")
def test_h5_without_tf_keras_is_refused_in_one_line(tmp_path):
    """Without tf_keras, tf.keras.models.load_model of TF 1.15's h5 file stops with one
    ERROR line at the user's line naming the package that reads it, and writes nothing."""
    h5 = os.path.join(WANT, "model.h5")
    result = _run("load_h5.py", f"--h5={h5}", f"--output_dir={tmp_path}")
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr[-3000:]
    assert "load_h5.py:20: tf.keras.models.load_model" in errors[0]
    assert "pip install tf_keras" in errors[0]
    assert "Traceback" not in result.stderr
    assert not os.path.exists(tmp_path / "loaded.json")


# What TF 1.15 printed for keras_internals.py (tensorflow 1.15.5, Python 3.7.16).
TF115_INTERNALS = """engine.Layer True
engine.InputSpec True
OptimizerV2 True
epsilon 1e-07 floatx float32
wrappers True
"""


@pytest.mark.slow
@needs_tf_keras
def test_keras_packages_find_tf115s_internal_keras_names():
    """keras-bert's layer packages with TF_KERAS=1 read tensorflow.python.keras's engine
    (Layer, InputSpec), optimizer_v2.optimizer_v2.OptimizerV2, backend_config and
    tf.keras.wrappers at import: each is tf.keras's own, as in TF 1.15."""
    result = _run("keras_internals.py", env=TF_KERAS_ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == TF115_INTERNALS
