"""A deep tanh network trained with gradient checkpointing: its gradients come from
memory_saving_gradients (graph_editor copies of the forward segments), checked against
tf.gradients, then applied in a plain tf.Session loop."""
import json
import os

import numpy as np
import tensorflow as tf

import memory_saving_gradients

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where results.json goes.")
flags.DEFINE_integer("num_steps", 5, "Training steps.")
flags.DEFINE_integer("num_layers", 6, "Layers; every second one's output is a checkpoint.")


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  rng = np.random.RandomState(2)
  x = tf.constant(rng.normal(0, 1, (5, 4)).astype(np.float32))
  y = tf.constant(rng.normal(0, 1, (5, 3)).astype(np.float32))
  h = x
  weights = []
  for layer in range(FLAGS.num_layers):
    width = 3 if layer == FLAGS.num_layers - 1 else 6
    with tf.variable_scope("layer_%d" % layer):
      w = tf.get_variable("w", [h.shape[1].value, width],
                          initializer=tf.constant_initializer(rng.normal(0, 0.6, (h.shape[1].value, width))))
      b = tf.get_variable("b", [width], initializer=tf.constant_initializer(0.05 * layer))
      h = tf.tanh(tf.matmul(h, w) + b)
      if layer % 2 == 1 and layer < FLAGS.num_layers - 1:
        tf.add_to_collection("checkpoints", h)
    weights += [w, b]
  loss = tf.reduce_mean(tf.square(h - y))
  plain = tf.gradients(loss, weights)
  checkpointed = memory_saving_gradients.gradients_collection(loss, weights)
  with memory_saving_gradients.capture_ops() as speed_ops:
    at_matmuls = memory_saving_gradients.gradients(loss, weights, checkpoints="speed")
  copies = [op.name for op in tf.get_default_graph().get_operations() if op.name.endswith("_1")]
  optimizer = tf.train.GradientDescentOptimizer(0.3)
  with tf.control_dependencies(checkpointed):  # every gradient before any update
    train_op = optimizer.apply_gradients(zip([tf.identity(g) for g in checkpointed], weights))
  results = {"losses": []}
  with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    got_plain, got_checkpointed, got_speed = sess.run([plain, checkpointed, at_matmuls])
    results["speed_gradients"] = [g.tolist() for g in got_speed]
    results["plain_gradients"] = [g.tolist() for g in got_plain]
    results["checkpointed_gradients"] = [g.tolist() for g in got_checkpointed]
    for _ in range(FLAGS.num_steps):
      results["losses"].append(float(sess.run(loss)))
      sess.run(train_op)
    results["final_loss"] = float(sess.run(loss))
  results["num_checkpoints"] = len(tf.get_collection("checkpoints"))
  results["recomputed_ops"] = len(copies) > 0
  results["captured_ops"] = len(speed_ops) > 0
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
