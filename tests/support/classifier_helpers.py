"""A tiny classifier vocabulary and model, and running run_classifier.py on them."""

import re

from helpers import run_script, write_bert_config, write_lines

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "dog",
    "is",
    "hairy",
    "cat",
    "##s",
    "run",
    "good",
    "bad",
    "movie",
    "a",
    "very",
    "not",
    ".",
]

FILLER = ["the", "dog", "is", "hairy", "cat", "run", "movie", "a", "very", "not", "bad", "."]


def synthetic_rows(rng, count):
    """(text, label) rows of a task a tiny model learns: label 1 iff the text holds "good"."""
    rows = []
    for _ in range(count):
        label = rng.randint(0, 1)
        words = [rng.choice(FILLER) for _ in range(rng.randint(3, 7))]
        if label:
            words.insert(rng.randint(0, len(words)), "good")
        rows.append((" ".join(words), label))
    return rows


def write_sst2_data(directory, train, dev, test):
    """Writes SST-2's train/dev/test.tsv layout from (text, label) rows."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train", train), ("dev", dev)):
        (directory / f"{name}.tsv").write_text(
            "sentence\tlabel\n" + "".join(f"{s}\t{y}\n" for s, y in rows)
        )
    (directory / "test.tsv").write_text(
        "index\tsentence\n" + "".join(f"{i}\t{s}\n" for i, (s, _) in enumerate(test))
    )
    return directory


def model_files(directory, **config_overrides):
    """(vocab path, bert_config path) of the tiny classifier, its config with any overrides."""
    vocab = write_lines(directory / "vocab.txt", VOCAB)
    config = write_bert_config(directory / "bert_config.json", len(VOCAB), **config_overrides)
    return vocab, config


def sst2_flags(data_dir, vocab, config):
    """run_classifier.py's flags naming the SST-2 task, its data and the model's files."""
    return [
        "--task_name=SST-2",
        f"--data_dir={data_dir}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
    ]


def random_classifier_values(config, num_labels, seed, spread=0.2):
    """{checkpoint name: float32 array} of random values for every variable of
    run_classifier's model (the head included): each drawn around 0 (gammas around 1) with
    standard deviation `spread`, seeded."""
    import numpy as np
    import tensorflow as tf

    import run_classifier

    with tf.Graph().as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [None, None])
        run_classifier.create_model(config, False, ids, ids, ids, None, num_labels, False)
        shapes = {v.op.name: v.shape.as_list() for v in tf.compat.v1.global_variables()}
    rng = np.random.RandomState(seed)
    return {
        name: (
            (1.0 if name.endswith("gamma") else 0.0) + spread * rng.standard_normal(shape)
        ).astype(np.float32)
        for name, shape in shapes.items()
    }


def run_classifier_script(*args):
    return run_script("run_classifier.py", *args)


def read_eval_results(path):
    result = {}
    with open(path) as f:
        for line in f:
            match = re.fullmatch(r"(\w+) = (\S+)\n", line)
            assert match, line
            result[match.group(1)] = match.group(2)
    assert list(result) == sorted(result)
    return result
