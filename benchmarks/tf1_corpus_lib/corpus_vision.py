"""Vision tutorials of 2017-2019 in the corpus: MNIST through TF 1.x's
`tensorflow.examples.tutorials.mnist.input_data`, scripts with no flags run as they are.

Picked by use before they were tried: the two most starred collections of TF 1.x
example scripts that read MNIST with input_data (aymericdamien/TensorFlow-Examples and
nlintz/TensorFlow-Tutorials). Their scripts have no flags, so each runs as it is, on
tiny MNIST files of the idx format (mnist_files: 5000 validation images, which
read_data_sets takes first, and 256 to train on, 256 to test): the scripts picked are
those whose loops stay short on so few images. None seeds its weights or its shuffling,
so no number is compared: the files written, and the checkpoints' variables.
"""

import gzip
import os
import struct

import numpy as np

from .corpus import Repository
from .runner import Step

_VALIDATION = 5000  # read_data_sets' default validation_size: the first training images
_TRAIN = 256
_TEST = 256


def _idx(path, magic, array):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def _digits(count, rng):
    """28 x 28 uint8 images, mostly black as MNIST's are, of a bar whose place and angle
    follow the label (something to learn), with some noise; and the labels."""
    labels = rng.randint(0, 10, count)
    images = np.zeros((count, 28, 28), dtype=np.uint8)
    rows, cols = np.mgrid[0:28, 0:28]
    for image, label in zip(images, labels):
        angle = np.pi * label / 10 + rng.normal(0, 0.05)
        distance = np.abs((cols - 14) * np.sin(angle) - (rows - 14) * np.cos(angle))
        image[distance < 1.5] = 255
        noise = rng.randint(0, 28, (8, 2))
        image[noise[:, 0], noise[:, 1]] = rng.randint(64, 256, 8)
    return images, labels


def mnist_files(folder):
    """The four MNIST gzip files read_data_sets reads, in `folder`."""
    rng = np.random.RandomState(1998)
    for prefix, count in (("train", _VALIDATION + _TRAIN), ("t10k", _TEST)):
        images, labels = _digits(count, rng)
        _idx(os.path.join(folder, f"{prefix}-images-idx3-ubyte.gz"), 2051, images)
        _idx(os.path.join(folder, f"{prefix}-labels-idx1-ubyte.gz"), 2049, labels)


# aymericdamien's scripts read "/tmp/data/" (an absolute path, as the README leaves it):
# the writer puts the files there too, the same for both sides.
_AYMERIC_DATA = "/tmp/data"


def aymericdamien_examples(root):
    mnist_files(_AYMERIC_DATA)
    mnist_files(os.path.join(root, "examples", "4_Utils", "MNIST_data"))


def nlintz_tutorials(root):
    mnist_files(os.path.join(root, "MNIST_data"))


REPOSITORIES = [
    Repository(
        "aymericdamien/TensorFlow-Examples",
        "vision tutorial (MNIST through input_data: logistic regression in a session, an "
        "MLP on tf.estimator with numpy_input_fn, Saver save / restore)",
        [
            Step(["logistic_regression.py"], cwd="examples/2_BasicModels", trains=True),
            Step(["neural_network.py"], cwd="examples/3_NeuralNetworks", trains=True),
            Step(["save_restore_model.py"], cwd="examples/4_Utils", trains=True),
        ],
        aymericdamien_examples,
    ),
    Repository(
        "nlintz/TensorFlow-Tutorials",
        "vision tutorial (MNIST through input_data: logistic regression, an MLP with "
        "dropout and RMSProp, Saver checkpoints resumed by global_step)",
        [
            Step(["02_logistic_regression.py"], trains=True),
            Step(["04_modern_net.py"], trains=True),
            Step(["10_save_restore_net.py"], trains=True),
        ],
        nlintz_tutorials,
    ),
]
