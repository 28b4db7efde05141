"""benchmarks/int8_saturation.py's emulation of ONNX Runtime's u8s8 kernels without VNNI.

The saturated product is checked against hand-computed pair sums and a
brute-force numpy reference that forms every pair sum; without overflow it
must be numpy's exact integer matmul. The staged run of an int8 file (ONNX
Runtime between the integer matmuls, numpy for them) must answer what ONNX
Runtime answers on the whole file, and with saturation it must answer a
numpy forward pass that saturates.
"""

import os
import sys

import numpy as np
import pytest
from helpers import REPO, needs_onnx_extra

sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import int8_saturation  # noqa: E402


def _exact(a, b, a_zp=0, b_zp=0):
    return (a.astype(np.int64) - int(a_zp)) @ (b.astype(np.int64) - np.asarray(b_zp, np.int64))


def _brute_force(a, b, a_zp=0):
    """Every pair sum of the raw product formed and clipped, then the zero point off."""
    k = a.shape[1]
    if k % 2:
        a, b = np.pad(a, ((0, 0), (0, 1))), np.pad(b, ((0, 1), (0, 0)))
    products = a.astype(np.int64)[:, :, None] * b.astype(np.int64)[None, :, :]  # [M, K, N]
    pairs = products[:, 0::2] + products[:, 1::2]
    raw = np.clip(pairs, -32768, 32767).sum(axis=1)
    return raw - int(a_zp) * b.astype(np.int64).sum(axis=0)


def test_a_pair_sum_past_int16_is_clipped_by_its_overflow():
    a = np.array([[255, 255, 10, 0], [255, 255, 255, 255]], np.uint8)
    b = np.array([[127, -127], [127, -127], [1, 126], [1, 0]], np.int8)
    product, over, changed = int8_saturation.matmul_integer(a, b, saturate=True)
    exact = _exact(a, b)
    # Row 0: 255 x 127 x 2 = 64770 > 32767 and -64770 < -32768 in the first pair.
    # Row 1: the same, and 255 x 127 + 255 x 0 = 32385 in the second pair of column 1.
    assert over == 4 and changed == 4
    np.testing.assert_array_equal(
        exact - product, [[64770 - 32767, -64770 + 32768], [64770 - 32767, -64770 + 32768]]
    )
    unsaturated, over, changed = int8_saturation.matmul_integer(a, b, saturate=False)
    np.testing.assert_array_equal(unsaturated, exact)
    assert over == 0 and changed == 0


def test_the_zero_point_comes_off_exactly_after_the_raw_product_saturates():
    a = np.array([[200, 200, 128, 0, 7]], np.uint8)  # odd K: the last one pairs with a zero
    b = np.array([[100], [100], [-5], [3], [127]], np.int8)
    product, over, _ = int8_saturation.matmul_integer(a, b, 128, 0, saturate=True)
    # The kernel saturates the raw pair 200 x 100 x 2 = 40000, not (200 - 128) x 100 x 2.
    assert over == 1
    assert product[0, 0] == _exact(a, b, 128)[0, 0] - (40000 - 32767)
    np.testing.assert_array_equal(product, _brute_force(a, b, 128))


def test_pairs_are_adjacent_along_the_reduction_axis():
    # Large products at k = 1 and 2 fall in different pairs: nothing saturates.
    a = np.array([[0, 255, 255, 0]], np.uint8)
    b = np.array([[0], [127], [127], [0]], np.int8)
    product, over, _ = int8_saturation.matmul_integer(a, b, saturate=True)
    assert over == 0
    np.testing.assert_array_equal(product, _exact(a, b))
    # At k = 2 and 3 they share one.
    a, b = a[:, [0, 3, 1, 2]], b[[0, 3, 1, 2]]
    product, over, _ = int8_saturation.matmul_integer(a, b, saturate=True)
    assert over == 1 and product[0, 0] == 32767


def test_random_products_match_the_brute_force_pair_sums():
    rng = np.random.RandomState(0)
    a = rng.randint(0, 256, size=(2, 9, 33)).astype(np.uint8)  # [batch, rows, K]: K odd
    b = rng.randint(-127, 128, size=(33, 20)).astype(np.int8)
    product, over, _ = int8_saturation.matmul_integer(a, b, 131, 0, saturate=True)
    assert product.shape == (2, 9, 20) and over > 0
    np.testing.assert_array_equal(product.reshape(18, 20), _brute_force(a.reshape(18, 33), b, 131))


def test_without_overflow_the_product_is_numpys_exact_integer_matmul():
    rng = np.random.RandomState(1)
    a = rng.randint(0, 256, size=(40, 64)).astype(np.uint8)
    # 7-bit weights (reduce_range): no pair can leave int16.
    b = rng.randint(-64, 65, size=(64, 16)).astype(np.int8)
    product, over, changed = int8_saturation.matmul_integer(a, b, 17, 0, saturate=True)
    assert over == 0 and changed == 0
    np.testing.assert_array_equal(product, _exact(a, b, 17))
    # A weight zero point, one per column, as MatMulInteger allows.
    b_zp = rng.randint(-3, 4, size=16).astype(np.int8)
    product, _, _ = int8_saturation.matmul_integer(a, b, 17, b_zp, saturate=False)
    np.testing.assert_array_equal(product, _exact(a, b, 17, b_zp))


