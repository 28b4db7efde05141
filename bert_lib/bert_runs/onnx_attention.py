"""BERT's attention in an ONNX graph from tf2onnx, rewritten as ONNX Runtime's MultiHeadAttention.

ONNX Runtime's transformers optimizer fuses attention only in the graph
shapes of the exporters it knows; in a tf2onnx graph of this BERT it finds
none (see onnx_export.py). This rewrite finds each attention of the graph
by what it computes, from its softmax:

    q = x_q @ Wq + bq,  k = x @ Wk + bk,  v = x @ Wv + bv   (MatMul, Add)
    each split into heads (Reshape, Transpose)
    softmax(q k^T * scale + (1 - mask) * adder) v
        (MatMul, Mul; Sub, Mul; Add, Softmax, MatMul)
    the heads joined again (Transpose, Reshape)

and puts in its place one MultiHeadAttention (com.microsoft domain) that
takes the three projections, their biases, the `input_mask` input as its
key padding mask (a position whose mask is 0 gets `adder` on its scores,
as (1 - mask) * adder gives for a 0/1 mask) and the same scale. The three
MatMuls of the projections stay as they are, so int8 quantizes them as it
does every dense layer. The query may come from other rows than the keys
and values: the last layer of a classifier, which computes the first
position only, is fused too. An attention whose pieces do not all match
is left as it was.
"""

import collections

import numpy as np

MICROSOFT = "com.microsoft"
# The graph input whose 0/1 values say which positions are padding.
MASK_INPUT = "input_mask"
# The graph input whose shape gives the batch size.
BATCH_INPUT = "input_ids"
SPLIT_HEADS = [0, 2, 1, 3]  # [batch, length, heads, size] <-> [batch, heads, length, size]
KEYS_TRANSPOSED = [0, 2, 3, 1]  # [batch, length, heads, size] -> [batch, heads, size, length]


def fuse_attention(model):
    """Rewrites each attention of the ONNX `model` (in place) as a MultiHeadAttention node;
    returns how many were rewritten."""
    inputs = {i.name for i in model.graph.input}
    if MASK_INPUT not in inputs or BATCH_INPUT not in inputs:
        return 0
    return rewrite_each(model, "Softmax", _match, _rewrite)


def rewrite_each(model, op_type, match, rewrite):
    """Rewrites the ONNX `model` in place around each of its `op_type` nodes (default
    domain): match(graph, node) gives what to rewrite there or None, and
    rewrite(graph, found) puts the fused node in its place. Then the nodes nothing
    reads any more go, and the file declares the com.microsoft domain. Returns how
    many were rewritten."""
    graph = _Graph(model)
    names = [n.output[0] for n in model.graph.node if n.op_type == op_type and not n.domain]
    fused = 0
    for name in names:
        found = match(graph, graph.producer[name])
        if found is not None:
            rewrite(graph, found)
            fused += 1
    if fused:
        graph.prune()
        if MICROSOFT not in {o.domain for o in model.opset_import}:
            model.opset_import.add(domain=MICROSOFT, version=1)
    return fused


class _Graph:
    """An ONNX graph's nodes by the tensors they make and read, and its constants."""

    def __init__(self, model):
        import onnx
        from onnx import numpy_helper

        self.onnx, self.numpy_helper = onnx, numpy_helper
        self.model = model
        self.graph = model.graph
        self.inputs = {i.name for i in self.graph.input}
        self.initializers = {i.name: i for i in self.graph.initializer}
        self.index()
        self._names = collections.Counter()
        # {hidden size: the tensor [batch, -1, hidden size]}, made once.
        self.to_3d = {}

    def index(self):
        self.producer = {o: n for n in self.graph.node for o in n.output}
        self.consumers = collections.defaultdict(list)
        for node in self.graph.node:
            for name in node.input:
                self.consumers[name].append(node)

    def constant(self, name):
        """The value of the tensor `name` if it is a constant (initializer, Constant)."""
        if name in self.initializers:
            return self.numpy_helper.to_array(self.initializers[name])
        node = self.producer.get(name)
        if node is not None and node.op_type == "Constant" and not node.domain:
            for attribute in node.attribute:
                if attribute.name == "value":
                    return self.numpy_helper.to_array(attribute.t)
        return None

    def parent(self, node, index, op_type):
        """The node that makes `node`'s input `index` if it is an `op_type`, else None."""
        if node is None or index >= len(node.input):
            return None
        parent = self.producer.get(node.input[index])
        return parent if parent is not None and parent.op_type == op_type else None

    def only_consumer(self, node, op_type):
        """The one node that reads `node`'s output if it is an `op_type`, else None."""
        readers = self.consumers.get(node.output[0], [])
        if len(readers) == 1 and readers[0].op_type == op_type:
            return readers[0]
        return None

    def value_inputs(self, name):
        """The graph inputs whose values the tensor `name` is computed from (not those of
        which only the shape is read)."""
        found, seen, stack = set(), set(), [name]
        while stack:
            tensor = stack.pop()
            if tensor in seen or not tensor:
                continue
            seen.add(tensor)
            if tensor in self.inputs:
                found.add(tensor)
            node = self.producer.get(tensor)
            if node is not None and node.op_type != "Shape":
                stack.extend(node.input)
        return found

    def name(self, stem):
        self._names[stem] += 1
        return f"{stem}_{self._names[stem]}"

    def add_constant(self, stem, value):
        name = self.name(stem)
        tensor = self.numpy_helper.from_array(np.asarray(value), name)
        self.graph.initializer.append(tensor)
        self.initializers[name] = tensor
        return name

    def set_nodes(self, nodes):
        """Makes `nodes` (copied first: some may be the graph's own) the graph's nodes."""
        copies = []
        for node in nodes:
            copies.append(self.onnx.NodeProto())
            copies[-1].CopyFrom(node)
        del self.graph.node[:]
        self.graph.node.extend(copies)
        self.index()

    def prune(self):
        """Removes the nodes whose outputs nothing reads (the graph's outputs are read)."""
        needed = {o.name for o in self.graph.output}
        kept = []
        for node in reversed(self.graph.node):
            if any(o in needed for o in node.output):
                kept.append(node)
                needed.update(node.input)
        self.set_nodes(reversed(kept))
        used = {name for node in self.graph.node for name in node.input}
        kept = []
        for tensor in self.graph.initializer:
            if tensor.name in used:
                kept.append(self.onnx.TensorProto())
                kept[-1].CopyFrom(tensor)
        del self.graph.initializer[:]
        self.graph.initializer.extend(kept)
        self.initializers = {i.name: i for i in self.graph.initializer}


