"""Trains a small word classifier with tf.estimator, exports it with export_savedmodel and
serves it with tf.contrib.predictor (from_saved_model and from_estimator); given
--saved_model_dir, only serves that export."""
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Model, export and predictions.json.")
flags.DEFINE_string("saved_model_dir", None, "If set: serve this SavedModel only.")
flags.DEFINE_integer("train_steps", 4, "Training steps.")

VOCAB = ["good", "great", "fine", "bad", "awful", "poor"]
TRAIN = [(["good", "great", "fine", "good"], 1), (["bad", "awful", "poor", "bad"], 0),
         (["great", "fine", "nice", "good"], 1), (["poor", "bad", "meh", "awful"], 0)]
REQUESTS = np.array([["good", "fine", "great", "nice"], ["awful", "bad", "bad", "poor"],
                     ["meh", "fine", "poor", "zzz"]])


def model_fn(features, labels, mode):
  table = tf.contrib.lookup.index_table_from_tensor(tf.constant(VOCAB), num_oov_buckets=1)
  ids = table.lookup(features["words"])
  rng = np.random.RandomState(11)
  embedding = tf.get_variable("embedding", [len(VOCAB) + 1, 3],
                              initializer=tf.constant_initializer(rng.normal(0, 0.5, (len(VOCAB) + 1, 3))))
  pooled = tf.reduce_mean(tf.nn.embedding_lookup(embedding, ids), axis=1)
  logits = tf.layers.dense(pooled, 2, kernel_initializer=tf.constant_initializer(rng.normal(0, 0.5, (3, 2))))
  probabilities = tf.nn.softmax(logits)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={
        "probabilities": probabilities, "classes": tf.argmax(logits, 1)})
  loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = tf.train.GradientDescentOptimizer(1.0).minimize(loss, tf.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def serve(export_dir):
  predict_fn = tf.contrib.predictor.from_saved_model(export_dir)
  outputs = predict_fn({"words": REQUESTS})
  return {key: value.tolist() for key, value in outputs.items()}


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  results = {}
  if FLAGS.saved_model_dir:
    results["from_saved_model"] = serve(FLAGS.saved_model_dir)
  else:
    def train_input_fn():
      words = np.array([w for w, _ in TRAIN])
      labels = np.array([l for _, l in TRAIN], np.int32)
      return tf.data.Dataset.from_tensor_slices(({"words": words}, labels)).batch(4).repeat()

    estimator = tf.estimator.Estimator(model_fn, model_dir=os.path.join(FLAGS.output_dir, "model"))
    estimator.train(train_input_fn, max_steps=FLAGS.train_steps)
    receiver_fn = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"words": tf.placeholder(tf.string, [None, 4], name="words")})
    export_dir = estimator.export_savedmodel(os.path.join(FLAGS.output_dir, "export"), receiver_fn)
    results["from_saved_model"] = serve(export_dir)
    from_estimator = tf.contrib.predictor.from_estimator(estimator, receiver_fn)
    results["from_estimator"] = {k: v.tolist() for k, v in from_estimator({"words": REQUESTS}).items()}
  with open(os.path.join(FLAGS.output_dir, "predictions.json"), "w") as f:
    json.dump(results, f, indent=1)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
