"""How far 16-bit gradients are from float32's, per kind of weight and batch length.

Builds run_classifier's model (create_model: BERT, pooled output, linear
head, softmax cross entropy) twice from the same checkpoint, once in
float32 and once at --precision, with dropout off so that both compute the
same function, and feeds both the same batches of real sentence pairs:
batches of --batch_size examples sorted by length, as --group_by_length
makes them, at a few lengths from the shortest to the longest, and the
same examples padded to --max_seq_length, as full length makes them. For
every batch it prints, per kind of weight (the dense layers' biases and
kernels, LayerNorm, embeddings, pooler, head), how far the 16-bit gradient
is from float32's (the norm of the difference over the norm of float32's
gradient) and how long it is (the ratio of the norms: 1 when it points
the same way and is as long), and the loss of both. At fp16 the loss is
scaled by the loss scale training starts with (2^15) and the gradients
divided by it, as training applies them.

A gradient that is merely rounded differs by about 2^-8 per element at
bfloat16 (relative errors around 0.01); one that is shrunk, grows or
changes with the batch's length is computed wrongly somewhere.

The pairs are those of grouping_accuracy.py's corpus_pairs task (next line
of demo_data/corpus or a random line); the model is a pretrained BERT
directory (bert_config.json, vocab.txt, bert_model.ckpt), e.g. a Hugging
Face MiniLM converted with convert_checkpoint.py --direction=hf_to_tf. The
head starts from fixed random weights, the same in both graphs.

    .venv/bin/python benchmarks/precision_gradients.py --model_dir=/tmp/minilm_tf
    .venv/bin/python benchmarks/precision_gradients.py --model_dir=/tmp/minilm_tf --precision=fp16
"""

import argparse
import os
import random
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

# The scripts' choice of CPU kernels, made before TensorFlow is imported.
from bert_lib.plumbing import cpu_kernels  # noqa: E402, F401

# isort: split

import tensorflow as tf  # noqa: E402
from original_speed import read_documents, sentence_pairs  # noqa: E402

import modeling  # noqa: E402
import optimization  # noqa: E402
import run_classifier  # noqa: E402
import tokenization  # noqa: E402
from bert_lib.bert_runs import model_fns  # noqa: E402

# Kinds of weight, matched in this order against the variable's name.
KINDS = (
    ("head", ("output_weights", "output_bias")),
    ("pooler", ("bert/pooler/",)),
    ("embeddings", ("bert/embeddings/",)),
    ("LayerNorm", ("LayerNorm/",)),
    ("dense bias", ("/bias",)),
    ("dense kernel", ("/kernel",)),
)
NUM_LABELS = 2


def kind_of(variable_name):
    for kind, parts in KINDS:
        if any(part in variable_name for part in parts):
            return kind
    return "other"


def encode_pairs(tokenizer, pairs, max_seq_length):
    """[(input_ids, segment_ids, label)] of the pairs, unpadded, [CLS] a [SEP] b [SEP]."""
    encoded = []
    for label, first, second in pairs:
        tokens_a, tokens_b = tokenizer.tokenize(first), tokenizer.tokenize(second)
        run_classifier._truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
        tokens = ["[CLS]", *tokens_a, "[SEP]", *tokens_b, "[SEP]"]
        segments = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
        encoded.append((tokenizer.convert_tokens_to_ids(tokens), segments, int(label)))
    return encoded


def batch_arrays(examples, length):
    """input_ids, input_mask, segment_ids [batch, length] (zero-padded) and labels [batch]."""
    ids = np.zeros([len(examples), length], np.int32)
    mask = np.zeros_like(ids)
    segments = np.zeros_like(ids)
    for row, (example_ids, example_segments, _) in enumerate(examples):
        ids[row, : len(example_ids)] = example_ids
        mask[row, : len(example_ids)] = 1
        segments[row, : len(example_segments)] = example_segments
    labels = np.array([label for _, _, label in examples], np.int32)
    return ids, mask, segments, labels


