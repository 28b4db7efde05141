"""tf.estimator.inputs.numpy_input_fn through run_tf1.py against TF 1.15's outputs
(tests/data/golden/tf1_15/apis/numpy_input, made by
tests/data/tf1_scripts/numpy_input/run_numpy_input.py on TF 1.15)."""

import os

import pytest
from helpers import DATA, GOLDEN, assert_nested_close, run_tf1_for_json

SCRIPT = os.path.join(DATA, "tf1_scripts", "numpy_input", "run_numpy_input.py")
WANT = os.path.join(GOLDEN, "tf1_15", "apis", "numpy_input", "results.json")


@pytest.mark.slow
def test_numpy_input_fn_feeds_the_estimator_as_tf115s(tmp_path):
    """Training for ever in order (full batches of static size), evaluating one epoch (its
    short last batch counted), predicting from a single array (features a tensor): what
    the model_fn was given, the trained kernel, the metrics, the predictions and the
    refusal of a missing shuffle are TF 1.15's."""
    got, want = run_tf1_for_json(SCRIPT, tmp_path, WANT)
    assert_nested_close(got, want, 1e-6, "results")
