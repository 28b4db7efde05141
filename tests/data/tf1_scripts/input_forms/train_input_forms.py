"""Feeds one small tf.estimator model every form of input_fn result TF 1.15's Estimator
took, and exports it through every form of serving-input receiver; records what the
model_fn was given, the weights, metrics, predictions and served outputs, and the
messages of the forms TF 1.15 refused, into --output_dir/results.json.

Forms: a Dataset of (tensor, tensor), of a dict alone, of a tensor alone, of
((tensor, tensor), {label dict}), of nested features; tensors of an iterator's
get_next() returned as ((words, nwords), None) (a tagger's predict_input_fn) and as a
list [features, labels]; constant tensors ((a, b), None), which predict reads for ever;
queue tensors (slice_input_producer, tf.train.batch) as ((a, b), None); a Dataset with
labels predicted by a model_fn that takes none. Receivers: ServingInputReceiver of a bare
tensor, of a dict with int keys, with receiver_tensors_alternatives (its signatures),
TensorServingInputReceiver, the raw and the parsing receiver fns."""
import itertools
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Models, exports and results.json.")

BATCH = 4
rng = np.random.RandomState(7)
X = rng.normal(0, 1, (8, 3)).astype(np.float32)
Y = (X[:, 0] - X[:, 2] > 0).astype(np.int64)
KERNEL = rng.normal(0, 0.5, (3, 2))

received = []


def describe(value):
  """What a model_fn was given: the structure, each tensor's dtype and shape."""
  if value is None:
    return None
  if isinstance(value, dict):
    return {str(key): describe(item) for key, item in sorted(value.items())}
  if isinstance(value, (tuple, list)):
    return [type(value).__name__] + [describe(item) for item in value]
  return [value.dtype.name, value.shape.as_list()]


def logits_of(features):
  # Every form carries the columns of X, in the order tf.nest flattens them.
  x = tf.concat([tf.cast(t, tf.float32) for t in tf.nest.flatten(features)], axis=1)
  return tf.layers.dense(x, 2, kernel_initializer=tf.constant_initializer(KERNEL))


def spec(features, labels, mode):
  received.append({"mode": mode, "features": describe(features), "labels": describe(labels)})
  logits = logits_of(features)
  probabilities = tf.nn.softmax(logits)
  if mode == tf.estimator.ModeKeys.PREDICT:
    return tf.estimator.EstimatorSpec(mode, predictions={"probabilities": probabilities})
  if labels is None:
    loss = tf.reduce_mean(tf.square(logits))
    metrics = {}
  else:
    y = tf.nest.flatten(labels)[0]
    loss = tf.losses.sparse_softmax_cross_entropy(y, logits)
    metrics = {"accuracy": tf.metrics.accuracy(y, tf.argmax(logits, 1))}
  metrics["mean_p1"] = tf.metrics.mean(probabilities[:, 1])
  if mode == tf.estimator.ModeKeys.EVAL:
    return tf.estimator.EstimatorSpec(mode, loss=loss, eval_metric_ops=metrics)
  train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss, tf.train.get_global_step())
  return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def model_fn(features, labels, mode):
  return spec(features, labels, mode)


def model_fn_without_labels(features, mode):
  return spec(features, None, mode)


def batched(structure):
  return lambda: tf.data.Dataset.from_tensor_slices(structure).batch(BATCH)


def from_iterator_words_nwords():
  dataset = tf.data.Dataset.from_tensor_slices((X[:, :2], X[:, 2:])).batch(BATCH)
  words, nwords = dataset.make_one_shot_iterator().get_next()
  return (words, nwords), None


def from_iterator_as_list():
  dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(BATCH)
  x, y = dataset.make_one_shot_iterator().get_next()
  return [{"x": x}, y]


def constants_words_nwords():
  return (tf.constant(X[:BATCH, :2]), tf.constant(X[:BATCH, 2:])), None


