"""The ONNX files of an export (--export_format=onnx,onnx_int8) under ONNX Runtime and OpenVINO.

A random 3-class classifier is exported as run_classifier.py exports one,
with both ONNX files. Float32 under either runtime must answer what the
SavedModel's signature answers on the same ids (float32 round-off) and
the float64 numpy BERT; the int8 file must answer what a numpy BERT whose
dense layers run ONNX's integer arithmetic answers (weights: symmetric
int8 from the checkpoint, one scale per output column; activations: uint8
from each call's range, DynamicQuantizeLinear's rule), which is not
float32's. OpenVINO's int8 (the float32 file's dense weights compressed
as OpenVINO compresses them) must hold those weights in int8 in the
compiled model and answer what a numpy BERT with the same int8 weights
answers.
OpenVINO in bf16 must stay within bfloat16's rounding of float32, and
compute in bfloat16.

The converters and runtimes are the optional extra [onnx]: without it the
tests that convert or serve are skipped, and the format checks still run.
"""

import collections
import os
import re
import sys

import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from classifier_helpers import random_classifier_values
from helpers import (
    ONNX_EXTRA,
    REPO,
    VOCAB_UNCASED,
    error_line,
    needs_onnx_extra,
    run_code,
    tiny_bert_config,
    write_checkpoint,
)

import modeling
import run_classifier
from bert_lib.bert_runs import onnx_export
from bert_lib.export import onnx_runtimes, predictor
from bert_lib.task_data import classifier_output

LABELS = ["no", "maybe", "yes"]
MAX_SEQ_LENGTH = 24
TEXTS = [
    ("a quiet room above the harbour.", "the ferry left at dawn."),
    "cold coffee, slow service, lovely view!",
    ("one", "a second text long enough to run past the twenty-four pieces the export keeps"),
    "z",
    ("who wrote it?", "nobody knows who wrote it"),
]


def _export_random_classifier(directory, seed, formats, precision="fp32", hidden_act="gelu"):
    """(export directory, checkpoint values, config) of a random 3-class classifier
    exported in `formats` (an --export_format value) at `precision`."""
    config = modeling.BertConfig.from_dict(tiny_bert_config(30522, hidden_act=hidden_act))
    values = random_classifier_values(config, len(LABELS), seed)
    checkpoint = write_checkpoint(directory / "model.ckpt", values)
    files = classifier_output.predictor_files(
        VOCAB_UNCASED, True, LABELS, False, 0.5, MAX_SEQ_LENGTH
    )
    target = str(directory / "export")
    run_classifier.export_saved_model(
        target,
        checkpoint,
        config,
        len(LABELS),
        predictor_files=files,
        precision=precision,
        export_formats=onnx_export.parse_formats(formats),
    )
    return target, values, config


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """A random classifier exported with model.onnx and model_int8.onnx (tf2onnx's
    conversion takes seconds: the tests that export are marked slow)."""
    return _export_random_classifier(tmp_path_factory.mktemp("onnx"), 5, "onnx_int8")


def _numpy_probabilities(values, config, ids, matmul=None, last_layer_at_cls=True):
    """The classifier's probabilities by the numpy model: each dense matmul, the
    classifier's too, by `matmul(x, kernel)` (default float64 x @ kernel); the last layer
    at [CLS] only, as the exported graph computes it, unless `last_layer_at_cls` is
    False."""
    outputs = npr.bert(values, config, *ids, matmul=matmul, last_layer_at_cls=last_layer_at_cls)
    pooled, kernel = outputs["pooled_output"], values["output_weights"].T
    logits = matmul(pooled, kernel) if matmul else pooled @ kernel
    return npr.softmax(logits + values["output_bias"])


def _ids(export_dir):
    """The TEXTS' ids cut to the longest, as the Predictor feeds them, and full length."""
    model = predictor.Predictor(export_dir)
    return model.encode.arrays(TEXTS), model.encode(TEXTS)


