# coding=utf-8
"""BERT + BiLSTM + CRF named-entity tagger, in the manner of the BERT-BiLSTM-CRF forks.

BERT's sequence output, dropout, a bidirectional LSTM (or GRU) of
tf.contrib.rnn cells with DropoutWrapper run by tf.nn.bidirectional_dynamic_rnn,
a tanh projection and a linear-chain CRF (tf.contrib.crf); tf.estimator
with a LoggingTensorHook, streaming precision / recall / F1 from the
tf_metrics module beside it, TFRecords written with tf.python_io and read
with tf.contrib.data.map_and_batch, an init checkpoint mapped with
tf.train.init_from_checkpoint. Data: `word tag` lines, a blank line
between sentences (data/).
"""

import collections
import os

import modeling
import tensorflow as tf
import tf_metrics
from tensorflow.contrib import crf
from tensorflow.contrib import rnn

flags = tf.flags
FLAGS = flags.FLAGS

flags.DEFINE_string("data_dir", None, "train.txt, dev.txt, test.txt and vocab.txt.")
flags.DEFINE_string("bert_config_file", None, "The encoder's config.")
flags.DEFINE_string("output_dir", None, "Checkpoints, records and results.")
flags.DEFINE_string("init_checkpoint", None, "Start from these weights.")
flags.DEFINE_integer("max_seq_length", 12, "Tokens per example, [CLS] and [SEP] included.")
flags.DEFINE_bool("do_train", False, "Train.")
flags.DEFINE_bool("do_eval", False, "Evaluate on dev.txt.")
flags.DEFINE_bool("do_predict", False, "Tag test.txt.")
flags.DEFINE_integer("batch_size", 8, "Examples per batch.")
flags.DEFINE_float("learning_rate", 0.03, "Adam's learning rate at step 0.")
flags.DEFINE_integer("train_steps", 80, "Training steps.")
flags.DEFINE_integer("save_checkpoints_steps", 40, "Steps between checkpoints.")
flags.DEFINE_integer("lstm_size", 8, "Units of each LSTM direction.")
flags.DEFINE_integer("num_layers", 1, "LSTM layers per direction.")
flags.DEFINE_string("cell", "lstm", "lstm or gru.")
flags.DEFINE_float("dropout_rate", 0.8, "Keep probability of the LSTM outputs in training.")
flags.DEFINE_float("clip", 5.0, "Global gradient norm clip.")
flags.DEFINE_integer("seed", 12345, "Graph-level random seed.")

LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "X", "[CLS]", "[SEP]"]


class InputExample(object):

  def __init__(self, guid, words, labels):
    self.guid = guid
    self.words = words
    self.labels = labels


class InputFeatures(object):

  def __init__(self, input_ids, input_mask, segment_ids, label_ids):
    self.input_ids = input_ids
    self.input_mask = input_mask
    self.segment_ids = segment_ids
    self.label_ids = label_ids


class NerProcessor(object):

  def get_train_examples(self, data_dir):
    return self._create_examples(self._read_data(os.path.join(data_dir, "train.txt")), "train")

  def get_dev_examples(self, data_dir):
    return self._create_examples(self._read_data(os.path.join(data_dir, "dev.txt")), "dev")

  def get_test_examples(self, data_dir):
    return self._create_examples(self._read_data(os.path.join(data_dir, "test.txt")), "test")

  def get_labels(self):
    return LABELS

  @classmethod
  def _read_data(cls, input_file):
    sentences, words, labels = [], [], []
    with tf.gfile.GFile(input_file, "r") as f:
      for line in f:
        parts = line.strip().split()
        if not parts:
          if words:
            sentences.append((words, labels))
          words, labels = [], []
          continue
        words.append(parts[0])
        labels.append(parts[-1])
    if words:
      sentences.append((words, labels))
    return sentences

  def _create_examples(self, lines, set_type):
    return [InputExample("%s-%d" % (set_type, i), words, labels)
            for i, (words, labels) in enumerate(lines)]


class Vocabulary(object):

  def __init__(self, vocab_file):
    with tf.gfile.GFile(vocab_file, "r") as f:
      self.ids = {line.strip(): i for i, line in enumerate(f) if line.strip()}

  def convert_tokens_to_ids(self, tokens):
    return [self.ids.get(t, self.ids["[UNK]"]) for t in tokens]


