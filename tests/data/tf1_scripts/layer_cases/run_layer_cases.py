# coding=utf-8
"""TF 1.x layers, one small graph per case, outputs and gradients to a file.

The cases build graphs with tf.nn.rnn_cell / tf.contrib.rnn cells and
tf.nn's loops, and with tf.keras.layers (mixed with tf.layers, whose layers
share Keras's name counter). Every case sets each variable (in
tf.global_variables() order) to seeded uniform values, feeds fixed inputs
and writes, under the case's name: the variables' names and shapes, every
output and final state, and the gradients of a weighted sum of the outputs
with respect to every variable. Run by TF 1.15 it gives the reference; run
through run_tf1.py it must give the same names and numbers.
"""

import io

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_file", None, "Where the .npz goes.")

BATCH, TIME, DEPTH = 3, 5, 4
LENGTHS = np.array([5, 2, 4], np.int32)


class MyGRU(tf.nn.rnn_cell.RNNCell):
  """A user's cell of the old kind: its own __call__, tf.get_variable inside."""

  def __init__(self, num_units):
    super(MyGRU, self).__init__()
    self._num_units = num_units

  @property
  def state_size(self):
    return self._num_units

  @property
  def output_size(self):
    return self._num_units

  def __call__(self, inputs, state, scope=None):
    with tf.variable_scope(scope or "my_gru"):
      w = tf.get_variable("w", [inputs.shape[-1].value + self._num_units, self._num_units])
      new = tf.tanh(tf.matmul(tf.concat([inputs, state], 1), w))
    return new, new


def lstm_seq(x):
  out, state = tf.nn.dynamic_rnn(
      tf.nn.rnn_cell.LSTMCell(6), x, sequence_length=LENGTHS, dtype=tf.float32)
  return [out, state.c, state.h]


def bilstm(x):
  (fw, bw), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(
      tf.contrib.rnn.LSTMCell(5), tf.contrib.rnn.LSTMCell(5), x,
      sequence_length=LENGTHS, dtype=tf.float32)
  return [tf.concat([fw, bw], axis=-1), sf.c, sf.h, sb.c, sb.h]


def bigru_no_lengths(x):
  (fw, bw), (sf, sb) = tf.nn.bidirectional_dynamic_rnn(
      tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.GRUCell(4), x, dtype=tf.float32,
      scope="bigru")
  return [fw, bw, sf, sb]


def basic_lstm_concat_state(x):
  cell = tf.nn.rnn_cell.BasicLSTMCell(4, forget_bias=0.5, state_is_tuple=False)
  out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=LENGTHS, dtype=tf.float32)
  return [out, state]


def gru_initial_state(x):
  cell = tf.contrib.rnn.GRUCell(5, kernel_initializer=tf.orthogonal_initializer())
  h0 = tf.tanh(tf.layers.dense(x[:, 0], 5, name="h0"))
  out, state = tf.nn.dynamic_rnn(cell, x, initial_state=h0)
  return [out, state]


def lstm_peepholes_projection(x):
  cell = tf.nn.rnn_cell.LSTMCell(
      6, use_peepholes=True, cell_clip=0.6, num_proj=3, proj_clip=0.4, activation="relu")
  out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=LENGTHS, dtype=tf.float32)
  return [out, state.c, state.h]


def lstm_block(x):
  cell = tf.contrib.rnn.LSTMBlockCell(4, use_peephole=True, cell_clip=0.7, forget_bias=0.3)
  out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=LENGTHS, dtype=tf.float32)
  return [out, state.c, state.h]


def multi_dropout_residual(x):
  cells = [
      tf.nn.rnn_cell.DropoutWrapper(tf.nn.rnn_cell.LSTMCell(4), input_keep_prob=1.0,
                                    output_keep_prob=1.0),
      tf.nn.rnn_cell.ResidualWrapper(tf.nn.rnn_cell.GRUCell(4)),
      tf.contrib.rnn.BasicRNNCell(3, activation=tf.nn.relu),
  ]
  out, states = tf.nn.dynamic_rnn(
      tf.nn.rnn_cell.MultiRNNCell(cells), x, sequence_length=LENGTHS, dtype=tf.float32)
  return [out, states[0].c, states[0].h, states[1], states[2]]


def time_major_basic_rnn(x):
  out, state = tf.nn.dynamic_rnn(
      tf.nn.rnn_cell.BasicRNNCell(5), tf.transpose(x, [1, 0, 2]), time_major=True,
      dtype=tf.float32, scope="tm")
  return [out, state]


def gru_blocks(x):
  a, sa = tf.nn.dynamic_rnn(tf.contrib.rnn.GRUBlockCell(4), x, dtype=tf.float32, scope="v1")
  b, sb = tf.nn.dynamic_rnn(tf.contrib.rnn.GRUBlockCellV2(4), x, dtype=tf.float32, scope="v2")
  return [a, sa, b, sb]


