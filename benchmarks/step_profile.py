"""Where one training step's time goes, by op type: the matmul share and what is around it.

Builds the training step of run_classifier's model_fn (fine-tuning: BERT,
pooled output, classifier, AdamWeightDecay with clipping) or
run_pretraining's (masked LM + next sentence), on synthetic full-length
inputs, in the precision given (--precision=bf16 is the model_fn_builder's
precision, as the scripts pass their flag), and runs
it in a plain session. After warm-up steps it traces --steps steps with
TensorFlow's step statistics (RunOptions FULL_TRACE: the graph as grappler
rewrote it, one record per executed kernel) and reports, summed over the
traced steps:

  * the time per op type, largest first, with its share of all kernel time;
  * the same time grouped into kinds (matmul, elementwise, reduction,
    softmax, random numbers, casts, layout, embedding, variables);
  * the time per phase of the step: forward (ancestors of the loss),
    backward (under "gradients/"), gradient clipping, and the optimizer
    update with everything else.

Kernel time is summed over both inter-op threads, so it can exceed the
step's wall time; shares are of the summed kernel time. Untraced steps are
timed too (wall and CPU seconds, median) since tracing adds overhead.

TensorFlow runs the kernels the scripts run: oneDNN's on x86-64 unless
TF_ENABLE_ONEDNN_OPTS is set (bert_lib/plumbing/cpu_kernels.py, imported
before TensorFlow), and the first line says which. --matmul_floor also
times the step's own matmuls (every MatMul and BatchMatMul of the forward
and backward pass, at their shapes and transposes) alone, one after
another with every core each, and gives their GFLOP and rate: what a step
would take if everything around the matmuls cost nothing.
--train_at_cls_only builds the fine-tuning step as run_classifier does with
--dynamic_padding: the last layer at [CLS] only.

    .venv/bin/python benchmarks/step_profile.py --task=finetune --precision=fp32
    .venv/bin/python benchmarks/step_profile.py --task=pretrain --batch_size=8
    .venv/bin/python benchmarks/step_profile.py --task=finetune --precision=bf16 --format=markdown
    .venv/bin/python benchmarks/step_profile.py --task=finetune --seq_length=52 --matmul_floor
    .venv/bin/python benchmarks/step_profile.py --task=finetune --seq_length=52 --train_at_cls_only
"""

import argparse
import collections
import json
import os
import re
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))
sys.path.insert(0, _HERE)

import speed_common  # noqa: E402

# The scripts' choice of CPU kernels (oneDNN's on x86-64 unless the
# environment says otherwise), made before TensorFlow is imported.
from bert_lib.plumbing import cpu_kernels  # noqa: E402

# Kinds of op type, matched in this order (first match wins) against the
# kernel's type name; oneDNN kernels carry prefixes such as "_MklNative".
KINDS = [
    ("matmul", re.compile(r"MatMul|Conv|Einsum")),
    ("softmax", re.compile(r"Softmax")),
    ("random", re.compile(r"Random|TruncatedNormal|StatelessRandom")),
    ("cast", re.compile(r"^Cast$|_MklCast")),
    ("embedding", re.compile(r"Gather|Scatter|SegmentSum|OneHot|Unique|IndexedSlices")),
    (
        "layout",
        re.compile(
            r"Transpose|Reshape|Concat|Slice|Pack|Unpack|Split|Tile|Pad|Fill|ZerosLike"
            r"|OnesLike|BroadcastTo|ExpandDims|Squeeze|Identity"
        ),
    ),
    ("reduction", re.compile(r"Sum|Mean|Max|Min|Prod|BiasAddGrad|L2Loss|Norm|All$|Any$")),
    ("variables", re.compile(r"Variable|Assign|Apply|Resource")),
    ("input", re.compile(r"Iterator|Dataset")),
    ("elementwise", re.compile(r".")),
]


