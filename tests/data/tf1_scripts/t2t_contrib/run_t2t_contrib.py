"""What tensor2tensor's walkthrough reads of tf.contrib and TF 1.x's API beyond BERT's:
tf.contrib.layers.optimize_loss (by name, class, instance, function; clipping, noise-free
multipliers, update ops, summaries) and OPTIMIZER_CLS_NAMES, tf.contrib.opt's
LazyAdamOptimizer on gathered (sparse) and dense gradients, tf.layers' 3-D convolution
and pooling, slim's parallel_reader and tfexample_decoder, contrib's util, framework
and learn.monitors helpers, tf.estimator's hook names, which RunConfig has a tpu_config,
EvalSpec's fields, and slim's nets imported by their module paths. Seeded; writes what
each gave into --output_dir/results.json."""
import json
import os

import numpy as np
import tensorflow as tf
from tensorflow.contrib.slim.python.slim.nets.resnet_v1 import resnet_v1_152
from tensorflow.contrib.slim.python.slim.nets import vgg

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where results.json goes.")


def floats(value):
  return np.asarray(value, dtype=np.float64).round(7).tolist()


def small_model(rng, ids=None):
  """An embedding read by tf.gather (a sparse gradient) and a dense kernel."""
  init = tf.constant_initializer
  table = tf.get_variable("table", [6, 3], initializer=init(rng.normal(0, 1, (6, 3))))
  kernel = tf.get_variable("kernel", [3, 2], initializer=init(rng.normal(0, 1, (3, 2))))
  if ids is None:
    ids = tf.constant([1, 3, 1, 4])
  target = tf.constant(rng.normal(0, 1, (4, 2)).astype(np.float32))
  out = tf.matmul(tf.gather(table, ids), kernel)
  return tf.reduce_mean(tf.square(out - target)), table, kernel


def optimize_loss_case(optimizer, **kwargs):
  """Three steps of optimize_loss's train op in a graph of its own."""
  graph = tf.Graph()
  with graph.as_default():
    rng = np.random.RandomState(3)
    loss, table, kernel = small_model(rng)
    counter = tf.get_variable("counter", [], initializer=tf.zeros_initializer())
    tf.add_to_collection(tf.GraphKeys.UPDATE_OPS, tf.assign_add(counter, 1.0))
    step = tf.train.get_or_create_global_step()
    train = tf.contrib.layers.optimize_loss(loss, step, optimizer=optimizer, **kwargs)
    out = {
        "train_op": train.op.name,
        "variables": sorted(v.op.name for v in tf.global_variables()),
        "summaries": sorted(s.op.name for s in tf.get_collection(tf.GraphKeys.SUMMARIES)),
        "losses": [],
    }
    with tf.Session() as session:
      session.run(tf.global_variables_initializer())
      for _ in range(3):
        out["losses"].append(float(session.run(train)))
      out["table"], out["kernel"], out["counter"], out["step"] = [
          floats(v) for v in session.run([table, kernel, counter, step])]
  return out


def optimize_loss_cases():
  sgd = lambda lr: tf.train.GradientDescentOptimizer(lr)
  out = {
      "names": sorted(tf.contrib.layers.OPTIMIZER_CLS_NAMES),
      "adam_by_name": optimize_loss_case(
          "Adam", learning_rate=0.1, name="training",
          summaries=["loss", "learning_rate", "global_gradient_norm", "gradients",
                     "gradient_norm"]),
      "momentum_clipped": optimize_loss_case(
          "Momentum", learning_rate=0.05, clip_gradients=0.5),
      "sgd_class_multiplied": optimize_loss_case(
          tf.train.GradientDescentOptimizer, learning_rate=0.2,
          gradient_multipliers={"kernel:0": 0.5}),
      "function_no_increment": optimize_loss_case(
          sgd, learning_rate=0.3, increment_global_step=False, summaries=[]),
      "lazy_adam_instance": optimize_loss_case(
          tf.contrib.opt.LazyAdamOptimizer(0.1), learning_rate=None,
          learning_rate_decay_fn=None, name="training"),
      "refusals": {},
  }
  bad = {
      "summary": dict(optimizer="SGD", learning_rate=0.1, summaries=["weights"]),
      "name": dict(optimizer="Nadam", learning_rate=0.1),
      "int_rate": dict(optimizer="SGD", learning_rate=1),
  }
  for key, kwargs in sorted(bad.items()):
    try:
      optimize_loss_case(**kwargs)
      out["refusals"][key] = None
    except ValueError as error:
      out["refusals"][key] = str(error)
  return out


