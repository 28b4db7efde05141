"""tf.contrib.graph_editor of TF 1.x, as far as gradient-checkpointing code uses it.

The "memory saving gradients" code of 2018 (and the GPT-2 / BERT training
scripts that carried it) recomputes the forward pass between checkpoints
instead of keeping every activation: it walks the graph forward and
backward from seed ops (get_forward_walk_ops / get_backward_walk_ops),
lists their tensors (filter_ts, filter_ts_from_regex), copies the ops
between checkpoints (sgv / make_view, copy_with_input_replacements),
plugs the copies onto stop-gradient tensors (reroute_ts) and orders them
after the gradients they wait for (add_control_inputs). These edit a
TensorFlow 2 graph in place here, on its own Operation methods; the
backward walk is TensorFlow's own (op_selector, which TF 1.15's called too).

As in TF 1.15, a copy joins the collections of what it copies, through
transform.assign_renamed_collections_handler, which scripts may replace
(some switched it off for speed). Not provided: copying into another graph
or scope, or the ops of while loops (their inputs form a cycle).
"""

import re

import tensorflow as tf
from tensorflow.python.framework import ops as framework_ops
from tensorflow.python.ops import op_selector

from ..machinery.namespaces import Namespace, unsupported

make_list_of_op = op_selector.make_list_of_op
make_list_of_t = op_selector.make_list_of_t
get_consuming_ops = op_selector.get_consuming_ops
get_generating_ops = op_selector.get_generating_ops


def _is_iterable(value):
    return op_selector.is_iterable(value)


def _control_outputs(graph):
    """{op: the ops that have it as a control input} of `graph`."""
    outputs = {}
    for op in graph.get_operations():
        for control_input in op.control_inputs:
            outputs.setdefault(control_input, []).append(op)
    return outputs


def _seed_ops(seed_ops, consumers):
    """The seeds as ops: tensors stand for their consumers (forward) or producers."""
    if not _is_iterable(seed_ops):
        seed_ops = [seed_ops]
    seed_ops = list(seed_ops)
    if not seed_ops:
        return []
    if isinstance(seed_ops[0], tf.Tensor):
        tensors = make_list_of_t(seed_ops, allow_graph=False)
        return get_consuming_ops(tensors) if consumers else get_generating_ops(tensors)
    return make_list_of_op(seed_ops, allow_graph=False)


def get_forward_walk_ops(
    seed_ops,
    inclusive=True,
    within_ops=None,
    within_ops_fn=None,
    stop_at_ts=(),
    control_outputs=None,
):
    """The ops reachable forward from seed_ops (through their outputs' consumers, and
    through control outputs if control_outputs is given), wave by wave, seeds first; a
    tensor of stop_at_ts is not crossed; only ops of within_ops / within_ops_fn are taken."""
    seeds = _seed_ops(seed_ops, consumers=True)
    if not seeds:
        return []
    stop_at_ts = frozenset(make_list_of_t(stop_at_ts)) if stop_at_ts else frozenset()
    within = frozenset(make_list_of_op(within_ops, allow_graph=False)) if within_ops else None
    if within is not None:
        seeds = [op for op in seeds if op in within]
    if control_outputs is True:
        control_outputs = _control_outputs(seeds[0].graph) if seeds else {}

    def inside(op):
        return (within is None or op in within) and (within_ops_fn is None or within_ops_fn(op))

    result = list(dict.fromkeys(seeds))
    seen = set(result)
    wave = list(result)
    while wave:
        next_wave = []
        for op in wave:
            followers = [c for t in op.outputs if t not in stop_at_ts for c in t.consumers()]
            if control_outputs:
                followers += list(control_outputs.get(op) or ())
            for follower in followers:
                if follower not in seen and inside(follower):
                    seen.add(follower)
                    next_wave.append(follower)
        result.extend(next_wave)
        wave = next_wave
    if not inclusive:
        seed_set = set(seeds)
        result = [op for op in result if op not in seed_set]
    return result


def get_backward_walk_ops(
    seed_ops,
    inclusive=True,
    within_ops=None,
    within_ops_fn=None,
    stop_at_ts=(),
    control_inputs=False,
):
    """The ops reachable backward from seed_ops through their inputs (and control inputs
    if control_inputs); a tensor of stop_at_ts is not crossed (TensorFlow's op_selector)."""
    return op_selector.get_backward_walk_ops(
        seed_ops,
        inclusive=inclusive,
        within_ops=within_ops,
        within_ops_fn=within_ops_fn,
        stop_at_ts=stop_at_ts,
        control_inputs=control_inputs,
    )