def layer_norm_lstm(x):
  cell = tf.contrib.rnn.LayerNormBasicLSTMCell(4, norm_gain=0.9, norm_shift=0.1)
  out, state = tf.nn.dynamic_rnn(cell, x, sequence_length=LENGTHS, dtype=tf.float32)
  return [out, state.c, state.h]


def static_loops(x):
  steps = tf.unstack(x, axis=1)
  out, state = tf.nn.static_rnn(
      tf.nn.rnn_cell.LSTMCell(3), steps, sequence_length=LENGTHS, dtype=tf.float32)
  bi, fw, bw = tf.nn.static_bidirectional_rnn(
      tf.nn.rnn_cell.GRUCell(3), tf.nn.rnn_cell.GRUCell(3), steps,
      sequence_length=LENGTHS, dtype=tf.float32)
  return [tf.stack(out, 1), state.c, state.h, tf.stack(bi, 1), fw, bw]


def stacked_bidirectional(x):
  out, fws, bws = tf.contrib.rnn.stack_bidirectional_dynamic_rnn(
      [tf.contrib.rnn.LSTMCell(3), tf.contrib.rnn.LSTMCell(2)],
      [tf.contrib.rnn.LSTMCell(3), tf.contrib.rnn.LSTMCell(2)],
      x, sequence_length=LENGTHS, dtype=tf.float32)
  return [out, fws[1].h, bws[0].c]


def fused_block(x):
  cell = tf.contrib.rnn.LSTMBlockFusedCell(4)
  out, state = cell(tf.transpose(x, [1, 0, 2]), dtype=tf.float32, sequence_length=LENGTHS)
  return [out, state.c, state.h]


def fused_bidirectional(x):
  # A BiLSTM of fused cells, as taggers built it: the backward half a second
  # LSTMBlockFusedCell reversed in time within each length; then one reversed over the
  # whole time axis, and a step cell run as a fused one.
  t = tf.transpose(x, [1, 0, 2])
  forward = tf.contrib.rnn.LSTMBlockFusedCell(4)
  backward = tf.contrib.rnn.TimeReversedFusedRNN(tf.contrib.rnn.LSTMBlockFusedCell(4))
  out_fw, _ = forward(t, dtype=tf.float32, sequence_length=LENGTHS)
  out_bw, state_bw = backward(t, dtype=tf.float32, sequence_length=LENGTHS)
  whole = tf.contrib.rnn.TimeReversedFusedRNN(tf.contrib.rnn.LSTMBlockFusedCell(3))
  out_whole, _ = whole(t, dtype=tf.float32)
  adapted = tf.contrib.rnn.FusedRNNCellAdaptor(tf.nn.rnn_cell.LSTMCell(2), use_dynamic_rnn=True)
  out_adapted, state_adapted = adapted(t, dtype=tf.float32, sequence_length=LENGTHS)
  return [tf.concat([out_fw, out_bw], -1), state_bw.h, out_whole, out_adapted, state_adapted.c]


def direct_calls_and_user_cell(x):
  cell = tf.nn.rnn_cell.LSTMCell(3)
  state = cell.zero_state(BATCH, tf.float32)
  outputs = []
  for t in range(TIME):
    with tf.variable_scope("decoder", reuse=t > 0):
      out, state = cell(x[:, t], state)
      outputs.append(out)
  mine, last = tf.nn.dynamic_rnn(MyGRU(2), x, sequence_length=LENGTHS, dtype=tf.float32)
  return [tf.stack(outputs, 1), state.c, mine, last]


# ---------------------------------------------------------------------------
# tf.keras.layers


def keras_names_and_core(x):
  ids = tf.cast(tf.abs(x[:, :, 0]) * 9, tf.int32)
  h = tf.layers.dense(x, 4)
  h = tf.layers.dense(h, 4, name="named")
  with tf.variable_scope("bert"):
    dense = tf.keras.layers.Dense(3, activation="tanh")
    a = dense(h)
    a = dense(h) + dense(h * 2.0)
    e = tf.keras.layers.Embedding(10, 3)(ids)
    n = tf.keras.layers.LayerNormalization()(a + e)
    n2 = tf.keras.layers.LayerNormalization(epsilon=1e-12, name="ln")(a)
    kept = tf.keras.layers.Dropout(0.5)(n)
  with tf.variable_scope("vs"):
    b = tf.keras.layers.Dense(2, use_bias=False)(h)
  with tf.variable_scope("vs", reuse=tf.AUTO_REUSE):
    c = tf.keras.layers.Dense(2, kernel_initializer=tf.keras.initializers.TruncatedNormal(
        stddev=0.02))(h)
  with tf.name_scope("ns"):
    d = tf.layers.dense(h, 2)
  return [a, e, n, n2, kept, b, c, d]


