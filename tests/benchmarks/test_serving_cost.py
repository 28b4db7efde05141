"""benchmarks/serving_cost.py's floor under a call: the dense matmuls alone.

The figure is only a floor if both sides compute the model's products: the
shapes must be the classifier's dense layers, and each side's matmuls must
answer numpy's products of the same weights.
"""

import os
import sys

import numpy as np
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
def test_the_floor_times_both_sides_at_each_length():
    cfg = {"num_hidden_layers": 1, "hidden_size": 8, "intermediate_size": 16}
    floors = serving_cost.matmul_floor(cfg, [2, 5], calls=20)
    assert sorted(floors) == [2, 5]
    for sides in floors.values():
        assert sorted(sides) == ["onnxruntime", "tensorflow"]
        assert all(wall > 0 and cpu >= 0 for wall, cpu in sides.values())


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
