"""The ONNX files of an export (--export_format=onnx,onnx_int8) under ONNX Runtime and OpenVINO.

A random 3-class classifier is exported as run_classifier.py exports one,
with both ONNX files. Float32 under either runtime must answer what the
SavedModel's signature answers on the same ids (float32 round-off) and
the float64 numpy BERT; the int8 file must answer what a numpy BERT whose
dense layers run ONNX's integer arithmetic answers (weights: symmetric
int8 from the checkpoint, one scale per output column; activations: uint8
from each call's range, DynamicQuantizeLinear's rule), which is not
float32's.
OpenVINO in bf16 must stay within bfloat16's rounding of float32.
"""

import os
import re

import numpy as np
import numpy_reference as npr
import onnx
import pytest
import tensorflow as tf
from helpers import REPO, VOCAB_UNCASED, tiny_bert_config, write_checkpoint
from onnx import numpy_helper

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


def _random_values(config, num_labels, seed):
    with tf.Graph().as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [None, None])
        run_classifier.create_model(config, False, ids, ids, ids, None, num_labels, False)
        shapes = {v.op.name: v.shape.as_list() for v in tf.compat.v1.global_variables()}
    rng = np.random.RandomState(seed)
    return {
        name: ((1.0 if name.endswith("gamma") else 0.0) + 0.2 * rng.standard_normal(shape)).astype(
            np.float32
        )
        for name, shape in shapes.items()
    }


def _export_random_classifier(directory, seed, formats, precision="fp32"):
    """(export directory, checkpoint values, config) of a random 3-class classifier
    exported in `formats` (an --export_format value) at `precision`."""
    config = modeling.BertConfig.from_dict(tiny_bert_config(30522))
    values = _random_values(config, len(LABELS), seed=seed)
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


def _ids(export_dir):
    """The TEXTS' ids cut to the longest, as the Predictor feeds them, and full length."""
    model = predictor.Predictor(export_dir)
    return model.encode.arrays(TEXTS), model.encode(TEXTS)


def _signature_probabilities(export_dir, arrays):
    signature = tf.saved_model.load(export_dir).signatures["serving_default"]
    feed = {name: tf.constant(a) for name, a in zip(predictor.INPUT_NAMES, arrays)}
    return signature(**feed)["probabilities"].numpy()


@pytest.mark.slow
def test_export_directory_holds_the_savedmodel_and_both_onnx_files(export):
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
@pytest.mark.parametrize("runtime", onnx_runtimes.RUNTIMES)
def test_float32_onnx_answers_the_savedmodels_probabilities(export, runtime):
    export_dir, values, config = export
    cut, full = _ids(export_dir)
    expected = _signature_probabilities(export_dir, cut)
    served = predictor.Predictor(export_dir, runtime=runtime, batch_size=len(TEXTS))
    got = served.predict_arrays(TEXTS)
    np.testing.assert_allclose(got, expected, atol=2e-7, rtol=0)
    # Full length (padding positions in every row) and batch 1 too, against numpy.
    logits = npr.bert(values, config, *full.values())["pooled_output"]
    reference = npr.softmax(logits @ values["output_weights"].T + values["output_bias"])
    for i in range(len(TEXTS)):
        one = [full[name][i : i + 1] for name in predictor.INPUT_NAMES]
        np.testing.assert_allclose(served.predict_ids(*one), reference[i : i + 1], atol=1e-5)


def _int8_matmul(x, kernel):
    """x @ kernel as ONNX Runtime's dynamic quantization computes it: the kernel in
    symmetric int8 (each column's scale max|column| / 127), x in uint8 from its own range
    (scale (max(x, 0) - min(x, 0)) / 255, zero point round(-min / scale), ties to even), an
    integer product, scaled back."""
    x = x.astype(np.float32)
    low, high = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    x_scale = np.float32((high - low) / 255)
    zero_point = np.clip(np.round(-low / x_scale), 0, 255)
    x_q = np.clip(np.round(x / x_scale) + zero_point, 0, 255)
    w_scale = (np.abs(kernel.astype(np.float32)).max(axis=0) / 127).astype(np.float32)
    w_q = np.clip(np.round(kernel.astype(np.float32) / w_scale), -127, 127)
    product = (x_q.astype(np.int64) - int(zero_point)) @ w_q.astype(np.int64)
    return product * (np.float64(x_scale) * w_scale.astype(np.float64))


