# coding=utf-8
"""A run_classifier.py-like script as derived research code writes it, for a new task.

TF 1.x style throughout: tf.flags, a DataProcessor subclass for a new TSV
task, TFRecords written with tf.python_io and read with
tf.contrib.data.map_and_batch, its own modeling.py, TPUEstimator with
TPUEstimatorSpec (eval_metrics, scaffold_fn), tf.app.run.
"""

import csv
import os

import modeling
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", None, "Holds train.tsv, dev.tsv, test.tsv.")
flags.DEFINE_string("output_dir", None, "Checkpoints and results.")
flags.DEFINE_integer("max_seq_length", 8, "Words per example.")
flags.DEFINE_integer("train_batch_size", 8, "Training batch.")
flags.DEFINE_integer("eval_batch_size", 4, "Evaluation batch.")
flags.DEFINE_float("learning_rate", 0.05, "Adam's learning rate.")
flags.DEFINE_float("num_train_epochs", 4.0, "Epochs.")
flags.DEFINE_bool("do_train", False, "Train.")
flags.DEFINE_bool("do_eval", False, "Evaluate.")
flags.DEFINE_bool("do_predict", False, "Predict.")
flags.DEFINE_string("init_checkpoint", None, "Start from these weights.")
flags.DEFINE_bool("use_tpu", False, "TPU.")


class InputExample(object):

  def __init__(self, guid, words, label):
    self.guid = guid
    self.words = words
    self.label = label


class SentimentProcessor(object):
  """The new task: a sentence and its label 0/1, tab-separated."""

  def _read(self, path, set_type):
    examples = []
    with tf.gfile.Open(path, "r") as f:
      for i, row in enumerate(csv.reader(f, delimiter="\t")):
        examples.append(InputExample("%s-%d" % (set_type, i), row[0].split(), row[1]))
    return examples

  def get_train_examples(self, data_dir):
    return self._read(os.path.join(data_dir, "train.tsv"), "train")

  def get_dev_examples(self, data_dir):
    return self._read(os.path.join(data_dir, "dev.tsv"), "dev")

  def get_test_examples(self, data_dir):
    return self._read(os.path.join(data_dir, "test.tsv"), "test")

  def get_labels(self):
    return ["0", "1"]


def read_vocab(data_dir):
  words = ["[PAD]", "[UNK]"]
  with tf.gfile.GFile(os.path.join(data_dir, "vocab.txt")) as f:
    words += [line.strip() for line in f if line.strip()]
  return {w: i for i, w in enumerate(words)}


def write_records(examples, vocab, label_list, path):
  writer = tf.python_io.TFRecordWriter(path)
  for example in examples:
    ids = [vocab.get(w, 1) for w in example.words][:FLAGS.max_seq_length]
    mask = [1] * len(ids)
    while len(ids) < FLAGS.max_seq_length:
      ids.append(0)
      mask.append(0)
    feature = {
        "input_ids": tf.train.Feature(int64_list=tf.train.Int64List(value=ids)),
        "input_mask": tf.train.Feature(int64_list=tf.train.Int64List(value=mask)),
        "label_ids": tf.train.Feature(int64_list=tf.train.Int64List(
            value=[label_list.index(example.label)])),
    }
    writer.write(tf.train.Example(features=tf.train.Features(feature=feature))
                 .SerializeToString())
  writer.close()


def input_fn_builder(path, is_training, drop_remainder):
  name_to_features = {
      "input_ids": tf.FixedLenFeature([FLAGS.max_seq_length], tf.int64),
      "input_mask": tf.FixedLenFeature([FLAGS.max_seq_length], tf.int64),
      "label_ids": tf.FixedLenFeature([], tf.int64),
  }

  def decode(record):
    example = tf.parse_single_example(record, name_to_features)
    return {name: tf.to_int32(t) for name, t in example.items()}

  def input_fn(params):
    d = tf.data.TFRecordDataset(path)
    if is_training:
      d = d.repeat()
    return d.apply(tf.contrib.data.map_and_batch(
        decode, batch_size=params["batch_size"], drop_remainder=drop_remainder))

  return input_fn


