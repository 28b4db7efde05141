"""What TF 1.x libraries of 2017-2020 built their layers on, as TFLearn 0.3.2 did: functions
decorated with tf.contrib.framework's add_arg_scope (imported by its module path) under
nested and re-entered arg_scopes, contrib's l1 and l2 regularizers, and variables made with regularizers (given, and from a
variable_scope) whose losses tf.train.ExponentialMovingAverage averages beside the total
loss while a seeded model trains a few steps; and what Sonnet 1 took from tf.contrib
(framework's nest and smart_cond, eager's defun). Writes what each gave into
--output_dir/results.json."""
import json
import os

import numpy as np
import tensorflow as tf
from tensorflow.contrib.eager.python import tfe
from tensorflow.contrib.framework.python.ops import add_arg_scope

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where results.json goes.")


@add_arg_scope
def scaled(x, scale=1.0, shift=0.0, name="scaled"):
  return "%s: %s * %s + %s" % (name, x, scale, shift)


@add_arg_scope
def labelled(x, label="none"):
  return "%s (%s)" % (x, label)


def plain(x, scale=1.0):
  return x * scale


def arg_scope_cases():
  arg_scope = tf.contrib.framework.arg_scope
  out = {"outside": scaled(1)}
  with arg_scope([scaled], scale=2.0) as outer:
    out["outer"] = scaled(1)
    out["outer_given"] = scaled(1, scale=5.0)
    with arg_scope([scaled], shift=3.0), arg_scope([labelled], label="inner"):
      out["inner"] = scaled(1)
      out["inner_labelled"] = labelled("x")
      with arg_scope(outer):
        out["reentered"] = scaled(1)
        out["reentered_labelled"] = labelled("x")
    out["after_inner"] = scaled(1)
  out["after_outer"] = scaled(1)
  out["has_arg_scope"] = [tf.contrib.framework.has_arg_scope(f) for f in (scaled, plain)]
  out["arg_scoped_arguments"] = list(tf.contrib.framework.arg_scoped_arguments(scaled))
  for name, call in (
      ("undecorated", lambda: arg_scope([plain], scale=2.0)),
      ("not_a_list", lambda: arg_scope(scaled, scale=2.0)),
      ("scope_with_kwargs", lambda: arg_scope({}, scale=2.0)),
  ):
    try:
      with call():
        pass
      out[name] = "no error"
    except (TypeError, ValueError) as e:
      out[name] = "%s: %s" % (type(e).__name__, e)
  return out


def regularizer_cases():
  out = {}
  weights = tf.constant([[1.0, -2.0], [3.0, -4.0]])
  for kind in ("l1_regularizer", "l2_regularizer"):
    make = getattr(tf.contrib.layers, kind)
    out[kind + "_zero"] = repr(make(0.0)(weights))
    for scale in (2, -0.5):
      try:
        make(scale)
        out["%s_%s" % (kind, scale)] = "no error"
      except ValueError as e:
        out["%s_%s" % (kind, scale)] = str(e)
    loss = make(0.25, scope="named")(weights)
    with tf.Session() as session:
      out[kind] = [loss.op.name, float(session.run(loss))]
  return out


def regularized_training():
  rng = np.random.RandomState(5)
  x = tf.constant(rng.normal(0, 1, (8, 4)).astype(np.float32))
  y = tf.constant(rng.normal(0, 1, (8, 1)).astype(np.float32))
  init = tf.constant_initializer
  w1 = tf.get_variable("w1", initializer=init(rng.normal(0, 0.5, (4, 3))), shape=[4, 3],
                       regularizer=tf.contrib.layers.l2_regularizer(0.1))
  with tf.variable_scope("dense", regularizer=tf.contrib.layers.l1_regularizer(0.05)):
    w2 = tf.get_variable("w2", initializer=init(rng.normal(0, 0.5, (3, 1))), shape=[3, 1])
    b2 = tf.get_variable("b2", initializer=init(0.1), shape=[1])
  loss = tf.reduce_mean(tf.square(tf.matmul(tf.tanh(tf.matmul(x, w1)), w2) + b2 - y))
  regularization = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
  total = tf.add_n([loss] + regularization, name="total_loss")
  averages = tf.train.ExponentialMovingAverage(0.9, name="moving_avg")
  average_op = averages.apply([total, loss] + regularization)
  train = tf.train.GradientDescentOptimizer(0.1).minimize(total)
  with tf.control_dependencies([train]):
    step = tf.group(average_op)
  watched = [total, loss] + regularization
  out = {
      "collection": [[type(t).__name__ == "Tensor" or isinstance(t, tf.Tensor), t.op.name,
                      t.shape.as_list()] for t in regularization],
      "average_names": [averages.average(t).op.name for t in watched],
      "steps": [],
  }
  with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    for _ in range(3):
      session.run(step)
      values, means = session.run([watched, [averages.average(t) for t in watched]])
      out["steps"].append({"values": [float(v) for v in values],
                           "averages": [float(v) for v in means]})
  return out


def sonnet_helpers():
  """What Sonnet 1 takes from tf.contrib: framework's nest (TF 1.x's internal one) and
  smart_cond, and eager's defun called in a graph."""
  nest = tf.contrib.framework.nest
  structure = {"a": (1, [2, 3]), "b": 4}
  out = {
      "is_sequence": [nest.is_sequence(v) for v in ([1], (1,), {"a": 1}, 1, "ab")],
      "flatten": nest.flatten(structure),
      "flatten_up_to": nest.flatten_up_to({"a": (0, 0), "b": 0}, structure),
      "map_structure_up_to": nest.map_structure_up_to(
          {"a": 0, "b": 0}, lambda v: str(v), structure),
  }
  x = tf.constant([1.0, 2.0, 3.0])
  flag = tf.placeholder(tf.bool, [])
  static = tf.contrib.framework.smart_cond(True, lambda: x * 2.0, lambda: x * 3.0)
  dynamic = tf.contrib.framework.smart_cond(flag, lambda: x * 2.0, lambda: x * 3.0)

  @tfe.defun
  def scaled_sum(v, scale):
    return tf.reduce_sum(v * scale) + tf.reduce_max(v)

  called = scaled_sum(x, tf.constant(0.5))
  with tf.Session() as session:
    out["smart_cond_static"] = session.run(static).tolist()
    out["smart_cond_static_is_cond"] = static.op.type in ("Merge", "If", "StatelessIf")
    out["smart_cond_dynamic"] = [session.run(dynamic, {flag: b}).tolist()
                                 for b in (True, False)]
    out["defun"] = float(session.run(called))
  out["executing_eagerly"] = tfe.executing_eagerly()
  return out


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  results = {"arg_scope": arg_scope_cases(), "regularizers": regularizer_cases(),
             "regularized": regularized_training(), "sonnet": sonnet_helpers()}
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