def get_walks_intersection_ops(
    forward_seed_ops,
    backward_seed_ops,
    forward_inclusive=True,
    backward_inclusive=True,
    within_ops=None,
    within_ops_fn=None,
    control_inputs=False,
    control_outputs=None,
):
    """The ops both after forward_seed_ops and before backward_seed_ops."""
    forward = get_forward_walk_ops(
        forward_seed_ops,
        forward_inclusive,
        within_ops,
        within_ops_fn,
        control_outputs=control_outputs,
    )
    backward = set(
        get_backward_walk_ops(
            backward_seed_ops,
            backward_inclusive,
            within_ops,
            within_ops_fn,
            control_inputs=control_inputs,
        )
    )
    return [op for op in forward if op in backward]


def get_walks_union_ops(
    forward_seed_ops,
    backward_seed_ops,
    forward_inclusive=True,
    backward_inclusive=True,
    within_ops=None,
    within_ops_fn=None,
    control_inputs=False,
    control_outputs=None,
):
    """The ops after forward_seed_ops or before backward_seed_ops."""
    forward = get_forward_walk_ops(
        forward_seed_ops,
        forward_inclusive,
        within_ops,
        within_ops_fn,
        control_outputs=control_outputs,
    )
    backward = get_backward_walk_ops(
        backward_seed_ops,
        backward_inclusive,
        within_ops,
        within_ops_fn,
        control_inputs=control_inputs,
    )
    return list(dict.fromkeys(forward + list(backward)))


def filter_ops(ops, positive_filter):
    """The ops of `ops` for which positive_filter(op) holds (all of them for True)."""
    ops = make_list_of_op(ops)
    if positive_filter is True:
        return ops
    return [op for op in ops if positive_filter(op)]


def filter_ts(ops, positive_filter):
    """The output tensors of `ops` for which positive_filter(t) holds (all for True)."""
    tensors = [t for op in make_list_of_op(ops) for t in op.outputs]
    if positive_filter is True:
        return tensors
    return [t for t in tensors if positive_filter(t)]


def filter_ops_from_regex(ops, regex):
    """The ops of `ops` whose name the regular expression matches (re.search)."""
    pattern = re.compile(regex)
    return filter_ops(ops, lambda op: pattern.search(op.name))


def filter_ts_from_regex(ops, regex):
    """The output tensors of `ops` whose name the regular expression matches (re.search)."""
    pattern = re.compile(regex)
    return filter_ts(ops, lambda t: pattern.search(t.name))


def get_tensors(graph):
    """Every output tensor of every op of `graph`."""
    return [t for op in graph.get_operations() for t in op.outputs]


def _select(args, graph, ops_wanted):
    """The ops (or tensors) named by args: ops, tensors, regular expressions matched
    (re.search) against the names of the graph's ops (or tensors), lists of these."""
    graph = graph or framework_ops.get_default_graph()
    found = []

    def add(value):
        if isinstance(value, (str, re.Pattern)):
            pattern = re.compile(value) if isinstance(value, str) else value
            if ops_wanted:
                found.extend(op for op in graph.get_operations() if pattern.search(op.name))
            else:
                found.extend(t for t in get_tensors(graph) if pattern.search(t.name))
        elif isinstance(value, (tf.Operation, tf.Tensor)):
            found.append(value)
        elif _is_iterable(value):
            for item in value:
                add(item)
        else:
            raise TypeError(f"Cannot select from {type(value).__name__}")

    for arg in args:
        add(arg)
    return list(dict.fromkeys(found))


def select_ops(*args, **kwargs):
    """Ops by op, or by regular expression over the op names of `graph` (default graph);
    restrict_ops_regex and positive_filter narrow the result."""
    graph = kwargs.pop("graph", None)
    restrict = kwargs.pop("restrict_ops_regex", None)
    positive_filter = kwargs.pop("positive_filter", None)
    if kwargs:
        raise unsupported(f"tf.contrib.graph_editor.select_ops({', '.join(kwargs)}=...)")
    ops = [value for value in _select(args, graph, True) if isinstance(value, tf.Operation)]
    if restrict is not None:
        ops = filter_ops_from_regex(ops, restrict)
    if positive_filter is not None:
        ops = [op for op in ops if positive_filter(op)]
    return ops


def select_ts(*args, **kwargs):
    """Tensors by tensor, or by regular expression over the tensor names of `graph`."""
    graph = kwargs.pop("graph", None)
    restrict = kwargs.pop("restrict_ts_regex", None)
    positive_filter = kwargs.pop("positive_filter", None)
    if kwargs:
        raise unsupported(f"tf.contrib.graph_editor.select_ts({', '.join(kwargs)}=...)")
    ts = [value for value in _select(args, graph, False) if isinstance(value, tf.Tensor)]
    if restrict is not None:
        pattern = re.compile(restrict)
        ts = [t for t in ts if pattern.search(t.name)]
    if positive_filter is not None:
        ts = [t for t in ts if positive_filter(t)]
    return ts


