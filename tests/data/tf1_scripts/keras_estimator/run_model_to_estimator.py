"""tf.keras.estimator.model_to_estimator as the TF 1.x Keras guide and Keras code of its
years used it: a compiled Sequential (a Keras optimizer, metrics) and a functional model
with named dict inputs (a tf.train optimizer, no metrics), each made an Estimator and
trained, evaluated and predicted on Datasets. The weights are set from seeded numpy values
before the conversion (which warm-starts from them), so both TensorFlows start alike.
Writes results.json into --output_dir: the files each model_dir holds, the variables of
the warm-start checkpoint and of the newest one, the weights after training, the
evaluations and the predictions."""
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Model folders and results.json.")

layers = tf.keras.layers
rng = np.random.RandomState(3)
X = rng.uniform(-1, 1, (12, 3)).astype(np.float32)
CLASSES = (X[:, 0] + X[:, 1] > 0).astype(np.int64)
ONE_HOT = np.eye(2, dtype=np.float32)[CLASSES]


def seeded(model, seed):
  weights = np.random.RandomState(seed)
  model.set_weights([weights.uniform(-0.5, 0.5, w.shape).astype(np.float32)
                     for w in model.get_weights()])


def files(model_dir):
  found = []
  for directory, _, names in os.walk(model_dir):
    for name in names:
      path = os.path.relpath(os.path.join(directory, name), model_dir)
      if name.startswith("events.out.tfevents"):
        path = os.path.join(os.path.dirname(path), "events.out.tfevents")
      found.append(path)
  return sorted(set(found))


def variables(path):
  return sorted([name, list(shape)] for name, shape in tf.train.list_variables(path))


def report(estimator, evaluated, predicted):
  model_dir = estimator.model_dir
  keras_dir = os.path.join(model_dir, "keras")
  trained = tf.train.latest_checkpoint(model_dir)
  return {
      "files": files(model_dir),
      "warm_start_variables": variables(os.path.join(keras_dir, "keras_model.ckpt")),
      "warm_start_checkpoint": os.path.basename(tf.train.latest_checkpoint(keras_dir)),
      "trained_checkpoint": os.path.basename(trained),
      "variables": variables(trained),
      "weights": {name: tf.train.load_variable(trained, name).tolist()
                  for name, _ in tf.train.list_variables(trained)
                  if "kernel" in name or "bias" in name},
      "evaluated": {key: float(value) for key, value in evaluated.items()},
      "evaluated_types": {key: type(value).__name__ for key, value in evaluated.items()},
      "predicted": [{key: value.tolist() for key, value in p.items()} for p in predicted],
  }


def sequential_case():
  model = tf.keras.Sequential([
      layers.Dense(4, activation="relu", input_shape=(3,)),
      layers.Dense(2, activation="softmax"),
  ])
  seeded(model, 11)
  model.compile(optimizer=tf.keras.optimizers.SGD(0.5),
                loss="categorical_crossentropy", metrics=["accuracy"])
  model_dir = os.path.join(FLAGS.output_dir, "sequential")
  estimator = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=model_dir)

  def train_input_fn():
    return tf.data.Dataset.from_tensor_slices((X, ONE_HOT)).repeat().batch(4)

  def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices((X, ONE_HOT)).batch(5)

  def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices(X[:3]).batch(2)

  estimator.train(input_fn=train_input_fn, steps=3)
  evaluated = estimator.evaluate(input_fn=eval_input_fn)
  predicted = list(estimator.predict(input_fn=predict_input_fn))
  return report(estimator, evaluated, predicted)


def functional_case():
  a = tf.keras.Input(shape=(2,), name="a")
  b = tf.keras.Input(shape=(1,), name="b")
  joined = layers.concatenate([a, b])
  hidden = layers.Dense(3, activation="tanh", name="hidden")(joined)
  score = layers.Dense(1, activation="sigmoid", name="score")(hidden)
  model = tf.keras.Model(inputs=[a, b], outputs=score)
  seeded(model, 12)
  model.compile(optimizer=tf.train.GradientDescentOptimizer(0.2), loss="binary_crossentropy")
  model_dir = os.path.join(FLAGS.output_dir, "functional")
  estimator = tf.keras.estimator.model_to_estimator(keras_model=model, model_dir=model_dir)
  labels = CLASSES.astype(np.float32).reshape(-1, 1)

  def features(rows):
    return {"a": X[rows, :2], "b": X[rows, 2:]}

  def train_input_fn():
    return tf.data.Dataset.from_tensor_slices((features(slice(None)), labels)).repeat().batch(3)

  def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices((features(slice(None)), labels)).batch(6)

  def predict_input_fn():
    return tf.data.Dataset.from_tensor_slices(features(slice(0, 4))).batch(4)

  estimator.train(input_fn=train_input_fn, steps=4)
  evaluated = estimator.evaluate(input_fn=eval_input_fn, steps=1)
  predicted = list(estimator.predict(input_fn=predict_input_fn))
  return report(estimator, evaluated, predicted)


def main(_):
  results = {"sequential": sequential_case(), "functional": functional_case()}
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
