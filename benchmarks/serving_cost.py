"""What one call of the exported classifier costs at batch 1, and which ops it runs.

A classifier of random weights (biases and LayerNorm's too), peer_speed.py's
model (6 layers, 384 wide, 12 heads; --quick: 2 layers, 48 wide), is exported by
run_classifier.export_saved_model at each --precisions (or the exports of
--export_dirs are read instead, such as those another checkout wrote, for a
before/after comparison on one machine). For each export:

  * the op types of its serving graph, as written (Cast, IdentityN,
    Reshape, Transpose, MatMul, ...), and those that run in one call at
    --trace_tokens tokens after TensorFlow's graph optimizations (fused
    MatMuls included), from a traced Session.run;
  * the median wall and CPU (time.process_time) ms of one call at batch 1
    and each of --lengths tokens: Predictor's call of the serving
    signature (bert_lib/export/predictor.py), and Session.run of the same
    graph, whose difference is the cost of the signature's Python side.

And the floor under a call: the model's dense matmuls alone (each layer's
query, key, value, attention output, intermediate and output, then the
pooler and the classifier; random weights of the same shapes, [tokens,
in] x [in, out] at each --lengths), timed in turns as one tf.function in
each way TensorFlow can write the products (MatMul on variables as the
model does, on constants, on transposed weights, BatchMatMulV2, MatMul
under XLA) and as one ONNX Runtime session (when onnxruntime is
installed) of ONNX MatMuls, and of int8 DynamicQuantizeMatMuls with one
weight scale per column and per matrix. At a few tokens these products
are most of an ONNX Runtime call, so TensorFlow's fastest form against
ONNX Runtime bounds how near the SavedModel can come to it whatever the
ops around them cost; the two int8 rows tell what the int8 export's
per-column scales cost its integer kernels.

TensorFlow runs on one thread (intra- and inter-op), set before it starts,
and so does ONNX Runtime.

    python benchmarks/serving_cost.py --work_dir=/tmp/serving_cost
    python benchmarks/serving_cost.py --quick --calls=50
    python benchmarks/serving_cost.py --floor_only --lengths=1,2,4,8,16,50
    python benchmarks/serving_cost.py --export_dirs=/tmp/before/export_fp32,/tmp/before/export_bf16

The figures are medians of --calls calls; on a machine other jobs share
they say where time goes, not what it is.
"""

import argparse
import collections
import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, REPO)

import peer_speed  # noqa: E402
import speed_common  # noqa: E402

# Op types listed apart in the op counts: what runs around the matmuls.
WATCHED = (
    "Cast",
    "IdentityN",
    "Identity",
    "Reshape",
    "Transpose",
    "MatMul",
    "BatchMatMulV2",
    "_FusedMatMul",
    "_MklFusedBatchMatMulV2",
    "_MklLayerNorm",
    "BiasAdd",
    "ReadVariableOp",
    "Const",
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="peer_speed's --quick model")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--export_dirs", default="", help="time these exports instead")
    parser.add_argument("--lengths", default="2,50")
    parser.add_argument("--trace_tokens", type=int, default=2)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--work_dir", default=None)
    parser.add_argument("--json", default=None, help="also write the results here")
    parser.add_argument(
        "--floor_only", action="store_true", help="time the dense matmuls alone, no export"
    )
    args = parser.parse_args(argv)
    args.lengths = [int(n) for n in args.lengths.split(",") if n]
    args.precisions = [p for p in args.precisions.split(",") if p]
    args.export_dirs = [d for d in args.export_dirs.split(",") if d]
    return args