# ---------------------------------------------------------------------------
# Subgraph views


class SubGraphView:
    """A set of ops of one graph, with the tensors that enter it (inputs) and leave it
    (outputs: consumed outside it, or by nothing)."""

    def __init__(self, inside_ops=(), passthrough_ts=()):
        del passthrough_ts
        self._ops = list(dict.fromkeys(make_list_of_op(inside_ops, allow_graph=False)))
        inside = set(self._ops)
        self._inputs = list(
            dict.fromkeys(t for op in self._ops for t in op.inputs if t.op not in inside)
        )
        self._outputs = [
            t
            for op in self._ops
            for t in op.outputs
            if not t.consumers() or any(c not in inside for c in t.consumers())
        ]

    @property
    def ops(self):
        return tuple(self._ops)

    @property
    def inputs(self):
        return tuple(self._inputs)

    @property
    def outputs(self):
        return tuple(self._outputs)

    @property
    def graph(self):
        return self._ops[0].graph if self._ops else None

    def __len__(self):
        return len(self._ops)

    def __iter__(self):
        return iter(self._ops)

    def __repr__(self):
        return f"SubGraphView({len(self._ops)} ops)"


def make_view(*args, **kwargs):
    """A SubGraphView of the ops named by args: ops, tensors (their producing ops), a
    SubGraphView, a graph (all its ops), or lists of these."""
    graph = kwargs.pop("graph", None)
    if kwargs:
        raise unsupported(f"tf.contrib.graph_editor.make_view({', '.join(kwargs)}=...)")
    found = []

    def add(value):
        if isinstance(value, SubGraphView):
            found.extend(value.ops)
        elif isinstance(value, tf.Operation):
            found.append(value)
        elif isinstance(value, tf.Tensor):
            found.append(value.op)
        elif isinstance(value, tf.Graph):
            found.extend(value.get_operations())
        elif isinstance(value, str):
            found.append((graph or framework_ops.get_default_graph()).get_operation_by_name(value))
        elif _is_iterable(value):
            for item in value:
                add(item)
        else:
            raise TypeError(f"Cannot make a subgraph view of {type(value).__name__}")

    for arg in args:
        add(arg)
    return SubGraphView(found)


sgv = make_view


# ---------------------------------------------------------------------------
# Copying


class TransformerInfo:
    """What a copy made: original op -> its copy (`_transformed_ops`, as TF 1.15 named it),
    original tensor -> its copy."""

    def __init__(self, graph):
        self.graph = graph
        self.graph_ = graph
        self._transformed_ops = {}
        self._transformed_ts = {}
        self._collections = None

    @property
    def collections(self):
        """{name: list} of the graph's collections as they were before the copy."""
        if self._collections is None:
            self._collections = {
                name: list(self.graph.get_collection(name))
                for name in self.graph.get_all_collection_keys()
            }
        return self._collections

    def new_name(self, name):
        return name

    def transformed(self, original, missing_fn=None):
        """The copy of an op or tensor (or of each one of a list); None if not copied."""
        if _is_iterable(original) and not isinstance(original, (tf.Tensor, tf.Operation)):
            return [self.transformed(item, missing_fn) for item in original]
        table = (
            self._transformed_ops if isinstance(original, tf.Operation) else self._transformed_ts
        )
        found = table.get(original)
        if found is None and missing_fn is not None:
            return missing_fn(original)
        return found

    def original(self, transformed, missing_fn=None):
        """The op or tensor a copy was made of; None if it is no copy."""
        if _is_iterable(transformed) and not isinstance(transformed, (tf.Tensor, tf.Operation)):
            return [self.original(item, missing_fn) for item in transformed]
        table = (
            self._transformed_ops
            if isinstance(transformed, tf.Operation)
            else self._transformed_ts
        )
        for source, target in table.items():
            if target is transformed:
                return source
        return missing_fn(transformed) if missing_fn is not None else None


def _in_dependency_order(ops):
    """`ops` ordered so that each comes after those of `ops` it takes an input from."""
    inside = set(ops)
    ordered, done, visiting = [], set(), set()
    for start in ops:
        stack = [(start, False)]
        while stack:
            op, expanded = stack.pop()
            if op in done:
                continue
            if expanded:
                visiting.discard(op)
                done.add(op)
                ordered.append(op)
                continue
            if op in visiting:
                raise unsupported("tf.contrib.graph_editor: copying the ops of a while loop")
            visiting.add(op)
            stack.append((op, True))
            before = [t.op for t in op.inputs] + list(op.control_inputs)
            stack.extend((b, False) for b in before if b in inside and b not in done)
    return ordered