def _tiny_float_model(path, w1, w2):
    """x [rows, 4] -> relu(x @ w1 + 1) @ w2, a float32 ONNX file."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="dense_1/MatMul"),
        helper.make_node("Add", ["h", "bias"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"], name="dense_2/MatMul"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", w2.shape[1]])],
        initializer=[
            numpy_helper.from_array(w1, "w1"),
            numpy_helper.from_array(w2, "w2"),
            numpy_helper.from_array(np.ones(w1.shape[1], np.float32), "bias"),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def _numpy_int8_forward(x, w1, w2, saturate):
    """The tiny model's int8 file in numpy: each MatMul's input quantized to uint8 by
    DynamicQuantizeLinear's rule, its weight symmetric int8 per column, products by
    int8_saturation.matmul_integer, scaled back in float32."""

    def dense(x, w):
        low, high = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
        scale = np.float32((high - low) / 255)
        zero_point = np.clip(np.round(-low / scale), 0, 255)
        x_q = np.clip(np.round(x / scale) + zero_point, 0, 255).astype(np.uint8)
        w_scale = (np.abs(w).max(axis=0) / 127).astype(np.float32)
        w_q = np.clip(np.round(w / w_scale), -127, 127).astype(np.int8)
        product, _, _ = int8_saturation.matmul_integer(x_q, w_q, zero_point, 0, saturate)
        return product.astype(np.float32) * (scale * w_scale)

    return dense(np.maximum(dense(x, w1) + 1, 0), w2)


@needs_onnx_extra
def test_the_staged_run_of_an_int8_file_answers_onnx_runtime_and_numpy(tmp_path):
    import onnxruntime as ort

    from bert_lib.bert_runs import onnx_export

    rng = np.random.RandomState(2)
    # Signs alternating along the reduction axis: no pair sum can leave int16 ...
    w1 = np.abs(rng.standard_normal((4, 8))) * [[1], [-1], [1], [-1]]
    w2 = np.abs(rng.standard_normal((8, 3))) * np.array([[1], [-1]] * 4)
    # ... but in column 0 of w2, where every weight is the column's largest (127).
    w2[:, 0] = 2.0
    w1, w2 = w1.astype(np.float32), w2.astype(np.float32)
    float_path, int8_path = str(tmp_path / "tiny.onnx"), str(tmp_path / "tiny_int8.onnx")
    _tiny_float_model(float_path, w1, w2)
    onnx_export.quantize_int8(float_path, int8_path)
    x = rng.standard_normal((6, 4)).astype(np.float32) * 3
    session = ort.InferenceSession(int8_path, providers=["CPUExecutionProvider"])
    (served,) = session.run(["y"], {"x": x})

    exact = int8_saturation.SaturationCounts(saturate=False)
    got = int8_saturation.StagedInt8Model(int8_path, exact)({"x": x})["y"]
    np.testing.assert_allclose(got, served, atol=1e-5, rtol=1e-6)
    np.testing.assert_allclose(got, _numpy_int8_forward(x, w1, w2, False), atol=1e-5, rtol=1e-6)
    assert list(exact.counts) == ["dense_1/MatMul_quant", "dense_2/MatMul_quant"]
    assert exact.counts["dense_2/MatMul_quant"]["pairs"] == 6 * 4 * 3

    saturating = int8_saturation.SaturationCounts(saturate=True)
    clipped = int8_saturation.StagedInt8Model(int8_path, saturating)({"x": x})["y"]
    np.testing.assert_allclose(clipped, _numpy_int8_forward(x, w1, w2, True), atol=1e-5, rtol=1e-6)
    assert saturating.counts["dense_2/MatMul_quant"]["saturated"] > 0
    # ONNX Runtime's exact products, less what saturation takes: the same numbers and counts.
    corrected = int8_saturation.SaturationCounts(saturate=True)
    model = int8_saturation.StagedInt8Model(int8_path, corrected, products_by_onnxruntime=True)
    np.testing.assert_allclose(model({"x": x})["y"], clipped, atol=1e-6, rtol=0)
    assert corrected.counts == saturating.counts
    assert np.abs(clipped[:, 0] - served[:, 0]).max() > 0.1
    np.testing.assert_allclose(clipped[:, 1:], served[:, 1:], atol=1e-5, rtol=1e-6)


@pytest.mark.parametrize("name", ["bert/encoder/layer_3/intermediate/dense/MatMul_quant"])
def test_layer_names_drop_the_scope_and_the_op(name):
    assert int8_saturation.layer_name(name) == "layer_3/intermediate/dense"


@needs_onnx_extra
@pytest.mark.parametrize("per_column", [True, False])
def test_weights_get_one_scale_per_column_or_per_matrix(tmp_path, per_column):
    import onnx
    from onnx import numpy_helper

    from bert_lib.bert_runs import onnx_export

    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((4, 3)).astype(np.float32) * np.array([0.1, 1.0, 5.0], np.float32)
    w2 = rng.standard_normal((3, 2)).astype(np.float32)
    float_path, int8_path = str(tmp_path / "tiny.onnx"), str(tmp_path / "tiny_int8.onnx")
    _tiny_float_model(float_path, w1, w2)
    onnx_export.quantize_int8(float_path, int8_path, per_column=per_column)
    model = onnx.load(int8_path)
    values = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    matmuls = [n for n in model.graph.node if n.op_type == "MatMulInteger"]
    assert len(matmuls) == 2
    for node, w in zip(matmuls, (w1, w2)):
        # Symmetric: the largest magnitude of each column (or of the matrix) maps to 127.
        largest = np.abs(w).max(axis=0) if per_column else np.abs(w).max()
        np.testing.assert_array_equal(values[node.input[1]], np.round(w / (largest / 127)))
        assert not values[node.input[3]].any()
        scale = values[node.input[1].replace("_quantized", "_scale")]
        np.testing.assert_allclose(scale, largest / 127, rtol=1e-6)