def _signature_probabilities(export_dir, arrays):
    signature = tf.saved_model.load(export_dir).signatures["serving_default"]
    feed = {name: tf.constant(a) for name, a in zip(predictor.INPUT_NAMES, arrays)}
    return signature(**feed)["probabilities"].numpy()


@pytest.mark.slow
@needs_onnx_extra
def test_export_directory_holds_the_savedmodel_and_both_onnx_files(export):
    import onnx

    export_dir, _, _ = export
    model = onnx.load(f"{export_dir}/{onnx_export.ONNX_FILE}")
    assert [i.name for i in model.graph.input] == list(predictor.INPUT_NAMES)
    for value in model.graph.input:
        assert value.type.tensor_type.elem_type == onnx.TensorProto.INT32
        dims = [d.dim_param for d in value.type.tensor_type.shape.dim]
        assert dims == ["batch", "length"]
    assert [o.name for o in model.graph.output] == ["probabilities"]
    assert {o.version for o in model.opset_import if o.domain in ("", "ai.onnx")} == {17}
    assert tf.io.gfile.exists(f"{export_dir}/saved_model.pb")


@pytest.mark.slow
@needs_onnx_extra
def test_onnx_files_hold_onnx_runtimes_fused_operators(export):
    import onnx

    export_dir, _, config = export
    layers = config.num_hidden_layers
    for name in (onnx_export.ONNX_FILE, onnx_export.ONNX_INT8_FILE):
        model = onnx.load(f"{export_dir}/{name}")
        ops = collections.Counter((node.domain, node.op_type) for node in model.graph.node)
        # Each layer's two residual sums and their LayerNorms, and its dense layer's bias
        # and GELU; what is left of them unfused: the embeddings' LayerNorm (its one
        # Sqrt) and the pooler's tanh.
        assert ops["com.microsoft", "SkipLayerNormalization"] == 2 * layers, name
        assert ops["com.microsoft", "FastGelu"] == layers, name
        # Each layer's attention, the last one's (first position only) included: one
        # MultiHeadAttention, no softmax left but the classifier's; the query, key and value
        # matmuls stay outside it (int8 quantizes them).
        assert ops["com.microsoft", "MultiHeadAttention"] == layers, name
        assert ops["", "Softmax"] == 1, name
        assert (ops["", "Sqrt"], ops["", "Tanh"], ops["", "Pow"]) == (1, 1, 0), name
        assert {o.domain: o.version for o in model.opset_import}["com.microsoft"] == 1


@pytest.mark.slow
@needs_onnx_extra
@pytest.mark.parametrize("runtime", onnx_runtimes.RUNTIMES)
def test_float32_onnx_answers_the_savedmodels_probabilities(export, runtime):
    export_dir, values, config = export
    cut, full = _ids(export_dir)
    expected = _signature_probabilities(export_dir, cut)
    served = predictor.Predictor(export_dir, runtime=runtime, batch_size=len(TEXTS))
    got = served.predict_arrays(TEXTS)
    np.testing.assert_allclose(got, expected, atol=2e-7, rtol=0)
    # Full length (padding positions in every row) and batch 1 too, against numpy.
    reference = _numpy_probabilities(values, config, full.values(), last_layer_at_cls=False)
    for i in range(len(TEXTS)):
        one = [full[name][i : i + 1] for name in predictor.INPUT_NAMES]
        np.testing.assert_allclose(served.predict_ids(*one), reference[i : i + 1], atol=1e-5)


