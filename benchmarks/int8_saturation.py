"""Where ONNX Runtime's int8 matmuls saturate on x86 CPUs without VNNI, and the accuracy lost.

An export's model_int8.onnx (run_classifier.py --export_format=onnx_int8)
multiplies uint8 activations by int8 weights (MatMulInteger, u8s8). ONNX
Runtime's x86 kernels for CPUs without VNNI (AVX2, AVX-512 without VNNI)
multiply with vpmaddubsw, which adds the two products of each adjacent pair
along the reduction axis (k, k + 1 for even k) into an int16 that saturates
at -32768 and 32767, then widen the pair sums to int32. They multiply the
raw uint8 activations, and take the zero point off afterwards, exactly, with
the sums of each row and column. Two full-range products reach
2 x 255 x 127 = 64770; with reduce_range (7-bit weights, [-64, 64]) they
reach 32640 and never saturate. With VNNI (vpdpbusd) every sum is int32:
the arithmetic is exact, the CPU this was measured on included.

So the non-VNNI result is emulated, the same on any machine: the int8 graph
runs in ONNX Runtime, cut after each MatMulInteger, whose exact product
(ONNX Runtime's) loses in numpy what int16 saturation of the pair sums
takes, computed from the uint8 activations and zero point the graph
actually produced; the later stages take the saturated product. Numpy's
own integer products (StagedInt8Model without products_by_onnxruntime) are
checked against ONNX Runtime's run of the whole file on the first
--check_examples. Printed:

- per integer matmul, how many pair sums of the dev set fall outside int16
  (padding rows of a batch included: the kernel computes them too), and how
  many output values they change;
- the dev accuracy of float32 (model.onnx), of int8 as ONNX Runtime runs it
  here (exact), of int8 with saturation emulated, and of the same export
  quantized with reduce_range (its own file, written by
  onnx_export.quantize_int8 from model.onnx; its weights' largest
  magnitude is printed, which bounds its pair sums), with each one's
  largest probability change from int8 and how many labels changed.

Batches are Predictor's: --batch_size texts in file order, cut to the
longest (activations are quantized per call, so a batch's range matters).

  .venv/bin/python benchmarks/int8_saturation.py --export_dir=/tmp/nsp_export \\
      --task_name=mrpc --data_dir=benchmarks/real_text/next_sentence_pairs
"""

import argparse
import collections
import os
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INT16_MIN, INT16_MAX = -32768, 32767
# Candidate pairs are scanned this many at a time (an [rows, chunk] int32 block).
_CHUNK_VALUES = 1 << 24


