"""A plain implementation of the original pre-training data recipe.

Written straight from the pseudocode, one random draw at a time through the
`random.Random` methods named there, with string tokens, one
tf.train.Example built through protobuf per instance, and every instance
held in memory until the final shuffle - the way the 2018 code works. It
serves two purposes: tests/scripts/test_create_pretraining_data.py checks
`create_pretraining_data` against it on corpora of its own, and
benchmarks/pretraining_data_speed.py measures how much faster
`create_pretraining_data` is.

Records are serialized with `deterministic=True` (feature map sorted by
name), so two runs, and `create_pretraining_data`, give identical bytes.

`--tokenizer=plain` tokenizes with tests/support/reference_tokenizer.py, the
character-by-character algorithm of the 2018 code; `--tokenizer=fast` uses
`tokenization.FullTokenizer`. Both give the same tokens.

    python tests/support/reference_pretraining_data.py --input_file=a.txt \\
        --output_file=out.tfrecord --vocab_file=vocab.txt
"""

import argparse
import os
import random
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
for _path in (_HERE, os.path.dirname(os.path.dirname(_HERE))):
    if _path not in sys.path:
        sys.path.insert(0, _path)


class Instance:
    """One sentence pair with its masks, as lists of token strings."""

    def __init__(self, tokens, segment_ids, is_random_next, positions, labels):
        self.tokens = tokens
        self.segment_ids = segment_ids
        self.is_random_next = is_random_next
        self.positions = positions
        self.labels = labels


def read_documents(input_files, tokenize):
    """Documents (lists of token lists), split at blank lines, empty ones dropped."""
    documents = [[]]
    for path in input_files:
        with open(path, "rb") as f:
            for raw in f:
                line = raw.decode("utf-8").strip()
                if not line:
                    documents.append([])
                    continue
                tokens = tokenize(line)
                if tokens:
                    documents[-1].append(tokens)
    return [doc for doc in documents if doc]


def truncate(tokens_a, tokens_b, max_tokens, rng):
    while len(tokens_a) + len(tokens_b) > max_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            del longer[-1]


def mask(tokens, masked_lm_prob, max_predictions, vocab_words, whole_word, rng):
    """Returns (masked tokens, positions, labels) as the pseudocode's mask()."""
    candidates = []
    for i, token in enumerate(tokens):
        if token in ("[CLS]", "[SEP]"):
            continue
        if whole_word and candidates and token.startswith("##"):
            candidates[-1].append(i)
        else:
            candidates.append([i])
    rng.shuffle(candidates)
    n = min(max_predictions, max(1, int(round(len(tokens) * masked_lm_prob))))
    output = list(tokens)
    chosen = []
    covered = set()
    for candidate in candidates:
        if len(chosen) >= n:
            break
        if len(chosen) + len(candidate) > n:
            continue
        if any(i in covered for i in candidate):
            continue
        for i in candidate:
            covered.add(i)
            if rng.random() < 0.8:
                replacement = "[MASK]"
            elif rng.random() < 0.5:
                replacement = tokens[i]
            else:
                replacement = vocab_words[rng.randint(0, len(vocab_words) - 1)]
            output[i] = replacement
            chosen.append((i, tokens[i]))
    chosen.sort()
    return output, [i for i, _ in chosen], [label for _, label in chosen]


def from_document(documents, d, flags, vocab_words, rng):
    """The instances of document `d`, drawing from `rng` in the spec's order."""
    doc = documents[d]
    max_tokens = flags.max_seq_length - 3
    target = max_tokens
    if rng.random() < flags.short_seq_prob:
        target = rng.randint(2, max_tokens)
    instances = []
    chunk = []
    length = 0
    i = 0
    while i < len(doc):
        chunk.append(doc[i])
        length += len(doc[i])
        if i == len(doc) - 1 or length >= target:
            if chunk:
                a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                tokens_a = []
                for sentence in chunk[:a_end]:
                    tokens_a.extend(sentence)
                tokens_b = []
                if len(chunk) == 1 or rng.random() < 0.5:
                    random_next = True
                    target_b = target - len(tokens_a)
                    for _ in range(10):
                        r = rng.randint(0, len(documents) - 1)
                        if r != d:
                            break
                    other = documents[r]
                    start = rng.randint(0, len(other) - 1)
                    for j in range(start, len(other)):
                        tokens_b.extend(other[j])
                        if len(tokens_b) >= target_b:
                            break
                    i -= len(chunk) - a_end
                else:
                    random_next = False
                    for sentence in chunk[a_end:]:
                        tokens_b.extend(sentence)
                truncate(tokens_a, tokens_b, max_tokens, rng)
                tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
                segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                tokens, positions, labels = mask(
                    tokens,
                    flags.masked_lm_prob,
                    flags.max_predictions_per_seq,
                    vocab_words,
                    flags.do_whole_word_mask,
                    rng,
                )
                instances.append(Instance(tokens, segment_ids, random_next, positions, labels))
            chunk = []
            length = 0
        i += 1
    return instances