@pytest.mark.slow
@needs_onnx_extra
@pytest.mark.parametrize("runtime", onnx_runtimes.RUNTIMES)
def test_fused_attention_answers_the_savedmodel_at_every_length_and_padding(export, runtime):
    # Real pieces of the TEXTS, cut to 2, 7 and 24 positions, each row padded after its
    # own length (one row all padding but [CLS]), batch 1 and batch 5.
    export_dir, _, _ = export
    _, full = _ids(export_dir)
    arrays = [full[name] for name in predictor.INPUT_NAMES]
    model = onnx_runtimes.load(f"{export_dir}/{onnx_export.ONNX_FILE}", runtime)
    for length in (2, 7, MAX_SEQ_LENGTH):
        cut = [np.ascontiguousarray(a[:, :length]) for a in arrays]
        cut[1][3, 1:] = 0
        cut[0][cut[1] == 0] = 0
        expected = _signature_probabilities(export_dir, cut)
        assert (cut[1] == 0).any()
        got = model(cut)["probabilities"]
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
        for i in range(len(TEXTS)):
            one = model([a[i : i + 1] for a in cut])["probabilities"]
            np.testing.assert_allclose(one, expected[i : i + 1], atol=1e-5, rtol=0)


def _int8_kernel(kernel):
    """(int8 values, scale per column) of `kernel` [in, out]: symmetric, each column's
    scale max|column| / 127, values rounded (ties to even) into [-127, 127]."""
    w_scale = (np.abs(kernel.astype(np.float32)).max(axis=0) / 127).astype(np.float32)
    return np.clip(np.round(kernel.astype(np.float32) / w_scale), -127, 127), w_scale


def _int8_matmul(x, kernel):
    """x @ kernel as ONNX Runtime's dynamic quantization computes it: the kernel in
    symmetric int8 (_int8_kernel), x in uint8 from its own range (scale (max(x, 0) -
    min(x, 0)) / 255, zero point round(-min / scale), ties to even), an integer product,
    scaled back."""
    x = x.astype(np.float32)
    low, high = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    x_scale = np.float32((high - low) / 255)
    zero_point = np.clip(np.round(-low / x_scale), 0, 255)
    x_q = np.clip(np.round(x / x_scale) + zero_point, 0, 255)
    w_q, w_scale = _int8_kernel(kernel)
    product = (x_q.astype(np.int64) - int(zero_point)) @ w_q.astype(np.int64)
    return product * (np.float64(x_scale) * w_scale.astype(np.float64))


def _int8_weight_matmul(x, kernel):
    """x @ kernel with the kernel's weights in symmetric int8 (_int8_kernel) and x as it
    is: weight compression alone, in float64."""
    w_q, w_scale = _int8_kernel(kernel)
    return x.astype(np.float64) @ (w_q * w_scale.astype(np.float64))


@pytest.mark.slow
@needs_onnx_extra
def test_int8_onnx_answers_integer_arithmetic_on_the_dense_layers(export):
    export_dir, values, config = export
    cut, _ = _ids(export_dir)
    expected = _numpy_probabilities(values, config, cut, matmul=_int8_matmul)
    float32 = _signature_probabilities(export_dir, cut)
    served = predictor.Predictor(export_dir, runtime="onnxruntime", precision="int8")
    got = served.predict_arrays(TEXTS)
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=0)
    # Not float32's numbers: the quantization is really there.
    assert np.abs(got - float32).max() > 1e-3


