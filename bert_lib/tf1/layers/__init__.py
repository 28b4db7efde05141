"""tf.layers, tf.contrib.layers and TF 1.15's tf.keras.layers, in a TF 1.x graph.

Both layer APIs name their variables as TF 1.15 did, so checkpoints move
both ways: tf_layers.py (tf.layers, tf.contrib.layers) and keras_layers.py
with keras_rnn.py (tf.keras.layers, its recurrent layers) stand on what
they share, layer_base.py (per-graph layer names, the layers' base,
kernel and bias, pooling) and batch_norm.py. The RNN cells (bert_lib/tf1/rnn)
are tf.layers layers too.
"""

from . import keras_layers, keras_rnn
from .tf_layers import contrib_layers_module, layers_module


def keras_module():
    """tf.keras of a TF 1.x script: TF 1.15's layers, the recurrent ones included."""
    return keras_layers.keras_module(keras_rnn.layers_names())


__all__ = ["contrib_layers_module", "keras_module", "layers_module"]