_LABEL = re.compile(r"^(?:\[[^\]]*\] )?(\S+) = (\S+?)\(")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", choices=["finetune", "pretrain"], default="finetune")
    parser.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32")
    parser.add_argument("--num_hidden_layers", type=int, default=6)
    parser.add_argument("--hidden_size", type=int, default=384)
    parser.add_argument("--num_attention_heads", type=int, default=12)
    parser.add_argument("--intermediate_size", type=int, default=1536)
    parser.add_argument(
        "--xla",
        choices=["none", "all", "elementwise"],
        default="none",
        help="all: compile the step with XLA as --use_xla does (random numbers and input "
        "outside); elementwise: the same but leave the matmuls to TensorFlow's own kernels",
    )
    parser.add_argument("--vocab_size", type=int, default=30522)
    parser.add_argument("--seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=None, help="32 finetune, 8 pretrain")
    parser.add_argument("--predictions_per_seq", type=int, default=20)
    parser.add_argument("--warmup_steps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=3, help="traced steps (0: only time)")
    parser.add_argument("--timed_steps", type=int, default=5, help="untraced timed steps")
    parser.add_argument("--top", type=int, default=25, help="op types listed")
    parser.add_argument("--format", choices=["text", "markdown"], default="text")
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument(
        "--matmul_floor",
        action="store_true",
        help="also time the step's own matmuls alone, one after another, on inputs of "
        "their shapes: the least a step can take with these kernels",
    )
    parser.add_argument(
        "--train_at_cls_only",
        action="store_true",
        help="finetune: the last layer at [CLS] only, as run_classifier trains with "
        "--dynamic_padding",
    )
    args = parser.parse_args(argv)
    if args.batch_size is None:
        args.batch_size = 32 if args.task == "finetune" else 8
    return args


def _config(args):
    return speed_common.bert_config(vars(args), args.seq_length)


def build_step(args):
    """(graph, step tensor, loss tensor): one training step of the task's own model_fn."""
    import tensorflow as tf

    from bert_lib import engine

    config = _config(args)
    if args.task == "pretrain":
        import run_pretraining

        model_fn = run_pretraining.model_fn_builder(
            config, None, 5e-5, 1000, 100, False, False, precision=args.precision
        )
        keys = speed_common.PRETRAIN_KEYS
    else:
        import run_classifier

        model_fn = run_classifier.model_fn_builder(
            config,
            2,
            None,
            5e-5,
            1000,
            100,
            False,
            False,
            precision=args.precision,
            pooled_output_only_in_training=args.train_at_cls_only,
        )
        keys = speed_common.CLASSIFIER_KEYS
    data = speed_common.synthetic_inputs(
        4 * args.batch_size,
        args.seq_length,
        args.vocab_size,
        args.predictions_per_seq,
        full_length=True,
    )
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.train.get_or_create_global_step()
        dataset = speed_common.dataset_fn(data, keys)({"batch_size": args.batch_size})
        features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        params = {"batch_size": args.batch_size}
        with _xla_scope(args.xla):
            spec = model_fn(features, None, engine.ModeKeys.TRAIN, params)
        with tf.control_dependencies([spec.train_op]):
            step = tf.identity(spec.loss)
    return graph, step, spec.loss


# Never compiled: random numbers (so dropout masks are those of a run without
# XLA), the input pipeline, assertions and summaries, as under --use_xla.
_NOT_XLA_OPS = frozenset(
    ["RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal"]
    + ["Assert", "Print", "PrintV2", "ScalarSummary", "MergeSummary", "IteratorGetNext"]
)
_MATMUL_OPS = frozenset(["MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"])


def _xla_scope(mode):
    """A jit_scope marking the step's ops for XLA (see --xla), or no scope at all."""
    import contextlib

    import tensorflow as tf

    if mode == "none":
        return contextlib.nullcontext()
    excluded = _NOT_XLA_OPS | (_MATMUL_OPS if mode == "elementwise" else frozenset())

    def compile_op(node_def):
        return node_def.op not in excluded and "Initializer" not in node_def.name

    return tf.xla.experimental.jit_scope(compile_ops=compile_op, separate_compiled_gradients=False)


def _forward_names(graph, loss):
    """Names of the ops the loss depends on (the forward pass, inputs included)."""
    seen = set()
    stack = [loss.op]
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return seen


def _phase(name, forward):
    if name.startswith("gradients"):
        return "backward"
    if name.startswith("clip_by_global_norm") or name.startswith("global_norm"):
        return "clipping"
    if name in forward or name.split("/_")[0] in forward:
        return "forward"
    return "update and other"


def kind_of(op_type):
    for kind, pattern in KINDS:
        if pattern.search(op_type):
            return kind
    return "elementwise"


_DTYPE_NAMES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _dtype_names(graph):
    """{op name: the dtype it computes in}: "fp32", "bf16" or "fp16" for float ops (a Cast
    as "bf16->fp32"), "-" for the rest. Grappler's fused kernels keep the name of the
    op they end with, so a fused matmul is found under its bias add."""
    names = {}
    for op in graph.get_operations():
        if op.type == "Cast":
            source, target = (op.get_attr(a).name for a in ("SrcT", "DstT"))
            names[op.name] = (
                f"{_DTYPE_NAMES.get(source, source)}->{_DTYPE_NAMES.get(target, target)}"
            )
            continue
        floats = [t.dtype.name for t in list(op.outputs) + list(op.inputs)]
        floats = [_DTYPE_NAMES[d] for d in floats if d in _DTYPE_NAMES]
        names[op.name] = floats[0] if floats else "-"
    return names


def collect(run_metadata, forward, dtypes):
    """{op type: [microseconds, count]}, {phase: microseconds}, {(phase, kind): microseconds},
    {"node (type)": microseconds} and {(kind, dtype): [microseconds, count]} from one
    step's stats; `dtypes` is _dtype_names of the step's graph."""
    by_type = collections.defaultdict(lambda: [0, 0])
    by_phase = collections.Counter()
    by_phase_kind = collections.Counter()
    by_node = collections.Counter()
    by_dtype = collections.defaultdict(lambda: [0, 0])
    for device in run_metadata.step_stats.dev_stats:
        for node in device.node_stats:
            label = node.timeline_label
            # "[cpu 0.8MB 0.8MB] name = Type(inputs)": the memory part is optional.
            match = _LABEL.match(label)
            if not match:
                continue
            name, op_type = match.group(1), match.group(2)
            micros = node.all_end_rel_micros
            by_type[op_type][0] += micros
            by_type[op_type][1] += 1
            phase = _phase(name, forward)
            by_phase[phase] += micros
            by_phase_kind[phase, kind_of(op_type)] += micros
            by_node[f"{name} ({op_type})"] += micros
            dtype = dtypes.get(name, dtypes.get(name.split("/_")[0], "?"))
            by_dtype[kind_of(op_type), dtype][0] += micros
            by_dtype[kind_of(op_type), dtype][1] += 1
    return by_type, by_phase, by_phase_kind, by_node, by_dtype


def profile(args):
    import tensorflow as tf

    graph, step, loss = build_step(args)
    forward = _forward_names(graph, loss)
    dtypes = _dtype_names(graph)
    floor = matmul_floor(args, _matmul_shapes(graph)) if args.matmul_floor else None
    with graph.as_default():
        init = tf.compat.v1.global_variables_initializer()
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    totals = collections.defaultdict(lambda: [0, 0])
    phases = collections.Counter()
    phase_kinds = collections.Counter()
    nodes = collections.Counter()
    kind_dtypes = collections.defaultdict(lambda: [0, 0])
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        for _ in range(args.warmup_steps):
            session.run(step)
        timings = []
        for _ in range(args.timed_steps):
            wall, cpu = time.perf_counter(), time.process_time()
            session.run(step)
            timings.append((time.perf_counter() - wall, time.process_time() - cpu))
        for _ in range(args.steps):
            metadata = tf.compat.v1.RunMetadata()
            session.run(step, options=options, run_metadata=metadata)
            by_type, by_phase, by_phase_kind, by_node, by_dtype = collect(
                metadata, forward, dtypes
            )
            phase_kinds.update(by_phase_kind)
            nodes.update(by_node)
            for key, (micros, count) in by_dtype.items():
                kind_dtypes[key][0] += micros
                kind_dtypes[key][1] += count
            for op_type, (micros, count) in by_type.items():
                totals[op_type][0] += micros
                totals[op_type][1] += count
            phases.update(by_phase)
    return {
        "step_wall_s": speed_common.median([t[0] for t in timings]),
        "step_cpu_s": speed_common.median([t[1] for t in timings]),
        "best_wall_s": min(t[0] for t in timings),
        "best_cpu_s": min(t[1] for t in timings),
        "by_type": {k: v for k, v in sorted(totals.items(), key=lambda kv: -kv[1][0])},
        "by_phase": dict(phases),
        "by_phase_kind": {f"{p}/{k}": v for (p, k), v in phase_kinds.most_common()},
        "top_nodes": dict(nodes.most_common(args.top)),
        "by_kind_dtype": {
            f"{kind}/{dtype}": v
            for (kind, dtype), v in sorted(kind_dtypes.items(), key=lambda kv: -kv[1][0])
        },
        "matmul_floor": floor,
    }


def _matmul_shapes(graph):
    """[(op type, shape of a, shape of b, attrs)] of every matmul in the step's graph."""
    found = []
    for op in graph.get_operations():
        if op.type not in _MATMUL_OPS:
            continue
        a, b = (t.shape.as_list() for t in op.inputs[:2])
        if None in a or None in b:
            raise SystemExit(f"{op.name}: shapes not static ({a}, {b}); use full-length inputs")
        names = ("transpose_a", "transpose_b") if op.type == "MatMul" else ("adj_x", "adj_y")
        attrs = {name: op.get_attr(name) for name in names}
        found.append((op.type, a, b, attrs, op.get_attr("T")))
    return found


def matmul_flops(a, b, attrs):
    """Floating-point operations (2 per multiply-add) of one matmul of these inputs."""
    flags = list(attrs.values())
    rows = a[-1] if flags[0] else a[-2]
    inner = a[-2] if flags[0] else a[-1]
    cols = b[-2] if flags[1] else b[-1]
    batch = 1
    for size in a[:-2]:
        batch *= size
    return 2 * batch * rows * inner * cols


def matmul_floor(args, shapes):
    """(median seconds, GFLOP) of the step's matmuls alone, one after another.

    Each matmul gets inputs of its own (so none is merged with another) and
    waits for the one before it, so each has every core to itself: the
    schedule a step could at best give them, with the same kernels.
    """
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        previous, firsts = [], []
        for i, (op_type, a, b, attrs, dtype) in enumerate(shapes):
            # In the step's own dtype: a bf16 step's matmuls are bf16 ones.
            x = tf.Variable(tf.cast(tf.random.normal(a), dtype), name=f"a{i}")
            y = tf.Variable(tf.cast(tf.random.normal(b), dtype), name=f"b{i}")
            with tf.control_dependencies(previous):
                if op_type == "MatMul":
                    out = tf.matmul(x, y, **attrs)
                else:
                    adjoints = {"adjoint_a": attrs["adj_x"], "adjoint_b": attrs["adj_y"]}
                    out = tf.linalg.matmul(x, y, **adjoints)
            previous = [out.op]
            # One element of each product is fetched: a matmul whose output
            # only a control dependency waits for is turned into a no-op by
            # grappler.
            firsts.append(tf.cast(tf.reshape(out, [-1])[0], tf.float32))
        last = tf.add_n(firsts)
        init = tf.compat.v1.global_variables_initializer()
    timings = []
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        for _ in range(args.warmup_steps):
            session.run(last)
        for _ in range(args.timed_steps):
            start = time.perf_counter()
            session.run(last)
            timings.append(time.perf_counter() - start)
    flops = sum(matmul_flops(a, b, attrs) for _, a, b, attrs, _ in shapes)
    return speed_common.median(timings), flops / 1e9


def _table(title, header, rows, markdown):
    lines = [title]
    if markdown:
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    else:
        lines += ["  " + "  ".join(f"{c!s:>14}" for c in header)]
        lines += ["  " + "  ".join(f"{c!s:>14}" for c in row) for row in rows]
    return "\n".join(lines)


def report(args, result, load_before, load_after):
    steps = args.steps
    total = sum(v[0] for v in result["by_type"].values())
    kinds = collections.Counter()
    for op_type, (micros, _) in result["by_type"].items():
        kinds[kind_of(op_type)] += micros
    md = args.format == "markdown"
    out = [
        f"{args.task}, {args.precision}: {args.num_hidden_layers} layers x {args.hidden_size} "
        f"x {args.num_attention_heads} heads, intermediate {args.intermediate_size}, seq "
        f"{args.seq_length}, batch {args.batch_size}",
        f"machine: {speed_common.machine_facts()}",
        f"load average before/after: {load_before} / {load_after}",
        f"untraced step: {result['step_wall_s']:.3f} s wall, {result['step_cpu_s']:.3f} s CPU "
        f"(median of {args.timed_steps}); kernel time per traced step: "
        f"{total / steps / 1e6:.3f} s (summed over threads)",
        "",
    ]
    rows = [
        (kind, f"{micros / steps / 1e3:.1f}", f"{100 * micros / total:.1f}%")
        for kind, micros in kinds.most_common()
    ]
    out.append(_table("By kind", ["kind", "ms/step", "share"], rows, md))
    out.append("")
    rows = [
        (
            *key.split("/", 1),
            f"{micros / steps / 1e3:.1f}",
            f"{100 * micros / total:.1f}%",
            count // steps,
        )
        for key, (micros, count) in result["by_kind_dtype"].items()
    ]
    out.append(
        _table(
            "By kind and dtype (a Cast as source->target)",
            ["kind", "dtype", "ms/step", "share", "kernels/step"],
            rows,
            md,
        )
    )
    out.append("")
    rows = [
        (phase, f"{micros / steps / 1e3:.1f}", f"{100 * micros / total:.1f}%")
        for phase, micros in sorted(result["by_phase"].items(), key=lambda kv: -kv[1])
    ]
    out.append(_table("By phase", ["phase", "ms/step", "share"], rows, md))
    out.append("")
    rows = [
        (
            op_type,
            kind_of(op_type),
            f"{micros / steps / 1e3:.1f}",
            f"{100 * micros / total:.1f}%",
            count // steps,
        )
        for op_type, (micros, count) in list(result["by_type"].items())[: args.top]
    ]
    out.append(
        _table("By op type", ["op type", "kind", "ms/step", "share", "kernels/step"], rows, md)
    )
    out.append("")
    rows = [
        (*key.split("/"), f"{micros / steps / 1e3:.1f}", f"{100 * micros / total:.1f}%")
        for key, micros in result["by_phase_kind"].items()
    ]
    out.append(_table("By phase and kind", ["phase", "kind", "ms/step", "share"], rows, md))
    out.append("")
    rows = [
        (node, f"{micros / steps / 1e3:.1f}", f"{100 * micros / total:.1f}%")
        for node, micros in result["top_nodes"].items()
    ]
    out.append(_table("Largest kernels", ["node (op type)", "ms/step", "share"], rows, md))
    return "\n".join(out)


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from absl import logging

    logging.set_verbosity(logging.WARNING)
    load_before = speed_common.load_average()
    result = profile(args)
    load_after = speed_common.load_average()
    print(cpu_kernels.describe())
    if result["matmul_floor"]:
        seconds, gflop = result["matmul_floor"]
        print(
            f"the step's matmuls alone, one after another: {seconds:.3f} s ({gflop:.1f} GFLOP "
            f"at {gflop / seconds:.0f} GFLOP/s); untraced step {result['step_wall_s']:.3f} s, "
            f"{100 * seconds / result['step_wall_s']:.0f}% of it"
        )
    if args.steps:
        print(report(args, result, load_before, load_after))
    else:
        print(
            f"untraced step: {result['step_wall_s']:.3f} s wall, {result['step_cpu_s']:.3f} s "
            f"CPU (median of {args.timed_steps}; best {result['best_wall_s']:.3f} / "
            f"{result['best_cpu_s']:.3f}); load {load_before} / {load_after}"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(vars(args), **result, load=[load_before, load_after]), f, indent=1)


if __name__ == "__main__":
    main()