def convert_single_example(ex_index, example, label_map, max_seq_length, vocab):
  words = example.words[:max_seq_length - 2]
  labels = example.labels[:max_seq_length - 2]
  tokens = ["[CLS]"] + [w.lower() for w in words] + ["[SEP]"]
  label_ids = [label_map["[CLS]"]] + [label_map[l] for l in labels] + [label_map["[SEP]"]]
  input_ids = vocab.convert_tokens_to_ids(tokens)
  input_mask = [1] * len(input_ids)
  while len(input_ids) < max_seq_length:
    input_ids.append(0)
    input_mask.append(0)
    label_ids.append(0)
  if ex_index < 2:
    tf.logging.info("*** Example %s: %s", example.guid, " ".join(tokens))
  return InputFeatures(input_ids, input_mask, [0] * max_seq_length, label_ids)


def filed_based_convert_examples_to_features(examples, label_list, max_seq_length, vocab,
                                             output_file):
  label_map = {label: i for i, label in enumerate(label_list, 1)}
  writer = tf.python_io.TFRecordWriter(output_file)
  for ex_index, example in enumerate(examples):
    feature = convert_single_example(ex_index, example, label_map, max_seq_length, vocab)

    def create_int_feature(values):
      return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    features = collections.OrderedDict()
    features["input_ids"] = create_int_feature(feature.input_ids)
    features["input_mask"] = create_int_feature(feature.input_mask)
    features["segment_ids"] = create_int_feature(feature.segment_ids)
    features["label_ids"] = create_int_feature(feature.label_ids)
    tf_example = tf.train.Example(features=tf.train.Features(feature=features))
    writer.write(tf_example.SerializeToString())
  writer.close()


def file_based_input_fn_builder(input_file, seq_length, is_training, drop_remainder):
  name_to_features = {
      "input_ids": tf.FixedLenFeature([seq_length], tf.int64),
      "input_mask": tf.FixedLenFeature([seq_length], tf.int64),
      "segment_ids": tf.FixedLenFeature([seq_length], tf.int64),
      "label_ids": tf.FixedLenFeature([seq_length], tf.int64),
  }

  def _decode_record(record, name_to_features):
    example = tf.parse_single_example(record, name_to_features)
    for name in list(example.keys()):
      example[name] = tf.to_int32(example[name])
    return example

  def input_fn(params):
    d = tf.data.TFRecordDataset(input_file)
    if is_training:
      d = d.repeat()
      d = d.shuffle(buffer_size=100, seed=FLAGS.seed)
    return d.apply(tf.contrib.data.map_and_batch(
        lambda record: _decode_record(record, name_to_features),
        batch_size=params["batch_size"], drop_remainder=drop_remainder))

  return input_fn


class BLSTM_CRF(object):
  """BiLSTM over the encoder's output, a projection to the labels and a CRF."""

  def __init__(self, embedded_chars, hidden_unit, cell_type, num_layers, dropout_rate,
               initializers, num_labels, seq_length, labels, lengths, is_training):
    self.hidden_unit = hidden_unit
    self.dropout_rate = dropout_rate
    self.cell_type = cell_type
    self.num_layers = num_layers
    self.embedded_chars = embedded_chars
    self.initializers = initializers
    self.seq_length = seq_length
    self.num_labels = num_labels
    self.labels = labels
    self.lengths = lengths
    self.embedding_dims = embedded_chars.shape[-1].value
    self.is_training = is_training

  def add_blstm_crf_layer(self):
    if self.is_training:
      self.embedded_chars = tf.nn.dropout(self.embedded_chars, self.dropout_rate)
    lstm_output = self.blstm_layer(self.embedded_chars)
    logits = self.project_bilstm_layer(lstm_output)
    loss, trans = self.crf_layer(logits)
    pred_ids, best_score = crf.crf_decode(potentials=logits, transition_params=trans,
                                          sequence_length=self.lengths)
    return loss, logits, trans, pred_ids, best_score

  def _witch_cell(self):
    if self.cell_type == "lstm":
      cell_tmp = rnn.LSTMCell(self.hidden_unit)
    elif self.cell_type == "gru":
      cell_tmp = rnn.GRUCell(self.hidden_unit)
    else:
      raise ValueError("cell must be lstm or gru")
    return cell_tmp

  def _bi_dir_rnn(self):
    cell_fw = self._witch_cell()
    cell_bw = self._witch_cell()
    if self.is_training and self.dropout_rate is not None:
      cell_bw = rnn.DropoutWrapper(cell_bw, output_keep_prob=self.dropout_rate)
      cell_fw = rnn.DropoutWrapper(cell_fw, output_keep_prob=self.dropout_rate)
    return cell_fw, cell_bw

  def blstm_layer(self, embedding_chars):
    with tf.variable_scope("rnn_layer"):
      cell_fw, cell_bw = self._bi_dir_rnn()
      if self.num_layers > 1:
        cell_fw = rnn.MultiRNNCell([cell_fw] * self.num_layers, state_is_tuple=True)
        cell_bw = rnn.MultiRNNCell([cell_bw] * self.num_layers, state_is_tuple=True)
      outputs, _ = tf.nn.bidirectional_dynamic_rnn(
          cell_fw, cell_bw, embedding_chars, sequence_length=self.lengths, dtype=tf.float32)
      outputs = tf.concat(outputs, axis=2)
    return outputs

  def project_bilstm_layer(self, lstm_outputs, name=None):
    with tf.variable_scope("project" if not name else name):
      with tf.variable_scope("hidden"):
        W = tf.get_variable("W", shape=[self.hidden_unit * 2, self.hidden_unit],
                            dtype=tf.float32, initializer=self.initializers.xavier_initializer())
        b = tf.get_variable("b", shape=[self.hidden_unit], dtype=tf.float32,
                            initializer=tf.zeros_initializer())
        output = tf.reshape(lstm_outputs, shape=[-1, self.hidden_unit * 2])
        hidden = tf.tanh(tf.nn.xw_plus_b(output, W, b))
      with tf.variable_scope("logits"):
        W = tf.get_variable("W", shape=[self.hidden_unit, self.num_labels], dtype=tf.float32,
                            initializer=self.initializers.xavier_initializer())
        b = tf.get_variable("b", shape=[self.num_labels], dtype=tf.float32,
                            initializer=tf.zeros_initializer())
        pred = tf.nn.xw_plus_b(hidden, W, b)
      return tf.reshape(pred, [-1, self.seq_length, self.num_labels])

  def crf_layer(self, logits):
    with tf.variable_scope("crf_loss"):
      trans = tf.get_variable("transitions", shape=[self.num_labels, self.num_labels],
                              initializer=self.initializers.xavier_initializer())
      if self.labels is None:
        return None, trans
      log_likelihood, trans = tf.contrib.crf.crf_log_likelihood(
          inputs=logits, tag_indices=self.labels, transition_params=trans,
          sequence_lengths=self.lengths)
      return tf.reduce_mean(-log_likelihood), trans


