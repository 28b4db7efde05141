# coding=utf-8
"""tf.contrib.slim's model_analyzer on a small model, as DCGAN-era code printed its
variables: a tf.get_variable convolution, tf.layers.dense, a float16 and an int
variable. Writes what analyze_vars printed and returned, and tensor_description of
a tensor whose batch is unknown, to --output_dir/results.json.
"""

import contextlib
import io
import json
import os

import tensorflow as tf
import tensorflow.contrib.slim as slim

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where results.json goes.")


def main(_):
  images = tf.placeholder(tf.float32, [None, 8, 8, 3])
  with tf.variable_scope("generator"):
    w = tf.get_variable("g_h0_w", [5, 5, 3, 4])
    h = tf.nn.conv2d(images, w, [1, 2, 2, 1], "SAME")
    logits = tf.layers.dense(tf.layers.flatten(h), 6)
  tf.get_variable("scale", [3], dtype=tf.float16)
  tf.Variable(0, trainable=False, name="global_step")
  printed = io.StringIO()
  with contextlib.redirect_stdout(printed):
    trainable = slim.model_analyzer.analyze_vars(tf.trainable_variables(), print_info=True)
  quiet = slim.model_analyzer.analyze_vars(tf.global_variables())
  results = {
      "printed": printed.getvalue().splitlines(),
      "trainable_totals": list(trainable),
      "all_totals": list(quiet),
      "logits": slim.model_analyzer.tensor_description(logits),
      "images": slim.model_analyzer.tensor_description(images),
  }
  tf.gfile.MakeDirs(FLAGS.output_dir)
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
