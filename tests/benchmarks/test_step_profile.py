"""benchmarks/step_profile.py's matmul floor: which matmuls a step has and what they cost in FLOPs.

Each matmul's FLOPs are written out by hand (two per multiply-add: rows x
columns of the output, times the shared dimension, times the batch); the
graph's matmuls are found with their transposes as written.
"""

import os
import sys

import pytest
import tensorflow as tf
from helpers import REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import step_profile  # noqa: E402


def test_matmul_shapes_and_flops_follow_the_graphs_transposes():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [6, 4])
        w = tf.compat.v1.placeholder(tf.float32, [4, 5])
        dy = tf.compat.v1.placeholder(tf.float32, [6, 5])
        q = tf.compat.v1.placeholder(tf.bfloat16, [2, 3, 7, 8])
        tf.matmul(x, w)
        tf.matmul(x, dy, transpose_a=True)
        tf.matmul(dy, w, transpose_b=True)
        tf.matmul(q, q, transpose_b=True)
    shapes = step_profile._matmul_shapes(graph)
    assert [op_type for op_type, *_ in shapes] == ["MatMul"] * 3 + ["BatchMatMulV2"]
    assert shapes[1][3] == {"transpose_a": True, "transpose_b": False}
    assert shapes[3][3] == {"adj_x": False, "adj_y": True}
    # The floor times each matmul in the step's own dtype.
    assert [dtype for *_, dtype in shapes] == [tf.float32] * 3 + [tf.bfloat16]
    flops = [step_profile.matmul_flops(a, b, attrs) for _, a, b, attrs, _ in shapes]
    # [6 x 4] [4 x 5]; [4 x 6] [6 x 5]; [6 x 5] [5 x 4]; 2 x 3 of [7 x 8] [8 x 7].
    assert flops == [2 * 6 * 5 * 4, 2 * 4 * 5 * 6, 2 * 6 * 4 * 5, 2 * 6 * 7 * 7 * 8]


def test_dtype_names_tell_16_bit_ops_float32_islands_and_casts():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [2, 3], name="x")
        low = tf.cast(x, tf.bfloat16, name="to_bf16")
        product = tf.matmul(low, tf.transpose(low), name="product")
        back = tf.cast(product, tf.float32, name="to_fp32")
        tf.nn.softmax(back, name="softmax")
        tf.range(3, name="positions")
    names = step_profile._dtype_names(graph)
    assert names["to_bf16"] == "fp32->bf16"
    assert names["product"] == "bf16"
    assert names["to_fp32"] == "bf16->fp32"
    assert names["softmax"] == "fp32"
    assert names["positions"] == "-"


def test_matmul_floor_runs_matmuls_of_mixed_dtypes():
    # A bf16 step keeps a few matmuls in float32 (the head, the pooler):
    # the floor runs both kinds side by side.
    shapes = [
        ("MatMul", [8, 4], [4, 6], {"transpose_a": False, "transpose_b": False}, tf.float32),
        ("MatMul", [8, 4], [4, 6], {"transpose_a": False, "transpose_b": False}, tf.bfloat16),
        ("BatchMatMulV2", [2, 3, 5], [2, 5, 3], {"adj_x": False, "adj_y": False}, tf.bfloat16),
    ]
    args = step_profile.parse_args(["--warmup_steps=1", "--timed_steps=1"])
    seconds, gflop = step_profile.matmul_floor(args, shapes)
    assert seconds > 0
    assert gflop == pytest.approx((2 * 8 * 6 * 4 * 2 + 2 * 2 * 3 * 3 * 5) / 1e9)
