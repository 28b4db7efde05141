"""An export's ONNX file run by ONNX Runtime or OpenVINO, for predictor.Predictor.

Each runtime here is a callable: (input_ids, input_mask, segment_ids),
int32 [batch, length] numpy arrays, in; {output name: numpy array} out,
as the SavedModel's signature answers. `output_shapes` gives each output's
static shape (None where it varies). The runtimes are the optional extra
`pip install .[onnx]`; each is imported when one is asked for.

- ONNX Runtime (`onnxruntime`): the CPU execution provider with its graph
  optimizations at their default (all), float32 or the int8 file;
  `num_threads` sets its intra-op threads (default: one per core).
  ONNX Runtime has no bfloat16 matmul on the CPU, so bf16 is refused.
- OpenVINO (`openvino`): the file compiled for its CPU plugin with the
  inference precision given: f32 computes in float32; bf16 lets the
  plugin compute its matmuls and most other ops in bfloat16, as
  --precision=bf16 does in TensorFlow. The precision the compiled model
  took is read back: where the plugin does not take bf16 (a CPU it has no
  bfloat16 arithmetic for) bf16 is refused rather than served in float32
  under its name. int8 is OpenVINO's own weight compression, done here on
  the float32 file as it is read (compress_dense_weights), not ONNX
  Runtime's integer-matmul file, which OpenVINO runs slower than its
  float32. `num_threads` sets its inference threads. Compiled for the
  latency hint: one stream, the case of one request at a time.
"""

import collections
import threading

import numpy as np

from ..bert_runs.onnx_export import EMBEDDINGS
from ..plumbing.errors import UsageError

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
ONNXRUNTIME = "onnxruntime"
OPENVINO = "openvino"
RUNTIMES = (ONNXRUNTIME, OPENVINO)
# The precisions each runtime computes an export's ONNX files in.
PRECISIONS = {ONNXRUNTIME: ("fp32", "int8"), OPENVINO: ("fp32", "bf16", "int8")}


def _import(runtime):
    try:
        if runtime == ONNXRUNTIME:
            import onnxruntime as module
        else:
            import openvino as module
    except ImportError as e:
        raise UsageError(
            f"runtime {runtime!r} needs the Python package {runtime}, not installed: "
            "pip install 'bert-tensorflow[onnx]'"
        ) from e
    return module


def _check_inputs(names, path):
    if sorted(names) != sorted(INPUT_NAMES):
        raise UsageError(
            f"{path}: its model takes {', '.join(sorted(names))}, not {', '.join(INPUT_NAMES)}"
        )


def load(path, runtime, precision="fp32", num_threads=None):
    """The callable model of the ONNX file `path` under `runtime` (RUNTIMES), computing in
    `precision` (PRECISIONS[runtime]). Under ONNX Runtime int8 is a property of the file
    (model_int8.onnx), so fp32 and int8 run a file alike; OpenVINO compresses a float32
    file's dense weights to int8 itself (model.onnx)."""
    if runtime not in RUNTIMES:
        raise UsageError(f"runtime {runtime!r} is not one of tensorflow, {', '.join(RUNTIMES)}")
    if precision not in PRECISIONS[runtime]:
        raise UsageError(
            f"runtime {runtime!r} computes in {' or '.join(PRECISIONS[runtime])}, not "
            f"{precision!r}" + (" (OpenVINO computes in bf16)" if precision == "bf16" else "")
        )
    if runtime == ONNXRUNTIME:
        return OnnxRuntimeModel(path, num_threads)
    return OpenVinoModel(path, precision, num_threads)


class OnnxRuntimeModel:
    """An ONNX file in an onnxruntime.InferenceSession on the CPU."""

    def __init__(self, path, num_threads=None):
        ort = _import(ONNXRUNTIME)
        options = ort.SessionOptions()
        if num_threads:
            options.intra_op_num_threads = int(num_threads)
        self._session = ort.InferenceSession(
            path, sess_options=options, providers=["CPUExecutionProvider"]
        )
        _check_inputs([i.name for i in self._session.get_inputs()], path)
        outputs = self._session.get_outputs()
        self.output_names = [o.name for o in outputs]
        self.output_shapes = {
            o.name: [d if isinstance(d, int) else None for d in o.shape] for o in outputs
        }

    def __call__(self, inputs):
        feed = dict(zip(INPUT_NAMES, inputs))
        return dict(zip(self.output_names, self._session.run(self.output_names, feed)))