def model_fn_builder(config, num_labels, learning_rate, init_checkpoint):

  def model_fn(features, labels, mode, params):
    is_training = mode == tf.estimator.ModeKeys.TRAIN
    model = modeling.BowModel(config, is_training, features["input_ids"],
                              features["input_mask"])
    logits = tf.layers.dense(model.get_pooled_output(), num_labels)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    one_hot = tf.one_hot(features["label_ids"], depth=num_labels, dtype=tf.float32)
    per_example_loss = -tf.reduce_sum(one_hot * log_probs, axis=-1)
    loss = tf.reduce_mean(per_example_loss)

    scaffold_fn = None
    if init_checkpoint:
      assignment = {v.op.name: v.op.name for v in tf.trainable_variables()}
      tf.train.init_from_checkpoint(init_checkpoint, assignment)

    if mode == tf.estimator.ModeKeys.TRAIN:
      optimizer = tf.train.AdamOptimizer(learning_rate)
      train_op = optimizer.minimize(loss, global_step=tf.train.get_or_create_global_step())
      return tf.contrib.tpu.TPUEstimatorSpec(
          mode=mode, loss=loss, train_op=train_op, scaffold_fn=scaffold_fn)
    if mode == tf.estimator.ModeKeys.EVAL:

      def metric_fn(per_example_loss, label_ids, logits):
        predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "eval_accuracy": tf.metrics.accuracy(label_ids, predictions),
            "eval_loss": tf.metrics.mean(per_example_loss),
        }

      return tf.contrib.tpu.TPUEstimatorSpec(
          mode=mode, loss=loss,
          eval_metrics=(metric_fn, [per_example_loss, features["label_ids"], logits]),
          scaffold_fn=scaffold_fn)
    return tf.contrib.tpu.TPUEstimatorSpec(
        mode=mode, predictions={"probabilities": tf.nn.softmax(logits)},
        scaffold_fn=scaffold_fn)

  return model_fn


def main(_):
  tf.logging.set_verbosity(tf.logging.INFO)
  assert modeling.THIS_IS_THE_USERS_MODELING
  processor = SentimentProcessor()
  label_list = processor.get_labels()
  vocab = read_vocab(FLAGS.data_dir)
  tf.gfile.MakeDirs(FLAGS.output_dir)
  config = modeling.BowConfig(len(vocab))

  train_examples = processor.get_train_examples(FLAGS.data_dir)
  num_train_steps = int(len(train_examples) / FLAGS.train_batch_size * FLAGS.num_train_epochs)
  run_config = tf.contrib.tpu.RunConfig(
      cluster=None, master=None, model_dir=FLAGS.output_dir, save_checkpoints_steps=1000,
      tpu_config=tf.contrib.tpu.TPUConfig(
          iterations_per_loop=1000, num_shards=8,
          per_host_input_for_training=tf.contrib.tpu.InputPipelineConfig.PER_HOST_V2))
  estimator = tf.contrib.tpu.TPUEstimator(
      use_tpu=FLAGS.use_tpu,
      model_fn=model_fn_builder(config, len(label_list), FLAGS.learning_rate,
                                FLAGS.init_checkpoint),
      config=run_config,
      train_batch_size=FLAGS.train_batch_size,
      eval_batch_size=FLAGS.eval_batch_size,
      predict_batch_size=FLAGS.eval_batch_size)

  if FLAGS.do_train:
    path = os.path.join(FLAGS.output_dir, "train.tf_record")
    write_records(train_examples, vocab, label_list, path)
    estimator.train(input_fn=input_fn_builder(path, True, True), max_steps=num_train_steps)

  if FLAGS.do_eval:
    path = os.path.join(FLAGS.output_dir, "eval.tf_record")
    write_records(processor.get_dev_examples(FLAGS.data_dir), vocab, label_list, path)
    result = estimator.evaluate(input_fn=input_fn_builder(path, False, False))
    with tf.gfile.GFile(os.path.join(FLAGS.output_dir, "eval_results.txt"), "w") as writer:
      for key in sorted(result.keys()):
        writer.write("%s = %s\n" % (key, str(result[key])))

  if FLAGS.do_predict:
    path = os.path.join(FLAGS.output_dir, "predict.tf_record")
    write_records(processor.get_test_examples(FLAGS.data_dir), vocab, label_list, path)
    result = estimator.predict(input_fn=input_fn_builder(path, False, False))
    with tf.gfile.GFile(os.path.join(FLAGS.output_dir, "test_results.tsv"), "w") as writer:
      for prediction in result:
        writer.write("\t".join(str(p) for p in prediction["probabilities"]) + "\n")


if __name__ == "__main__":
  flags.mark_flag_as_required("data_dir")
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
