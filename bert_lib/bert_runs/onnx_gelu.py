"""The exact (erf) GELU in an ONNX graph from tf2onnx, rewritten as ONNX Runtime's BiasGelu.

ONNX Runtime's transformers optimizer turns the tanh GELU of "gelu" and the
bias before it into one FastGelu, but leaves the erf form of "gelu_erf"
(modeling.gelu_erf: 0.5 * x * (1 + erf(x / sqrt(2))), Hugging Face's
"gelu") as tf2onnx writes it, five elementwise ops per layer:

    Mul(x, 1/sqrt(2)) or Div(x, sqrt(2)), Erf, Add(_, 1),
    Mul(0.5, x) and Mul(_, _)  (or Mul(x, _) then Mul(_, 0.5))

This rewrite finds each of them by what it computes, from its Erf, and puts
in its place one BiasGelu (com.microsoft domain: the erf GELU of its two
inputs' sum), taking the dense layer's bias as its second input when x is
MatMul + bias, so that the Add of the bias goes too; a dense layer without
a bias (tf2onnx leaves out a bias of zeros) gets zeros. Both ONNX Runtime
and OpenVINO's ONNX reader run BiasGelu. A GELU whose pieces do not all
match is left as it was.
"""

import numpy as np

from .onnx_attention import MICROSOFT, _scalar, rewrite_each

_TOLERANCE = 1e-6


def fuse_gelu(model):
    """Rewrites each erf GELU of the ONNX `model` (in place) as a BiasGelu node; returns
    how many were rewritten."""
    return rewrite_each(model, "Erf", _match, lambda graph, found: _rewrite(graph, *found))


def _is(value, target):
    value = _scalar(value)
    return value is not None and abs(value - target) <= _TOLERANCE * abs(target)


def _other(graph, node, tensor):
    """(the input of the two-input `node` that is not `tensor`, its constant value)."""
    if len(node.input) != 2 or tensor not in node.input:
        return None, None
    other = node.input[1] if node.input[0] == tensor else node.input[0]
    return other, graph.constant(other)


def _scaled_input(graph, erf):
    """x if the Erf reads x / sqrt(2) (a Mul by 1/sqrt(2) or a Div by sqrt(2))."""
    node = graph.producer.get(erf.input[0])
    if node is None or node.domain or len(node.input) != 2:
        return None
    if node.op_type == "Div" and _is(graph.constant(node.input[1]), np.sqrt(2.0)):
        return node.input[0]
    if node.op_type == "Mul":
        for i in (0, 1):
            if _is(graph.constant(node.input[1 - i]), 1.0 / np.sqrt(2.0)):
                return node.input[i]
    return None


def _match(graph, erf):
    """(x, output tensor) of the GELU whose Erf is `erf`, or None."""
    x = _scaled_input(graph, erf)
    plus_one = graph.only_consumer(erf, "Add")
    if x is None or plus_one is None or not _is(_other(graph, plus_one, erf.output[0])[1], 1.0):
        return None
    product = graph.only_consumer(plus_one, "Mul")
    if product is None:
        return None
    other, _ = _other(graph, product, plus_one.output[0])
    half = graph.producer.get(other) if other else None
    # 0.5 * x first, then times (1 + erf).
    if half is not None and half.op_type == "Mul" and _is(_other(graph, half, x)[1], 0.5):
        return x, product.output[0]
    # x times (1 + erf), then times 0.5.
    if other == x:
        last = graph.only_consumer(product, "Mul")
        if last is not None and _is(_other(graph, last, product.output[0])[1], 0.5):
            return x, last.output[0]
    return None


def _rewrite(graph, x, output):
    """Puts BiasGelu(x's MatMul, its bias) in the place of the node making `output`."""
    bias_add = graph.producer.get(x)
    inputs = None
    if bias_add is not None and bias_add.op_type == "Add":
        for i in (0, 1):
            bias = graph.constant(bias_add.input[1 - i])
            if inputs is None and bias is not None and bias.ndim == 1:
                inputs = [bias_add.input[i], bias_add.input[1 - i]]
    if inputs is None:
        matmul = graph.producer.get(x)
        weight = graph.constant(matmul.input[1]) if matmul is not None else None
        if matmul is None or matmul.op_type != "MatMul" or weight is None or weight.ndim != 2:
            return _rewrite_with(graph, [x, None], output)
        inputs = [x, graph.add_constant("gelu_bias", np.zeros(weight.shape[1], weight.dtype))]
    _rewrite_with(graph, inputs, output)


def _rewrite_with(graph, inputs, output):
    helper = graph.onnx.helper
    if inputs[1] is None:
        node = helper.make_node("Gelu", inputs[:1], [output], graph.name("Gelu"), domain=MICROSOFT)
    else:
        node = helper.make_node(
            "BiasGelu", inputs, [output], graph.name("BiasGelu"), domain=MICROSOFT
        )
    kept = []
    for old in graph.graph.node:
        kept.extend([node] if output in old.output else [old])
    graph.set_nodes(kept)
