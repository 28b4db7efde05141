"""Predictor on an export's ONNX files against a user's tuned ONNX Runtime session, in turn.

peer_speed.py --jobs=serve times each side in its own process, one after
another; on a machine whose speed drifts over minutes (a shared virtual
machine) two such runs can disagree on a ratio by a third. Here every
contender lives in one process and they take turns: each round times
--calls calls of each, one after the other, so drift falls on all alike.
The figure is the median over --rounds of the mean CPU (process time) and
wall ms per call.

Contenders, all on the CPU with --threads intra-op threads (inter-op 1):
Predictor(export_dir, runtime="onnxruntime") at fp32 (model.onnx) and int8
(model_int8.onnx), and a plain onnxruntime.InferenceSession on each --tuned
file (what a user's optimize_model, and quantize_dynamic after it, wrote:
peer_speed.py --jobs=serve leaves them in its --work_dir as
tuned_model.onnx and tuned_model_int8.onnx). With --per_matrix_int8, also
the export's model.onnx quantized as model_int8.onnx is but with one weight
scale per matrix (onnx_export.quantize_int8(per_column=False), written to a
temporary directory), in a plain session: it tells the cost of the export's
per-column scales apart from the rest. With --saved_model, also
Predictor(export_dir) on the SavedModel (TensorFlow on --threads intra-op
threads, inter-op 1, unless TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS
say otherwise), and its time against Predictor's ONNX Runtime float32 call.
Token ids as peer_speed's: [CLS] then one word piece repeated, mask all ones.

Each round runs the contenders in an order shuffled anew (seeded), and
beside the medians of each the script prints the median over rounds of the
tuned session's time / each contender's in that round: a ratio taken
within a round, which a drift over minutes leaves alone.

    .venv/bin/python benchmarks/serve_interleaved.py \\
        --export_dir=/tmp/peer_speed/export_fp32 \\
        --tuned=fp32:/tmp/peer_speed/tuned_model.onnx,int8:/tmp/peer_speed/tuned_model_int8.onnx
"""

import argparse
import os
import random
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import speed_common  # noqa: E402

INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")
PER_MATRIX = "model.onnx int8 per matrix, session"
SAVED_MODEL = "Predictor, SavedModel"
ONNX_FP32 = "Predictor, ONNX Runtime fp32"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export_dir", required=True)
    parser.add_argument("--tuned", required=True, help="PRECISION:FILE,... (fp32, int8)")
    parser.add_argument("--shapes", default="1x2,1x50,32x50", help="BATCHxTOKENS,...")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--per_matrix_int8",
        action="store_true",
        help="also time model.onnx quantized with one weight scale per matrix",
    )
    parser.add_argument(
        "--saved_model",
        action="store_true",
        help="also time Predictor on the SavedModel (TensorFlow)",
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--calls", type=int, default=20, help="calls a turn at batch 1; batch B: calls // B, >= 3"
    )
    return parser.parse_args(argv)


def contenders(args):
    """[(name, call(ids))]: Predictor at each precision, then the tuned sessions."""
    import onnxruntime as ort

    from bert_lib.export import predictor

    found = []
    tuned = dict(item.split(":", 1) for item in args.tuned.split(","))
    for precision in ("fp32", "int8"):
        served = predictor.Predictor(
            args.export_dir,
            runtime="onnxruntime",
            precision=precision,
            num_threads=args.threads,
        )
        found.append(
            (f"Predictor, ONNX Runtime {precision}", lambda ids, s=served: s.predict_ids(*ids))
        )
        if precision in tuned:
            found.append(
                (
                    f"tuned ONNX Runtime session {precision}",
                    _session(ort, tuned[precision], args.threads),
                )
            )
    if args.saved_model:
        served = predictor.Predictor(args.export_dir)
        found.append((SAVED_MODEL, lambda ids, s=served: s.predict_ids(*ids)))
    if args.per_matrix_int8:
        from bert_lib.bert_runs import onnx_export

        path = os.path.join(tempfile.mkdtemp(prefix="per_matrix_int8_"), "model_int8.onnx")
        onnx_export.quantize_int8(
            os.path.join(args.export_dir, onnx_export.ONNX_FILE), path, per_column=False
        )
        found.append((PER_MATRIX, _session(ort, path, args.threads)))
    return found


def _session(ort, path, threads):
    """call(ids) of a plain InferenceSession on `path`, `threads` intra-op, inter-op 1."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    return lambda ids: session.run(None, dict(zip(INPUT_NAMES, ids)))[0]


def id_arrays(batch, length):
    import numpy as np

    ids = np.asarray([[101] + [2023] * (length - 1)] * batch, np.int32)
    return ids, np.ones_like(ids), np.zeros_like(ids)


def main(argv=None):
    args = parse_args(argv)
    # TensorFlow reads its thread counts once, when it starts (before contenders()).
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", str(args.threads))
    os.environ.setdefault("TF_NUM_INTEROP_THREADS", "1")
    print(f"load before: {open('/proc/loadavg').read().strip()}", flush=True)
    calls = contenders(args)
    shuffler = random.Random(0)
    for shape in args.shapes.split(","):
        batch, length = (int(n) for n in shape.split("x"))
        ids = id_arrays(batch, length)
        count = max(3, args.calls // batch)
        for _, call in calls:  # warm-up
            for _ in range(3):
                call(ids)
        bound = {name: (lambda call=call, ids=ids: call(ids)) for name, call in calls}
        per = speed_common.time_in_turns(bound, args.rounds, count, shuffler)
        print(
            f"\nbatch {batch} x {length} tokens, {args.threads} thread(s): ms a call, wall (CPU)"
        )
        medians = {
            name: (statistics.median(w), statistics.median(c)) for name, (w, c) in per.items()
        }
        for name, (wall, cpu) in medians.items():
            print(f"  {name:40s} {wall:9.2f} ({cpu:.2f})")
        for precision in ("fp32", "int8"):
            tuned = per.get(f"tuned ONNX Runtime session {precision}")
            if not tuned:
                continue
            ours = [f"Predictor, ONNX Runtime {precision}"]
            ours += [PER_MATRIX] if precision == "int8" and PER_MATRIX in per else []
            for name in ours:
                wall, cpu = (
                    statistics.median(t / o for t, o in zip(tuned[i], per[name][i]))
                    for i in (0, 1)
                )
                print(
                    f"  {precision}: tuned / {name} = {wall:.2f}x wall, {cpu:.2f}x CPU "
                    "(medians of each round's ratio)"
                )
        if SAVED_MODEL in per and ONNX_FP32 in per:
            wall, cpu = (
                statistics.median(t / o for t, o in zip(per[SAVED_MODEL][i], per[ONNX_FP32][i]))
                for i in (0, 1)
            )
            print(
                f"  SavedModel / {ONNX_FP32} = {wall:.2f}x wall, {cpu:.2f}x CPU "
                "(medians of each round's ratio)"
            )
    print(f"\nload after: {open('/proc/loadavg').read().strip()}")


if __name__ == "__main__":
    main()