class OpenVinoModel:
    """An ONNX file compiled by OpenVINO for its CPU plugin, in f32, bf16, or f32 with its
    dense layers' weights in int8."""

    def __init__(self, path, precision="fp32", num_threads=None):
        ov = _import(OPENVINO)
        core = ov.Core()
        model = core.read_model(path)
        _check_inputs([port.get_any_name() for port in model.inputs], path)
        if precision == "int8" and not compress_dense_weights(model):
            raise UsageError(
                f"{path}: no float32 dense-layer weights for OpenVINO to compress to int8 "
                "(it compresses those of the float32 model.onnx; give that file, or the "
                "export directory)"
            )
        config = {
            "INFERENCE_PRECISION_HINT": "bf16" if precision == "bf16" else "f32",
            "PERFORMANCE_HINT": "LATENCY",
        }
        if num_threads:
            config["INFERENCE_NUM_THREADS"] = int(num_threads)
        self._compiled = core.compile_model(model, "CPU", config)
        took = self._compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name()
        if precision == "bf16" and took != "bf16":
            capabilities = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
            raise UsageError(
                f"{path}: OpenVINO's CPU plugin computes in {took}, not bf16, on this CPU "
                f"(its capabilities: {', '.join(capabilities)}); serve it at fp32"
            )
        self._order = [
            [port.get_any_name() for port in self._compiled.inputs].index(name)
            for name in INPUT_NAMES
        ]
        self.output_names = [port.get_any_name() for port in self._compiled.outputs]
        self.output_shapes = {
            port.get_any_name(): [
                d.get_length() if d.is_static else None for d in port.get_partial_shape()
            ]
            for port in self._compiled.outputs
        }
        self._ports = list(self._compiled.outputs)
        # An InferRequest is not to be shared between threads: one per thread.
        self._requests = threading.local()

    def layer_precisions(self):
        """{layer type: {precision: count}} of the compiled model's layers as the plugin
        runs them (its execution graph: "FullyConnected" for the matmuls of a weight,
        "MatMul" for attention's)."""
        found = collections.defaultdict(collections.Counter)
        for op in self._compiled.get_runtime_model().get_ordered_ops():
            info = op.get_rt_info()
            kind, precision = info["layerType"].astype(str), info["runtimePrecision"].astype(str)
            found[kind][precision] += 1
        return {kind: dict(counts) for kind, counts in found.items()}

    def weight_precisions(self):
        """{precision: count} of the weights the compiled model's FullyConnected layers
        hold (each one's second input, a constant of the plugin's graph): "i8" where the
        plugin keeps a weight compressed and decompresses it in its matmul kernel."""
        found = collections.Counter()
        for op in self._compiled.get_runtime_model().get_ordered_ops():
            if op.get_rt_info()["layerType"].astype(str) == "FullyConnected":
                found[op.input_value(1).get_element_type().get_type_name()] += 1
        return dict(found)

    def __call__(self, inputs):
        request = getattr(self._requests, "request", None)
        if request is None:
            request = self._requests.request = self._compiled.create_infer_request()
        feed = {position: inputs[i] for i, position in enumerate(self._order)}
        results = request.infer(feed)
        return {name: results[port] for name, port in zip(self.output_names, self._ports)}


def symmetric_int8(kernel, axis=None):
    """(int8 values, scale) of `kernel` rounded to symmetric int8: one scale per slice
    along `axis` (axis 0 of an [in, out] weight: one per output column; None: one for
    the whole matrix), its largest magnitude / 127 in the kernel's dtype, kept as a
    dimension of size 1; values rounded to [-127, 127]. An all-zero slice takes scale 1
    and stays zero. values * scale is the weight an int8 matmul computes with."""
    scale = np.abs(kernel).max(axis=axis, keepdims=True) / kernel.dtype.type(127)
    scale[scale == 0] = 1
    values = np.clip(np.round(kernel / scale), -127, 127).astype(np.int8)
    return values, scale


def compress_dense_weights(model):
    """Compresses the weights of the dense layers of the OpenVINO `model` (read from an
    export's float32 ONNX file) to int8, in place, in the pattern of OpenVINO's own
    weight compression (NNCF's compress_weights, mode INT8_SYM); returns how many.

    Each MatMul whose second input is a float32 matrix constant, but the token-type
    embedding's (a one-hot matmul that is a lookup, not a dense layer), takes instead
    an int8 constant of the same layout -> Convert to f32 -> Multiply by one f32 scale
    per output column: symmetric, the column's largest magnitude / 127, values in
    [-127, 127], the int8 weights of model_int8.onnx. (NNCF stores its scales in
    float16, signed, and uses -128 too.) OpenVINO's CPU plugin recognises the pattern:
    it keeps the weight in int8 and decompresses it inside its matmul kernel (a
    FullyConnected layer whose weight input is i8), and at its default also quantizes
    the matmul's input to 8 bits on each call, in groups of its
    DYNAMIC_QUANTIZATION_GROUP_SIZE values. Attention's matmuls, the embeddings,
    LayerNorm and softmax stay float32.
    """
    import openvino as ov
    from openvino import opset13 as ops

    compressed = 0
    for matmul in model.get_ordered_ops():
        if matmul.get_type_name() != "MatMul" or matmul.get_friendly_name().startswith(EMBEDDINGS):
            continue
        weight = matmul.input_value(1).get_node()
        if (
            weight.get_type_name() != "Constant"
            or weight.get_element_type() != ov.Type.f32
            or len(weight.get_output_shape(0)) != 2
        ):
            continue
        kernel = weight.get_data().astype(np.float32)
        # The weight is [in, out], or [out, in] where the MatMul transposes it.
        inputs_axis = 1 if matmul.get_attributes()["transpose_b"] else 0
        values, scale = symmetric_int8(kernel, axis=inputs_axis)
        dequantized = ops.multiply(
            ops.convert(ops.constant(values), ov.Type.f32), ops.constant(scale)
        )
        matmul.input(1).replace_source_output(dequantized.output(0))
        compressed += 1
    if compressed:
        model.validate_nodes_and_infer_types()
    return compressed