def create_model(bert_config, is_training, input_ids, input_mask, segment_ids, labels,
                 num_labels):
  model = modeling.BertModel(config=bert_config, is_training=is_training,
                             input_ids=input_ids, input_mask=input_mask,
                             token_type_ids=segment_ids)
  embedding = model.get_sequence_output()
  max_seq_length = embedding.shape[1].value
  used = tf.sign(tf.abs(input_ids))
  lengths = tf.reduce_sum(used, reduction_indices=1)
  blstm_crf = BLSTM_CRF(embedded_chars=embedding, hidden_unit=FLAGS.lstm_size,
                        cell_type=FLAGS.cell, num_layers=FLAGS.num_layers,
                        dropout_rate=FLAGS.dropout_rate, initializers=tf.contrib.layers,
                        num_labels=num_labels, seq_length=max_seq_length, labels=labels,
                        lengths=lengths, is_training=is_training)
  return blstm_crf.add_blstm_crf_layer()


def model_fn_builder(bert_config, num_labels, init_checkpoint, learning_rate, num_train_steps):

  def model_fn(features, labels, mode, params):
    input_ids = features["input_ids"]
    input_mask = features["input_mask"]
    segment_ids = features["segment_ids"]
    label_ids = features["label_ids"]
    is_training = (mode == tf.estimator.ModeKeys.TRAIN)
    total_loss, logits, trans, pred_ids, best_score = create_model(
        bert_config, is_training, input_ids, input_mask, segment_ids, label_ids, num_labels)

    tvars = tf.trainable_variables()
    if init_checkpoint:
      assignment_map, initialized = modeling.get_assignment_map_from_checkpoint(
          tvars, init_checkpoint)
      tf.train.init_from_checkpoint(init_checkpoint, assignment_map)
      for var in tvars:
        init_string = ", *INIT_FROM_CKPT*" if var.name in initialized else ""
        tf.logging.info("  name = %s, shape = %s%s", var.name, var.shape, init_string)

    if mode == tf.estimator.ModeKeys.TRAIN:
      global_step = tf.train.get_or_create_global_step()
      lr = tf.train.polynomial_decay(learning_rate, global_step, num_train_steps,
                                     end_learning_rate=0.0, power=1.0)
      optimizer = tf.train.AdamOptimizer(lr)
      grads = tf.gradients(total_loss, tvars)
      grads, _ = tf.clip_by_global_norm(grads, FLAGS.clip)
      train_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
      hook = tf.train.LoggingTensorHook({"loss": total_loss, "step": global_step},
                                        every_n_iter=10)
      return tf.estimator.EstimatorSpec(mode=mode, loss=total_loss, train_op=train_op,
                                        training_hooks=[hook])
    if mode == tf.estimator.ModeKeys.EVAL:
      weights = tf.to_float(input_mask)
      positive = [LABELS.index(l) + 1 for l in ("B-PER", "I-PER", "B-LOC", "I-LOC")]
      metrics = {
          "eval_precision": tf_metrics.precision(label_ids, pred_ids, num_labels, positive,
                                                 weights),
          "eval_recall": tf_metrics.recall(label_ids, pred_ids, num_labels, positive, weights),
          "eval_f": tf_metrics.f1(label_ids, pred_ids, num_labels, positive, weights),
          "eval_macro_f": tf_metrics.f1(label_ids, pred_ids, num_labels, positive, weights,
                                        average="macro"),
          "eval_accuracy": tf.metrics.accuracy(label_ids, pred_ids, weights=weights),
          "eval_tokens": tf_metrics.token_count(weights),
      }
      return tf.estimator.EstimatorSpec(mode=mode, loss=total_loss, eval_metric_ops=metrics)
    return tf.estimator.EstimatorSpec(
        mode=mode, predictions={"pred_ids": pred_ids, "best_score": best_score})

  return model_fn


