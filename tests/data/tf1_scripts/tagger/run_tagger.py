# coding=utf-8
"""A token-tagging script in the style of BERT+CRF taggers, on tf.estimator.

tf.estimator.Estimator with EstimatorSpec (eval_metric_ops, training_hooks,
a single prediction tensor), tf.estimator.train_and_evaluate with
TrainSpec / EvalSpec, a tf.train.SessionRunHook of its own,
tf.contrib.crf (crf_log_likelihood, crf_decode),
tf.contrib.layers.xavier_initializer and tf.contrib.metrics'
streaming_pearson_correlation.

The data is made here: token t of a sentence has tag (id + previous id) % 3,
so the transitions matter.
"""

import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Checkpoints and results.")
flags.DEFINE_integer("train_steps", 60, "Training steps.")

NUM_TAGS = 3
VOCAB = 12
MAX_LEN = 6


def make_data(count, seed):
  rng = np.random.RandomState(seed)
  ids = rng.randint(1, VOCAB, size=(count, MAX_LEN)).astype(np.int32)
  lengths = rng.randint(2, MAX_LEN + 1, size=count).astype(np.int32)
  tags = np.zeros_like(ids)
  for i in range(count):
    for t in range(MAX_LEN):
      previous = ids[i, t - 1] if t > 0 else 0
      tags[i, t] = (ids[i, t] + previous) % NUM_TAGS
    ids[i, lengths[i]:] = 0
    tags[i, lengths[i]:] = 0
  return ids, lengths, tags


def input_fn_builder(count, seed, is_training, batch_size=8):
  ids, lengths, tags = make_data(count, seed)

  def input_fn():
    d = tf.data.Dataset.from_tensor_slices(({"ids": ids, "lengths": lengths}, tags))
    if is_training:
      d = d.repeat()
    return d.batch(batch_size)

  return input_fn


class StepCountHook(tf.train.SessionRunHook):
  """Counts the steps it saw and the loss values it fetched."""

  def __init__(self, loss):
    self.loss = loss
    self.steps = 0

  def before_run(self, run_context):
    return tf.train.SessionRunArgs(self.loss)

  def after_run(self, run_context, run_values):
    assert np.isfinite(run_values.results)
    self.steps += 1

  def end(self, session):
    with tf.gfile.GFile(os.path.join(FLAGS.output_dir, "hook_steps.txt"), "a") as f:
      f.write("%d\n" % self.steps)


def model_fn(features, labels, mode, params):
  embeddings = tf.get_variable(
      "embeddings", [VOCAB, params["width"]],
      initializer=tf.contrib.layers.xavier_initializer())
  hidden = tf.nn.embedding_lookup(embeddings, features["ids"])
  previous = tf.pad(hidden[:, :-1], [[0, 0], [1, 0], [0, 0]])
  hidden = tf.concat([hidden, previous], axis=-1)
  emissions = tf.layers.dense(hidden, NUM_TAGS, name="emissions")
  lengths = features["lengths"]
  with tf.variable_scope("crf"):
    transitions = tf.get_variable("transitions", [NUM_TAGS, NUM_TAGS])
  tags, _ = tf.contrib.crf.crf_decode(emissions, transitions, lengths)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions=tags)
  log_likelihood, _ = tf.contrib.crf.crf_log_likelihood(
      emissions, labels, lengths, transitions)
  loss = -tf.reduce_mean(log_likelihood)
  mask = tf.sequence_mask(lengths, MAX_LEN, dtype=tf.float32)
  if mode == tf.estimator.ModeKeys.TRAIN:
    train_op = tf.train.AdamOptimizer(0.1).minimize(
        loss, global_step=tf.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(
        mode, loss=loss, train_op=train_op, training_hooks=[StepCountHook(loss)])
  metrics = {
      "tag_accuracy": tf.metrics.accuracy(labels, tags, weights=mask),
      "tag_pearson": tf.contrib.metrics.streaming_pearson_correlation(
          tf.cast(tags, tf.float32), tf.cast(labels, tf.float32), weights=mask),
  }
  return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  config = tf.estimator.RunConfig(
      model_dir=FLAGS.output_dir, save_checkpoints_steps=FLAGS.train_steps // 2,
      tf_random_seed=1)
  estimator = tf.estimator.Estimator(model_fn, config=config, params={"width": 8})
  train_spec = tf.estimator.TrainSpec(
      input_fn_builder(64, 1, True), max_steps=FLAGS.train_steps)
  eval_spec = tf.estimator.EvalSpec(input_fn_builder(24, 2, False), steps=None)
  result, _ = tf.estimator.train_and_evaluate(estimator, train_spec, eval_spec)
  with tf.gfile.GFile(os.path.join(FLAGS.output_dir, "eval_results.txt"), "w") as f:
    for key in sorted(result):
      f.write("%s = %s\n" % (key, result[key]))
  with tf.gfile.GFile(os.path.join(FLAGS.output_dir, "predictions.jsonl"), "w") as f:
    for tags in estimator.predict(input_fn_builder(24, 2, False)):
      f.write(json.dumps(tags.tolist()) + "\n")


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
