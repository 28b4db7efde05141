# coding=utf-8
"""A sequence classifier whose model_fn is built of tf.keras.layers, on tf.estimator.

Code of the TF 1.12-1.15 years often mixed Keras layers into an Estimator's
model_fn: Embedding(mask_zero=True), Bidirectional(LSTM), Conv1D, global
pooling that honours the mask, Concatenate, Dense, Dropout(training=...),
LayerNormalization, a tf.keras.Sequential head and a subclassed
tf.keras.Model, with a tf.layers.dense beside them (one name counter for
both kinds). The data is made here: the class of a sequence is which of
three marker ids it holds most of.
"""

import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Checkpoints and results.")
flags.DEFINE_bool("do_train", False, "Train.")
flags.DEFINE_bool("do_eval", False, "Evaluate.")
flags.DEFINE_bool("do_predict", False, "Write the test set's probabilities.")
flags.DEFINE_integer("train_steps", 60, "Training steps.")
flags.DEFINE_float("learning_rate", 0.01, "Adam's learning rate.")

VOCAB, LENGTH, CLASSES = 20, 9, 3


def make_data(count, seed):
  rng = np.random.RandomState(seed)
  ids = np.zeros((count, LENGTH), np.int32)
  labels = rng.randint(CLASSES, size=count).astype(np.int32)
  for i in range(count):
    n = rng.randint(3, LENGTH + 1)
    ids[i, :n] = rng.randint(4, VOCAB, size=n)
    ids[i, rng.choice(n, 2, replace=False)] = 1 + labels[i]
  return ids, labels


def input_fn_builder(count, seed, is_training):
  ids, labels = make_data(count, seed)

  def input_fn(params):
    d = tf.data.Dataset.from_tensor_slices(({"ids": ids}, labels))
    if is_training:
      d = d.repeat().shuffle(64, seed=5)
    return d.batch(params["batch_size"])

  return input_fn


class AttentionPooling(tf.keras.Model):
  """Scores each step, softmax over the unmasked ones, the weighted sum."""

  def __init__(self, units):
    super(AttentionPooling, self).__init__()
    self.score = tf.keras.layers.Dense(units, activation="tanh")
    self.weight = tf.keras.layers.Dense(1, use_bias=False)

  def call(self, inputs, mask=None):
    scores = tf.squeeze(self.weight(self.score(inputs)), -1)
    if mask is not None:
      scores += (1.0 - tf.cast(mask, tf.float32)) * -10000.0
    return tf.reduce_sum(inputs * tf.nn.softmax(scores)[:, :, None], axis=1)


def create_model(ids, is_training):
  embedded = tf.keras.layers.Embedding(VOCAB, 8, mask_zero=True)(ids)
  mask = tf.not_equal(ids, 0)
  sequence = tf.keras.layers.Bidirectional(
      tf.keras.layers.LSTM(6, return_sequences=True))(embedded)
  conv = tf.keras.layers.Conv1D(6, 3, padding="same", activation="relu")(sequence)
  pooled = tf.keras.layers.Concatenate()([
      tf.keras.layers.GlobalMaxPooling1D()(conv),
      tf.keras.layers.GlobalAveragePooling1D()(sequence),
      AttentionPooling(4)(sequence, mask=mask),
  ])
  side = tf.layers.dense(pooled, 4, activation=tf.nn.relu)
  hidden = tf.keras.layers.Dense(12, activation="relu")(tf.concat([pooled, side], -1))
  hidden = tf.keras.layers.Dropout(0.2)(hidden, training=is_training)
  hidden = tf.keras.layers.LayerNormalization()(hidden)
  head = tf.keras.Sequential([
      tf.keras.layers.Dense(8, activation="tanh"),
      tf.keras.layers.Dense(CLASSES),
  ])
  return head(hidden)


def model_fn(features, labels, mode, params):
  is_training = mode == tf.estimator.ModeKeys.TRAIN
  logits = create_model(features["ids"], is_training)
  probabilities = tf.nn.softmax(logits)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={"probabilities": probabilities})
  loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
  if is_training:
    optimizer = tf.train.AdamOptimizer(FLAGS.learning_rate)
    train_op = optimizer.minimize(loss, global_step=tf.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)
  predictions = tf.argmax(logits, -1)
  return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={
      "accuracy": tf.metrics.accuracy(labels, predictions),
      "mean_max_probability": tf.metrics.mean(tf.reduce_max(probabilities, -1)),
  })


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  config = tf.estimator.RunConfig(model_dir=FLAGS.output_dir, tf_random_seed=11,
                                  save_checkpoints_steps=FLAGS.train_steps)
  estimator = tf.estimator.Estimator(model_fn, config=config, params={"batch_size": 8})
  if FLAGS.do_train:
    estimator.train(input_fn_builder(96, 1, True), max_steps=FLAGS.train_steps)
  if FLAGS.do_eval:
    result = estimator.evaluate(input_fn_builder(24, 2, False))
    with tf.gfile.GFile(os.path.join(FLAGS.output_dir, "eval_results.txt"), "w") as f:
      for key in sorted(result):
        f.write("%s = %s\n" % (key, result[key]))
  if FLAGS.do_predict:
    with tf.gfile.GFile(os.path.join(FLAGS.output_dir, "predictions.tsv"), "w") as f:
      for prediction in estimator.predict(input_fn_builder(16, 3, False)):
        f.write("\t".join("%.7f" % p for p in prediction["probabilities"]) + "\n")


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