_Found = collections.namedtuple(
    "_Found", "q k v softmax mask_adder scale num_heads hidden_size output_reshape"
)
# One projection: its MatMul (input, weight), the Add of its bias, the bias.
_Projection = collections.namedtuple("_Projection", "matmul add bias")


def _perm(node):
    for attribute in node.attribute:
        if attribute.name == "perm":
            return list(attribute.ints)
    return None


def _scalar(value):
    if value is None or value.size != 1:
        return None
    return float(value.reshape(()))


def _projection(graph, reshape):
    """The projection (MatMul of a weight, Add of a bias) a head-splitting Reshape reads.
    A bias of zeros (a checkpoint fresh from its initializers) tf2onnx leaves out."""
    matmul = graph.parent(reshape, 0, "MatMul")
    weight = graph.constant(matmul.input[1]) if matmul is not None else None
    if weight is not None and weight.ndim == 2:
        return _Projection(matmul, None, np.zeros(weight.shape[1], np.float32))
    add = graph.parent(reshape, 0, "Add")
    if add is None:
        return None
    for i in (0, 1):
        matmul = graph.parent(add, i, "MatMul")
        bias = graph.constant(add.input[1 - i])
        if matmul is not None and bias is not None and bias.ndim == 1:
            weight = graph.constant(matmul.input[1])
            if weight is not None and weight.ndim == 2 and weight.shape[1] == bias.shape[0]:
                return _Projection(matmul, add, bias)
    return None


def _heads(graph, reshape):
    """The number of heads a Reshape to [batch, length, heads, size] splits into."""
    shape = graph.constant(reshape.input[1])
    if shape is not None:
        return int(shape[2]) if shape.shape == (4,) else None
    # The shape as tf2onnx writes it: a Concat of its four parts, maybe cast to int64.
    cast = graph.parent(reshape, 1, "Cast")
    concat = graph.parent(cast, 0, "Concat") if cast else graph.parent(reshape, 1, "Concat")
    if concat is None or len(concat.input) != 4:
        return None
    heads = graph.constant(concat.input[2])
    return int(heads.reshape(-1)[0]) if heads is not None and heads.size == 1 else None


def _split(graph, tensor, perm):
    """(projection, heads) of the tensor `tensor` if it is a projection split into heads and
    transposed by `perm` (one Transpose, or two that compose to it). A query of one
    position (a classifier's last layer) may come as one Reshape to [batch, heads, 1,
    size], which tf2onnx writes for the reshape and transpose of one row."""
    transpose = graph.producer.get(tensor)
    if transpose is not None and transpose.op_type == "Reshape" and perm == SPLIT_HEADS:
        shape = graph.constant(transpose.input[1])
        projection = _projection(graph, transpose)
        if shape is not None and shape.shape == (4,) and shape[2] == 1 and projection:
            return projection, int(shape[1])
        return None
    if transpose is None or transpose.op_type != "Transpose":
        return None
    total = _perm(transpose)
    inner = graph.parent(transpose, 0, "Transpose")
    if inner is not None:
        total = [_perm(inner)[p] for p in total]
        transpose = inner
    reshape = graph.parent(transpose, 0, "Reshape")
    if total != perm or reshape is None:
        return None
    projection, heads = _projection(graph, reshape), _heads(graph, reshape)
    return None if projection is None or not heads else (projection, heads)