def keras_conv_pool_merge(x):
  c1 = tf.keras.layers.Conv1D(3, 2, padding="same", activation="relu")(x)
  c2 = tf.keras.layers.Conv1D(3, 3, padding="causal", dilation_rate=2)(x)
  pooled = tf.keras.layers.GlobalMaxPooling1D()(c1)
  average = tf.keras.layers.GlobalAveragePooling1D()(c2)
  merged = tf.keras.layers.Concatenate()([pooled, average])
  added = tf.keras.layers.Add()([pooled, average])
  lam = tf.keras.layers.Lambda(lambda t: t * 2.0)(merged)
  flat = tf.keras.layers.Flatten()(tf.keras.layers.MaxPooling1D(2)(c1))
  return [c1, c2, merged, added, lam, flat, tf.keras.layers.Activation("softmax")(flat)]


def keras_recurrent(x):
  seq = tf.keras.layers.LSTM(4, return_sequences=True)(x)
  last, h, c = tf.keras.layers.LSTM(3, return_state=True)(x)
  gru = tf.keras.layers.GRU(3, return_sequences=True, go_backwards=True)(x)
  simple = tf.keras.layers.SimpleRNN(2)(x)
  bi = tf.keras.layers.Bidirectional(tf.keras.layers.GRU(2, return_sequences=True))(x)
  bi_sum = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(2), merge_mode="sum")(x)
  return [seq, last, h, c, gru, simple, bi, bi_sum]


def keras_masked_recurrent(x):
  ids = tf.constant(np.array([[3, 4, 5, 6, 7], [2, 9, 0, 0, 0], [1, 1, 8, 2, 0]], np.int32))
  embedded = tf.keras.layers.Embedding(10, DEPTH, mask_zero=True)(ids)
  bi = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(3, return_sequences=True))(embedded)
  last = tf.keras.layers.GRU(2)(embedded)
  pooled = tf.keras.layers.GlobalAveragePooling1D()(bi)
  return [bi, last, pooled, embedded + x]


class Head(tf.keras.Model):
  """A subclassed model: its layers' variables under its own name."""

  def __init__(self):
    super(Head, self).__init__()
    self.hidden = tf.keras.layers.Dense(4, activation="relu")
    self.norm = tf.keras.layers.LayerNormalization()
    self.out = tf.keras.layers.Dense(2)

  def call(self, inputs):
    return self.out(self.norm(self.hidden(inputs)))


def keras_models(x):
  seq = tf.keras.Sequential([
      tf.keras.layers.Dense(3, activation="tanh"),
      tf.keras.layers.Dropout(0.2),
      tf.keras.layers.Dense(2),
  ])
  return [seq(x), Head()(x[:, 0]), tf.keras.layers.Dense(1)(x)]


# ---------------------------------------------------------------------------
# tf.layers classes and tf.contrib.layers


def layers_and_contrib_layers(x):
  dense = tf.layers.Dense(3, activation=tf.nn.relu, name="shared")
  a = dense(x)
  b = dense(x * 0.5)
  fc = tf.contrib.layers.fully_connected(x, 4)
  fc2 = tf.contrib.layers.fully_connected(x[:, 0], 2, activation_fn=None, scope="head")
  kept = tf.contrib.layers.dropout(fc, keep_prob=0.5, is_training=False)
  normed = tf.contrib.layers.layer_norm(fc, begin_norm_axis=-1, begin_params_axis=-1)
  conv = tf.layers.Conv1D(2, 2, padding="same")(x)
  return [a, b, fc, fc2, kept, normed, conv]


def transposed_convolutions(x):
  """tf.layers' transposed convolution (a U-Net decoder's, pix2pix's): 'same' and 'valid'
  padding, strides, a named layer with an activation, the class without a bias."""
  images = tf.reshape(x, [BATCH, TIME, DEPTH, 1])
  a = tf.layers.conv2d_transpose(images, 3, kernel_size=4, strides=(2, 2), padding="same")
  b = tf.layers.conv2d_transpose(a, 2, 3, strides=2, padding="valid",
                                 activation=tf.nn.relu, name="up")
  c = tf.layers.Conv2DTranspose(2, (2, 3), use_bias=False)(images)
  d = tf.layers.conv2d_transpose(images, 1, (3, 1), strides=(1, 2), padding="valid")
  return [a, b, c, d]