def _copy_op(op, inputs, control_inputs, graph):
    """A copy of `op` in `graph` on `inputs`, named as the graph names a second op of that
    name (`dense/MatMul_1`), with the same attributes, device and output shapes."""
    with graph.name_scope(None):
        name = graph.unique_name(op.name)
    attrs = {key: value for key, value in op.node_def.attr.items()}
    new_op = graph._create_op_internal(  # noqa: SLF001
        op.type,
        inputs,
        dtypes=[t.dtype for t in op.outputs],
        input_types=[t.dtype.base_dtype for t in inputs],
        name=name + "/",  # a trailing slash: the name as it is
        attrs=attrs,
        op_def=op.op_def,
        compute_device=False,
    )
    if control_inputs:
        new_op._add_control_inputs(control_inputs)  # noqa: SLF001
    if op.device:
        new_op._set_device(op.device)  # noqa: SLF001
    for old, new in zip(op.outputs, new_op.outputs):
        new.set_shape(old.shape)
    # TF 1.15's Operation kept its outputs in `_outputs`, which such code reads from the
    # copies (info._transformed_ops[op]._outputs[0]); TensorFlow 2's has no such attribute.
    new_op._outputs = list(new_op.outputs)  # noqa: SLF001
    return new_op


def copy_with_input_replacements(
    sgv, replacement_ts, dst_graph=None, dst_scope="", src_scope="", reuse_dst_scope=False
):
    """Copies the ops of `sgv` in their graph: inside the copy, inputs are the copies of
    the ops they came from; from outside, the tensor replacement_ts maps them to, else the
    original tensor. Returns (a SubGraphView of the copies, a TransformerInfo)."""
    del src_scope, reuse_dst_scope
    view = make_view(sgv)
    if not view.ops:
        return view, TransformerInfo(dst_graph)
    graph = view.graph
    if (dst_graph is not None and dst_graph is not graph) or dst_scope:
        raise unsupported(
            "tf.contrib.graph_editor.copy_with_input_replacements into another graph or scope"
        )
    replacements = dict(replacement_ts or {})
    info = TransformerInfo(graph)
    for op in _in_dependency_order(list(view.ops)):
        inputs = [
            info._transformed_ts.get(t, replacements.get(t, t))  # noqa: SLF001
            for t in op.inputs
        ]
        controls = [info._transformed_ops.get(c, c) for c in op.control_inputs]  # noqa: SLF001
        new_op = _copy_op(op, inputs, controls, graph)
        info._transformed_ops[op] = new_op  # noqa: SLF001
        info._transformed_ts.update(zip(op.outputs, new_op.outputs))  # noqa: SLF001
    handler = assign_renamed_collections_handler
    if _TRANSFORM_MODULE:
        handler = _TRANSFORM_MODULE[0].assign_renamed_collections_handler
    info.collections  # noqa: B018  (taken before the copies join any)
    for op in view.ops:
        new_op = info._transformed_ops[op]  # noqa: SLF001
        handler(info, op, new_op)
        for old_t, new_t in zip(op.outputs, new_op.outputs):
            handler(info, old_t, new_t)
    copies = [info._transformed_ops[op] for op in view.ops]  # noqa: SLF001
    return SubGraphView(copies), info


def copy(sgv, dst_graph=None, dst_scope="", src_scope="", reuse_dst_scope=False):
    """copy_with_input_replacements with no replacements."""
    return copy_with_input_replacements(sgv, {}, dst_graph, dst_scope, src_scope, reuse_dst_scope)


# ---------------------------------------------------------------------------
# Rerouting and control inputs


def _tensor_list(ts):
    if isinstance(ts, tf.Tensor):
        return [ts]
    return list(ts)


