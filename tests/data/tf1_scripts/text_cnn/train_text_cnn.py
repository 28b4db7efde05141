"""A text CNN on sentences: words to ids with tf.contrib.learn's VocabularyProcessor,
a model_fn that branches on learn.ModeKeys, trained by a learn.Experiment that
learn_runner.run builds and runs."""
import json
import os

import numpy as np
import tensorflow as tf
from tensorflow.contrib import learn

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where the vocabulary, checkpoints and results go.")
flags.DEFINE_integer("max_document_length", 7, "Words kept per sentence.")
flags.DEFINE_integer("train_steps", 12, "Training steps.")
flags.DEFINE_string("vocab_file", None, "If set, a saved VocabularyProcessor to restore and apply.")

SENTENCES = [
  ("the film was a joy , truly wonderful", 1),
  ("a dull and lifeless film", 0),
  ("wonderful acting , a joy to watch", 1),
  ("the plot was dull , the acting worse", 0),
  ("I loved it ; a warm , funny story", 1),
  ("NOT worth the ticket - a mess", 0),
  ("funny and warm from start to end", 1),
  ("lifeless , dull , a mess of a film", 0),
]
HELD_OUT = ["a truly warm film", "the ticket was wasted on a mess", "Spectacular!! HTMLParser don't re-use it"]


def model_fn(features, labels, mode, params):
  ids = features["ids"]
  rng = np.random.RandomState(3)
  vocab_size, dim, filters = params["vocab_size"], 6, 4
  embedding = tf.get_variable(
      "embedding", [vocab_size, dim],
      initializer=tf.constant_initializer(rng.uniform(-0.5, 0.5, (vocab_size, dim))))
  embedded = tf.expand_dims(tf.nn.embedding_lookup(embedding, ids), -1)
  pooled = []
  for width in (2, 3):
    with tf.variable_scope("conv-maxpool-%d" % width):
      w = tf.get_variable(
          "W", [width, dim, 1, filters],
          initializer=tf.constant_initializer(rng.normal(0, 0.3, (width, dim, 1, filters))))
      b = tf.get_variable("b", [filters], initializer=tf.constant_initializer(0.1))
      conv = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(embedded, w, [1, 1, 1, 1], "VALID"), b))
      pooled.append(tf.reduce_max(conv, axis=[1, 2]))
  features_all = tf.concat(pooled, 1)
  if mode == learn.ModeKeys.TRAIN:
    features_all = tf.nn.dropout(features_all, rate=0.0)
  w_out = tf.get_variable(
      "W_out", [2 * filters, 2],
      initializer=tf.constant_initializer(rng.normal(0, 0.3, (2 * filters, 2))))
  logits = tf.matmul(features_all, w_out)
  probabilities = tf.nn.softmax(logits)
  if mode == learn.ModeKeys.INFER:
    return tf.estimator.EstimatorSpec(mode, predictions={"probabilities": probabilities})
  loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
  if mode == learn.ModeKeys.EVAL:
    accuracy = tf.metrics.accuracy(labels, tf.argmax(logits, 1))
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
  train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss, tf.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  if FLAGS.vocab_file:
    restored = learn.preprocessing.VocabularyProcessor.restore(FLAGS.vocab_file)
    ids = np.array(list(restored.transform(HELD_OUT)))
    with open(os.path.join(FLAGS.output_dir, "restored_ids.json"), "w") as f:
      json.dump({"ids": ids.tolist(), "words": list(restored.reverse(ids))}, f, indent=1)
    return
  texts = [text for text, _ in SENTENCES]
  labels = np.array([label for _, label in SENTENCES], np.int32)
  everything = learn.preprocessing.VocabularyProcessor(FLAGS.max_document_length)
  all_ids = np.array(list(everything.fit_transform(texts)))
  vocab_processor = learn.preprocessing.VocabularyProcessor(FLAGS.max_document_length, min_frequency=1)
  x = np.array(list(vocab_processor.fit_transform(texts)))
  vocab_path = os.path.join(FLAGS.output_dir, "vocab")
  vocab_processor.save(vocab_path)
  everything.save(os.path.join(FLAGS.output_dir, "vocab_all"))
  restored = learn.preprocessing.VocabularyProcessor.restore(vocab_path)
  held_out = np.array(list(restored.transform(HELD_OUT)))
  tokens = list(learn.preprocessing.tokenizer(HELD_OUT + texts))

  def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"ids": x}, labels)).batch(4).repeat()

  def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"ids": x}, labels)).batch(8)

  def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices({"ids": held_out}).batch(3)

  def experiment_fn(run_config, hparams):
    estimator = tf.estimator.Estimator(
        model_fn, config=run_config, params={"vocab_size": len(vocab_processor.vocabulary_)})
    return learn.Experiment(estimator, train_input_fn, eval_input_fn,
                            train_steps=FLAGS.train_steps, eval_steps=1)

  config = learn.RunConfig(model_dir=os.path.join(FLAGS.output_dir, "model"),
                           save_checkpoints_steps=6, tf_random_seed=1)
  metrics, _ = learn.learn_runner.run(experiment_fn, run_config=config, schedule="train_and_evaluate")
  estimator = tf.estimator.Estimator(
      model_fn, config=config, params={"vocab_size": len(vocab_processor.vocabulary_)})
  predictions = [p["probabilities"].tolist() for p in estimator.predict(predict_input_fn)]
  results = {
      "all_ids": all_ids.tolist(),
      "x": x.tolist(),
      "vocab_size": len(vocab_processor.vocabulary_),
      "held_out": held_out.tolist(),
      "reversed": list(restored.reverse(held_out)),
      "tokens": tokens,
      "loss": float(metrics["loss"]),
      "accuracy": float(metrics["accuracy"]),
      "global_step": int(metrics["global_step"]),
      "predictions": predictions,
  }
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