def export_models(cfg, work_dir, precisions):
    """{precision: export dir} of peer_speed's classifier (random weights) at each."""
    import tensorflow as tf

    import run_classifier

    config = speed_common.bert_config(cfg, cfg["seq_length"])
    checkpoint = os.path.join(work_dir, "checkpoint", "model.ckpt")
    if not tf.io.gfile.exists(checkpoint + ".index"):
        with tf.Graph().as_default():
            tf.compat.v1.set_random_seed(1)
            ids = tf.compat.v1.placeholder(tf.int32, [None, cfg["seq_length"]])
            mask, segments = tf.ones_like(ids), tf.zeros_like(ids)
            run_classifier.create_model(config, False, ids, mask, segments, None, 2, False)
            saver = tf.compat.v1.train.Saver()
            with tf.compat.v1.Session() as session:
                session.run(tf.compat.v1.global_variables_initializer())
                peer_speed.randomize_zeros_and_ones(session)
                saver.save(session, checkpoint)
    exports = {}
    for precision in precisions:
        export_dir = os.path.join(work_dir, f"export_{precision}")
        if not tf.io.gfile.exists(export_dir):
            run_classifier.export_saved_model(
                export_dir, checkpoint, config, 2, precision=precision
            )
        exports[precision] = export_dir
    return exports


def _session_config():
    import tensorflow as tf

    return tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)


def graph_op_counts(export_dir):
    """Counter of the op types of the export's serving graph as written."""

    session, _, _ = _load_session(export_dir)
    counts = collections.Counter(op.type for op in session.graph.get_operations())
    session.close()
    return counts


def _load_session(export_dir):
    """(session, {input name: tensor name}, output tensor name) of the export in Session."""
    import tensorflow as tf

    graph = tf.Graph()
    session = tf.compat.v1.Session(graph=graph, config=_session_config())
    meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
    signature = meta.signature_def["serving_default"]
    inputs = {name: info.name for name, info in signature.inputs.items()}
    (output,) = [info.name for info in signature.outputs.values()]
    return session, inputs, output


def _feed(inputs, length):
    ids, mask, segments = peer_speed._id_arrays(1, length)
    arrays = {"input_ids": ids, "input_mask": mask, "segment_ids": segments}
    return {tensor: arrays[name] for name, tensor in inputs.items()}


def traced_op_counts(export_dir, length):
    """Counter of the op types one Session.run at batch 1 and `length` tokens executes,
    after TensorFlow's graph optimizations (from the run's step stats)."""
    import tensorflow as tf

    session, inputs, output = _load_session(export_dir)
    feed = _feed(inputs, length)
    session.run(output, feed)
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    metadata = tf.compat.v1.RunMetadata()
    session.run(output, feed, options=options, run_metadata=metadata)
    counts = collections.Counter()
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            # timeline_label: "name = OpType(inputs)"; _SOURCE and the like have none.
            label = node.timeline_label
            if " = " in label:
                counts[label.split(" = ", 1)[1].split("(", 1)[0]] += 1
    session.close()
    return counts


def _medians(call, calls):
    """(median wall ms, median CPU ms) of `calls` calls of call(), after 10 more."""
    for _ in range(10):
        call()
    walls, cpus = [], []
    for _ in range(calls):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return 1000 * statistics.median(walls), 1000 * statistics.median(cpus)


def call_costs(export_dir, lengths, calls):
    """{"predictor"|"session": {tokens: (wall ms, CPU ms)}} of one batch-1 call."""
    from bert_lib.export import predictor

    call, _, _ = predictor._load_saved_model(export_dir)
    costs = {"predictor": {}, "session": {}}
    for length in lengths:
        ids = peer_speed._id_arrays(1, length)
        costs["predictor"][length] = _medians(lambda ids=ids: call(ids), calls)
    session, inputs, output = _load_session(export_dir)
    for length in lengths:
        feed = _feed(inputs, length)
        costs["session"][length] = _medians(lambda feed=feed: session.run(output, feed), calls)
    session.close()
    return costs


def dense_shapes(cfg):
    """[(in, out)] of the classifier's dense matmuls, in the order a call runs them."""
    hidden, inner = cfg["hidden_size"], cfg["intermediate_size"]
    layer = [(hidden, hidden)] * 4 + [(hidden, inner), (inner, hidden)]
    return layer * cfg["num_hidden_layers"] + [(hidden, hidden), (hidden, 2)]