def reroute_ts(ts0, ts1, can_modify=None, cannot_modify=None):
    """For each pair (t0, t1), the consumers of t1 take t0 instead (only those in
    can_modify, none of cannot_modify). Returns the number of inputs changed."""
    ts0, ts1 = _tensor_list(ts0), _tensor_list(ts1)
    if len(ts0) != len(ts1):
        raise ValueError(f"Cannot reroute {len(ts0)} tensors onto {len(ts1)}")
    allowed = (
        set(make_list_of_op(can_modify, allow_graph=False)) if can_modify is not None else None
    )
    refused = set(make_list_of_op(cannot_modify, allow_graph=False)) if cannot_modify else set()
    changed = 0
    for new, old in zip(ts0, ts1):
        if new is old:
            continue
        if new.dtype.base_dtype != old.dtype.base_dtype:
            raise TypeError(f"Cannot reroute {old.name} ({old.dtype}) to {new.name} ({new.dtype})")
        for consumer in list(old.consumers()):
            if (allowed is not None and consumer not in allowed) or consumer in refused:
                continue
            for index, tensor in enumerate(consumer.inputs):
                if tensor is old:
                    consumer._update_input(index, new)  # noqa: SLF001
                    changed += 1
    return changed


def swap_ts(ts0, ts1, can_modify=None, cannot_modify=None):
    """The consumers of each t0 take its t1 and those of t1 its t0."""
    ts0, ts1 = _tensor_list(ts0), _tensor_list(ts1)
    consumers0 = [set(t.consumers()) for t in ts0]
    changed = reroute_ts(ts0, ts1, can_modify, cannot_modify)
    for old, new, consumers in zip(ts0, ts1, consumers0):
        allowed = consumers
        if can_modify is not None:
            allowed = allowed & set(make_list_of_op(can_modify, allow_graph=False))
        changed += reroute_ts([new], [old], can_modify=allowed, cannot_modify=cannot_modify)
    return changed


def add_control_inputs(op, cops):
    """Makes `op` wait for the ops of cops too; one it waits for already is an error."""
    cops = make_list_of_op(cops, allow_graph=False)
    present = [c for c in cops if c in op.control_inputs]
    if present:
        raise ValueError(f"Control inputs {[c.name for c in present]} already exist")
    op._add_control_inputs(cops)  # noqa: SLF001


def remove_control_inputs(op, cops):
    """Makes `op` no longer wait for the ops of cops."""
    cops = set(make_list_of_op(cops, allow_graph=False))
    missing = [c.name for c in cops if c not in op.control_inputs]
    if missing:
        raise ValueError(f"Control inputs {missing} do not exist")
    kept = [c for c in op.control_inputs if c not in cops]
    op._remove_all_control_inputs()  # noqa: SLF001
    op._add_control_inputs(kept)  # noqa: SLF001


def assign_renamed_collections_handler(info, elem, elem_):
    """Adds the copy elem_ to each collection that held its original elem."""
    for name, members in info.collections.items():
        if any(member is elem for member in members):
            info.graph.add_to_collection(info.new_name(name), elem_)


# The namespace tf.contrib.graph_editor.transform of the TF 1.x module, whose
# assign_renamed_collections_handler a user script may replace; copies call that one.
_TRANSFORM_MODULE = []


def graph_editor_module():
    """tf.contrib.graph_editor, with its modules (transform, select, util, ...)."""
    names = {
        "get_forward_walk_ops": get_forward_walk_ops,
        "get_backward_walk_ops": get_backward_walk_ops,
        "get_walks_intersection_ops": get_walks_intersection_ops,
        "get_walks_union_ops": get_walks_union_ops,
        "filter_ops": filter_ops,
        "filter_ts": filter_ts,
        "filter_ops_from_regex": filter_ops_from_regex,
        "filter_ts_from_regex": filter_ts_from_regex,
        "make_list_of_op": make_list_of_op,
        "make_list_of_t": make_list_of_t,
        "get_consuming_ops": get_consuming_ops,
        "get_generating_ops": get_generating_ops,
        "get_tensors": get_tensors,
        "select_ops": select_ops,
        "select_ts": select_ts,
        "SubGraphView": SubGraphView,
        "make_view": make_view,
        "sgv": sgv,
        "TransformerInfo": TransformerInfo,
        "copy_with_input_replacements": copy_with_input_replacements,
        "copy": copy,
        "reroute_ts": reroute_ts,
        "swap_ts": swap_ts,
        "add_control_inputs": add_control_inputs,
        "remove_control_inputs": remove_control_inputs,
        "assign_renamed_collections_handler": assign_renamed_collections_handler,
    }
    module = Namespace("tf.contrib.graph_editor", None, names)
    # TF 1.15's modules of the package (`from tensorflow.contrib.graph_editor import
    # transform`): each is a namespace of the same functions, whose attributes a
    # script may set (transform.assign_renamed_collections_handler = ...).
    for part in ("edit", "reroute", "select", "subgraph", "transform", "util"):
        module.__dict__[part] = Namespace(f"tf.contrib.graph_editor.{part}", module, dict(names))
    _TRANSFORM_MODULE[:] = [module.transform]
    return module
