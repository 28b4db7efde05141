"""Tiny data for the corpus's library repositories (data.py's convention: each writer takes
the copy's root and writes what the repository reads)."""

import gzip
import json
import os
import random
import struct
import subprocess

from .data import _write, sentences

# Each side's Python ({"tf115": ..., "run_tf1": ...}, set by tf1_corpus.py), for data a
# package of that side writes in its own version's format; the copies are named by side
# (runner.py: "tf115", "run_tf1", and "cross", which run_tf1.py runs).
SIDE_PYTHONS = {}


def _gzipped(payload):
    """gzip bytes without a time stamp, so both sides read the same file."""
    return gzip.compress(payload, mtime=0)


def mnist_idx(root, folder, train=5064, test=32, seed=3):
    """MNIST's four IDX files, gzipped, in `folder`: images 28x28 of a bright bar whose
    place says the digit (something to learn), labels 0-9."""
    rng = random.Random(seed)
    for split, count in (("train", train), ("t10k", test)):
        labels = [rng.randrange(10) for _ in range(count)]
        pixels = bytearray()
        for label in labels:
            image = bytearray(28 * 28)
            row = 2 + 2 * label + rng.randrange(2)
            for column in range(4, 24):
                image[row * 28 + column] = 200 + rng.randrange(56)
            pixels += image
        images = struct.pack(">IIII", 2051, count, 28, 28) + bytes(pixels)
        _write(root, f"{folder}/{split}-images-idx3-ubyte.gz", _gzipped(images), "wb")
        items = struct.pack(">II", 2049, count) + bytes(labels)
        _write(root, f"{folder}/{split}-labels-idx1-ubyte.gz", _gzipped(items), "wb")


def tflearn_mnist(root):
    """tflearn/tflearn: the MNIST files tflearn.datasets.mnist downloads into mnist/ (5,000
    training images go to its validation split, 64 remain to train on)."""
    mnist_idx(root, "mnist")


def t2t_decode_input(root):
    """tensorflow/tensor2tensor: what t2t-decoder --decode_from_file reads, sequences of the
    binary reversal problem (its symbols 0 and 1, space-separated), one a line."""
    rng = random.Random(11)
    lines = [" ".join(str(rng.randrange(2)) for _ in range(rng.randint(3, 9))) for _ in range(4)]
    _write(root, "decode_this.txt", "\n".join(lines) + "\n")


def _rocstories_rows(count, seed):
    """ROCStories cloze rows: id, four sentences, two endings, the right one (1 or 2)."""
    rng = random.Random(seed)
    rows = []
    for index in range(count):
        story = sentences(4, seed * 1000 + index)
        right = rng.randint(1, 2)
        good, bad = "everyone was happy .", "the river sang a dull song ."
        endings = [good, bad] if right == 1 else [bad, good]
        rows.append([f"id{index}", *story, *endings, str(right)])
    return rows


def rocstories(root):
    """openai/finetune-transformer-lm: the two ROCStories CSV files in data/ (400 validation
    stories: its split keeps 374 to validate, 26 to train on; 8 test stories), and a GPT
    model of one layer of width 8 in model/'s layout (params_shapes.json and the ten
    params_N.npy its weights are split into), random; and the English spaCy model its
    text_utils.py loads with spacy.load('en'), which spaCy finds as a folder `en` where the
    script runs: a blank English pipeline (the tokenizer it uses) in the format of the
    spaCy that side has (2.3 beside TF 1.15, today's for run_tf1.py), written by that
    side's Python, since spaCy's models are not on PyPI."""
    import numpy as np

    side = "tf115" if os.path.basename(os.path.normpath(root)) == "tf115" else "run_tf1"
    subprocess.run(
        [SIDE_PYTHONS[side], "-c", "import spacy; spacy.blank('en').to_disk('en')"],
        cwd=root,
        check=True,
        capture_output=True,
    )
    header = "InputStoryid,InputSentence1,InputSentence2,InputSentence3,InputSentence4,"
    columns = "RandomFifthSentenceQuiz1,RandomFifthSentenceQuiz2,AnswerRightEnding\n"
    for name, rows in (("val", _rocstories_rows(400, 1)), ("test", _rocstories_rows(8, 2))):
        _write(
            root,
            f"data/cloze_test_{name}__spring2016 - cloze_test_ALL_{name}.csv",
            header + columns + "".join(",".join(row) + "\n" for row in rows),
        )
    width = 8
    layer = [
        [1, width, 3 * width],
        [3 * width],
        [1, width, width],
        [width],
        [width],
        [width],
        [1, width, 4 * width],
        [4 * width],
        [1, 4 * width, width],
        [width],
        [width],
        [width],
    ]
    shapes = [[512, width], [40478, width], *layer]
    _write(root, "model/params_shapes.json", json.dumps(shapes))
    rng = np.random.RandomState(5)
    flat = np.concatenate([rng.normal(0, 0.02, int(np.prod(s))) for s in shapes]).astype(
        np.float32
    )
    for index, part in enumerate(np.array_split(flat, 10)):
        with open(os.path.join(root, "model", f"params_{index}.npy"), "wb") as f:
            np.save(f, part)
