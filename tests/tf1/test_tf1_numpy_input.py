"""tf.estimator.inputs.numpy_input_fn through run_tf1.py against TF 1.15's outputs
(tests/data/golden/tf1_15/apis/numpy_input, made by
tests/data/tf1_scripts/numpy_input/run_numpy_input.py on TF 1.15)."""

import json
import os

import pytest
from helpers import DATA, GOLDEN, REPO, assert_nested_close, run_script

SCRIPT = os.path.join(DATA, "tf1_scripts", "numpy_input", "run_numpy_input.py")
WANT = os.path.join(GOLDEN, "tf1_15", "apis", "numpy_input", "results.json")


@pytest.mark.slow
def test_numpy_input_fn_feeds_the_estimator_as_tf115s(tmp_path):
    """Training for ever in order (full batches of static size), evaluating one epoch (its
    short last batch counted), predicting from a single array (features a tensor): what
    the model_fn was given, the trained kernel, the metrics, the predictions and the
    refusal of a missing shuffle are TF 1.15's."""
    result = run_script("run_tf1.py", SCRIPT, f"--output_dir={tmp_path}", cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(tmp_path / "results.json", encoding="utf-8") as f:
        got = json.load(f)
    with open(WANT, encoding="utf-8") as f:
        want = json.load(f)
    assert_nested_close(got, want, 1e-6, "results")
