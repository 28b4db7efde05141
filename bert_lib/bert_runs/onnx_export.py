"""ONNX files beside a SavedModel export: float32 through tf2onnx, int8 by ONNX Runtime.

An export directory (run_classifier.py --export_dir) holds the SavedModel
that TensorFlow Serving loads. With --export_format=onnx it also holds
`model.onnx`, the same serving graph converted by tf2onnx (opset 17): the
inputs `input_ids`, `input_mask` and `segment_ids` (int32 [batch, length],
any length up to max_position_embeddings) and the signature's output
(`probabilities` or `score`), for ONNX Runtime and OpenVINO. The file is
written with ONNX Runtime's BERT fusions applied (its transformers
optimizer, rules for TensorFlow graphs): each residual sum and its
LayerNorm become one SkipLayerNormalization, each dense layer's bias and
GELU one FastGelu (an erf GELU, "gelu_erf", one BiasGelu:
onnx_gelu.py; operators of the com.microsoft domain, which OpenVINO
reads too), the same numbers to float32 round-off. The optimizer finds no
attention in a tf2onnx graph (it looks for a Cast between the attention
mask and its 1 - mask, and TensorFlow writes none, as a cast of float32 to
float32): onnx_attention.py then rewrites each layer's attention as one
MultiHeadAttention of the same domain. The embeddings' LayerNorm, whose
means tf2onnx writes as GlobalAveragePool, is not recognised. The ONNX file
is always float32: tf2onnx cannot write the bf16 SavedModel's mixed
bfloat16 / float32 graph, and a runtime that computes in bf16 (OpenVINO on
a CPU with bfloat16 arithmetic) takes a float32 model and a precision
setting instead. So an export at --precision=bf16 converts a float32
SavedModel of the same checkpoint, written for the conversion and removed.

With onnx_int8, `model_int8.onnx` is that fused file with the dense layers'
weights quantized to int8, dynamic-range (ONNX Runtime's quant_pre_process,
then quantize_dynamic: each MatMul whose second input is a weight becomes an
integer matmul whose activations are quantized per call, with a scale
taken from the activation's range; attention's matmuls, the embeddings,
LayerNorm and softmax stay float32). The weights get one scale per output
column: on fine-tuned heads of the accuracy benchmark that kept dev
accuracy within 0.01 of float32, where one scale per matrix lost 0.011
on one of them (BENCHMARKS.md, "Serving: ONNX Runtime, OpenVINO, int8,
one request at a time"). The weights keep all 8 bits (reduce_range
off): ONNX Runtime advises 7 for x86 CPUs without VNNI, whose u8s8
kernels sum two products in 16 bits and can saturate there
(docs/serving.md, "int8").

The converter and the runtimes are an optional extra (`pip install
.[onnx]`): nothing here imports them before an ONNX format is asked for,
and asking without them is a one-line error before any work.
"""

import importlib.util
import os
import shutil

from ..plumbing import atomic_write, fileio
from ..plumbing.errors import UsageError
from . import onnx_attention, onnx_gelu

SAVED_MODEL = "saved_model"
ONNX = "onnx"
ONNX_INT8 = "onnx_int8"
FORMATS = (SAVED_MODEL, ONNX, ONNX_INT8)
ONNX_FILE = "model.onnx"
ONNX_INT8_FILE = "model_int8.onnx"
OPSET = 17
INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
# The packages each format needs, by import name and the name pip installs.
_NEEDS = {ONNX: (("tf2onnx", "tf2onnx"), ("onnxruntime", "onnxruntime"))}
# The domain of ONNX Runtime's fused operators (SkipLayerNormalization, FastGelu).
MICROSOFT = "com.microsoft"
# The scope of the embeddings, whose one matmul (token types) is a lookup.
EMBEDDINGS = "bert/embeddings/"
# Where a float32 SavedModel is written for the conversion of a 16-bit export.
_FP32_SOURCE = ".fp32_for_onnx"


def parse_formats(text, flag="--export_format"):
    """The formats of a comma-separated `text` ("saved_model", "onnx", "onnx_int8"), as a
    tuple in FORMATS' order. The SavedModel is always written (the ONNX files are converted
    from it), and onnx_int8 implies onnx. A name not in FORMATS is a UsageError."""
    names = [name.strip() for name in (text or SAVED_MODEL).split(",") if name.strip()]
    for name in names:
        if name not in FORMATS:
            raise UsageError(f"{flag}={text}: {name!r} is not one of {', '.join(FORMATS)}")
    wanted = {SAVED_MODEL, *names}
    if ONNX_INT8 in wanted:
        wanted.add(ONNX)
    return tuple(name for name in FORMATS if name in wanted)