def lazy_adam():
  """LazyAdam beside Adam on gathered rows that change from step to step (row 5 is never
  read): a row read once and then not moves on under Adam only; LazyAdam again on
  resource variables."""
  steps = [[1, 3, 1, 4], [0, 2, 0, 2], [1, 1, 4, 4], [2, 3, 0, 1]]
  out = {}
  cases = (("lazy", tf.contrib.opt.LazyAdamOptimizer, False),
           ("adam", tf.train.AdamOptimizer, False),
           ("lazy_resource", tf.contrib.opt.LazyAdamOptimizer, True))
  for name, make, resource in cases:
    graph = tf.Graph()
    with graph.as_default(), tf.variable_scope("", use_resource=resource):
      ids = tf.placeholder(tf.int32, [4])
      loss, table, kernel = small_model(np.random.RandomState(4), ids)
      optimizer = make(0.05, beta1=0.8, beta2=0.9, epsilon=1e-6)
      train = optimizer.minimize(loss)
      with tf.Session() as session:
        session.run(tf.global_variables_initializer())
        for step_ids in steps:
          session.run(train, {ids: step_ids})
        out[name] = {
            "table": floats(session.run(table)),
            "kernel": floats(session.run(kernel)),
            "m": floats(session.run(optimizer.get_slot(table, "m"))),
            "v": floats(session.run(optimizer.get_slot(table, "v"))),
            "slots": sorted(v.op.name for v in tf.global_variables()),
        }
  return out


def layers_3d():
  rng = np.random.RandomState(6)
  x = tf.constant(rng.normal(0, 1, (2, 4, 5, 6, 3)).astype(np.float32))
  init = tf.constant_initializer
  conv = tf.layers.conv3d(x, 4, 3, strides=(1, 2, 1), padding="same",
                          kernel_initializer=init(rng.normal(0, 0.3, (3, 3, 3, 3, 4))),
                          bias_initializer=init(0.1), activation=tf.nn.relu)
  valid = tf.layers.Conv3D(2, (2, 1, 3), kernel_initializer=init(rng.normal(0, 0.3, (2, 1, 3, 3, 2))))(x)
  pooled = tf.layers.max_pooling3d(conv, 2, 2, padding="same")
  averaged = tf.layers.average_pooling3d(x, (2, 2, 3), (1, 2, 3))
  with tf.Session() as session:
    session.run(tf.global_variables_initializer())
    values = session.run([conv, valid, pooled, averaged])
  return {
      "variables": [[v.op.name, v.shape.as_list()] for v in tf.global_variables()],
      "shapes": [list(v.shape) for v in values],
      "values": [floats(v) for v in values],
  }