def saturated_pairs(a, b):
    """What int16 saturation of each pair sum takes off a u8s8 product, and where.

    `a` is uint8 [M, K], `b` int8 [K, N]. The kernel sums a[m, k] b[k, n] +
    a[m, k + 1] b[k + 1, n] for even k in an int16 (an odd K is padded with
    a zero). Returns (excess, count): excess int64 [M, N], the sum over pairs
    of (pair sum - its clip to int16), which the saturated product lacks;
    count, how many pair sums fall outside int16. Only pairs whose weights
    have the same sign and |b0 + b1| > 128 can leave int16 (255 x 128 =
    32640), so only those are computed.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape[1] % 2:
        a = np.pad(a, ((0, 0), (0, 1)))
        b = np.pad(b, ((0, 1), (0, 0)))
    b0, b1 = b[0::2].astype(np.int32), b[1::2].astype(np.int32)
    pair, column = np.nonzero(np.abs(b0 + b1) > 128)
    excess = np.zeros([a.shape[0], b.shape[1]], np.int64)
    count = 0
    if not len(pair):
        return excess, count
    a0, a1 = a[:, 0::2].astype(np.int32), a[:, 1::2].astype(np.int32)
    step = max(1, _CHUNK_VALUES // max(1, a.shape[0]))
    for start in range(0, len(pair), step):
        j, n = pair[start : start + step], column[start : start + step]
        sums = a0[:, j] * b0[j, n] + a1[:, j] * b1[j, n]
        over = sums - np.clip(sums, INT16_MIN, INT16_MAX)
        rows, candidates = np.nonzero(over)
        count += len(rows)
        np.add.at(excess, (rows, n[candidates]), over[rows, candidates])
    return excess, count


def matmul_integer(a, b, a_zero_point=0, b_zero_point=0, saturate=False):
    """ONNX's MatMulInteger, (a - a_zero_point) @ (b - b_zero_point) in int32, computed as
    ONNX Runtime's x86 u8s8 kernels compute it: the raw product, then the zero points taken
    off with the row and column sums. With `saturate` (uint8 `a`, int8 `b`) each pair sum
    of the raw product is clipped to int16 first, as without VNNI.

    Returns (product int32 [..., N], pair sums outside int16, output values changed).
    `a` is [..., K]; `b` [K, N]; `b_zero_point` a scalar or one per column."""
    a = np.asarray(a)
    b = np.asarray(b)
    lead, k = a.shape[:-1], a.shape[-1]
    a2 = a.reshape(-1, k)
    # Exact in float64: |sum| <= K x 255 x 255, far below 2 ** 53.
    raw = np.rint(a2.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)
    count = changed = 0
    if saturate and a.dtype == np.uint8 and b.dtype == np.int8:
        excess, count = saturated_pairs(a2, b)
        raw -= excess
        changed = int(np.count_nonzero(excess))
    a_zp = np.int64(np.asarray(a_zero_point).reshape(()))
    b_zp = np.asarray(b_zero_point, np.int64).reshape(-1)
    product = (
        raw
        - a_zp * b.astype(np.int64).sum(axis=0)
        - a2.astype(np.int64).sum(axis=1, keepdims=True) * b_zp
        + k * a_zp * b_zp
    )
    return product.astype(np.int32).reshape(*lead, b.shape[1]), count, changed


class StagedInt8Model:
    """An ONNX file run by ONNX Runtime in stages, cut after each MatMulInteger.

    Each stage is the graph's nodes that can run with what is known so far,
    MatMulInteger nodes excepted, as one ONNX Runtime session; then each
    MatMulInteger whose inputs are then known gives its output as
    `matmul(name, a, b, a_zero_point, b_zero_point, product)` (-> int32
    array), which the later stages take. With `products_by_onnxruntime` the
    MatMulInteger nodes run in the stage's session too and `product` is
    their exact output (the callback may correct it); otherwise `product`
    is None and the callback computes it. Weights and their zero points come
    from the file's initializers. Sessions are built on the first call, when
    the types of their inputs are known.
    """

    def __init__(self, path, matmul, num_threads=1, products_by_onnxruntime=False):
        import onnx
        from onnx import numpy_helper

        self._onnx = onnx
        model = onnx.load(path)
        graph = model.graph
        self._model = model
        self._matmul = matmul
        self._num_threads = num_threads
        self._initializers = {i.name: i for i in graph.initializer}
        self._constants = {}
        self.output_names = [o.name for o in graph.output]
        inputs = [i.name for i in graph.input if i.name not in self._initializers]
        known = set(inputs) | set(self._initializers) | {""}
        remaining = list(graph.node)
        self._stages = []
        while remaining:
            available, nodes = set(known), []
            for node in remaining:
                if node.op_type != "MatMulInteger" and all(i in available for i in node.input):
                    nodes.append(node)
                    available.update(node.output)
            matmuls = [
                n
                for n in remaining
                if n.op_type == "MatMulInteger" and all(i in available for i in n.input)
            ]
            if not nodes and not matmuls:
                raise ValueError(f"{path}: nodes whose inputs nothing produces")
            done = {id(n) for n in nodes + matmuls}
            remaining = [n for n in remaining if id(n) not in done]
            run = nodes + matmuls if products_by_onnxruntime else nodes
            later = {i for n in remaining for i in n.input} | set(self.output_names)
            # The matmuls' activations and zero points, and what later stages take.
            later |= {i for n in matmuls for i in n.input[:1] + n.input[2:3]}
            produced = [o for n in run for o in n.output if o]
            self._stages.append(
                {
                    "nodes": run,
                    "inputs": sorted({i for n in run for i in n.input if i in known} - {""}),
                    "outputs": [o for o in produced if o in later or o in _outputs(matmuls)],
                    "matmuls": matmuls,
                    "session": None,
                }
            )
            known = available | set(_outputs(matmuls))
            for n in matmuls:
                for name in n.input[1:]:
                    if name in self._initializers and name not in self._constants:
                        self._constants[name] = numpy_helper.to_array(self._initializers[name])

    def _session(self, stage, values):
        import onnxruntime as ort

        onnx, helper = self._onnx, self._onnx.helper
        graph = helper.make_graph(
            stage["nodes"],
            "stage",
            [
                helper.make_tensor_value_info(
                    name, helper.np_dtype_to_tensor_dtype(values[name].dtype), None
                )
                for name in stage["inputs"]
                if name not in self._initializers
            ],
            [onnx.ValueInfoProto(name=name) for name in stage["outputs"]],
            initializer=[
                self._initializers[n] for n in stage["inputs"] if n in self._initializers
            ],
        )
        model = helper.make_model(
            graph, opset_imports=self._model.opset_import, ir_version=self._model.ir_version
        )
        options = ort.SessionOptions()
        options.intra_op_num_threads = self._num_threads
        options.log_severity_level = 3
        return ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, feeds):
        """{output name: array} of the graph for {input name: array}."""
        values = dict(feeds)
        for stage in self._stages:
            if stage["nodes"]:
                if stage["session"] is None:
                    stage["session"] = self._session(stage, values)
                feed = {n: values[n] for n in stage["inputs"] if n not in self._initializers}
                values.update(zip(stage["outputs"], stage["session"].run(stage["outputs"], feed)))
            for node in stage["matmuls"]:
                names = list(node.input) + [""] * (4 - len(node.input))
                a, b, a_zp, b_zp = (
                    values[n] if n in values else self._constants.get(n, 0) for n in names
                )
                product = values.get(node.output[0])
                values[node.output[0]] = self._matmul(node.name, a, b, a_zp, b_zp, product)
        return {name: values[name] for name in self.output_names}


def _outputs(nodes):
    return [o for n in nodes for o in n.output]


class SaturationCounts:
    """A `matmul` for StagedInt8Model that saturates (or not) and counts, per MatMulInteger:
    pair sums, those outside int16, output values changed. Given the exact product, it
    takes off what saturation takes (saturated_pairs); otherwise it computes the product
    (matmul_integer)."""

    def __init__(self, saturate):
        self.saturate = saturate
        self.counts = collections.OrderedDict()

    def __call__(self, name, a, b, a_zero_point, b_zero_point, product=None):
        if product is None:
            product, over, changed = matmul_integer(
                a, b, a_zero_point, b_zero_point, self.saturate
            )
        elif self.saturate and a.dtype == np.uint8 and b.dtype == np.int8:
            excess, over = saturated_pairs(a.reshape(-1, a.shape[-1]), b)
            product = (product.reshape(excess.shape) - excess).astype(np.int32)
            product, changed = product.reshape(*a.shape[:-1], -1), int(np.count_nonzero(excess))
        else:
            over = changed = 0
        rows = int(np.prod(a.shape[:-1]))
        row = self.counts.setdefault(name, {"pairs": 0, "saturated": 0, "changed": 0})
        row["pairs"] += rows * ((a.shape[-1] + 1) // 2) * b.shape[1]
        row["saturated"] += over
        row["changed"] += changed
        return product


def layer_name(node_name):
    """bert/encoder/layer_0/attention/self/query/MatMul_quant -> layer_0/attention/self/query."""
    name = node_name.removesuffix("_quant").removesuffix("/MatMul")
    return name.removeprefix("bert/encoder/").removeprefix("bert/")


def largest_weight(path):
    """The largest magnitude of the int8 weights of the integer matmuls of an ONNX file."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path)
    weights = {n.input[1] for n in model.graph.node if n.op_type == "MatMulInteger"}
    return max(
        int(np.abs(numpy_helper.to_array(i).astype(np.int32)).max())
        for i in model.graph.initializer
        if i.name in weights
    )