def main(_):
  tf.logging.set_verbosity(tf.logging.INFO)
  if not FLAGS.do_train and not FLAGS.do_eval and not FLAGS.do_predict:
    raise ValueError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
  bert_config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
  tf.gfile.MakeDirs(FLAGS.output_dir)
  processor = NerProcessor()
  label_list = processor.get_labels()
  vocab = Vocabulary(os.path.join(FLAGS.data_dir, "vocab.txt"))
  session_config = tf.ConfigProto(log_device_placement=False, inter_op_parallelism_threads=0,
                                  intra_op_parallelism_threads=0, allow_soft_placement=True)
  run_config = tf.estimator.RunConfig(
      model_dir=FLAGS.output_dir, save_summary_steps=500,
      save_checkpoints_steps=FLAGS.save_checkpoints_steps, keep_checkpoint_max=3,
      tf_random_seed=FLAGS.seed, session_config=session_config)
  model_fn = model_fn_builder(bert_config, len(label_list) + 1, FLAGS.init_checkpoint,
                              FLAGS.learning_rate, FLAGS.train_steps)
  estimator = tf.estimator.Estimator(model_fn, params={"batch_size": FLAGS.batch_size},
                                     config=run_config)

  if FLAGS.do_train:
    train_file = os.path.join(FLAGS.output_dir, "train.tf_record")
    filed_based_convert_examples_to_features(
        processor.get_train_examples(FLAGS.data_dir), label_list, FLAGS.max_seq_length, vocab,
        train_file)
    estimator.train(
        file_based_input_fn_builder(train_file, FLAGS.max_seq_length, True, True),
        max_steps=FLAGS.train_steps)

  if FLAGS.do_eval:
    eval_file = os.path.join(FLAGS.output_dir, "eval.tf_record")
    filed_based_convert_examples_to_features(
        processor.get_dev_examples(FLAGS.data_dir), label_list, FLAGS.max_seq_length, vocab,
        eval_file)
    result = estimator.evaluate(
        input_fn=file_based_input_fn_builder(eval_file, FLAGS.max_seq_length, False, False))
    with tf.gfile.GFile(os.path.join(FLAGS.output_dir, "eval_results.txt"), "w") as writer:
      for key in sorted(result.keys()):
        writer.write("%s = %s\n" % (key, str(result[key])))

  if FLAGS.do_predict:
    examples = processor.get_test_examples(FLAGS.data_dir)
    predict_file = os.path.join(FLAGS.output_dir, "predict.tf_record")
    filed_based_convert_examples_to_features(examples, label_list, FLAGS.max_seq_length, vocab,
                                             predict_file)
    result = estimator.predict(
        input_fn=file_based_input_fn_builder(predict_file, FLAGS.max_seq_length, False, False))
    id2label = {i: label for i, label in enumerate(label_list, 1)}
    with tf.gfile.GFile(os.path.join(FLAGS.output_dir, "label_test.txt"), "w") as tags, \
        tf.gfile.GFile(os.path.join(FLAGS.output_dir, "scores.txt"), "w") as scores:
      for example, prediction in zip(examples, result):
        predicted = [id2label.get(i, "O") for i in prediction["pred_ids"][1:]]
        for word, gold, tag in zip(example.words, example.labels, predicted):
          tags.write("%s %s %s\n" % (word, gold, tag))
        tags.write("\n")
        scores.write("%.7f\n" % prediction["best_score"])


if __name__ == "__main__":
  flags.mark_flag_as_required("data_dir")
  flags.mark_flag_as_required("bert_config_file")
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