def check_export(formats, export_dir, flag="--export_format"):
    """The checks of an export in `formats` to `export_dir`, before any work: ONNX
    formats need an --export_dir, a local one (tf2onnx and the quantizer write local
    files), and their converters installed."""
    if tuple(formats) == (SAVED_MODEL,):
        return
    given = ",".join(formats[1:])
    if not export_dir:
        raise UsageError(f"{flag}={given} needs --export_dir")
    if fileio.is_remote(export_dir):
        raise UsageError(
            f"{flag}={given} writes local files: --export_dir={export_dir} is not a local "
            "directory (export locally, then copy the directory)"
        )
    check_converters(formats, flag)


def check_converters(formats, flag="--export_format"):
    """Raises a UsageError naming every package the `formats` need that is not installed."""
    missing = []
    for name in formats:
        for module, package in _NEEDS.get(name, ()):
            if importlib.util.find_spec(module) is None and package not in missing:
                missing.append(package)
    if missing:
        given = ",".join(name for name in formats if name != SAVED_MODEL)
        raise UsageError(
            f"{flag}={given} needs the Python package{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)}, not installed: pip install 'bert-tensorflow[onnx]' "
            f"(or pip install {' '.join(missing)})"
        )


def export(export_dir, write_saved_model, precision, formats, flag="--export_dir"):
    """Writes the export directory `export_dir` in `formats`, all files or none.

    `write_saved_model(path, precision)` writes the SavedModel of the model
    at `path` (which must not exist) computing in `precision`. Only the
    SavedModel: it is written as before. With ONNX formats the directory
    is staged, and becomes `export_dir` when every file is written.
    """
    if tuple(formats) == (SAVED_MODEL,):
        write_saved_model(export_dir, precision)
        return
    check_converters(formats)
    with atomic_write.staged_directory(export_dir, flag=flag) as stage:
        # The SavedModel writer stages its own directory and wants none there yet.
        os.rmdir(stage)
        write_saved_model(stage, precision)
        source = stage
        if precision != "fp32":
            source = os.path.join(stage, _FP32_SOURCE)
            write_saved_model(source, "fp32")
        onnx_path = os.path.join(stage, ONNX_FILE)
        convert_saved_model(source, onnx_path, where=f"{flag}={export_dir}")
        if source != stage:
            shutil.rmtree(source)
        if ONNX_INT8 in formats:
            quantize_int8(onnx_path, os.path.join(stage, ONNX_INT8_FILE))


def convert_saved_model(saved_model_dir, onnx_path, opset=OPSET, where=None):
    """Converts the serving_default signature of a float32 SavedModel to an ONNX file.

    The ONNX graph's inputs and outputs keep the signature's names, with
    the dimensions named "batch" and "length". A TensorFlow op tf2onnx
    could not convert is a UsageError naming it, and so is a graph ONNX's
    checker refuses; no file is written then. (tf2onnx itself logs such an
    op and leaves it in the graph under its TensorFlow name, for a runtime
    to refuse when loading.) `where` names the export in the messages
    (default: `saved_model_dir`).
    """
    import tf2onnx
    from tf2onnx import tf_loader

    graph_def, inputs, outputs, tensors_to_rename = tf_loader.from_saved_model(
        saved_model_dir,
        None,
        None,
        tag=["serve"],
        signatures=["serving_default"],
        return_tensors_to_rename=True,
    )
    model, _ = tf2onnx.convert.from_graph_def(
        graph_def,
        name=os.path.basename(os.path.abspath(saved_model_dir)),
        input_names=inputs,
        output_names=outputs,
        opset=opset,
        tensors_to_rename=tensors_to_rename,
    )
    check_converted(model, opset, f"{where or saved_model_dir}: tf2onnx {tf2onnx.__version__}")
    _name_dimensions(model)
    model = fuse_for_onnxruntime(model)
    with atomic_write.atomic_files([onnx_path], mode="wb") as (f,):
        f.write(model.SerializeToString())