def create_instances(documents, vocab, flags):
    """All instances in their final order, from the spec's single seeded rng."""
    rng = random.Random(flags.random_seed)
    rng.shuffle(documents)
    vocab_words = list(vocab.keys())
    instances = []
    for _ in range(flags.dupe_factor):
        for d in range(len(documents)):
            instances += from_document(documents, d, flags, vocab_words, rng)
    rng.shuffle(instances)
    return instances


def to_example(instance, vocab, flags):
    """The tf.train.Example of one instance, with the spec's padding."""
    import tensorflow as tf

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    input_ids = [vocab[t] for t in instance.tokens]
    input_mask = [1] * len(input_ids)
    segment_ids = list(instance.segment_ids)
    pad = flags.max_seq_length - len(input_ids)
    masked_ids = [vocab[t] for t in instance.labels]
    weights = [1.0] * len(masked_ids)
    pad_p = flags.max_predictions_per_seq - len(masked_ids)
    feature = {
        "input_ids": ints(input_ids + [0] * pad),
        "input_mask": ints(input_mask + [0] * pad),
        "segment_ids": ints(segment_ids + [0] * pad),
        "masked_lm_positions": ints(list(instance.positions) + [0] * pad_p),
        "masked_lm_ids": ints(masked_ids + [0] * pad_p),
        "masked_lm_weights": tf.train.Feature(
            float_list=tf.train.FloatList(value=weights + [0.0] * pad_p)
        ),
        "next_sentence_labels": ints([1 if instance.is_random_next else 0]),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature))


def iter_examples(input_files, vocab_file, flags, tokenizer="fast"):
    """Yields (output file index, serialized Example) in writing order."""
    if tokenizer == "plain":
        import reference_tokenizer

        vocab = reference_tokenizer.load_vocab(vocab_file)

        def tokenize(line):
            return reference_tokenizer.full_tokenize(line, vocab, flags.do_lower_case)

    else:
        import tokenization

        full = tokenization.FullTokenizer(vocab_file, do_lower_case=flags.do_lower_case)
        vocab = full.vocab
        tokenize = full.tokenize
    documents = read_documents(input_files, tokenize)
    instances = create_instances(documents, vocab, flags)
    for k, instance in enumerate(instances):
        example = to_example(instance, vocab, flags)
        yield k % flags.num_output_files, example.SerializeToString(deterministic=True)


def serialized_examples(input_files, vocab_file, flags, tokenizer="fast"):
    """Serialized Examples per output file: a list (one per file) of byte strings."""
    outputs = [[] for _ in range(flags.num_output_files)]
    for index, record in iter_examples(input_files, vocab_file, flags, tokenizer):
        outputs[index].append(record)
    return outputs


def make_flags(**overrides):
    """The generator's settings: the section 6 defaults, then `overrides`."""
    settings = dict(
        do_lower_case=True,
        do_whole_word_mask=False,
        max_seq_length=128,
        max_predictions_per_seq=20,
        random_seed=12345,
        dupe_factor=10,
        masked_lm_prob=0.15,
        short_seq_prob=0.1,
        num_output_files=1,
    )
    settings.update(overrides)
    return argparse.Namespace(**settings)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--input_file", required=True)
    parser.add_argument("--output_file", required=True)
    parser.add_argument("--vocab_file", required=True)
    parser.add_argument("--tokenizer", choices=("plain", "fast"), default="plain")
    defaults = make_flags()
    for name, value in vars(defaults).items():
        if name == "num_output_files":
            continue
        if isinstance(value, bool):
            parser.add_argument(f"--{name}", type=lambda s: s.lower() in ("1", "true"))
        else:
            parser.add_argument(f"--{name}", type=type(value))
    parser.set_defaults(**vars(defaults))
    args = parser.parse_args(argv)

    import tensorflow as tf

    input_files = []
    for pattern in args.input_file.split(","):
        input_files.extend(tf.io.gfile.glob(pattern))
    output_files = args.output_file.split(",")
    args.num_output_files = len(output_files)
    writers = [tf.io.TFRecordWriter(path) for path in output_files]
    count = 0
    for index, record in iter_examples(input_files, args.vocab_file, args, args.tokenizer):
        writers[index].write(record)
        count += 1
    for writer in writers:
        writer.close()
    print(f"wrote {count} instances", file=sys.stderr)


if __name__ == "__main__":
    main()