@pytest.mark.slow
@needs_onnx_extra
def test_openvino_int8_holds_the_dense_weights_in_int8_and_answers_within_int8s_error(export):
    import openvino

    export_dir, values, config = export
    cut, _ = _ids(export_dir)
    expected = _numpy_probabilities(values, config, cut, matmul=_int8_weight_matmul)
    float64 = _numpy_probabilities(values, config, cut)
    dense = 6 * config.num_hidden_layers + 2  # q, k, v, output, in, out; pooler; classifier
    # The weights compressed, with the plugin's own quantization of activations turned
    # off: the float32 model with int8 weights, exactly the numpy model's.
    core = openvino.Core()
    model = core.read_model(f"{export_dir}/{onnx_export.ONNX_FILE}")
    assert onnx_runtimes.compress_dense_weights(model) == dense
    compiled = core.compile_model(
        model,
        "CPU",
        {"INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": 0},
    )
    got = compiled.create_infer_request().infer(dict(zip(predictor.INPUT_NAMES, cut)))
    got = got[compiled.outputs[0]]
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    assert np.abs(got - float64).max() > 1e-3  # not float32's numbers
    # Predictor at the plugin's defaults: within int8's error of float32.
    served = predictor.Predictor(export_dir, runtime="openvino", precision="int8")
    got = served.predict_arrays(TEXTS)
    assert np.abs(got - float64).max() < 2e-2
    assert np.abs(got - expected).max() < 2e-2
    # The plugin holds every dense layer's weight in int8 and runs its matmul as an int8
    # FullyConnected; the token-type embedding's one-hot matmul stays float32.
    compiled = onnx_runtimes.load(f"{export_dir}/{onnx_export.ONNX_FILE}", "openvino", "int8")
    assert compiled.weight_precisions() == {"i8": dense, "f32": 1}
    assert compiled.layer_precisions()["FullyConnected"] == {"i8": dense, "f32": 1}
    compiled = onnx_runtimes.load(f"{export_dir}/{onnx_export.ONNX_FILE}", "openvino", "fp32")
    assert compiled.weight_precisions() == {"f32": dense + 1}


@pytest.mark.slow
@needs_onnx_extra
def test_openvino_int8_of_a_file_without_float32_weights_is_one_error_line(export):
    export_dir, _, _ = export
    int8_file = f"{export_dir}/{onnx_export.ONNX_INT8_FILE}"
    result = run_code(
        f"""
from bert_lib.export import predictor
from bert_lib.plumbing import command_line


def main(_):
    predictor.Predictor({int8_file!r}, runtime="openvino", precision="int8")


command_line.run_main(main, argv=["serve"])
"""
    )
    assert error_line(result) == (
        f"ERROR: {int8_file}: no float32 dense-layer weights for OpenVINO to compress to "
        "int8 (it compresses those of the float32 model.onnx; give that file, or the export "
        "directory)"
    )


def _saturating_int8_matmul(x, kernel):
    """_int8_matmul with the integer product of ONNX Runtime's u8s8 kernels without VNNI,
    whose pair sums saturate at int16 (benchmarks/int8_saturation.py)."""
    import int8_saturation

    x = x.astype(np.float32)
    low, high = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    x_scale = np.float32((high - low) / 255)
    zero_point = np.clip(np.round(-low / x_scale), 0, 255)
    x_q = np.clip(np.round(x / x_scale) + zero_point, 0, 255).astype(np.uint8)
    w_scale = (np.abs(kernel.astype(np.float32)).max(axis=0) / 127).astype(np.float32)
    w_q = np.clip(np.round(kernel.astype(np.float32) / w_scale), -127, 127).astype(np.int8)
    product, _, _ = int8_saturation.matmul_integer(x_q, w_q, zero_point, 0, saturate=True)
    return product * (np.float64(x_scale) * w_scale.astype(np.float64))


