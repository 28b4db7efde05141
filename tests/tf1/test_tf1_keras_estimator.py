"""tf.keras.estimator.model_to_estimator through run_tf1.py against TF 1.15's outputs
(tests/data/golden/tf1_15/apis/keras_estimator, made by
tests/data/tf1_scripts/keras_estimator/run_model_to_estimator.py on TF 1.15)."""

import json
import os

import pytest
from helpers import DATA, GOLDEN, REPO, TF_KERAS_ENV, needs_tf_keras, run_script

SCRIPT = os.path.join(DATA, "tf1_scripts", "keras_estimator", "run_model_to_estimator.py")
WANT = os.path.join(GOLDEN, "tf1_15", "apis", "keras_estimator", "results.json")


def _json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _close(got, want, where):
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for key in want:
            _close(got[key], want[key], f"{where}/{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want)):
            _close(a, b, f"{where}[{i}]")
    else:
        assert got == pytest.approx(want, abs=1e-6), where


@pytest.mark.slow
@needs_tf_keras
def test_model_to_estimator_trains_evaluates_and_predicts_as_tf115(tmp_path):
    """A Sequential with a Keras optimizer and accuracy, and a functional model of two named
    inputs with a tf.train optimizer: the Estimator warm-starts from the model's seeded
    weights (model_dir/keras/keras_model.ckpt, TF 1.15's variables in it), trains,
    evaluates and predicts TF 1.15's numbers under TF 1.15's names (`acc`, the output
    layers' names), and its model_dir holds every file TF 1.15's held."""
    result = run_script(
        "run_tf1.py", SCRIPT, f"--output_dir={tmp_path}", env=TF_KERAS_ENV, cwd=REPO
    )
    assert result.returncode == 0, result.stderr[-3000:]
    got = _json(tmp_path / "results.json")
    want = _json(WANT)
    assert sorted(got) == sorted(want) == ["functional", "sequential"]
    for case in want:
        missing = set(want[case]["files"]) - set(got[case]["files"])
        assert not missing, (case, missing)
        for key in (
            "warm_start_checkpoint",
            "warm_start_variables",
            "trained_checkpoint",
            "variables",
            "evaluated_types",
        ):
            assert got[case][key] == want[case][key], (case, key)
        for key in ("weights", "evaluated", "predicted"):
            _close(got[case][key], want[case][key], f"{case}/{key}")
