"""tf.estimator.inputs.numpy_input_fn as TF 1.x Estimator tutorials used it: training on a
dict of arrays for ever (num_epochs=None) in order, evaluating one epoch (a short last
batch), predicting from a single array; what the model_fn was given (keys, dtypes, static
shapes), the weights after training, the metrics, the predictions and the refusal of a
missing shuffle. Writes results.json into --output_dir."""
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "The model folder and results.json.")

rng = np.random.RandomState(4)
X = rng.uniform(-1, 1, (10, 3)).astype(np.float32)
Y = (X[:, 0] - X[:, 2] > 0).astype(np.int64)
seen = {}


def describe(value):
  return {"dtype": value.dtype.name, "shape": value.shape.as_list()}


def model_fn(features, labels, mode):
  images = features["images"] if isinstance(features, dict) else features
  seen[mode] = {
      "features": (sorted(features) if isinstance(features, dict) else "tensor"),
      "images": describe(images),
      "labels": None if labels is None else describe(labels),
  }
  logits = tf.layers.dense(images, 2, kernel_initializer=tf.constant_initializer(0.1))
  classes = tf.argmax(logits, 1)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={"classes": classes,
                                                          "logits": logits})
  loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)
  train_op = tf.train.GradientDescentOptimizer(0.5).minimize(
      loss, tf.train.get_global_step())
  metrics = {"accuracy": tf.metrics.accuracy(labels, classes),
             "examples": tf.metrics.true_positives(tf.ones_like(labels), tf.ones_like(labels))}
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op,
                                    eval_metric_ops=metrics)


def main(_):
  results = {}
  try:
    tf.estimator.inputs.numpy_input_fn(x={"images": X}, y=Y)
  except ValueError as e:
    results["no_shuffle"] = str(e)
  estimator = tf.estimator.Estimator(model_fn, os.path.join(FLAGS.output_dir, "model"))
  estimator.train(tf.estimator.inputs.numpy_input_fn(
      x={"images": X}, y=Y, batch_size=4, num_epochs=None, shuffle=False), steps=5)
  evaluated = estimator.evaluate(tf.estimator.inputs.numpy_input_fn(
      x={"images": X}, y=Y, batch_size=4, shuffle=False))
  predicted = list(estimator.predict(tf.estimator.inputs.numpy_input_fn(
      x=X[:5], batch_size=2, shuffle=False)))
  results["seen"] = {str(k): v for k, v in seen.items()}
  results["kernel"] = estimator.get_variable_value("dense/kernel").tolist()
  results["evaluated"] = {k: float(v) for k, v in evaluated.items()}
  results["predicted"] = [{"classes": int(p["classes"]), "logits": p["logits"].tolist()}
                          for p in predicted]
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