@pytest.mark.slow
def test_int8_onnx_answers_integer_arithmetic_on_the_dense_layers(export):
    export_dir, values, config = export
    cut, _ = _ids(export_dir)
    outputs = npr.bert(values, config, *cut, matmul=_int8_matmul, last_layer_at_cls=True)
    logits = _int8_matmul(outputs["pooled_output"], values["output_weights"].T)
    expected = npr.softmax(logits + values["output_bias"])
    float32 = _signature_probabilities(export_dir, cut)
    for runtime in onnx_runtimes.RUNTIMES:
        served = predictor.Predictor(export_dir, runtime=runtime, precision="int8")
        got = served.predict_arrays(TEXTS)
        np.testing.assert_allclose(got, expected, atol=2e-5, rtol=0)
        # Not float32's numbers: the quantization is really there.
        assert np.abs(got - float32).max() > 1e-3


@pytest.mark.slow
def test_int8_file_quantizes_every_dense_kernel_and_nothing_else(export):
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
def test_bf16_export_writes_the_float32_onnx_of_its_checkpoint(tmp_path):
    target, values, config = _export_random_classifier(tmp_path, 6, "onnx", precision="bf16")
    assert sorted(tf.io.gfile.listdir(target)) == [
        "assets.extra",
        "model.onnx",
        "saved_model.pb",
        "variables",
    ]
    _, full = _ids(target)
    logits = npr.bert(values, config, *full.values())["pooled_output"]
    reference = npr.softmax(logits @ values["output_weights"].T + values["output_bias"])
    onnx_float32 = predictor.Predictor(target, runtime="onnxruntime").predict_arrays(TEXTS)
    np.testing.assert_allclose(onnx_float32, reference, atol=1e-5)
    # The SavedModel beside it still computes in bf16.
    saved_model_bf16 = predictor.Predictor(target).predict_arrays(TEXTS)
    assert 1e-4 < np.abs(saved_model_bf16 - reference).max() < 3e-2


@pytest.mark.slow
def test_openvino_bf16_stays_within_bfloat16_of_float32(export):
    export_dir, _, _ = export
    cut, _ = _ids(export_dir)
    float32 = _signature_probabilities(export_dir, cut)
    served = predictor.Predictor(export_dir, runtime="openvino", precision="bf16")
    got = served.predict_arrays(TEXTS)
    assert np.abs(got - float32).max() < 3e-2


@pytest.mark.slow
def test_an_onnx_file_is_served_by_path_with_its_directorys_settings(export):
    export_dir, _, _ = export
    by_dir = predictor.Predictor(export_dir, runtime="onnxruntime")
    by_file = predictor.Predictor(f"{export_dir}/{onnx_export.ONNX_FILE}")
    assert by_file.runtime == "onnxruntime" and by_file.labels == LABELS
    assert by_file(TEXTS) == by_dir(TEXTS)


@pytest.mark.slow
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
def test_the_serving_pages_python_examples_run_on_an_export(export, capsys):
    export_dir, _, _ = export
    with open(os.path.join(REPO, "docs", "serving.md"), encoding="utf-8") as f:
        page = f.read()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.S)
    assert len(blocks) == 3
    for block in blocks:
        exec(block.replace("/tmp/mrpc_export", export_dir), {})
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(" {")[0] for line in printed[:5]] == [
        "tensorflow None",
        "onnxruntime fp32",
        "onnxruntime int8",
        "openvino fp32",
        "openvino bf16",
    ]


def test_an_onnx_export_is_checked_before_any_work():
    formats = onnx_export.parse_formats("onnx")
    onnx_export.check_export(onnx_export.parse_formats(None), None)
    onnx_export.check_export(formats, "/tmp/an_export")
    with pytest.raises(predictor.UsageError, match="^--export_format=onnx needs --export_dir$"):
        onnx_export.check_export(formats, None)
    with pytest.raises(predictor.UsageError, match="writes local files: --export_dir=gs://b/x"):
        onnx_export.check_export(formats, "gs://b/x")
