# coding=utf-8
"""A small BERT-style encoder in TF 1.x, as research code keeps its own modeling.py.

Embeddings (word, token type, position) with LayerNorm and dropout, then
Transformer layers (self-attention and a GELU feed-forward block, each with
a residual and LayerNorm), under the variable names BERT checkpoints use
(bert/embeddings/word_embeddings, bert/encoder/layer_0/attention/self/query,
...).
"""

import collections
import copy
import json
import math
import re

import six
import tensorflow as tf


class BertConfig(object):
  """The encoder's sizes and dropout rates."""

  def __init__(self, vocab_size, hidden_size=768, num_hidden_layers=12,
               num_attention_heads=12, intermediate_size=3072, hidden_act="gelu",
               hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
               max_position_embeddings=512, type_vocab_size=16, initializer_range=0.02):
    self.vocab_size = vocab_size
    self.hidden_size = hidden_size
    self.num_hidden_layers = num_hidden_layers
    self.num_attention_heads = num_attention_heads
    self.intermediate_size = intermediate_size
    self.hidden_act = hidden_act
    self.hidden_dropout_prob = hidden_dropout_prob
    self.attention_probs_dropout_prob = attention_probs_dropout_prob
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.initializer_range = initializer_range

  @classmethod
  def from_json_file(cls, path):
    with tf.gfile.GFile(path, "r") as reader:
      values = json.loads(reader.read())
    config = cls(vocab_size=None)
    for key, value in six.iteritems(values):
      config.__dict__[key] = value
    return config

  def to_dict(self):
    return copy.deepcopy(self.__dict__)


def gelu(x):
  """GELU, tanh approximation."""
  return 0.5 * x * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))


def dropout(x, rate):
  if rate is None or rate == 0.0:
    return x
  return tf.nn.dropout(x, 1.0 - rate)


def layer_norm(x, name=None):
  return tf.contrib.layers.layer_norm(
      inputs=x, begin_norm_axis=-1, begin_params_axis=-1, scope=name)


def initializer(config):
  return tf.truncated_normal_initializer(stddev=config.initializer_range)


def shape_of(x):
  """Static dimensions where known, dynamic ones elsewhere."""
  static = x.shape.as_list()
  dynamic = tf.shape(x)
  return [dim if dim is not None else dynamic[i] for i, dim in enumerate(static)]


class BertModel(object):
  """The encoder on [batch, length] ids; get_sequence_output is [batch, length, hidden]."""

  def __init__(self, config, is_training, input_ids, input_mask=None, token_type_ids=None,
               scope=None):
    config = copy.deepcopy(config)
    if not is_training:
      config.hidden_dropout_prob = 0.0
      config.attention_probs_dropout_prob = 0.0
    batch_size, length = shape_of(input_ids)
    if input_mask is None:
      input_mask = tf.ones([batch_size, length], dtype=tf.int32)
    if token_type_ids is None:
      token_type_ids = tf.zeros([batch_size, length], dtype=tf.int32)
    width = config.hidden_size

    with tf.variable_scope(scope, default_name="bert"):
      with tf.variable_scope("embeddings"):
        table = tf.get_variable("word_embeddings", [config.vocab_size, width],
                                initializer=initializer(config))
        output = tf.gather(table, input_ids)
        types = tf.get_variable("token_type_embeddings", [config.type_vocab_size, width],
                                initializer=initializer(config))
        one_hot = tf.one_hot(tf.reshape(token_type_ids, [-1]), depth=config.type_vocab_size)
        output += tf.reshape(tf.matmul(one_hot, types), [batch_size, length, width])
        positions = tf.get_variable("position_embeddings",
                                    [config.max_position_embeddings, width],
                                    initializer=initializer(config))
        output += tf.expand_dims(tf.slice(positions, [0, 0], [length, -1]), 0)
        output = dropout(layer_norm(output, "LayerNorm"), config.hidden_dropout_prob)
      self.embedding_output = output

      mask = tf.cast(tf.expand_dims(input_mask, 1), tf.float32)
      adder = (1.0 - mask) * -10000.0
      with tf.variable_scope("encoder"):
        for index in range(config.num_hidden_layers):
          with tf.variable_scope("layer_%d" % index):
            output = transformer_layer(output, adder, config, batch_size, length)
      self.sequence_output = output
      with tf.variable_scope("pooler"):
        first = tf.squeeze(output[:, 0:1, :], axis=1)
        self.pooled_output = tf.layers.dense(first, width, activation=tf.tanh,
                                             kernel_initializer=initializer(config))

  def get_sequence_output(self):
    return self.sequence_output

  def get_pooled_output(self):
    return self.pooled_output

  def get_embedding_output(self):
    return self.embedding_output


def transformer_layer(x, adder, config, batch_size, length):
  heads = config.num_attention_heads
  size = config.hidden_size // heads

  def split_heads(t):
    t = tf.reshape(t, [batch_size, length, heads, size])
    return tf.transpose(t, [0, 2, 1, 3])

  with tf.variable_scope("attention"):
    with tf.variable_scope("self"):
      q = split_heads(tf.layers.dense(x, config.hidden_size, name="query",
                                      kernel_initializer=initializer(config)))
      k = split_heads(tf.layers.dense(x, config.hidden_size, name="key",
                                      kernel_initializer=initializer(config)))
      v = split_heads(tf.layers.dense(x, config.hidden_size, name="value",
                                      kernel_initializer=initializer(config)))
      scores = tf.matmul(q, k, transpose_b=True) / math.sqrt(float(size))
      probs = dropout(tf.nn.softmax(scores + tf.expand_dims(adder, 1)),
                      config.attention_probs_dropout_prob)
      context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
      context = tf.reshape(context, [batch_size, length, config.hidden_size])
    with tf.variable_scope("output"):
      attended = tf.layers.dense(context, config.hidden_size,
                                 kernel_initializer=initializer(config))
      attended = layer_norm(dropout(attended, config.hidden_dropout_prob) + x)
  with tf.variable_scope("intermediate"):
    inner = tf.layers.dense(attended, config.intermediate_size, activation=gelu,
                            kernel_initializer=initializer(config))
  with tf.variable_scope("output"):
    out = tf.layers.dense(inner, config.hidden_size, kernel_initializer=initializer(config))
    return layer_norm(dropout(out, config.hidden_dropout_prob) + attended)


def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
  """{checkpoint name: name} for the variables of tvars the checkpoint has."""
  names = collections.OrderedDict()
  for var in tvars:
    match = re.match("^(.*):\\d+$", var.name)
    name = match.group(1) if match else var.name
    names[name] = var
  assignment_map = collections.OrderedDict()
  initialized = {}
  for name, _ in tf.train.list_variables(init_checkpoint):
    if name in names:
      assignment_map[name] = name
      initialized[name] = 1
      initialized[name + ":0"] = 1
  return assignment_map, initialized

