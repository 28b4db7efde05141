"""Loads the h5 file run_keras_export.py wrote (on TF 1.15) as Keras code of TF 1.x's years
did, both ways: tf.keras.models.load_model (architecture, weights, optimizer) and
load_weights into the same model built anew; writes both predictions on the export's
inputs into --output_dir/loaded.json."""
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("h5", None, "The h5 file of run_keras_export.py.")
flags.DEFINE_string("output_dir", None, "Where loaded.json goes.")


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  x = np.random.RandomState(5).normal(0, 1, (8, 4)).astype(np.float32)
  model = tf.keras.models.load_model(FLAGS.h5)
  results = {"load_model": model.predict(x).tolist(),
             "optimizer": type(model.optimizer).__name__}
  with tf.Graph().as_default(), tf.Session().as_default():
    fresh = tf.keras.Sequential()
    fresh.add(tf.keras.layers.Dense(3, activation=tf.nn.relu, input_shape=(4,)))
    fresh.add(tf.keras.layers.Dense(1, activation=tf.nn.sigmoid))
    fresh.load_weights(FLAGS.h5)
    results["load_weights"] = fresh.predict(x).tolist()
  with open(os.path.join(FLAGS.output_dir, "loaded.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("h5")
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
