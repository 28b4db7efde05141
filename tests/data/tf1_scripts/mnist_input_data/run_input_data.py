"""tensorflow.examples.tutorials.mnist.input_data as the TF 1.x tutorials used it, on tiny
MNIST files of the idx format that this script writes first (seeded, 4 x 4 pixels, 10
training and 4 test images): read_data_sets with one_hot, seed, tf.set_random_seed,
dtype=uint8 and reshape=False, a validation_size too large, fake_data; next_batch across
epochs with and without shuffling; numpy's global generator after it. Writes
results.json into --output_dir."""
import contextlib
import gzip
import io
import json
import os
import struct

import numpy as np
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "The MNIST files and results.json.")


def write_idx(path, magic, array):
  header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in array.shape)
  with gzip.open(path, "wb") as f:
    f.write(header + array.astype(np.uint8).tobytes())


def write_mnist(folder):
  os.makedirs(folder)
  rng = np.random.RandomState(2019)
  for prefix, count in (("train", 10), ("t10k", 4)):
    write_idx(os.path.join(folder, prefix + "-images-idx3-ubyte.gz"), 2051,
              rng.randint(0, 256, (count, 4, 4)))
    write_idx(os.path.join(folder, prefix + "-labels-idx1-ubyte.gz"), 2049,
              rng.randint(0, 10, (count,)))


def describe(array):
  array = np.asarray(array)
  return {"shape": list(array.shape), "dtype": str(array.dtype), "values": array.tolist()}


def split(dataset):
  return {"images": describe(dataset.images), "labels": describe(dataset.labels),
          "num_examples": dataset.num_examples}


def batches(dataset, size, count, **options):
  out = []
  for _ in range(count):
    images, labels = dataset.next_batch(size, **options)
    out.append({"images": describe(images), "labels": describe(labels),
                "epochs_completed": dataset.epochs_completed})
  return out


def main(_):
  folder = os.path.join(FLAGS.output_dir, "MNIST_data")
  write_mnist(folder)
  results = {}
  printed = io.StringIO()
  with contextlib.redirect_stdout(printed):
    mnist = input_data.read_data_sets(folder, one_hot=True, validation_size=3, seed=5)
  results["printed"] = printed.getvalue().replace(FLAGS.output_dir, "OUTPUT_DIR")
  results["fields"] = list(mnist._fields)
  results["seeded"] = {name: split(getattr(mnist, name)) for name in mnist._fields}
  results["seeded_batches"] = batches(mnist.train, 3, 6)
  results["numpy_after"] = np.random.rand(3).tolist()

  with tf.Graph().as_default():
    tf.set_random_seed(11)
    mnist = input_data.read_data_sets(folder, validation_size=2)
    results["graph_seed_numpy"] = np.random.rand(2).tolist()
    mnist = input_data.read_data_sets(folder, validation_size=2)
    results["graph_seed_batches"] = batches(mnist.train, 5, 4)
    results["unshuffled_batches"] = batches(mnist.validation, 3, 2, shuffle=False)

  raw = input_data.read_data_sets(folder, dtype=tf.uint8, reshape=False, validation_size=0)
  results["uint8_unreshaped"] = {name: split(getattr(raw, name)) for name in raw._fields}

  try:
    input_data.read_data_sets(folder, validation_size=11)
  except ValueError as e:
    results["too_large"] = str(e)
  try:
    input_data.read_data_sets(folder, dtype=tf.int32, validation_size=0)
  except TypeError as e:
    results["bad_dtype"] = str(e)

  fake = input_data.read_data_sets(folder, fake_data=True, one_hot=True)
  images, labels = fake.train.next_batch(2, fake_data=True)
  results["fake"] = {"num_examples": fake.test.num_examples,
                     "images": describe(images), "labels": describe(labels)}

  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