def batch_normalization(x):
  training = tf.placeholder_with_default(True, [])
  a = tf.layers.batch_normalization(x, training=True)
  b = tf.layers.batch_normalization(x, training=False, name="frozen")
  c = tf.layers.batch_normalization(tf.reshape(x, [BATCH, TIME, 2, 2]), training=True,
                                    momentum=0.9)
  d = tf.layers.batch_normalization(x, axis=1, training=training, epsilon=0.01)
  keras_bn = tf.keras.layers.BatchNormalization(momentum=0.5)
  k = keras_bn(x, training=True)
  k2 = tf.keras.layers.BatchNormalization()(x)
  moving = [v for v in tf.global_variables() if "moving" in v.op.name]
  with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS) + keras_bn.updates):
    moved = [tf.identity(v) for v in moving]
  return [a, b, c, d, k, k2] + moved


def half_squares(t):
  return 0.5 * tf.reduce_sum(tf.square(t))


def regularizers_and_channels_first(x):
  """Activity regularizers (each loss divided by the batch), batch normalization's
  beta and gamma regularizers, and pooling of channels-first inputs ([batch, TIME
  channels, DEPTH steps])."""
  dense = tf.keras.layers.Dense(3, activity_regularizer=half_squares)
  conv = tf.keras.layers.Conv1D(2, 2, activity_regularizer=half_squares)
  keras_bn = tf.keras.layers.BatchNormalization(
      gamma_regularizer=half_squares, beta_regularizer=half_squares)
  outputs = [
      dense(x), conv(x), keras_bn(x, training=True),
      tf.layers.dense(x, 2, activity_regularizer=half_squares, name="tfl_dense"),
      tf.layers.batch_normalization(x, training=True, gamma_regularizer=half_squares,
                                    name="tfl_bn"),
      tf.keras.layers.MaxPooling1D(2, data_format="channels_first")(x),
      tf.keras.layers.AveragePooling1D(3, 1, data_format="channels_first")(x),
      tf.keras.layers.GlobalAveragePooling1D(data_format="channels_first")(x),
      tf.keras.layers.GlobalMaxPooling1D(data_format="channels_first")(x),
      tf.layers.max_pooling1d(x, 2, 2, data_format="channels_first"),
  ]
  keras_losses = dense.losses + conv.losses + keras_bn.losses
  collected = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
  # The moving statistics enter the loss too, so that every variable has a gradient.
  moving = [tf.reduce_sum(v) for v in tf.global_variables() if "moving_" in v.op.name]
  return outputs + [tf.add_n(keras_losses), tf.add_n(collected)] + moving


CASES = [
    lstm_seq, bilstm, bigru_no_lengths, basic_lstm_concat_state, gru_initial_state,
    lstm_peepholes_projection, lstm_block, multi_dropout_residual, time_major_basic_rnn,
    gru_blocks, layer_norm_lstm, static_loops, stacked_bidirectional, fused_block,
    fused_bidirectional,
    direct_calls_and_user_cell, keras_names_and_core, keras_conv_pool_merge, keras_recurrent,
    keras_masked_recurrent, keras_models, layers_and_contrib_layers, batch_normalization,
    regularizers_and_channels_first, transposed_convolutions,
]


def run_case(build, results):
  name = build.__name__
  inputs = np.random.RandomState(7).uniform(-1, 1, (BATCH, TIME, DEPTH)).astype(np.float32)
  with tf.Graph().as_default():
    x = tf.placeholder(tf.float32, [BATCH, TIME, DEPTH])
    outputs = build(x)
    variables = tf.global_variables()
    loss = tf.add_n([
        tf.reduce_sum(o * np.random.RandomState(11 + i).uniform(
            -1, 1, o.shape.as_list()).astype(np.float32))
        for i, o in enumerate(outputs)])
    # Dense, also where a gradient is sparse (an embedding's IndexedSlices).
    grads = [tf.convert_to_tensor(g) for g in tf.gradients(loss, variables)]
    with tf.Session() as session:
      for k, v in enumerate(variables):
        value = np.random.RandomState(1000 + k).uniform(-0.5, 0.5, v.shape.as_list())
        v.load(value.astype(np.float32), session)
      values, grad_values = session.run([outputs, grads], {x: inputs})
  results[name + "/names"] = np.array(
      ["%s %s" % (v.op.name, v.shape.as_list()) for v in variables])
  for i, value in enumerate(values):
    results["%s/output_%d" % (name, i)] = value
  for i, value in enumerate(grad_values):
    results["%s/grad_%d" % (name, i)] = value


def main(_):
  results = {}
  for build in CASES:
    run_case(build, results)
  buffer = io.BytesIO()
  np.savez(buffer, **results)
  with tf.gfile.GFile(FLAGS.output_file, "wb") as f:
    f.write(buffer.getvalue())


if __name__ == "__main__":
  flags.mark_flag_as_required("output_file")
  tf.app.run()
