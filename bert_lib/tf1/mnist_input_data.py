"""tensorflow.examples.tutorials.mnist.input_data of TF 1.15, for the tutorials of its years.

`from tensorflow.examples.tutorials.mnist import input_data` then
`mnist = input_data.read_data_sets("MNIST_data/", one_hot=True)` starts
countless TF 1.x tutorials; TensorFlow 2 ships neither. read_data_sets here
behaves as TF 1.15's:

- the four gzip files of the MNIST idx format in train_dir
  (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz,
  t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz), each downloaded
  from source_url first when it is not there (a download that fails ends
  the run with one line naming the file), "Extracting <path>" printed as
  each is read;
- Datasets(train, validation, test): the first validation_size (5000)
  training examples are the validation set;
- images as float32 in [0, 1] (times 1/255; uint8 as read with
  dtype=uint8), of shape (N, rows * cols), or (N, rows, cols, 1) with
  reshape=False; labels uint8, or float64 one-hot rows with one_hot=True;
- DataSet.next_batch(batch_size, shuffle=True) shuffles with numpy's global
  random generator, once for the first epoch and again at each epoch's
  end, a batch across an epoch's end made of its rest and the next epoch's
  start; each DataSet, when made, seeds numpy's global generator as TF
  1.15's did (with `seed`, else with the graph's seed set by
  tf.set_random_seed, else afresh), so the same seeds give the same batches.
"""

import collections
import gzip
import os
import shutil
import tempfile
import urllib.error
import urllib.request

import numpy as np
import tensorflow as tf
from absl import logging

from .machinery.namespaces import Namespace

_V1 = tf.compat.v1

DEFAULT_SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"

# TF 1.15's random_seed.get_seed: seeds are taken modulo the largest int32, and a graph seed
# without an op seed stands in for TensorFlow's default one.
_MAXINT32 = 2**31 - 1
_DEFAULT_GRAPH_SEED = 87654321

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])

_warned = set()


def _deprecated(name, instead):
    """TF 1.15's deprecation warning, once per function."""
    if name in _warned:
        return
    _warned.add(name)
    logging.warning(
        "%s (from tensorflow.contrib.learn.python.learn.datasets.mnist) is deprecated and "
        "will be removed in a future version.\nInstructions for updating:\n%s",
        name,
        instead,
    )


class DownloadError(OSError):
    """An MNIST file not in train_dir that could not be downloaded either."""


def _numpy_seed(seed):
    """The seed TF 1.15's DataSet gave numpy's global generator: `seed`, else the graph's,
    else None (afresh)."""
    graph_seed = _V1.get_default_graph().seed
    if seed is None:
        return None if graph_seed is None else graph_seed % _MAXINT32
    seeds = (
        _DEFAULT_GRAPH_SEED if graph_seed is None else graph_seed % _MAXINT32,
        seed % _MAXINT32,
    )
    return _MAXINT32 if seeds == (0, 0) else seeds[1]


def _read32(stream):
    return int(np.frombuffer(stream.read(4), dtype=np.dtype(np.uint32).newbyteorder(">"))[0])


def extract_images(f):
    """The images of an idx3 gzip file object, uint8 of shape (N, rows, cols, 1)."""
    print("Extracting", f.name)
    with gzip.GzipFile(fileobj=f) as stream:
        magic = _read32(stream)
        if magic != 2051:
            raise ValueError(f"Invalid magic number {magic} in MNIST image file: {f.name}")
        count, rows, cols = _read32(stream), _read32(stream), _read32(stream)
        data = np.frombuffer(stream.read(rows * cols * count), dtype=np.uint8)
        return data.reshape(count, rows, cols, 1)


def dense_to_one_hot(labels, num_classes):
    """Class numbers as float64 one-hot rows."""
    one_hot = np.zeros((labels.shape[0], num_classes))
    one_hot.flat[np.arange(labels.shape[0]) * num_classes + labels.ravel()] = 1
    return one_hot


def extract_labels(f, one_hot=False, num_classes=10):
    """The labels of an idx1 gzip file object: uint8, or one-hot rows."""
    print("Extracting", f.name)
    with gzip.GzipFile(fileobj=f) as stream:
        magic = _read32(stream)
        if magic != 2049:
            raise ValueError(f"Invalid magic number {magic} in MNIST label file: {f.name}")
        count = _read32(stream)
        labels = np.frombuffer(stream.read(count), dtype=np.uint8)
        return dense_to_one_hot(labels, num_classes) if one_hot else labels


