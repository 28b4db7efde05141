# coding=utf-8
"""A user's own modeling.py, as research code derived from BERT carries beside its scripts.

Not BERT: a bag-of-words encoder small enough for a test, written the TF 1.x
way (tf.get_variable, tf.layers.dense, tf.contrib.layers.layer_norm). Its
name is that of the project's modeling.py, on purpose: run through
run_tf1.py, `import modeling` in run_sentiment.py must find this file.
"""

import tensorflow as tf

THIS_IS_THE_USERS_MODELING = True


class BowConfig(object):
  """Sizes of the encoder."""

  def __init__(self, vocab_size, hidden_size=8, dropout_prob=0.1):
    self.vocab_size = vocab_size
    self.hidden_size = hidden_size
    self.dropout_prob = dropout_prob


class BowModel(object):
  """Mean of the word embeddings, one tanh layer, layer normalization, dropout."""

  def __init__(self, config, is_training, input_ids, input_mask):
    with tf.variable_scope("bow"):
      table = tf.get_variable(
          "word_embeddings", [config.vocab_size, config.hidden_size],
          initializer=tf.truncated_normal_initializer(stddev=0.5))
      embedded = tf.nn.embedding_lookup(table, input_ids)
      mask = tf.cast(tf.expand_dims(input_mask, -1), tf.float32)
      pooled = tf.reduce_sum(embedded * mask, axis=1) / tf.maximum(
          tf.reduce_sum(mask, axis=1), 1.0)
      hidden = tf.layers.dense(pooled, config.hidden_size, activation=tf.tanh)
      hidden = tf.contrib.layers.layer_norm(
          hidden, begin_norm_axis=-1, begin_params_axis=-1)
      self.pooled_output = tf.layers.dropout(
          hidden, rate=config.dropout_prob, training=is_training)

  def get_pooled_output(self):
    return self.pooled_output
