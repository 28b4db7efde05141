"""Fine-tuning traced step by step at two precisions on the same batches, masks and head.

Each run here fine-tunes one classifier with run_classifier.create_model
and optimization's step (warm-up, Adam with weight decay, clipping at norm
1), on batches drawn once per seed and fed to every run alike; each
dropout site takes a seed of its own (its order of construction), and the
head starts from one numpy draw. What then differs between two runs is
the arithmetic, or what the options below change. (A seeded
run_classifier.py draws the same head and dropout masks at fp32 and
bf16 as well: TensorFlow numbers the random ops of a graph in the order
they are made, and the casts of a 16-bit graph are not random ops.)

Per step it writes the loss and the gradient norm of each kind of weight
(JSON lines, trace-<run>.jsonl); at the end the dev accuracy. With
--shadow=bf16, the run trains in its own precision and takes, at every
step, the same batch's gradients through a second tower that computes in
the shadow precision from the same weights: the error of each kind's
gradient against the run's own, step by step, on the run's trajectory.

Options to bisect:
  --batching   full (max_seq_length), cut (--dynamic_padding; with
               --group_by_length a step takes the same examples)
  --cls_only   the last layer computed at [CLS] only in training (what
               run_classifier.py does with --dynamic_padding), or not
  --float32_parts  in a 16-bit run, pieces computed in float32 instead:
               qk (Q K^T), av (attention probabilities times V), dense
               (every dense matmul of the encoder), act (the feed-forward
               activation), dense_grads (the gradients of the dense
               matmuls: computed from float32 copies of their inputs)

  .venv/bin/python benchmarks/precision_trace.py --model_dir=/tmp/minilm_tf \\
      --task_dir=benchmarks/real_text/next_sentence_pairs --work_dir=/tmp/trace \\
      --seeds=1,2,3 --precisions=fp32,bf16 --batching=cut
"""

import argparse
import json
import os
import re
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

import tensorflow as tf  # noqa: E402

import modeling  # noqa: E402
import optimization  # noqa: E402
import run_classifier  # noqa: E402
import tokenization  # noqa: E402
from bert_lib.task_data import classifier_features, dynamic_padding, features  # noqa: E402
from bert_lib.task_data.classifier_data import MrpcProcessor  # noqa: E402

DTYPES = {"fp32": None, "bf16": tf.bfloat16, "fp16": tf.float16}
KINDS = (
    ("word_embeddings", "embeddings/word_embeddings"),
    ("position_token_type", "embeddings/(position|token_type)_embeddings"),
    ("qkv_kernel", "attention/self/(query|key|value)/kernel"),
    ("qkv_bias", "attention/self/(query|key|value)/bias"),
    ("attention_output_kernel", "attention/output/dense/kernel"),
    ("intermediate_kernel", "intermediate/dense/kernel"),
    ("output_kernel", r"layer_\d+/output/dense/kernel"),
    ("dense_bias", r"(attention/output|intermediate|layer_\d+/output)/dense/bias"),
    ("layer_norm", "LayerNorm"),
    ("pooler", "pooler"),
    ("head", "^output_"),
)


def kind_of(name):
    for kind, pattern in KINDS:
        if re.search(pattern, name):
            return kind
    raise ValueError(f"no kind for {name}")


# ---------------------------------------------------------------------------
# Seeded sites: the same masks at every precision


class SeededDropout:
    """tf.nn.dropout with an op seed of each call's order, counted from reset()."""

    def __init__(self):
        self.original = tf.nn.dropout
        self.count = 0

    def reset(self):
        self.count = 0

    def __call__(self, x, rate=None, noise_shape=None, seed=None, name=None, **kwargs):
        self.count += 1
        return self.original(x, rate=rate, noise_shape=noise_shape, seed=1000 + self.count)


# ---------------------------------------------------------------------------
# Float32 islands in a 16-bit model


