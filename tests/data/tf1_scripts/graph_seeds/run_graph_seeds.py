"""Random ops seeded by tf.set_random_seed alone, as TF 1.x code of 2018 built them (OpenAI's
GPT fine-tuning: tf.split of its inputs, variables from random_normal_initializer, tf.nn.dropout
with keep_prob and with a noise_shape, tf.random_uniform): each random op's two seeds, what it
drew, the names of all the ops in the graph in order, and an op seeded by itself and a graph
without a seed beside them. Writes results.json into --output_dir."""
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where results.json goes.")


def seeded_graph():
  graph = tf.Graph()
  with graph.as_default():
    tf.set_random_seed(42)
    tokens = tf.placeholder(tf.float32, [4, 6], name="tokens")
    halves = tf.split(tokens, 2, 1)
    thirds = tf.split(tokens, [2, 2, 2], 1)
    with tf.variable_scope("model"):
      we = tf.get_variable("we", [6, 3],
                           initializer=tf.random_normal_initializer(stddev=0.02))
      hidden = tf.matmul(tf.concat([halves[1], halves[0]], 1) + thirds[2][:, :1], we)
      hidden = tf.nn.dropout(hidden, 0.9)
      pooled = tf.reshape(tf.tile(hidden, [1, 2]), [4, 2, 3])
      pooled = tf.nn.dropout(pooled, 1 - 0.25, [4, 1, 3])
      rated = tf.nn.dropout(pooled, rate=0.5)
      clf = tf.get_variable("clf", [3, 1],
                            initializer=tf.random_normal_initializer(stddev=0.02))
      noise = tf.random_uniform([5])
      ints = tf.random_uniform([5], 0, 10, dtype=tf.int32)
      bounded = tf.random_uniform([2, 2], -1, 3)
      own_seed = tf.random_normal([3], seed=7)
      logits = tf.matmul(tf.reshape(rated, [8, 3]), clf)
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      feed = {tokens: np.arange(24, dtype=np.float32).reshape(4, 6) / 24.0}
      values = sess.run({"we": we, "clf": clf, "hidden": hidden, "pooled": pooled,
                         "rated": rated, "noise": noise, "ints": ints,
                         "bounded": bounded, "own_seed": own_seed,
                         "logits": logits}, feed)
  seeds = [[op.name, op.get_attr("seed"), op.get_attr("seed2")]
           for op in graph.get_operations() if op.type.startswith("Random")]
  return {"values": {k: v.tolist() for k, v in sorted(values.items())},
          "seeds": seeds,
          "ops": [op.name for op in graph.get_operations()]}


def unseeded_graph():
  graph = tf.Graph()
  with graph.as_default():
    tf.nn.dropout(tf.ones([3]), 0.5)
    tf.random_normal([2])
  return [[op.name, op.get_attr("seed"), op.get_attr("seed2")]
          for op in graph.get_operations() if op.type.startswith("Random")]


def main(_):
  results = {"seeded": seeded_graph(), "unseeded": unseeded_graph()}
  tf.gfile.MakeDirs(FLAGS.output_dir)
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