def _mask_adder(graph, tensor):
    """`adder` if the tensor `tensor` is (1 - mask) * adder with the mask from input_mask."""
    mul = graph.producer.get(tensor)
    if mul is None or mul.op_type != "Mul":
        return None
    for i in (0, 1):
        sub = graph.parent(mul, i, "Sub")
        adder = _scalar(graph.constant(mul.input[1 - i]))
        if sub is None or adder is None or adder >= 0:
            continue
        if _scalar(graph.constant(sub.input[0])) != 1.0:
            continue
        if graph.value_inputs(sub.input[1]) == {MASK_INPUT}:
            return adder
    return None


def _match(graph, softmax):
    """The pieces of the attention whose softmax is `softmax`, or None."""
    axis = next((a.i for a in softmax.attribute if a.name == "axis"), -1)
    add = graph.parent(softmax, 0, "Add")
    if axis not in (-1, 3) or add is None:
        return None
    for i in (0, 1):
        scaled = graph.producer.get(add.input[i])
        mask_adder = _mask_adder(graph, add.input[1 - i])
        if scaled is None or mask_adder is None or scaled.op_type not in ("Mul", "Div"):
            continue
        for j in (0, 1):
            scores = graph.parent(scaled, j, "MatMul")
            factor = _scalar(graph.constant(scaled.input[1 - j]))
            if scores is None or factor is None or (scaled.op_type == "Div" and j != 0):
                continue
            scale = factor if scaled.op_type == "Mul" else 1.0 / factor
            found = _match_around(graph, softmax, scores, scale, mask_adder)
            if found is not None:
                return found
    return None


def _match_around(graph, softmax, scores, scale, mask_adder):
    q = _split(graph, scores.input[0], SPLIT_HEADS)
    k = _split(graph, scores.input[1], KEYS_TRANSPOSED)
    context = graph.only_consumer(softmax, "MatMul")
    if q is None or k is None or context is None or context.input[0] != softmax.output[0]:
        return None
    v = _split(graph, context.input[1], SPLIT_HEADS)
    joined = graph.only_consumer(context, "Transpose")
    output_reshape = graph.only_consumer(joined, "Reshape") if joined is not None else None
    if v is None or output_reshape is None or _perm(joined) != SPLIT_HEADS:
        return None
    (q, heads), (k, k_heads), (v, v_heads) = q, k, v
    hidden_size = q.bias.shape[0]
    same_sizes = k.bias.shape[0] == v.bias.shape[0] == hidden_size
    if heads != k_heads or heads != v_heads or not same_sizes or hidden_size % heads:
        return None
    if k.matmul.input[0] != v.matmul.input[0]:
        return None
    return _Found(q, k, v, softmax, mask_adder, scale, heads, hidden_size, output_reshape)


def _rewrite(graph, found):
    """Puts the MultiHeadAttention of `found` in the place of its nodes' output."""
    onnx = graph.onnx
    helper = onnx.helper
    hidden = found.hidden_size
    nodes = []

    def node(op_type, inputs, output=None, **attributes):
        output = output or graph.name(op_type.lower())
        nodes.append(
            helper.make_node(op_type, inputs, [output], graph.name(op_type), **attributes)
        )
        return output

    # [tokens, hidden] -> [batch, length, hidden], the batch size from the ids' shape.
    to_3d = graph.to_3d.get(hidden)
    if to_3d is None:
        batch = node(
            "Slice",
            [
                node("Shape", [BATCH_INPUT]),
                graph.add_constant("zero", np.array([0], np.int64)),
                graph.add_constant("one", np.array([1], np.int64)),
            ],
        )
        dims = graph.add_constant("dims", np.array([-1, hidden], np.int64))
        to_3d = graph.to_3d[hidden] = node("Concat", [batch, dims], axis=0)
    q, k, v = (node("Reshape", [p.matmul.output[0], to_3d]) for p in (found.q, found.k, found.v))
    bias = graph.add_constant(
        "qkv_bias", np.concatenate([found.q.bias, found.k.bias, found.v.bias]).astype(np.float32)
    )
    attributes = {"num_heads": found.num_heads, "mask_filter_value": found.mask_adder}
    if not np.isclose(found.scale, 1.0 / np.sqrt(hidden // found.num_heads), rtol=1e-6):
        attributes["scale"] = found.scale
    attention = graph.name("MultiHeadAttention")
    nodes.append(
        helper.make_node(
            "MultiHeadAttention",
            [q, k, v, bias, MASK_INPUT],
            [attention + "_output"],
            attention,
            domain=MICROSOFT,
            **attributes,
        )
    )
    to_2d = graph.add_constant("matrix", np.array([-1, hidden], np.int64))
    node("Reshape", [attention + "_output", to_2d], found.output_reshape.output[0])
    # In the old output's place: everything the new nodes read is made before it.
    name = found.output_reshape.output[0]
    kept = []
    for old in graph.graph.node:
        kept.extend(nodes if name in old.output else [old])
    graph.set_nodes(kept)
