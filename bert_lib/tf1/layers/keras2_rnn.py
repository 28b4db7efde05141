"""TF 1.15's recurrent tf.keras layers on Keras 2 (the tf_keras package), for tf.keras.

Where tf_keras is installed, tf.keras of TF 1.x code is it (layers/__init__.py),
but its recurrent layers are not TF 1.15's in two ways that reach checkpoints:

- its LSTM and GRU are the layers of TF 2 (GRU's reset_after=True, a bias of
  shape [2, 3 units]; LSTM's implementation=2), where TF 1.15's graphs had
  the first ones (reset_after=False, a bias of [3 units]; implementation=1),
  which tf_keras still ships as lstm_v1 and gru_v1, with their cells;
- an RNN layer builds its cell in the cell's own name scope
  (`lstm/lstm_cell/kernel`), where TF 1.15 built it in the layer's
  (`lstm/kernel`, `bidirectional/forward_lstm/kernel`).

tf115_rnn_layers gives LSTM, GRU, SimpleRNN and RNN that build their cell in
their own scope, on TF 1.15's classes, and the v1 cells, under the same class
names (so layers are named `lstm`, `gru_1`, as before). Only TF 1.x code's
tf.keras.layers holds them: tf_keras itself, for any other code, is not
changed. The cells of an RNN of a list of cells are built in the layer's
scope too, one after the other (`rnn/kernel`, `rnn/kernel_1`), as in TF 1.15.
"""

import importlib

import tensorflow as tf


def _step_shape(shape, time_major):
    """The shape of one time step of inputs of `shape` (the time axis dropped)."""
    dims = tuple(tf.TensorShape(shape).as_list())
    return dims[1:] if time_major else dims[:1] + dims[2:]


def _output_shape(cell, shape):
    """The shape of what `cell` gives for a step of `shape`: the batch and its output size
    (or its first state's); None when that is a structure."""
    size = getattr(cell, "output_size", None)
    if size is None:
        size = cell.state_size
        size = size[0] if isinstance(size, (list, tuple)) else size
    if tf.nest.is_nested(size):
        return None
    return shape[:1] + tuple(tf.TensorShape(size).as_list())


def _build_in_place(cell, shape, layer_class, stacked_class):
    """Builds `cell` (or each cell of a stack, on the output of the one before) for steps
    of `shape` in the current name scope, as TF 1.15 did; returns the shape of its output
    for the next, or None when it is not known here (the rest is built by Keras 2)."""
    if isinstance(cell, stacked_class):
        for inner in cell.cells:
            shape = _build_in_place(inner, shape, layer_class, stacked_class)
            if shape is None:
                return None
        return shape
    if isinstance(cell, layer_class) and not cell.built:
        cell.build(shape)
        cell.built = True
    return _output_shape(cell, shape)


def _building_the_cell_in_place(base, layer_class, stacked_class):
    """A subclass of the RNN layer class `base`, of the same name, whose build builds its
    cell (a Keras layer, or a stack of them, of one input) where the layer builds its
    own weights, as TF 1.15's RNN did, before the rest of `base`'s build."""

    def build(self, input_shape):
        shape = input_shape[0] if isinstance(input_shape, list) else input_shape
        if not tf.nest.is_nested(shape):
            step = _step_shape(shape, self.time_major)
            _build_in_place(self.cell, step, layer_class, stacked_class)
        base.build(self, input_shape)

    return type(base.__name__, (base,), {"build": build, "__module__": __name__})


def tf115_rnn_layers():
    """{name: class} of TF 1.15's recurrent tf.keras.layers on tf_keras (see the module
    doc): LSTM, GRU, SimpleRNN, RNN, LSTMCell, GRUCell."""
    rnn = "tf_keras.src.layers.rnn"
    lstm_v1 = importlib.import_module(f"{rnn}.lstm_v1")
    gru_v1 = importlib.import_module(f"{rnn}.gru_v1")
    simple_rnn = importlib.import_module(f"{rnn}.simple_rnn")
    base_rnn = importlib.import_module(f"{rnn}.base_rnn")
    stacked_class = importlib.import_module(f"{rnn}.stacked_rnn_cells").StackedRNNCells
    layer_class = importlib.import_module("tf_keras").layers.Layer
    layers = {
        "LSTM": lstm_v1.LSTM,
        "GRU": gru_v1.GRU,
        "SimpleRNN": simple_rnn.SimpleRNN,
        "RNN": base_rnn.RNN,
    }
    classes = {
        name: _building_the_cell_in_place(base, layer_class, stacked_class)
        for name, base in layers.items()
    }
    classes["LSTMCell"] = lstm_v1.LSTMCell
    classes["GRUCell"] = gru_v1.GRUCell
    return classes
