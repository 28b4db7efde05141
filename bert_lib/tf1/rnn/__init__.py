"""TF 1.x's RNN cells (cells.py) and the tf.nn loops that run them (loops.py).

tf.nn.rnn_cell, tf.contrib.rnn and tf.nn.dynamic_rnn and its kin, with
TF 1.15's variable names and arithmetic; the module builders below are
what the TF 1.x module, tf.contrib and tensorflow.python.ops.rnn* use.
"""

from .loops import contrib_rnn_module, nn_names, rnn_cell_module

__all__ = ["contrib_rnn_module", "nn_names", "rnn_cell_module"]