@pytest.mark.slow
@needs_onnx_extra
def test_int8_file_run_in_stages_answers_onnx_runtime_and_saturates_like_numpy(export):
    """benchmarks/int8_saturation.py's staged run of model_int8.onnx (ONNX Runtime between
    the integer matmuls, numpy for them): exact, ONNX Runtime's answers; saturating, the
    numpy BERT's whose integer products saturate."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import int8_saturation

    export_dir, values, config = export
    cut, _ = _ids(export_dir)
    feeds = dict(zip(predictor.INPUT_NAMES, cut))
    path = f"{export_dir}/{onnx_export.ONNX_INT8_FILE}"
    served = predictor.Predictor(export_dir, runtime="onnxruntime", precision="int8")
    expected = served.predict_ids(*cut)
    exact = int8_saturation.SaturationCounts(saturate=False)
    got = int8_saturation.StagedInt8Model(path, exact)(feeds)["probabilities"]
    np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    assert len(exact.counts) == 6 * config.num_hidden_layers + 2

    counts = int8_saturation.SaturationCounts(saturate=True)
    # ONNX Runtime's exact integer products, less what saturation takes.
    model = int8_saturation.StagedInt8Model(path, counts, products_by_onnxruntime=True)
    clipped = model(feeds)["probabilities"]
    numpy_clipped = _numpy_probabilities(values, config, cut, matmul=_saturating_int8_matmul)
    np.testing.assert_allclose(clipped, numpy_clipped, atol=2e-5, rtol=0)
    assert sum(row["saturated"] for row in counts.counts.values()) > 0
    assert np.abs(clipped - expected).max() > 1e-4


@pytest.mark.slow
@needs_onnx_extra
def test_int8_file_quantizes_every_dense_kernel_and_nothing_else(export):
    import onnx
    from onnx import numpy_helper

    export_dir, values, config = export
    model = onnx.load(f"{export_dir}/{onnx_export.ONNX_INT8_FILE}")
    ops = [node.op_type for node in model.graph.node]
    dense = 6 * config.num_hidden_layers + 2  # q, k, v, output, in, out; pooler; classifier
    assert ops.count("MatMulInteger") == dense
    int8 = [
        numpy_helper.to_array(i)
        for i in model.graph.initializer
        if i.data_type == onnx.TensorProto.INT8
    ]
    kernels = [v for n, v in values.items() if n.endswith("/kernel") or n == "output_weights"]
    assert sorted(w.size for w in int8 if w.ndim == 2) == sorted(k.size for k in kernels)


@pytest.mark.slow
@needs_onnx_extra
def test_bf16_export_writes_the_float32_onnx_of_its_checkpoint(tmp_path):
    target, values, config = _export_random_classifier(tmp_path, 6, "onnx", precision="bf16")
    assert sorted(tf.io.gfile.listdir(target)) == [
        "assets.extra",
        "model.onnx",
        "saved_model.pb",
        "variables",
    ]
    _, full = _ids(target)
    reference = _numpy_probabilities(values, config, full.values(), last_layer_at_cls=False)
    onnx_float32 = predictor.Predictor(target, runtime="onnxruntime").predict_arrays(TEXTS)
    np.testing.assert_allclose(onnx_float32, reference, atol=1e-5)
    # The SavedModel beside it still computes in bf16.
    saved_model_bf16 = predictor.Predictor(target).predict_arrays(TEXTS)
    assert 1e-4 < np.abs(saved_model_bf16 - reference).max() < 3e-2


@pytest.mark.slow
@needs_onnx_extra
def test_openvino_bf16_computes_in_bfloat16_within_its_rounding_of_float32(export):
    import openvino

    export_dir, _, config = export
    cut, _ = _ids(export_dir)
    float32 = _signature_probabilities(export_dir, cut)
    if "BF16" not in openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        # No bfloat16 for OpenVINO on this CPU: refused, not served in float32 as bf16.
        with pytest.raises(predictor.UsageError, match="computes in f32, not bf16"):
            predictor.Predictor(export_dir, runtime="openvino", precision="bf16")
        return
    served = predictor.Predictor(export_dir, runtime="openvino", precision="bf16")
    got = served.predict_arrays(TEXTS)
    assert np.abs(got - float32).max() < 3e-2
    # The plugin ran every dense layer's matmul in bfloat16 (and in float32 at fp32), and
    # the token-type embedding's one-hot matmul.
    dense = 6 * config.num_hidden_layers + 2 + 1
    compiled = onnx_runtimes.load(f"{export_dir}/{onnx_export.ONNX_FILE}", "openvino", "bf16")
    assert compiled.layer_precisions()["FullyConnected"] == {"bf16": dense}
    compiled = onnx_runtimes.load(f"{export_dir}/{onnx_export.ONNX_FILE}", "openvino", "fp32")
    assert compiled.layer_precisions()["FullyConnected"] == {"f32": dense}


@pytest.mark.slow
@needs_onnx_extra
def test_an_onnx_file_is_served_by_path_with_its_directorys_settings(export):
    export_dir, _, _ = export
    by_dir = predictor.Predictor(export_dir, runtime="onnxruntime")
    by_file = predictor.Predictor(f"{export_dir}/{onnx_export.ONNX_FILE}")
    assert by_file.runtime == "onnxruntime" and by_file.labels == LABELS
    assert by_file(TEXTS) == by_dir(TEXTS)


@pytest.mark.slow
@needs_onnx_extra
def test_the_runtimes_refuse_what_they_cannot_serve(export, tmp_path):
    export_dir, _, _ = export
    with pytest.raises(predictor.UsageError, match="not 'bf16'.*OpenVINO"):
        predictor.Predictor(export_dir, runtime="onnxruntime", precision="bf16")
    with pytest.raises(predictor.UsageError, match="not one of tensorflow"):
        predictor.Predictor(export_dir, runtime="torch")
    with pytest.raises(predictor.UsageError, match="runtime 'tensorflow'"):
        predictor.Predictor(export_dir, precision="int8")
    saved_model_only = tmp_path / "saved_model_only"
    tf.io.gfile.makedirs(str(saved_model_only / "assets.extra"))
    for name in ("saved_model.pb", "assets.extra/vocab.txt", "assets.extra/predictor.json"):
        tf.io.gfile.copy(f"{export_dir}/{name}", str(saved_model_only / name))
    with pytest.raises(predictor.UsageError, match="no model.onnx.*--export_format=onnx"):
        predictor.Predictor(str(saved_model_only), runtime="openvino")


def test_format_names_are_checked_and_int8_brings_float32(tmp_path):
    assert onnx_export.parse_formats(None) == ("saved_model",)
    assert onnx_export.parse_formats("onnx_int8") == ("saved_model", "onnx", "onnx_int8")
    assert onnx_export.parse_formats("onnx,saved_model") == ("saved_model", "onnx")
    with pytest.raises(predictor.UsageError, match="--export_format=tflite: 'tflite' is not"):
        onnx_export.parse_formats("tflite")


@pytest.mark.slow
@needs_onnx_extra
def test_the_serving_pages_python_examples_run_on_an_export(export, capsys):
    export_dir, _, _ = export
    with open(os.path.join(REPO, "docs", "serving.md"), encoding="utf-8") as f:
        page = f.read()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert len(blocks) == 4
    for block in blocks:
        exec(block.replace("/tmp/mrpc_export", export_dir), {})
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(" {")[0] for line in printed[:6]] == [
        "tensorflow None",
        "onnxruntime fp32",
        "onnxruntime int8",
        "openvino fp32",
        "openvino bf16",
        "openvino int8",
    ]


def test_an_onnx_export_is_checked_before_any_work():
    formats = onnx_export.parse_formats("onnx")
    onnx_export.check_export(onnx_export.parse_formats(None), None)
    with pytest.raises(predictor.UsageError, match="^--export_format=onnx needs --export_dir$"):
        onnx_export.check_export(formats, None)
    with pytest.raises(predictor.UsageError, match="writes local files: --export_dir=gs://b/x"):
        onnx_export.check_export(formats, "gs://b/x")


_UNCONVERTIBLE_SAVED_MODEL = """
import tensorflow as tf


