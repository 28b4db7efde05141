"""What tensor2tensor's walkthrough reads of tf.contrib and TF 1.x's API beyond BERT's,
through run_tf1.py, against TensorFlow 1.15's outputs (tests/data/golden/tf1_15/apis/
t2t_contrib, made by make_golden.py there from tests/data/tf1_scripts/t2t_contrib)."""

import os

import pytest
from helpers import DATA, GOLDEN, assert_nested_close, run_tf1_for_json

SCRIPT = os.path.join(DATA, "tf1_scripts", "t2t_contrib", "run_t2t_contrib.py")
WANT = os.path.join(GOLDEN, "tf1_15", "apis", "t2t_contrib", "results.json")
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return run_tf1_for_json(SCRIPT, tmp_path_factory.mktemp("t2t_contrib"), WANT)


@pytest.mark.slow
def test_optimize_loss_trains_names_and_refuses_as_tf115(results):
    """optimize_loss by name, class, instance and function (clipped, multiplied, the update
    ops run first, the step counted or not): TF 1.15's losses, weights, variable and
    summary names, and its three ValueErrors; OPTIMIZER_CLS_NAMES' names."""
    got, want = results
    assert_nested_close(got["optimize_loss"], want["optimize_loss"], TOLERANCE)


@pytest.mark.slow
def test_lazy_adam_moves_only_the_rows_read_as_tf115(results):
    """LazyAdamOptimizer and Adam on rows that change from step to step: TF 1.15's tables,
    moments and slot names (the two differ: a row read once moves on under Adam only), and
    LazyAdam's on resource variables."""
    got, want = results
    assert got["lazy_adam"]["lazy"]["table"] != got["lazy_adam"]["adam"]["table"]
    assert_nested_close(got["lazy_adam"], want["lazy_adam"], TOLERANCE)


@pytest.mark.slow
def test_layers_3d_convolution_and_pooling_are_tf115s(results):
    """tf.layers.conv3d / Conv3D (same and valid padding, strides), max_pooling3d and
    average_pooling3d: TF 1.15's variable names, shapes and values."""
    got, want = results
    assert_nested_close(got["layers_3d"], want["layers_3d"], TOLERANCE)


@pytest.mark.slow
def test_slim_data_files_and_example_decoder_are_tf115s(results):
    """parallel_reader.get_data_files (a pattern, a list, nothing found) and
    TFExampleDecoder with Tensor handlers (variable-length, a default value, a reshaped
    fixed-length feature): TF 1.15's files, items, shapes and values."""
    got, want = results
    assert_nested_close(got["slim_data"], want["slim_data"], TOLERANCE)


@pytest.mark.slow
def test_contrib_helpers_hook_names_and_run_configs_are_tf115s(results):
    """util's constant_value / make_ndarray, framework's get_name_scope, sort, argsort and
    deprecated, learn.monitors.replace_monitors_with_hooks, tf.estimator's names of
    tf.train's hooks, which RunConfig has a tpu_config, EvalSpec's fields, slim's nets
    imported by their module paths: TF 1.15's answers."""
    got, want = results
    assert_nested_close(got["helpers"], want["helpers"], TOLERANCE)