class GradientGraph:
    """create_model's loss and gradients at one precision, dropout off, in a graph of its own."""

    def __init__(self, bert_config, init_checkpoint, precision, head_weights):
        loss_scaling = model_fns.precision_of(precision).loss_scaling
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.ids = tf.compat.v1.placeholder(tf.int32, [None, None])
            self.mask = tf.compat.v1.placeholder(tf.int32, [None, None])
            self.segments = tf.compat.v1.placeholder(tf.int32, [None, None])
            self.labels = tf.compat.v1.placeholder(tf.int32, [None])
            # is_training=False: no dropout (in BERT and in the head), so both
            # precisions compute the same function; the last layer is then at
            # [CLS] only, whose gradients are the whole layer's.
            self.loss, _, _, _ = run_classifier.create_model(
                bert_config,
                False,
                self.ids,
                self.mask,
                self.segments,
                self.labels,
                NUM_LABELS,
                False,
                compute_dtype=model_fns.compute_dtype(precision),
            )
            self.variables = tf.compat.v1.trainable_variables()
            # fp16 training scales the loss before the backward pass (its
            # gradients would underflow otherwise) and divides the gradients
            # by the scale after: compare what it applies.
            scale = optimization.INITIAL_LOSS_SCALE if loss_scaling else 1.0
            self.gradients = [
                tf.convert_to_tensor(g) / scale
                for g in tf.gradients(self.loss * scale, self.variables)
            ]
            assignment, _ = modeling.get_assignment_map_from_checkpoint(
                self.variables, init_checkpoint
            )
            tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment)
            head = {v.op.name: v for v in self.variables if v.op.name in head_weights}
            init = tf.compat.v1.global_variables_initializer()
            self.session = tf.compat.v1.Session(graph=self.graph)
            self.session.run(init)
            for name, value in head_weights.items():
                head[name].load(value, self.session)

    def run(self, arrays):
        ids, mask, segments, labels = arrays
        feed = {self.ids: ids, self.mask: mask, self.segments: segments, self.labels: labels}
        loss, gradients = self.session.run([self.loss, self.gradients], feed)
        names = [v.op.name for v in self.variables]
        return loss, dict(zip(names, gradients))


def compare(reference, other):
    """{kind: (relative error, norm ratio)} of `other`'s gradients against `reference`'s."""
    by_kind = {}
    for name, expected in reference.items():
        got = other[name]
        if hasattr(expected, "values"):  # IndexedSlices of an embedding lookup
            continue
        sums = by_kind.setdefault(kind_of(name), [0.0, 0.0, 0.0])
        expected = expected.astype(np.float64)
        got = np.asarray(got, np.float64)
        sums[0] += float(np.sum((got - expected) ** 2))
        sums[1] += float(np.sum(expected**2))
        sums[2] += float(np.sum(got**2))
    return {
        kind: (np.sqrt(diff / ref), np.sqrt(norm / ref))
        for kind, (diff, ref, norm) in by_kind.items()
        if ref > 0
    }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--precision", choices=["bf16", "fp16"], default="bf16")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--examples", type=int, default=1024, help="pairs drawn, then sorted")
    parser.add_argument("--batches", type=int, default=4, help="grouped batches compared")
    parser.add_argument("--seed", type=int, default=2026)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    tf.compat.v1.disable_eager_execution()
    tf.get_logger().setLevel("ERROR")
    bert_config = modeling.BertConfig.from_json_file(
        os.path.join(args.model_dir, "bert_config.json")
    )
    tokenizer = tokenization.FullTokenizer(os.path.join(args.model_dir, "vocab.txt"), True)
    init_checkpoint = os.path.join(args.model_dir, "bert_model.ckpt")
    rng = random.Random(args.seed)
    documents = read_documents(os.path.join(REPO, "demo_data", "corpus"))
    pairs = sentence_pairs(documents, args.examples, rng)
    examples = sorted(encode_pairs(tokenizer, pairs, args.max_seq_length), key=lambda e: len(e[0]))
    head_rng = np.random.default_rng(args.seed)
    head_weights = {
        "output_weights": (0.02 * head_rng.standard_normal([NUM_LABELS, bert_config.hidden_size]))
        .clip(-0.04, 0.04)
        .astype(np.float32),
        "output_bias": np.zeros([NUM_LABELS], np.float32),
    }
    graphs = {
        precision: GradientGraph(
            bert_config,
            init_checkpoint,
            precision,
            head_weights,
        )
        for precision in ("fp32", args.precision)
    }
    count = len(examples) // args.batch_size
    picks = sorted(
        {round(i * (count - 1) / max(args.batches - 1, 1)) for i in range(args.batches)}
    )
    print(
        f"{args.precision} against fp32, dropout off, batch {args.batch_size}; "
        "per kind of weight: relative error of the gradient / its length against fp32's"
    )
    kinds = [kind for kind, _ in KINDS]
    print("| batch | rows | loss fp32 | loss 16-bit | " + " | ".join(kinds) + " |")
    print("|---" * (4 + len(kinds)) + "|")
    for pick in picks:
        batch = examples[pick * args.batch_size : (pick + 1) * args.batch_size]
        length = max(len(ids) for ids, _, _ in batch)
        for name, padded_to in (("grouped", length), ("full length", args.max_seq_length)):
            arrays = batch_arrays(batch, padded_to)
            loss32, grads32 = graphs["fp32"].run(arrays)
            loss16, grads16 = graphs[args.precision].run(arrays)
            errors = compare(grads32, grads16)
            cells = [
                f"{errors[kind][0]:.3f} / {errors[kind][1]:.2f}" if kind in errors else "-"
                for kind in kinds
            ]
            print(
                f"| {name}, {args.batch_size} x {padded_to} | {args.batch_size * padded_to} | "
                f"{loss32:.4f} | {loss16:.4f} | " + " | ".join(cells) + " |",
                flush=True,
            )


if __name__ == "__main__":
    main()