def install_float32_parts(parts):
    """Patches modeling so the pieces named in `parts` compute in float32."""
    original_dense = modeling.dense
    original_attention = modeling._scaled_dot_product_attention

    if "dense" in parts or "act" in parts or "dense_grads" in parts:

        def dense(input_tensor, units, activation=None, kernel_initializer=None, name=None):
            dtype = input_tensor.dtype
            if dtype == tf.float32 or "dense" not in parts and "dense_grads" not in parts:
                if "act" in parts and activation is not None and dtype != tf.float32:
                    out = original_dense(input_tensor, units, None, kernel_initializer, name)
                    return tf.cast(activation(tf.cast(out, tf.float32)), dtype)
                return original_dense(input_tensor, units, activation, kernel_initializer, name)
            if "dense" in parts:
                out = original_dense(
                    tf.cast(input_tensor, tf.float32), units, None, kernel_initializer, name
                )
                if activation is not None:
                    out = activation(out) if "act" in parts else activation(tf.cast(out, dtype))
                return tf.cast(out, dtype)
            # dense_grads: 16-bit forward, float32 backward of the matmul.
            with tf.compat.v1.variable_scope(name, default_name="dense"):
                kernel = tf.compat.v1.get_variable(
                    "kernel",
                    shape=[input_tensor.shape[-1], units],
                    initializer=kernel_initializer or modeling.create_initializer(),
                )
                bias = tf.compat.v1.get_variable(
                    "bias", shape=[units], initializer=tf.compat.v1.zeros_initializer()
                )
                out = _matmul_float32_gradients(modeling.reshape_to_matrix(input_tensor), kernel)
                out = tf.cast(
                    tf.nn.bias_add(tf.cast(out, tf.float32), bias), dtype
                )  # bias in float32
                if activation is not None:
                    out = (
                        tf.cast(activation(tf.cast(out, tf.float32)), dtype)
                        if "act" in parts
                        else activation(out)
                    )
                if input_tensor.shape.ndims > 2:
                    out = modeling.reshape_from_matrix(out, modeling.get_shape_list(input_tensor))
                return out

        modeling.dense = dense

    if "qk" in parts or "av" in parts:

        def attention(query, key, value, mask, size_per_head, dropout_prob):
            dtype = value.dtype
            if dtype == tf.float32:
                return original_attention(query, key, value, mask, size_per_head, dropout_prob)
            if "qk" in parts:
                query, key = tf.cast(query, tf.float32), tf.cast(key, tf.float32)
            scores = tf.matmul(query, key, transpose_b=True) * (1.0 / np.sqrt(size_per_head))
            scores = tf.cast(scores, tf.float32)
            if mask is not None:
                mask = tf.expand_dims(mask, axis=1)
                scores += (1.0 - tf.cast(mask, tf.float32)) * modeling.ATTENTION_MASK_ADDER
            probs = modeling.dropout(tf.nn.softmax(scores), dropout_prob)
            if "av" in parts:
                return tf.cast(tf.matmul(probs, tf.cast(value, tf.float32)), dtype)
            return tf.matmul(tf.cast(probs, dtype), value)

        modeling._scaled_dot_product_attention = attention


@tf.custom_gradient
def _matmul_float32_gradients(matrix, kernel):
    """matrix @ cast(kernel) in the matrix's dtype; both gradients from float32 copies."""
    output = tf.matmul(matrix, tf.cast(kernel, matrix.dtype))

    def gradient(dy):
        dy32 = tf.cast(dy, tf.float32)
        dx = tf.matmul(dy32, kernel, transpose_b=True)
        dw = tf.matmul(tf.cast(matrix, tf.float32), dy32, transpose_a=True)
        return tf.cast(dx, matrix.dtype), dw

    return output, gradient


# ---------------------------------------------------------------------------
# Data


def write_records(task_dir, vocab_file, work_dir, max_seq_length):
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    processor = MrpcProcessor()
    paths = {}
    for split, examples in (
        ("train", processor.get_train_examples(task_dir)),
        ("dev", processor.get_dev_examples(task_dir)),
    ):
        path = os.path.join(work_dir, f"{split}.tf_record")
        if not os.path.exists(path):
            classifier_features.file_based_convert_examples_to_features(
                examples, processor.get_labels(), max_seq_length, tokenizer, path
            )
        paths[split] = (path, len(examples))
    return paths


def record_features(max_seq_length):
    """The features of the classifier's records that a run here reads."""
    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.int64),
    }


def draw_batches(path, seed, batching, steps, batch_size, max_seq_length):
    """The training batches a seeded run reads, as numpy dicts."""
    name_to_features = record_features(max_seq_length)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(seed)
        dataset = tf.data.TFRecordDataset(path).repeat().shuffle(100)
        dataset = dataset.map(lambda r: features.decode_record(r, name_to_features))
        dataset = dataset.batch(batch_size, drop_remainder=True)
        if batching == "cut":
            dataset = dataset.map(
                lambda b: dynamic_padding.trim_batch(b, 1, dynamic_padding.SEQUENCE_KEYS)
            )
        element = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        with tf.compat.v1.Session() as session:
            return [session.run(element) for _ in range(steps)]