def predict(run, encode, texts, batch_size):
    """[n, labels] probabilities of `run` ({input: array} -> [probabilities]) on `texts`,
    in Predictor's batches (batch_size texts in order, cut to the longest)."""
    outputs = []
    for start in range(0, len(texts), batch_size):
        arrays = encode.arrays(texts[start : start + batch_size], cut=True)
        feeds = dict(zip(("input_ids", "input_mask", "segment_ids"), arrays))
        outputs.append(run(feeds))
    return np.concatenate(outputs)


def counts_table(counts):
    lines = [
        "| integer matmul | pair sums | outside int16 | fraction | outputs changed |",
        "|---|---:|---:|---:|---:|",
    ]
    total = collections.Counter()
    for name, row in counts.items():
        total.update(row)
        lines.append(
            f"| {layer_name(name)} | {row['pairs']:,} | {row['saturated']:,} | "
            f"{row['saturated'] / row['pairs']:.2e} | {row['changed']:,} |"
        )
    lines.append(
        f"| all {len(counts)} | {total['pairs']:,} | {total['saturated']:,} | "
        f"{total['saturated'] / max(1, total['pairs']):.2e} | {total['changed']:,} |"
    )
    return "\n".join(lines)


def accuracy_table(results, gold, reference):
    """Markdown: each run's accuracy, its largest probability change from `reference` and
    how many labels differ from it."""
    lines = [
        f"| run | dev accuracy | max abs probability change vs {reference} | labels changed |",
        "|---|---:|---:|---:|",
    ]
    base = results[reference]
    for name, probabilities in results.items():
        accuracy = float(np.mean(probabilities.argmax(-1) == gold))
        change = float(np.abs(probabilities - base).max())
        flips = int(np.sum(probabilities.argmax(-1) != base.argmax(-1)))
        lines.append(f"| {name} | {accuracy:.4f} | {change:.2e} | {flips} |")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export_dir", required=True, help="holds model.onnx, model_int8.onnx")
    parser.add_argument("--data_dir", required=True, help="the task's dev set")
    parser.add_argument("--task_name", default="mrpc")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_examples", type=int, default=0, help="0: the whole dev set")
    parser.add_argument("--num_threads", type=int, default=1)
    parser.add_argument(
        "--check_examples",
        type=int,
        default=64,
        help="how many examples check numpy's integer products against ONNX Runtime",
    )
    parser.add_argument(
        "--work_dir", default=None, help="where the reduce_range file is written (default: temp)"
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    sys.path.insert(0, REPO)
    from bert_lib.bert_runs import onnx_export
    from bert_lib.export import predictor
    from bert_lib.plumbing.errors import UsageError
    from bert_lib.task_data import classifier_tasks

    try:
        served = predictor.Predictor(
            args.export_dir, runtime="onnxruntime", precision="int8", num_threads=args.num_threads
        )
        examples = classifier_tasks.get_processor(args.task_name).get_dev_examples(args.data_dir)
    except (UsageError, OSError, ValueError) as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    if args.max_examples:
        examples = examples[: args.max_examples]
    texts = [e.text_a if e.text_b is None else (e.text_a, e.text_b) for e in examples]
    gold = np.array([served.labels.index(e.label) for e in examples])
    fp32_path = os.path.join(args.export_dir, onnx_export.ONNX_FILE)
    int8_path = os.path.join(args.export_dir, onnx_export.ONNX_INT8_FILE)

    def session(path):
        model = predictor.onnx_runtimes.load(path, "onnxruntime", "fp32", args.num_threads)
        return lambda feeds: model(tuple(feeds[n] for n in predictor.INPUT_NAMES))[
            served.output_name
        ]

    def staged(path, saturate, products_by_onnxruntime):
        counts = SaturationCounts(saturate)
        model = StagedInt8Model(path, counts, args.num_threads, products_by_onnxruntime)
        return (lambda feeds: model(feeds)[served.output_name]), counts

    print(f"{len(texts)} dev examples of {args.data_dir}, batches of {args.batch_size}")
    # The numpy products against ONNX Runtime's own run of the whole file, on the first ones.
    check_texts = texts[: args.check_examples]
    run, _ = staged(int8_path, False, False)
    numpy_products = predict(run, served.encode, check_texts, args.batch_size)
    onnxruntime_int8 = predict(session(int8_path), served.encode, check_texts, args.batch_size)
    check = np.abs(numpy_products - onnxruntime_int8).max()
    print(
        f"int8 with numpy's integer products vs ONNX Runtime's own run, first "
        f"{len(check_texts)} examples: max abs difference {check:.1e}",
        flush=True,
    )
    results = collections.OrderedDict()

    def score(name, run):
        results[name] = predict(run, served.encode, texts, args.batch_size)
        print(f"{name}: {np.mean(results[name].argmax(-1) == gold):.4f}", flush=True)

    score("int8, ONNX Runtime here", session(int8_path))
    run, counts = staged(int8_path, True, True)
    score("int8, saturation emulated", run)
    print("\nPair sums outside int16, full 8-bit weights (model_int8.onnx):\n")
    print(counts_table(counts.counts), flush=True)
    with tempfile.TemporaryDirectory(dir=args.work_dir) as work:
        reduced = os.path.join(work, "model_int8_reduce_range.onnx")
        onnx_export.quantize_int8(fp32_path, reduced, reduce_range=True)
        largest = largest_weight(reduced)
        print(
            f"\nreduce_range: the largest |weight| is {largest}, so no pair sum passes "
            f"2 x 255 x {largest} = {2 * 255 * largest} (int16: 32767)\n",
            flush=True,
        )
        score("reduce_range int8, ONNX Runtime here", session(reduced))
    score("float32 (model.onnx)", session(fp32_path))
    print()
    print(accuracy_table(results, gold, "int8, ONNX Runtime here"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
