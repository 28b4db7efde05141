"""Random ops seeded by tf.set_random_seed alone, through run_tf1.py against TF 1.15's draws
(tests/data/golden/tf1_15/apis/graph_seeds, made by
tests/data/tf1_scripts/graph_seeds/run_graph_seeds.py on TF 1.15)."""

import os
import textwrap
import threading

import pytest
import tensorflow as tf
from helpers import DATA, GOLDEN, assert_nested_close, run_tf1_for_json

from bert_lib.tf1 import graph_seeds

SCRIPT = os.path.join(DATA, "tf1_scripts", "graph_seeds", "run_graph_seeds.py")
WANT = os.path.join(GOLDEN, "tf1_15", "apis", "graph_seeds", "results.json")


@pytest.mark.slow
def test_graph_seeded_ops_draw_tf115s_numbers(tmp_path):
    """The same ops, named the same, in the same order (tf.split, tf.nn.dropout and
    tf.random_uniform built op for op as TF 1.15 built them), so each random op gets TF
    1.15's seeds and draws TF 1.15's numbers: initial weights, dropout masks, uniform
    draws; an op's own seed and a graph without one are as before."""
    got, want = run_tf1_for_json(SCRIPT, tmp_path, WANT)
    assert got["seeded"]["ops"] == want["seeded"]["ops"]
    assert got["seeded"]["seeds"] == want["seeded"]["seeds"]
    assert got["unseeded"] == want["unseeded"]
    assert_nested_close(got["seeded"]["values"], want["seeded"]["values"], 1e-6, "values")


def _random_op_seeds(filename):
    """The seeds of two random ops built in a seeded graph by code of `filename`, run in a
    thread of its own (so that no other code is on its stack: not this test's)."""
    source = """
        def seeds():
            graph = tf.Graph()
            with graph.as_default():
                tf.compat.v1.set_random_seed(5)
                tf.constant([1.0, 2.0]) * 3.0
                tf.random.normal([2])
                tf.random.normal([2])
            found.extend((op.get_attr("seed"), op.get_attr("seed2"))
                         for op in graph.get_operations() if op.type.startswith("Random"))
    """
    namespace = {"tf": tf, "found": []}
    exec(compile(textwrap.dedent(source), filename, "exec"), namespace)
    thread = threading.Thread(target=namespace["seeds"])
    thread.start()
    thread.join()
    return namespace["found"]


def test_only_user_codes_ops_take_tf115s_seeds(tmp_path):
    """TF 1.15's op seed is the number of ops in the graph when the op asks for its seed
    (3, then the shape, mean and stddev of the first draw: 6; then 6 + 3 + 3); ops built
    with no user code on the stack (the project's own, TensorFlow's, other packages')
    keep TensorFlow's count of random ops, and TensorFlow's rule is back after restore()."""
    user_file = str(tmp_path / "train.py")
    project_file = graph_seeds.__file__
    tensorflow_rule = [(5, 0), (5, 1)]
    assert _random_op_seeds(user_file) == tensorflow_rule
    graph_seeds.seed_as_tf115()
    try:
        assert _random_op_seeds(user_file) == [(5, 6), (5, 12)]
        assert _random_op_seeds(project_file) == tensorflow_rule
    finally:
        graph_seeds.restore()
    assert _random_op_seeds(user_file) == tensorflow_rule