def dev_batches(path, batch_size, max_seq_length):
    name_to_features = record_features(max_seq_length)
    graph = tf.Graph()
    with graph.as_default():
        dataset = tf.data.TFRecordDataset(path).map(
            lambda r: features.decode_record(r, name_to_features)
        )
        element = tf.compat.v1.data.make_one_shot_iterator(dataset.batch(batch_size)).get_next()
        batches = []
        with tf.compat.v1.Session() as session:
            try:
                while True:
                    batches.append(session.run(element))
            except tf.errors.OutOfRangeError:
                pass
    return batches


# ---------------------------------------------------------------------------
# One run


def build_tower(bert_config, placeholders, is_training, dtype, cls_only, dropout):
    dropout.reset()
    with tf.compat.v1.variable_scope(
        tf.compat.v1.get_variable_scope(), reuse=tf.compat.v1.AUTO_REUSE
    ):
        return run_classifier.create_model(
            bert_config,
            is_training,
            placeholders["input_ids"],
            placeholders["input_mask"],
            placeholders["segment_ids"],
            placeholders["label_ids"],
            2,
            False,
            compute_dtype=dtype,
            pooled_output_only_in_training=cls_only,
        )


def _by_kind(values, tvars, kinds):
    """{kind: [the values of that kind's variables]}."""
    return {kind: [x for x, v in zip(values, tvars) if kind_of(v.name) == kind] for kind in kinds}


def build_run_graph(args, seed, precision, num_steps):
    """The training graph of one run: (placeholders, fetches of a step, probabilities, head)."""
    bert_config = modeling.BertConfig.from_json_file(
        os.path.join(args.model_dir, "bert_config.json")
    )
    dropout = SeededDropout()
    tf.compat.v1.set_random_seed(seed)
    tf.nn.dropout = dropout
    try:
        placeholders = {
            key: tf.compat.v1.placeholder(tf.int32, [None, None], key)
            for key in ("input_ids", "input_mask", "segment_ids")
        }
        placeholders["label_ids"] = tf.compat.v1.placeholder(tf.int32, [None], "label_ids")
        loss, _, _, _ = build_tower(
            bert_config, placeholders, True, DTYPES[precision], args.cls_only, dropout
        )
        tvars = tf.compat.v1.trainable_variables()
        grads = [tf.convert_to_tensor(g) for g in tf.gradients(loss, tvars)]
        if args.shadow:
            shadow_loss, _, _, _ = build_tower(
                bert_config, placeholders, True, DTYPES[args.shadow], args.cls_only, dropout
            )
            shadow_grads = [tf.convert_to_tensor(g) for g in tf.gradients(shadow_loss, tvars)]
        _, _, _, probabilities = build_tower(
            bert_config, placeholders, False, DTYPES[precision], True, dropout
        )
    finally:
        tf.nn.dropout = dropout.original
    global_step = tf.compat.v1.train.get_or_create_global_step()
    learning_rate = optimization.create_learning_rate(
        args.learning_rate, num_steps, int(num_steps * 0.1)
    )
    optimizer = optimization.create_bert_optimizer(learning_rate)
    train_op = optimization.apply_clipped_gradients(optimizer, grads, tvars, global_step)
    kinds = sorted({kind_of(v.name) for v in tvars})
    grads_by_kind = _by_kind(grads, tvars, kinds)
    norms = {kind: tf.linalg.global_norm(grads_by_kind[kind]) for kind in kinds}
    fetches = {"loss": loss, "norms": norms, "train": train_op}
    if args.shadow:
        shadow_by_kind = _by_kind(shadow_grads, tvars, kinds)
        pairs = {kind: list(zip(grads_by_kind[kind], shadow_by_kind[kind])) for kind in kinds}
        fetches["shadow_loss"] = shadow_loss
        fetches["shadow_error"] = {
            kind: tf.linalg.global_norm([s - g for g, s in pairs[kind]]) / norms[kind]
            for kind in kinds
        }
        # The shadow gradient's length along the run's own, per kind: below 1
        # where the shadow precision shrinks a gradient rather than blurs it.
        fetches["shadow_projection"] = {
            kind: tf.add_n([tf.reduce_sum(s * g) for g, s in pairs[kind]]) / tf.square(norms[kind])
            for kind in kinds
        }
    checkpoint = os.path.join(args.model_dir, "bert_model.ckpt")
    assignment_map, _ = modeling.get_assignment_map_from_checkpoint(tvars, checkpoint)
    tf.compat.v1.train.init_from_checkpoint(checkpoint, assignment_map)
    head = [v for v in tvars if v.name == "output_weights:0"][0]
    return placeholders, fetches, probabilities, head