class DataSet:
    """One split: images, labels, num_examples, epochs_completed, next_batch."""

    def __init__(
        self,
        images,
        labels,
        fake_data=False,
        one_hot=False,
        dtype=tf.float32,
        reshape=True,
        seed=None,
    ):
        np.random.seed(_numpy_seed(seed))
        dtype = tf.as_dtype(dtype).base_dtype
        if dtype not in (tf.uint8, tf.float32):
            raise TypeError(f"Invalid image dtype {dtype!r}, expected uint8 or float32")
        if fake_data:
            self._num_examples = 10000
            self.one_hot = one_hot
        else:
            assert images.shape[0] == labels.shape[0], (
                f"images.shape: {images.shape} labels.shape: {labels.shape}"
            )
            self._num_examples = images.shape[0]
            if reshape:
                assert images.shape[3] == 1
                images = images.reshape(images.shape[0], images.shape[1] * images.shape[2])
            if dtype == tf.float32:
                images = np.multiply(images.astype(np.float32), 1.0 / 255.0)
        self._images = images
        self._labels = labels
        self._epochs_completed = 0
        self._index_in_epoch = 0

    @property
    def images(self):
        return self._images

    @property
    def labels(self):
        return self._labels

    @property
    def num_examples(self):
        return self._num_examples

    @property
    def epochs_completed(self):
        return self._epochs_completed

    def _shuffle(self):
        order = np.arange(self._num_examples)
        np.random.shuffle(order)
        self._images = self._images[order]
        self._labels = self._labels[order]

    def next_batch(self, batch_size, fake_data=False, shuffle=True):
        """The next `batch_size` (images, labels)."""
        if fake_data:
            image = [1] * 784
            label = [1] + [0] * 9 if self.one_hot else 0
            return [image for _ in range(batch_size)], [label for _ in range(batch_size)]
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            self._shuffle()
        if start + batch_size <= self._num_examples:
            self._index_in_epoch += batch_size
            end = self._index_in_epoch
            return self._images[start:end], self._labels[start:end]
        self._epochs_completed += 1
        rest = self._num_examples - start
        images_rest = self._images[start : self._num_examples]
        labels_rest = self._labels[start : self._num_examples]
        if shuffle:
            self._shuffle()
        self._index_in_epoch = batch_size - rest
        end = self._index_in_epoch
        return (
            np.concatenate((images_rest, self._images[:end]), axis=0),
            np.concatenate((labels_rest, self._labels[:end]), axis=0),
        )


def maybe_download(filename, work_directory, source_url):
    """work_directory/filename, downloaded from source_url first when it is not there."""
    if not tf.io.gfile.exists(work_directory):
        tf.io.gfile.makedirs(work_directory)
    path = os.path.join(work_directory, filename)
    if tf.io.gfile.exists(path):
        return path
    try:
        with (
            urllib.request.urlopen(source_url) as response,
            tempfile.NamedTemporaryFile(delete=False) as temporary,
        ):
            shutil.copyfileobj(response, temporary)
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", None) or e
        raise DownloadError(
            f"{path}: no such file, and downloading it from {source_url} failed ({reason}); "
            "put the MNIST gzip files there"
        ) from None
    try:
        tf.io.gfile.copy(temporary.name, path)
    finally:
        os.remove(temporary.name)
    print("Successfully downloaded", filename, tf.io.gfile.stat(path).length, "bytes.")
    return path


def read_data_sets(
    train_dir,
    fake_data=False,
    one_hot=False,
    dtype=tf.float32,
    reshape=True,
    validation_size=5000,
    seed=None,
    source_url=DEFAULT_SOURCE_URL,
):
    """Datasets(train, validation, test) of the MNIST files in train_dir (module docstring)."""
    _deprecated(
        "read_data_sets",
        "Please use alternatives such as official/mnist/dataset.py from tensorflow/models.",
    )
    if fake_data:

        def fake():
            return DataSet([], [], fake_data=True, one_hot=one_hot, dtype=dtype, seed=seed)

        return Datasets(train=fake(), validation=fake(), test=fake())
    source_url = source_url or DEFAULT_SOURCE_URL

    def read(filename, extract, **options):
        path = maybe_download(filename, train_dir, source_url + filename)
        with tf.io.gfile.GFile(path, "rb") as f:
            return extract(f, **options)

    train_images = read(TRAIN_IMAGES, extract_images)
    train_labels = read(TRAIN_LABELS, extract_labels, one_hot=one_hot)
    test_images = read(TEST_IMAGES, extract_images)
    test_labels = read(TEST_LABELS, extract_labels, one_hot=one_hot)
    if not 0 <= validation_size <= len(train_images):
        raise ValueError(
            f"Validation size should be between 0 and {len(train_images)}. Received: "
            f"{validation_size}."
        )
    options = {"dtype": dtype, "reshape": reshape, "seed": seed}
    train = DataSet(train_images[validation_size:], train_labels[validation_size:], **options)
    validation = DataSet(train_images[:validation_size], train_labels[:validation_size], **options)
    test = DataSet(test_images, test_labels, **options)
    return Datasets(train=train, validation=validation, test=test)


def load_mnist(train_dir="MNIST-data"):
    return read_data_sets(train_dir)


def examples_module():
    """tensorflow.examples of TF 1.x: tutorials.mnist.input_data."""
    input_data = Namespace(
        "tensorflow.examples.tutorials.mnist.input_data",
        None,
        {"read_data_sets": read_data_sets},
    )
    mnist = Namespace("tensorflow.examples.tutorials.mnist", None, {"input_data": input_data})
    tutorials = Namespace("tensorflow.examples.tutorials", None, {"mnist": mnist})
    return Namespace("tensorflow.examples", None, {"tutorials": tutorials})
