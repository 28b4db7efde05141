"""Runs tf.keras.layers.RNN over a list of cells (an LSTMCell then a GRUCell), as Keras code
of TF 1.x's years stacked recurrent cells, with weights set from a seeded numpy generator:
writes the variables' names and shapes, the output and the gradients of its sum with respect
to the variables, in the order of their names, into --output_dir/results.json."""
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where results.json goes.")


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  rng = np.random.RandomState(3)
  x = tf.constant(rng.normal(0, 1, (2, 5, 4)).astype(np.float32))
  cells = [tf.keras.layers.LSTMCell(3), tf.keras.layers.GRUCell(2)]
  output = tf.keras.layers.RNN(cells, return_sequences=True)(x)
  variables = sorted(tf.global_variables(), key=lambda v: v.op.name)
  gradients = tf.gradients(tf.reduce_sum(output), variables)
  with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    for variable in variables:
      shape = variable.shape.as_list()
      variable.load(rng.normal(0, 0.5, shape).astype(np.float32), session)
    values, grads = session.run([output, gradients])
  results = {
      "names": [[v.op.name, v.shape.as_list()] for v in variables],
      "output": values.tolist(),
      "gradients": [g.tolist() for g in grads],
  }
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