def head_start(seed, shape, stddev=0.02):
    """The head's first weights: a normal draw truncated at two deviations, from numpy."""
    rng = np.random.RandomState(seed)
    value = rng.normal(0, stddev, shape)
    while np.any(np.abs(value) > 2 * stddev):
        outside = np.abs(value) > 2 * stddev
        value[outside] = rng.normal(0, stddev, outside.sum())
    return value.astype(np.float32)


def step_record(step, batch, out):
    """The trace line of one step."""
    record = {
        "step": step,
        "length": int(batch["input_ids"].shape[1]),
        "labels_1": int(batch["label_ids"].sum()),
        "loss": float(out["loss"]),
        "norms": {k: float(v) for k, v in out["norms"].items()},
    }
    if "shadow_error" in out:
        record["shadow_loss"] = float(out["shadow_loss"])
        for key in ("shadow_error", "shadow_projection"):
            record[key] = {k: float(v) for k, v in out[key].items()}
    return record


def run_one(args, seed, precision, batches, dev, name):
    """Trains one run on `batches`, writing its trace; returns (dev accuracy, seconds)."""
    with tf.Graph().as_default():
        placeholders, fetches, probabilities, head = build_run_graph(
            args, seed, precision, len(batches)
        )
        trace_path = os.path.join(args.work_dir, f"trace-{name}.jsonl")
        started = time.time()
        with tf.compat.v1.Session() as session, open(trace_path, "w") as trace:
            session.run(tf.compat.v1.global_variables_initializer())
            head.load(head_start(seed, head.shape.as_list()), session)
            for step, batch in enumerate(batches[: args.stop_after or None], start=1):
                out = session.run(fetches, {placeholders[k]: batch[k] for k in placeholders})
                trace.write(json.dumps(step_record(step, batch, out)) + "\n")
            correct = total = 0
            for batch in [] if args.skip_eval else dev:
                feed = {placeholders[k]: batch[k] for k in placeholders}
                probs = session.run(probabilities, feed)
                correct += int((probs.argmax(-1) == batch["label_ids"]).sum())
                total += len(batch["label_ids"])
    return correct / max(total, 1), time.time() - started


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--task_dir", required=True)
    parser.add_argument("--work_dir", required=True)
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument(
        "--batching",
        default="cut",
        choices=["full", "cut"],
    )
    parser.add_argument("--cls_only", type=int, default=None, help="default: 1 unless full")
    parser.add_argument("--float32_parts", default="")
    parser.add_argument("--shadow", default="", help="a precision to shadow each step in")
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=None, help="default: one epoch")
    parser.add_argument(
        "--stop_after", type=int, default=None, help="steps to train (the schedule stays --steps')"
    )
    parser.add_argument("--skip_eval", action="store_true")
    parser.add_argument("--tag", default="")
    args = parser.parse_args(argv)
    if args.cls_only is None:
        args.cls_only = args.batching != "full"
    args.cls_only = bool(args.cls_only)
    return args


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    parts = [p for p in args.float32_parts.split(",") if p]
    install_float32_parts(parts)
    paths = write_records(
        args.task_dir,
        os.path.join(args.model_dir, "vocab.txt"),
        args.work_dir,
        args.max_seq_length,
    )
    train_path, num_train = paths["train"]
    steps = args.steps or num_train // args.batch_size
    dev = dev_batches(paths["dev"][0], 64, args.max_seq_length)
    for seed in [int(s) for s in args.seeds.split(",")]:
        batches = draw_batches(
            train_path, seed, args.batching, steps, args.batch_size, args.max_seq_length
        )
        for precision in args.precisions.split(","):
            name = f"{args.batching}-cls{int(args.cls_only)}-{precision}-s{seed}"
            if parts:
                name += "-f32_" + "_".join(parts)
            if args.shadow:
                name += f"-shadow_{args.shadow}"
            name += args.tag
            accuracy, seconds = run_one(args, seed, precision, batches, dev, name)
            line = {"run": name, "dev_accuracy": accuracy, "seconds": round(seconds, 1)}
            print(json.dumps(line), flush=True)
            with open(os.path.join(args.work_dir, "results.jsonl"), "a") as results:
                results.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
