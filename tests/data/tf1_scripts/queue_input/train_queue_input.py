"""Trains, evaluates and predicts a small classifier with tf.estimator on queue-based
input_fns, as Estimator code of 2017-2018 read its files: a CSV through
string_input_producer, TextLineReader, decode_csv and tf.train.batch (training, the file
read again and again); TFRecord shards through TFRecordReader, parse_single_example and
tf.train.batch (evaluation, one epoch, a smaller last batch) and through
tf.train.shuffle_batch (metrics that do not depend on the order); arrays through
slice_input_producer and tf.train.batch (prediction). Writes its data and results.json
into --output_dir."""
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Data, model and results.json.")
flags.DEFINE_integer("train_steps", 6, "Training steps.")

BATCH = 4
rng = np.random.RandomState(5)
FEATURES = rng.normal(0, 1, (10, 3)).astype(np.float32)
LABELS = (FEATURES[:, 0] + 0.5 * FEATURES[:, 1] > 0).astype(np.int64)
KERNEL = rng.normal(0, 0.5, (3, 2))


def write_data():
  csv_path = os.path.join(FLAGS.output_dir, "train.csv")
  with open(csv_path, "w") as f:
    for x, y in zip(FEATURES, LABELS):
      f.write("%r,%r,%r,%d\n" % (float(x[0]), float(x[1]), float(x[2]), y))
  shards = []
  for shard in range(2):
    path = os.path.join(FLAGS.output_dir, "eval-%d.tfrecord" % shard)
    with tf.python_io.TFRecordWriter(path) as writer:
      for i in range(shard, len(LABELS), 2):
        example = tf.train.Example(features=tf.train.Features(feature={
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=FEATURES[i])),
            "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[LABELS[i]])),
            "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[i]))}))
        writer.write(example.SerializeToString())
    shards.append(path)
  return csv_path, shards


def model_fn(features, labels, mode):
  logits = tf.layers.dense(features["x"], 2, kernel_initializer=tf.constant_initializer(KERNEL))
  probabilities = tf.nn.softmax(logits)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions=probabilities)
  losses = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
  loss = tf.reduce_mean(losses)
  if mode == tf.estimator.ModeKeys.EVAL:
    metrics = {
        "accuracy": tf.metrics.accuracy(labels, tf.argmax(logits, 1)),
        "example_loss": tf.metrics.mean(losses),
        "mean_id": tf.metrics.mean(tf.cast(features["id"], tf.float32)),
        "examples": tf.metrics.true_positives(tf.ones_like(labels), tf.ones_like(labels)),
    }
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
  train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss, tf.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def csv_input_fn(csv_path):
  def input_fn():
    files = tf.train.string_input_producer([csv_path], shuffle=False)
    _, line = tf.TextLineReader().read(files)
    a, b, c, y = tf.decode_csv(line, [[0.0], [0.0], [0.0], [0]])
    x, y = tf.train.batch([tf.stack([a, b, c]), y], batch_size=BATCH, num_threads=1)
    return {"x": x}, y
  return input_fn


def tfrecord_input_fn(shards, shuffle):
  def input_fn():
    files = tf.train.string_input_producer(shards, num_epochs=1, shuffle=False)
    _, record = tf.TFRecordReader().read(files)
    parsed = tf.parse_single_example(record, {
        "x": tf.FixedLenFeature([3], tf.float32),
        "y": tf.FixedLenFeature([], tf.int64),
        "id": tf.FixedLenFeature([], tf.int64)})
    tensors = [parsed["x"], parsed["y"], parsed["id"]]
    if shuffle:
      x, y, ids = tf.train.shuffle_batch(tensors, batch_size=BATCH, capacity=8,
                                         min_after_dequeue=2, num_threads=2, seed=3,
                                         allow_smaller_final_batch=True)
    else:
      x, y, ids = tf.train.batch(tensors, batch_size=BATCH, num_threads=1,
                                 allow_smaller_final_batch=True)
    return {"x": x, "id": ids}, y
  return input_fn


def predict_input_fn():
  x, = tf.train.slice_input_producer([tf.constant(FEATURES)], num_epochs=1, shuffle=False)
  return tf.train.batch({"x": x}, batch_size=BATCH, allow_smaller_final_batch=True)


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  csv_path, shards = write_data()
  estimator = tf.estimator.Estimator(model_fn, model_dir=os.path.join(FLAGS.output_dir, "model"))
  estimator.train(csv_input_fn(csv_path), max_steps=FLAGS.train_steps)
  evaluated = estimator.evaluate(tfrecord_input_fn(shards, shuffle=False))
  shuffled = estimator.evaluate(tfrecord_input_fn(shards, shuffle=True), name="shuffled")
  predictions = [p.tolist() for p in estimator.predict(predict_input_fn)]
  results = {
      "variables": sorted(estimator.get_variable_names()),
      "kernel": estimator.get_variable_value("dense/kernel").tolist(),
      "bias": estimator.get_variable_value("dense/bias").tolist(),
      "evaluated": {key: float(value) for key, value in sorted(evaluated.items())},
      "shuffled": {key: float(shuffled[key])
                   for key in ("accuracy", "example_loss", "mean_id", "examples", "global_step")},
      "predictions": predictions,
      "model_files": sorted(name for name in os.listdir(estimator.model_dir)
                            if not name.startswith("events.out")),
  }
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
