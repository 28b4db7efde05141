"""What TF 1.x libraries of 2017-2020 (TFLearn, TF-Slim) built on, through run_tf1.py,
against TensorFlow 1.15's outputs (tests/data/golden/tf1_15/apis/library_internals, made by
make_golden.py there from tests/data/tf1_scripts/library_internals)."""

import json
import os

import pytest
from helpers import DATA, GOLDEN, REPO, assert_nested_close, run_script

SCRIPT = os.path.join(DATA, "tf1_scripts", "library_internals", "run_library_internals.py")
WANT = os.path.join(GOLDEN, "tf1_15", "apis", "library_internals", "results.json")
TOLERANCE = 1e-5


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("library_internals")
    result = run_script("run_tf1.py", SCRIPT, f"--output_dir={output_dir}", cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(output_dir / "results.json", encoding="utf-8") as f:
        got = json.load(f)
    with open(WANT, encoding="utf-8") as f:
        return got, json.load(f)


@pytest.mark.slow
def test_arg_scope_and_add_arg_scope_by_module_path_give_tf115s_arguments(results):
    """Nested, re-entered and exited arg_scopes give a decorated function TF 1.15's
    arguments; has_arg_scope, arg_scoped_arguments and the three refusals are TF 1.15's."""
    got, want = results
    assert_nested_close(got["arg_scope"], want["arg_scope"], TOLERANCE)


@pytest.mark.slow
def test_contrib_regularizers_name_their_loss_and_refuse_as_tf115(results):
    """l1 / l2 regularizers: the loss op named by the scope, its value; a scale of 0 gives
    None, an integer or a negative scale TF 1.15's ValueError."""
    got, want = results
    assert_nested_close(got["regularizers"], want["regularizers"], TOLERANCE)


@pytest.mark.slow
def test_regularization_losses_are_tensors_a_moving_average_takes(results):
    """The collection holds each regularized variable's loss tensor (TF 1.15's names), and
    ExponentialMovingAverage.apply over them and the total loss, while training three
    steps, gives TF 1.15's values and averages."""
    got, want = results
    assert all(is_tensor for is_tensor, _, _ in got["regularized"]["collection"])
    assert_nested_close(got["regularized"], want["regularized"], TOLERANCE)


@pytest.mark.slow
def test_contrib_nest_smart_cond_and_eager_defun_are_tf115s(results):
    """tf.contrib.framework.nest is TF 1.15's internal nest (is_sequence, flatten_up_to,
    map_structure_up_to), smart_cond picks a branch when the predicate is known and builds
    a cond when it is fed, and tf.contrib.eager.defun (imported by its module path, as
    Sonnet 1 does) is a graph function called in the graph: TF 1.15's values."""
    got, want = results
    assert_nested_close(got["sonnet"], want["sonnet"], TOLERANCE)