def fuse_for_onnxruntime(model):
    """The ONNX `model` of a BERT with ONNX Runtime's BERT fusions applied: its
    transformers optimizer with the rules for TensorFlow graphs (model type bert_tf),
    its Python fusions only (opt_level 0: no graph optimized for this machine's CPU),
    and no symbolic shape inference (which needs sympy). Without shape inference the
    optimizer fuses a residual sum and its LayerNorm on [tokens, hidden] matrices too,
    which SkipLayerNormalization takes (it checks for [batch, length, hidden] only
    when it can infer shapes). Then each attention, which the optimizer does not find
    in a tf2onnx graph, becomes one MultiHeadAttention (onnx_attention.py), and each
    erf GELU, which it leaves, one BiasGelu with its dense layer's bias (onnx_gelu.py)."""
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions("bert_tf")
    options.enable_shape_inference = False
    fused = optimizer.optimize_model(
        model, model_type="bert_tf", optimization_options=options, opt_level=0
    ).model
    onnx_attention.fuse_attention(fused)
    onnx_gelu.fuse_gelu(fused)
    # The optimizer adds the fused operators' domain to the file only when it saves one.
    domains = {opset.domain for opset in fused.opset_import}
    if MICROSOFT not in domains and any(n.domain == MICROSOFT for n in fused.graph.node):
        fused.opset_import.add(domain=MICROSOFT, version=1)
    return fused


def check_converted(model, opset, where):
    """Raises a UsageError unless every node of the ONNX `model` (subgraphs included) is
    an ONNX operator of the default domain that exists at `opset`, and ONNX's checker
    (with its strict shape inference) passes the model. `where` starts the message."""
    import onnx

    unconverted = sorted(
        {
            node.op_type
            for node in _nodes(model.graph)
            if node.domain not in ("", "ai.onnx") or not onnx.defs.has(node.op_type, opset)
        }
    )
    if unconverted:
        raise UsageError(
            f"{where} could not convert the TensorFlow op(s) {', '.join(unconverted)} to "
            f"ONNX opset {opset}; no ONNX file written"
        )
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as e:
        first = next((line for line in str(e).splitlines() if line.strip()), type(e).__name__)
        raise UsageError(
            f"{where} wrote a graph ONNX's checker refuses: {first.strip().rstrip('.')}; "
            "no ONNX file written"
        ) from e


def _nodes(graph):
    """The nodes of an ONNX graph and of the subgraphs in their attributes (If, Loop)."""
    import onnx

    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.GRAPH:
                yield from _nodes(attribute.g)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for subgraph in attribute.graphs:
                    yield from _nodes(subgraph)


def _name_dimensions(model):
    """Names the inputs' dimensions batch and length, and the outputs' first one batch."""
    for value in model.graph.input:
        dims = value.type.tensor_type.shape.dim
        for dim, name in zip(dims, ("batch", "length")):
            dim.dim_param = name
    for value in model.graph.output:
        dims = value.type.tensor_type.shape.dim
        if dims and not dims[0].dim_value:
            dims[0].dim_param = "batch"


def quantize_int8(onnx_path, int8_path, reduce_range=False, per_column=True):
    """Writes `onnx_path` with the dense layers' matmuls quantized to int8, dynamic-range.

    Weights are signed int8, symmetric, one scale per output column (its
    largest magnitude / 127; with `reduce_range`, 7 bits: / 64, what ONNX
    Runtime advises for x86 CPUs without VNNI; with per_column False one
    scale per matrix, quantize_dynamic's default, which
    benchmarks/serve_interleaved.py times beside it); activations are quantized to uint8 on every
    call, one scale and zero point per tensor from its range (ONNX Runtime's
    DynamicQuantizeLinear and MatMulInteger). Only MatMuls whose second
    input is a weight are changed, and of those not the token-type
    embedding's (a one-hot matmul that is a lookup, not a dense layer).

    The file is first pre-processed as ONNX Runtime advises
    (quant_pre_process), with ONNX's shape inference only: its symbolic
    shape inference needs sympy, and its graph optimization turns a MatMul
    and the Add of its bias into a Gemm, which dynamic quantization leaves
    in float32. The fused operators' outputs, whose types ONNX's inference
    does not know, are float32 like every activation of the graph.
    """
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    model = onnx.load(onnx_path)
    lookups = [
        node.name
        for node in model.graph.node
        if node.op_type == "MatMul" and any(i.startswith(EMBEDDINGS) for i in node.input)
    ]
    with atomic_write.atomic_paths([int8_path]) as (temp,):
        # The pre-processed file, in the staging directory that is removed with it.
        pre = os.path.join(os.path.dirname(temp), "pre_processed.onnx")
        quant_pre_process(onnx_path, pre, skip_optimization=True, skip_symbolic_shape=True)
        quantize_dynamic(
            pre,
            temp,
            weight_type=QuantType.QInt8,
            per_channel=per_column,
            op_types_to_quantize=["MatMul"],
            # All 8 bits of each weight by default: exact where the CPU has VNNI
            # (docs/serving.md, "int8"; benchmarks/int8_saturation.py measures the rest).
            reduce_range=reduce_range,
            nodes_to_exclude=lookups,
            extra_options={"MatMulConstBOnly": True, "DefaultTensorType": onnx.TensorProto.FLOAT},
        )