def queue_words_nwords():
  x, = tf.train.slice_input_producer([tf.constant(X)], num_epochs=1, shuffle=False)
  x = tf.train.batch([x], batch_size=BATCH)
  return (x[:, :2], x[:, 2:]), None


# name: (input_fn, model_fn, evaluation steps, predictions read)
FORMS = {
    "dataset_tensor_labels": (batched((X, Y)), model_fn, None, None),
    "dataset_dict_alone": (batched({"x": X}), model_fn, None, None),
    "dataset_tensor_alone": (batched(X), model_fn, None, None),
    "dataset_tuple_features_dict_labels": (
        batched(((X[:, :2], X[:, 2:]), {"y": Y})), model_fn, None, None),
    "dataset_nested_features": (
        batched(({"a": {"x": X[:, :1]}, "b": (X[:, 1:2], X[:, 2:])}, Y)), model_fn, None, None),
    "iterator_words_nwords_none": (from_iterator_words_nwords, model_fn, None, None),
    "iterator_as_list": (from_iterator_as_list, model_fn, None, None),
    "constants_words_nwords_none": (constants_words_nwords, model_fn, 2, 6),
    "queue_words_nwords_none": (queue_words_nwords, model_fn, None, None),
    "labels_to_predict_without_labels": (batched((X, Y)), model_fn_without_labels, None, None),
}


def run_form(name, input_fn, form_model_fn, eval_steps, predictions_read):
  del received[:]
  estimator = tf.estimator.Estimator(
      form_model_fn, model_dir=os.path.join(FLAGS.output_dir, "models", name))
  result = {}
  if form_model_fn is model_fn:
    estimator.train(input_fn, steps=2)
    evaluated = estimator.evaluate(input_fn, steps=eval_steps)
    result["evaluated"] = {key: float(value) for key, value in sorted(evaluated.items())}
  else:  # the model_fn takes no labels: trained on the same data without them
    estimator.train(batched(X), steps=2)
  predictions = estimator.predict(input_fn)
  if predictions_read:
    predictions = itertools.islice(predictions, predictions_read)
  result["predictions"] = [p["probabilities"].tolist() for p in predictions]
  result["kernel"] = estimator.get_variable_value("dense/kernel").tolist()
  result["received"] = list(received)
  return result


def refusals():
  """The messages TF 1.15 refused input_fn results and receivers with."""
  messages = {}

  def record(name, call):
    try:
      call()
      messages[name] = None
    except ValueError as error:
      messages[name] = str(error)

  def train(input_fn, form_model_fn=model_fn):
    directory = os.path.join(FLAGS.output_dir, "refused", str(len(messages)))
    tf.estimator.Estimator(form_model_fn, model_dir=directory).train(input_fn, steps=1)

  def three_tensors():
    x, y = tf.data.Dataset.from_tensor_slices((X, Y)).batch(BATCH).make_one_shot_iterator().get_next()
    return x, y, y

  def one_tensor_tuple():
    return (tf.constant(X),)

  record("tuple_of_three", lambda: train(three_tensors))
  record("tuple_of_one", lambda: train(one_tensor_tuple))
  record("dataset_of_three", lambda: train(batched((X, Y, Y))))
  record("labels_for_model_fn_without_labels",
         lambda: train(batched((X, Y)), model_fn_without_labels))

  receiver = tf.estimator.export.ServingInputReceiver
  tensor_receiver = tf.estimator.export.TensorServingInputReceiver
  with tf.Graph().as_default():
    p = tf.placeholder(tf.float32, [None, 3])
    record("features_none", lambda: receiver(None, p))
    record("feature_not_tensor", lambda: receiver({"x": 3.0}, p))
    record("feature_key_tuple", lambda: receiver({("a",): p}, p))
    record("receiver_tensors_none", lambda: receiver({"x": p}, None))
    record("receiver_tensor_key_int", lambda: receiver({"x": p}, {1: p}))
    record("receiver_tensor_not_tensor", lambda: receiver({"x": p}, {"x": [1.0]}))
    record("alternatives_not_dict", lambda: receiver({"x": p}, p, ["a"]))
    record("alternative_not_tensor", lambda: receiver({"x": p}, p, {"alt": {"x": "p"}}))
    record("tensor_receiver_dict", lambda: tensor_receiver({"x": p}, p))
    record("tensor_receiver_none", lambda: tensor_receiver(None, p))
  return messages


