# coding=utf-8
"""An ELECTRA-style discriminator encoder: small embeddings projected to the hidden size.

Written against `tensorflow.compat.v1`, as ELECTRA's code was, with
contrib's layer_norm taken through `from tensorflow.contrib import layers`.
Variables live under `electra/` (embeddings, embeddings_project,
encoder/layer_N/...).
"""

import math

import tensorflow.compat.v1 as tf
from tensorflow.contrib import layers as contrib_layers


class ElectraConfig(object):

  def __init__(self, vocab_size, embedding_size=8, hidden_size=16, num_hidden_layers=1,
               num_attention_heads=2, intermediate_size=32, hidden_dropout_prob=0.1,
               attention_probs_dropout_prob=0.1, max_position_embeddings=32,
               type_vocab_size=2, initializer_range=0.02):
    self.__dict__.update(locals())
    del self.__dict__["self"]


def layer_norm(x, name):
  return contrib_layers.layer_norm(x, begin_norm_axis=-1, begin_params_axis=-1, scope=name)


def gelu(x):
  return 0.5 * x * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))


class ElectraModel(object):

  def __init__(self, config, is_training, input_ids, input_mask, token_type_ids,
               scope="electra"):
    if not is_training:
      config = ElectraConfig(**dict(config.__dict__, hidden_dropout_prob=0.0,
                                    attention_probs_dropout_prob=0.0))
    init = tf.truncated_normal_initializer(stddev=config.initializer_range)
    length = input_ids.shape[1].value
    with tf.variable_scope(scope):
      with tf.variable_scope("embeddings"):
        words = tf.get_variable("word_embeddings", [config.vocab_size, config.embedding_size],
                                initializer=init)
        types = tf.get_variable("token_type_embeddings",
                                [config.type_vocab_size, config.embedding_size],
                                initializer=init)
        positions = tf.get_variable("position_embeddings",
                                    [config.max_position_embeddings, config.embedding_size],
                                    initializer=init)
        x = tf.nn.embedding_lookup(words, input_ids)
        x += tf.nn.embedding_lookup(types, token_type_ids)
        x += positions[:length][None]
        x = layer_norm(x, "LayerNorm")
        x = tf.nn.dropout(x, rate=config.hidden_dropout_prob)
      x = tf.layers.dense(x, config.hidden_size, name="embeddings_project",
                          kernel_initializer=init)
      adder = (1.0 - tf.cast(input_mask[:, None, None, :], tf.float32)) * -10000.0
      heads = config.num_attention_heads
      size = config.hidden_size // heads
      for index in range(config.num_hidden_layers):
        with tf.variable_scope("encoder/layer_%d" % index):
          def project(name):
            value = tf.layers.dense(x, config.hidden_size, name=name, kernel_initializer=init)
            return tf.transpose(tf.reshape(value, [-1, length, heads, size]), [0, 2, 1, 3])
          with tf.variable_scope("attention/self"):
            scores = tf.einsum("bhqd,bhkd->bhqk", project("query"), project("key"))
            probs = tf.nn.softmax(scores / math.sqrt(size) + adder)
            probs = tf.nn.dropout(probs, rate=config.attention_probs_dropout_prob)
            context = tf.einsum("bhqk,bhkd->bqhd", probs, project("value"))
            context = tf.reshape(context, [-1, length, config.hidden_size])
          with tf.variable_scope("attention/output"):
            attended = tf.layers.dense(context, config.hidden_size, kernel_initializer=init)
            attended = layer_norm(
                tf.nn.dropout(attended, rate=config.hidden_dropout_prob) + x, "LayerNorm")
          inner = tf.layers.dense(attended, config.intermediate_size, activation=gelu,
                                  name="intermediate/dense", kernel_initializer=init)
          with tf.variable_scope("output"):
            out = tf.layers.dense(inner, config.hidden_size, kernel_initializer=init)
            x = layer_norm(tf.nn.dropout(out, rate=config.hidden_dropout_prob) + attended,
                           "LayerNorm")
      self.sequence_output = x
      self.pooled_output = x[:, 0]
