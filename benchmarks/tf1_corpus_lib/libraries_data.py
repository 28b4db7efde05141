"""Tiny data for the corpus's library repositories (data.py's convention: each writer takes
the copy's root and writes what the repository reads)."""

import gzip
import random
import struct

from .data import _write


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