def slim_data():
  folder = os.path.join(FLAGS.output_dir, "records")
  tf.gfile.MakeDirs(folder)
  for shard in range(2):
    path = os.path.join(folder, "data-train-%05d" % shard)
    with tf.python_io.TFRecordWriter(path) as writer:
      for index in range(2):
        ids = list(range(shard + 1, shard + 3 + index))
        example = tf.train.Example(features=tf.train.Features(feature={
            "inputs": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
            "targets": tf.train.Feature(int64_list=tf.train.Int64List(value=ids[::-1])),
            "weight": tf.train.Feature(float_list=tf.train.FloatList(value=[0.5 + index])),
        }))
        writer.write(example.SerializeToString())
  reader = tf.contrib.slim.parallel_reader
  files = reader.get_data_files(os.path.join(folder, "data-train*"))
  listed = reader.get_data_files([files[1], os.path.join(folder, "data-*-00000")])
  decoders = tf.contrib.slim.tfexample_decoder
  fields = {"inputs": tf.VarLenFeature(tf.int64), "targets": tf.VarLenFeature(tf.int64),
            "weight": tf.FixedLenFeature([1], tf.float32)}
  handlers = {"inputs": decoders.Tensor("inputs"), "targets": decoders.Tensor("targets", default_value=-1),
              "weight": decoders.Tensor("weight", shape=[])}
  decoder = decoders.TFExampleDecoder(fields, handlers)
  dataset = tf.data.TFRecordDataset(sorted(files)).map(
      lambda record: dict(zip(decoder.list_items(), decoder.decode(record))))
  item = dataset.make_one_shot_iterator().get_next()
  decoded = []
  with tf.Session() as session:
    for _ in range(4):
      got = session.run(item)
      decoded.append({k: np.asarray(v).tolist() for k, v in sorted(got.items())})
  try:
    reader.get_data_files(os.path.join(folder, "nothing*"))
    missing = None
  except ValueError as error:
    missing = str(error).replace(folder, "FOLDER")
  return {
      "files": [os.path.relpath(f, folder) for f in sorted(files)],
      "listed": [os.path.relpath(f, folder) for f in listed],
      "items": sorted(decoder.list_items()),
      "shapes": {k: v.shape.as_list() for k, v in sorted(item.items())},
      "decoded": decoded,
      "missing": missing,
  }


@tf.contrib.framework.deprecated("2019-01-01", "Use the new one.")
def old_function(x):
  """Doubles x."""
  return 2 * x


def helpers():
  x = tf.constant([3.0, 1.0, 2.0])
  with tf.name_scope("outer"):
    with tf.name_scope("inner"):
      scope = tf.contrib.framework.get_name_scope()
  hooks = [tf.train.StopAtStepHook(last_step=3)]
  estimator = tf.estimator.Estimator(lambda features, labels, mode: None,
                                     model_dir=os.path.join(FLAGS.output_dir, "model"))
  config_has = {
      "estimator": hasattr(tf.estimator.RunConfig(), "tpu_config"),
      "tpu": hasattr(tf.contrib.tpu.RunConfig(), "tpu_config"),
      "learn": hasattr(tf.contrib.learn.RunConfig(), "tpu_config"),
  }
  spec = tf.estimator.EvalSpec(lambda: None, steps=1)
  with tf.Session() as session:
    ordered, order = session.run([tf.contrib.framework.sort(x, direction="DESCENDING"),
                                  tf.contrib.framework.argsort(x)])
  return {
      "constant_value": tf.contrib.util.constant_value(x).tolist(),
      "shape_value": tf.contrib.util.constant_value(tf.shape(tf.zeros([2, 3]))).tolist(),
      "product_value": str(tf.contrib.util.constant_value(x * 2.0)),
      "unknown_value": tf.contrib.util.constant_value(tf.placeholder(tf.float32)) is None,
      "ndarray": tf.contrib.util.make_ndarray(tf.contrib.util.make_tensor_proto([[1, 2]])).tolist(),
      "name_scope": scope,
      "sort": ordered.tolist(),
      "argsort": order.tolist(),
      "deprecated_call": old_function(4),
      "deprecated_name": old_function.__name__,
      "replace_monitors": [type(h).__name__ for h in
                           tf.contrib.learn.monitors.replace_monitors_with_hooks(hooks, estimator)],
      "estimator_hooks": {name: getattr(tf.estimator, name) is getattr(tf.train, name)
                          for name in ("CheckpointSaverListener", "CheckpointSaverHook",
                                       "NanTensorHook", "SummarySaverHook", "StepCounterHook")},
      "tpu_config": config_has,
      "eval_spec": [list(spec.hooks), list(spec.exporters), spec.start_delay_secs,
                    spec.throttle_secs],
      "slim_nets": [callable(resnet_v1_152), callable(vgg.vgg_16)],
  }


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  results = {"optimize_loss": optimize_loss_cases()}
  results["lazy_adam"] = lazy_adam()
  with tf.Graph().as_default():
    results["layers_3d"] = layers_3d()
  with tf.Graph().as_default():
    results["slim_data"] = slim_data()
  with tf.Graph().as_default():
    results["helpers"] = helpers()
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