def example(row):
  return tf.train.Example(features=tf.train.Features(feature={
      "x": tf.train.Feature(float_list=tf.train.FloatList(value=row))})).SerializeToString()


def exports():
  """Each receiver form exported and served: the signature's inputs and outputs, and
  what it computes for X's first rows."""
  estimator = tf.estimator.Estimator(
      model_fn, model_dir=os.path.join(FLAGS.output_dir, "models", "dataset_tensor_labels"))

  def bare_tensor():
    p = tf.placeholder(tf.float32, [None, 3], name="x")
    return tf.estimator.export.ServingInputReceiver(p, p)

  def int_keys():
    p = tf.placeholder(tf.float32, [None, 3], name="x")
    return tf.estimator.export.ServingInputReceiver({0: p[:, :1], 1: p[:, 1:]}, {"x": p})

  def parsing_and_parsed():
    examples = tf.placeholder(tf.string, [None], name="input_example_tensor")
    features = tf.parse_example(examples, {"x": tf.FixedLenFeature([3], tf.float32)})
    return tf.estimator.export.ServingInputReceiver(
        features, {"examples": examples}, receiver_tensors_alternatives={"parsed": features})

  def tensor_features():
    p = tf.placeholder(tf.float32, [None, 3], name="x")
    return tf.estimator.export.TensorServingInputReceiver(p, {"x": p})

  receivers = {
      "bare_tensor": (bare_tensor, {"input": X[:2]}),
      "int_keys": (int_keys, {"x": X[:2]}),
      "alternatives": (parsing_and_parsed, {"examples": [example(row) for row in X[:2]]}),
      "tensor_features": (tensor_features, {"x": X[:2]}),
      "raw": (tf.estimator.export.build_raw_serving_input_receiver_fn(
          {"x": tf.placeholder(tf.float32, [None, 3], name="x")}), {"x": X[:2]}),
      "parsing": (tf.estimator.export.build_parsing_serving_input_receiver_fn(
          {"x": tf.FixedLenFeature([3], tf.float32)}),
                  {"examples": [example(row) for row in X[:2]]}),
  }
  results = {}
  for name, (receiver_fn, feed) in sorted(receivers.items()):
    del received[:]
    export_dir = estimator.export_savedmodel(
        os.path.join(FLAGS.output_dir, "exports", name), receiver_fn)
    results[name] = served(export_dir, None, feed)
    results[name]["received"] = list(received)
    with tf.Graph().as_default(), tf.Session() as session:
      loaded = tf.saved_model.loader.load(session, ["serve"], export_dir)
      results[name]["signatures"] = sorted(loaded.signature_def)
  results["alternatives"]["parsed"] = served(
      export_dir_of(estimator, "alternatives"), "parsed:serving_default", {"x": X[:2]})
  return results


def export_dir_of(estimator, name):
  (export_dir,) = tf.gfile.Glob(os.path.join(FLAGS.output_dir, "exports", name, "*"))
  return export_dir


def served(export_dir, signature_def_key, feed):
  predict_fn = tf.contrib.predictor.from_saved_model(export_dir, signature_def_key)
  outputs = predict_fn(feed)
  return {"inputs": sorted(predict_fn.feed_tensors),
          "outputs": {key: value.tolist() for key, value in sorted(outputs.items())}}


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  results = {"forms": {name: run_form(name, *form) for name, form in sorted(FORMS.items())}}
  results["refusals"] = refusals()
  results["exports"] = exports()
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