def write_saved_model(path, precision):
    # Igamma, the regularized incomplete gamma function, has no ONNX conversion.
    class Model(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="input_ids")])
        def serve(self, input_ids):
            x = tf.cast(input_ids, tf.float32)
            return {"probabilities": tf.math.igamma(x + 1.0, x + 2.0)}

    model = Model()
    tf.saved_model.save(model, path, signatures={"serving_default": model.serve})
"""


@pytest.mark.slow
@needs_onnx_extra
def test_an_op_tf2onnx_cannot_convert_is_one_error_line_and_no_export(tmp_path):
    import tf2onnx

    target = tmp_path / "export"
    result = run_code(
        _UNCONVERTIBLE_SAVED_MODEL
        + f"""
from bert_lib.bert_runs import onnx_export
from bert_lib.plumbing import command_line


def main(_):
    onnx_export.export({str(target)!r}, write_saved_model, "fp32", ("saved_model", "onnx"))


command_line.run_main(main, argv=["export"])
"""
    )
    assert error_line(result) == (
        f"ERROR: --export_dir={target}: tf2onnx {tf2onnx.__version__} could not convert the "
        "TensorFlow op(s) Igamma to ONNX opset 17; no ONNX file written"
    )
    # Nothing left behind: no export directory, no staging directory beside it.
    assert os.listdir(tmp_path) == []


@needs_onnx_extra
def test_a_graph_onnxs_checker_refuses_is_a_usage_error():
    import onnx
    from onnx import helper

    def model(*nodes, inner=None):
        x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
        y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])
        graph = helper.make_graph(list(nodes), "g", [x], [y])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

    onnx_export.check_converted(model(helper.make_node("Relu", ["x"], ["y"])), 17, "here")
    # An op known to ONNX only in a later opset than the file's is not converted either.
    with pytest.raises(predictor.UsageError, match="op.s. BitwiseAnd to ONNX opset 17"):
        onnx_export.check_converted(model(helper.make_node("BitwiseAnd", ["x"], ["y"])), 17, "x")
    # A TensorFlow op left inside a subgraph (an If's branch) is found there.
    branch = helper.make_graph(
        [helper.make_node("Igamma", ["x", "x"], ["z"])],
        "branch",
        [],
        [helper.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [2, 3])],
    )
    condition = helper.make_node("Cast", ["x"], ["c"], to=onnx.TensorProto.BOOL)
    branching = helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)
    with pytest.raises(predictor.UsageError, match=r"^here could not convert .* Igamma to"):
        onnx_export.check_converted(model(condition, branching), 17, "here")
    # Known ops that do not fit together: the checker's shape inference refuses them.
    mismatch = helper.make_node("MatMul", ["x", "x"], ["y"])
    with pytest.raises(predictor.UsageError, match="^here wrote a graph ONNX's checker refuses: "):
        onnx_export.check_converted(model(mismatch), 17, "here")
    try:
        onnx_export.check_converted(model(mismatch), 17, "here")
    except predictor.UsageError as e:
        assert "\n" not in str(e)


@needs_onnx_extra
def test_an_onnx_export_with_the_extra_installed_passes_the_checks():
    onnx_export.check_export(onnx_export.parse_formats("onnx_int8"), "/tmp/an_export")


@pytest.mark.parametrize(
    "format_, needs",
    [
        (
            "onnx",
            "onnx needs the Python packages tf2onnx, onnxruntime, not installed: "
            "{extra} (or pip install tf2onnx onnxruntime)",
        ),
        (
            "onnx_int8",
            "onnx,onnx_int8 needs the Python packages tf2onnx, onnxruntime, not installed: "
            "{extra} (or pip install tf2onnx onnxruntime)",
        ),
    ],
)
def test_an_onnx_format_without_the_extra_says_what_to_install(
    monkeypatch, tmp_path, format_, needs
):
    # Where the extra is installed, its packages are hidden as if they were not.
    for name in ONNX_EXTRA:
        monkeypatch.setitem(sys.modules, name, None)
    formats = onnx_export.parse_formats(format_)
    extra = "pip install 'bert-tensorflow[onnx]'"
    expected = "--export_format=" + needs.format(extra=extra)
    with pytest.raises(predictor.UsageError) as raised:
        onnx_export.check_export(formats, str(tmp_path / "export"))
    assert str(raised.value) == expected
    # export() checks again before it writes anything.
    with pytest.raises(predictor.UsageError) as raised:
        onnx_export.export(str(tmp_path / "export"), None, "fp32", formats)
    assert str(raised.value) == expected
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("runtime", onnx_runtimes.RUNTIMES)
def test_a_runtime_without_the_extra_says_what_to_install(monkeypatch, tmp_path, runtime):
    monkeypatch.setitem(sys.modules, runtime, None)
    with pytest.raises(predictor.UsageError) as raised:
        onnx_runtimes.load(str(tmp_path / "model.onnx"), runtime)
    assert str(raised.value) == (
        f"runtime {runtime!r} needs the Python package {runtime}, not installed: "
        "pip install 'bert-tensorflow[onnx]'"
    )


@pytest.fixture(scope="module")
def export_erf(tmp_path_factory):
    """A random classifier with the erf GELU (hidden_act gelu_erf) exported with both files."""
    directory = tmp_path_factory.mktemp("onnx_erf")
    return _export_random_classifier(directory, 6, "onnx_int8", hidden_act="gelu_erf")


@pytest.mark.slow
@needs_onnx_extra
def test_erf_gelu_is_one_bias_gelu_per_layer_and_answers_the_savedmodel(export_erf):
    import onnx

    export_dir, _, config = export_erf
    for name in (onnx_export.ONNX_FILE, onnx_export.ONNX_INT8_FILE):
        model = onnx.load(f"{export_dir}/{name}")
        ops = collections.Counter((node.domain, node.op_type) for node in model.graph.node)
        # Each layer's dense bias and erf GELU: one BiasGelu, no Erf left.
        assert ops["com.microsoft", "BiasGelu"] == config.num_hidden_layers, name
        assert ops["", "Erf"] == 0, name
    cut, full = _ids(export_dir)
    expected = _signature_probabilities(export_dir, cut)
    for runtime in onnx_runtimes.RUNTIMES:
        got = predictor.Predictor(export_dir, runtime=runtime).predict_ids(*cut)
        np.testing.assert_allclose(got, expected, atol=1e-6, rtol=0, err_msg=runtime)
    int8 = predictor.Predictor(export_dir, runtime="onnxruntime", precision="int8")
    np.testing.assert_allclose(int8.predict_ids(*cut), expected, atol=0.05, rtol=0)


@pytest.mark.slow
@needs_onnx_extra
def test_serve_interleaved_times_every_contender_and_the_savedmodel_against_onnx(export, capsys):
    """benchmarks/serve_interleaved.py on an export: each contender's line at each shape,
    the tuned sessions' ratios, and the SavedModel's time against ONNX Runtime's."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import serve_interleaved

    export_dir, _, _ = export
    tuned = f"fp32:{export_dir}/model.onnx,int8:{export_dir}/model_int8.onnx"
    serve_interleaved.main(
        [
            f"--export_dir={export_dir}",
            f"--tuned={tuned}",
            "--shapes=1x2,2x5",
            "--rounds=2",
            "--calls=2",
            "--per_matrix_int8",
            "--saved_model",
        ]
    )
    out = capsys.readouterr().out
    for shape in ("batch 1 x 2 tokens", "batch 2 x 5 tokens"):
        block = out.split(shape)[1].split("\nbatch ")[0]
        for name in (
            "Predictor, ONNX Runtime fp32",
            "Predictor, ONNX Runtime int8",
            "tuned ONNX Runtime session fp32",
            "tuned ONNX Runtime session int8",
            "model.onnx int8 per matrix, session",
            "Predictor, SavedModel",
        ):
            assert re.search(rf"\n  {re.escape(name)} +\d+\.\d+ \(\d+\.\d+\)", block), block
        assert "fp32: tuned / Predictor, ONNX Runtime fp32 = " in block, block
        assert "int8: tuned / model.onnx int8 per matrix, session = " in block, block
        assert "SavedModel / Predictor, ONNX Runtime fp32 = " in block, block
