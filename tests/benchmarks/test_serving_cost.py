"""benchmarks/serving_cost.py's floor under a call: the dense matmuls alone.

The figure is only a floor if both sides compute the model's products: the
shapes must be the classifier's dense layers, and each side's matmuls must
answer numpy's products of the same weights.
"""

import os
import sys

import numpy as np
import pytest
import tensorflow as tf
from helpers import REPO, needs_onnx_extra

sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import serving_cost  # noqa: E402


def test_dense_shapes_are_each_layers_six_then_the_pooler_and_the_classifier():
    cfg = {"num_hidden_layers": 3, "hidden_size": 8, "intermediate_size": 32}
    shapes = serving_cost.dense_shapes(cfg)
    layer = [(8, 8), (8, 8), (8, 8), (8, 8), (8, 32), (32, 8)]
    assert shapes == layer * 3 + [(8, 8), (8, 2)]


@needs_onnx_extra
def test_onnx_runtimes_matmuls_answer_numpys_products():
    rng = np.random.default_rng(1)
    weights = [rng.standard_normal(s).astype(np.float32) for s in [(8, 8), (8, 32), (32, 8)]]
    session = serving_cost._onnxruntime_matmuls(weights, [8, 32])
    xs = {n: rng.standard_normal((3, n)).astype(np.float32) for n in (8, 32)}
    got = session.run(None, {f"x{n}": x for n, x in xs.items()})
    for w, y in zip(weights, got):
        np.testing.assert_allclose(y, xs[w.shape[0]] @ w, rtol=1e-5, atol=1e-5)


@needs_onnx_extra
@pytest.mark.parametrize("granularity", ["column", "matrix"])
def test_onnx_runtimes_int8_matmuls_answer_numpys_products_of_the_int8_weights(granularity):
    """The int8 contenders compute what the int8 export does: the weight rounded to
    int8 with one scale per column (or one in all), the input to uint8 on each call."""
    rng = np.random.default_rng(2)
    # Columns of very different ranges: one scale per matrix rounds the small ones coarsely.
    weights = [rng.standard_normal((16, 8)).astype(np.float32) * np.geomspace(0.01, 1, 8)]
    session = serving_cost._onnxruntime_matmuls(weights, [16], int8=granularity)
    x = rng.standard_normal((4, 16)).astype(np.float32)
    (got,) = session.run(None, {"x16": x})
    w = weights[0].astype(np.float64)
    largest = np.abs(w).max(axis=0) if granularity == "column" else np.abs(w).max()
    w_int8 = np.clip(np.rint(w / (largest / 127)), -127, 127) * (largest / 127)
    low, high = min(x.min(), 0.0), max(x.max(), 0.0)
    x_scale = (high - low) / 255
    zero_point = np.rint(-low / x_scale)
    x_back = (np.clip(np.rint(x / x_scale) + zero_point, 0, 255) - zero_point) * x_scale
    np.testing.assert_allclose(got, x_back @ w_int8, rtol=1e-4, atol=1e-5)
    exact = x.astype(np.float64) @ w
    small = np.abs(exact[:, 0]).mean()  # the column of the smallest range
    error = np.abs(got[:, 0] - exact[:, 0]).mean() / small
    assert (error < 0.05) if granularity == "column" else (error > 0.05)


def test_every_tensorflow_form_answers_numpys_products():
    rng = np.random.default_rng(3)
    weights = [rng.standard_normal(s).astype(np.float32) for s in [(8, 8), (8, 32), (32, 8)]]
    forms = serving_cost.tensorflow_matmuls(weights, [8, 32])
    assert len(forms) == 5
    xs = [rng.standard_normal((3, n)).astype(np.float32) for n in (8, 32)]
    for name, form in forms.items():
        got = form([tf.constant(x) for x in xs])
        for w, y in zip(weights, got):
            expected = xs[[8, 32].index(w.shape[0])] @ w
            np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-5, err_msg=name)


@needs_onnx_extra
def test_the_floor_times_every_contender_at_each_length():
    cfg = {"num_hidden_layers": 1, "hidden_size": 8, "intermediate_size": 16}
    floors = serving_cost.matmul_floor(cfg, [2, 5], calls=20)
    assert sorted(floors) == [2, 5]
    for sides in floors.values():
        assert sorted(sides) == sorted(
            [
                *serving_cost.tensorflow_matmuls([np.ones((8, 8), np.float32)], [8]),
                "onnxruntime",
                "onnxruntime int8 per column",
                "onnxruntime int8 per matrix",
            ]
        )
        assert all(wall > 0 and cpu >= 0 for wall, cpu, _ in sides.values())
        assert sides["onnxruntime"][2] == 1.0


def test_time_in_turns_runs_each_contender_count_times_a_round_in_shuffled_turns():
    import random

    import speed_common

    log = []
    calls = {name: (lambda name=name: log.append(name)) for name in "abc"}
    per = speed_common.time_in_turns(calls, rounds=4, count=2, shuffler=random.Random(0))
    assert sorted(per) == ["a", "b", "c"]
    assert all(len(walls) == len(cpus) == 4 for walls, cpus in per.values())
    # Each turn is `count` calls of one contender; each round holds every contender once.
    turns = [log[i] for i in range(0, len(log), 2)]
    assert log == [name for name in turns for _ in range(2)]
    rounds = [turns[i : i + 3] for i in range(0, 12, 3)]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # the order was shuffled