def matmul_floor(cfg, lengths, calls):
    """{tokens: {contender: (wall ms, CPU ms, wall / ONNX Runtime's)}} of the dense
    matmuls of one batch-1 call alone (dense_shapes), each contender's whole set in one
    call, all timed in turns: 20 rounds of calls // 20 calls each; medians over the
    rounds, the ratio the median of those taken within a round (None without
    onnxruntime). The contenders are
    tensorflow_matmuls' forms and, with onnxruntime installed, ONNX Runtime's float32
    MatMul and its int8 DynamicQuantizeMatMul with one weight scale per output column
    (the export's model_int8.onnx) and per matrix (quantize_dynamic's default)."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(shape).astype(np.float32) for shape in dense_shapes(cfg)]
    widths = sorted({w.shape[0] for w in weights})
    contenders = tensorflow_matmuls(weights, widths)
    onnx_sessions = {
        "onnxruntime": _onnxruntime_matmuls(weights, widths),
        "onnxruntime int8 per column": _onnxruntime_matmuls(weights, widths, int8="column"),
        "onnxruntime int8 per matrix": _onnxruntime_matmuls(weights, widths, int8="matrix"),
    }
    count = max(1, calls // 20)
    floors = {}
    for length in lengths:
        xs = [rng.standard_normal((length, n)).astype(np.float32) for n in widths]
        tf_xs = [tf.constant(x) for x in xs]
        feed = {f"x{n}": x for n, x in zip(widths, xs)}
        sides = {name: (lambda f=f, xs=tf_xs: f(xs)) for name, f in contenders.items()}
        for name, session in onnx_sessions.items():
            if session is not None:
                sides[name] = lambda session=session, feed=feed: session.run(None, feed)
        for call in sides.values():
            for _ in range(10):
                call()
        per = speed_common.time_in_turns(sides, 20, count)
        reference = per.get("onnxruntime")
        floors[length] = {
            side: (
                statistics.median(w),
                statistics.median(c),
                statistics.median(a / b for a, b in zip(w, reference[0])) if reference else None,
            )
            for side, (w, c) in per.items()
        }
    return floors


def tensorflow_matmuls(weights, widths):
    """{form: function(xs) -> [x @ w for each of `weights`]}, xs one [tokens, n] Tensor
    for each of `widths`: the products written in each way TensorFlow offers, to tell
    whether any of them, not only the model's MatMul, runs as fast as ONNX Runtime at a
    few rows. Every form computes the same products in float32."""
    import tensorflow as tf

    variables = [tf.Variable(w) for w in weights]
    transposed = [tf.Variable(w.T.copy()) for w in weights]

    def rows(xs, inputs):
        return xs[widths.index(inputs)]

    def matmul(xs):
        return [tf.matmul(rows(xs, v.shape[0]), v) for v in variables]

    def constant_weights(xs):
        # tf.constant of a numpy array inside the traced function: a Const node, which
        # oneDNN's MatMul keeps reordered between calls of one shape.
        return [tf.matmul(rows(xs, w.shape[0]), tf.constant(w)) for w in weights]

    def transposed_weights(xs):
        return [tf.matmul(rows(xs, t.shape[1]), t, transpose_b=True) for t in transposed]

    def batch_matmul(xs):
        return [tf.raw_ops.BatchMatMulV2(x=rows(xs, v.shape[0]), y=v) for v in variables]

    return {
        "tensorflow": tf.function(matmul),
        "tensorflow, weights as constants": tf.function(constant_weights),
        "tensorflow, weights transposed": tf.function(transposed_weights),
        "tensorflow, BatchMatMulV2": tf.function(batch_matmul),
        "tensorflow, XLA": tf.function(matmul, jit_compile=True),
    }


def _onnxruntime_matmuls(weights, widths, int8=None):
    """An ONNX Runtime session (one thread) of x{in} @ w for each of `weights`, an input
    x{n} [tokens, n] for each of `widths`; None without onnxruntime. int8="column" or
    "matrix": each product as the int8 export computes it, DynamicQuantizeMatMul of the
    weight in int8 (symmetric, [-127, 127]) with one scale per output column or one for
    the whole matrix, the input quantized to uint8 on each call."""
    if importlib.util.find_spec("onnxruntime") is None:
        return None
    import numpy as np
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from bert_lib.export.onnx_runtimes import symmetric_int8

    nodes, initializers, outputs = [], [], []
    for i, w in enumerate(weights):
        x = f"x{w.shape[0]}"
        if int8 is None:
            initializers.append(numpy_helper.from_array(w, f"w{i}"))
            nodes.append(helper.make_node("MatMul", [x, f"w{i}"], [f"y{i}"]))
        else:
            quantized, scale = symmetric_int8(w, axis=0 if int8 == "column" else None)
            initializers.append(numpy_helper.from_array(quantized, f"w{i}"))
            # One scale per output column, or one element for the matrix: ONNX
            # Runtime takes a vector of either size.
            scale = scale.reshape(-1).astype(np.float32)
            initializers.append(numpy_helper.from_array(scale, f"s{i}"))
            nodes.append(
                helper.make_node(
                    "DynamicQuantizeMatMul",
                    [x, f"w{i}", f"s{i}"],
                    [f"y{i}"],
                    domain="com.microsoft",
                )
            )
        outputs.append(helper.make_tensor_value_info(f"y{i}", TensorProto.FLOAT, None))
    inputs = [
        helper.make_tensor_value_info(f"x{n}", TensorProto.FLOAT, ["tokens", n]) for n in widths
    ]
    graph = helper.make_graph(nodes, "dense_matmuls", inputs, outputs, initializers)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _print_counts(title, counts):
    watched = ", ".join(f"{op} {counts[op]}" for op in WATCHED if counts[op])
    others = sum(n for op, n in counts.items() if op not in WATCHED)
    print(f"  {title}: {sum(counts.values())} ops; {watched}; others {others}")
    rest = ", ".join(f"{op} {n}" for op, n in counts.most_common() if op not in WATCHED)
    print(f"    others: {rest}")


def main(argv=None):
    args = parse_args(argv)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    cfg = dict(peer_speed.QUICK if args.quick else peer_speed.FULL)
    if args.floor_only:
        exports = {}
    elif args.export_dirs:
        exports = {os.path.abspath(d): d for d in args.export_dirs}
    else:
        work_dir = args.work_dir or tempfile.mkdtemp(prefix="serving_cost_")
        os.makedirs(work_dir, exist_ok=True)
        exports = export_models(cfg, work_dir, args.precisions)
    results = {}
    floors = matmul_floor(cfg, args.lengths, args.calls)
    print("the dense matmuls of one call alone, batch 1 (ms, medians; time / ONNX Runtime's):")
    for length, sides in floors.items():
        for side, (wall, cpu, ratio) in sides.items():
            against = f", {ratio:.2f}x" if ratio is not None else ""
            print(f"  {length:3d} tokens, {side:36s} wall {wall:6.2f} CPU {cpu:6.2f}{against}")
    results["dense_matmuls_alone"] = {str(n): sides for n, sides in floors.items()}
    for name, export_dir in exports.items():
        print(f"{name}: {export_dir}", flush=True)
        written = graph_op_counts(export_dir)
        traced = traced_op_counts(export_dir, args.trace_tokens)
        _print_counts("serving graph as written", written)
        _print_counts(f"ops run in one call, {args.trace_tokens} tokens", traced)
        costs = call_costs(export_dir, args.lengths, args.calls)
        for way, by_length in costs.items():
            for length, (wall, cpu) in by_length.items():
                print(
                    f"  {way:9s} batch 1, {length:3d} tokens: wall {wall:6.2f} ms, "
                    f"CPU {cpu:6.2f} ms (medians of {args.calls})",
                    flush=True,
                )
        results[name] = {
            "export_dir": export_dir,
            "written_ops": dict(written),
            "traced_ops": dict(traced),
            "costs": {way: {str(n): c for n, c in v.items()} for way, v in costs.items()},
        }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2, sort_keys=True)


if __name__ == "__main__":
    main()
