"""tf.layers, tf.contrib.layers and TF 1.15's tf.keras.layers, in a TF 1.x graph.

Both layer APIs name their variables as TF 1.15 did, so checkpoints move
both ways: tf_layers.py (tf.layers, tf.contrib.layers) and keras_layers.py
with keras_rnn.py (tf.keras.layers, its recurrent layers) stand on what
they share, layer_base.py (per-graph layer names, the layers' base,
kernel and bias, pooling) and batch_norm.py. The RNN cells (bert_lib/tf1/rnn)
are tf.layers layers too.
"""

import importlib
import importlib.util

from ..machinery.namespaces import Namespace
from . import keras_callbacks, keras_estimator, keras_export, keras_layers, keras_rnn, layer_base
from .batch_norm import nn_batch_normalization
from .keras2_rnn import tf115_rnn_layers
from .tf_layers import contrib_layers_module, layers_module

# What TF 1.15's tf.keras said it was (code of its years checks for the "-tf").
TF115_KERAS_VERSION = "2.2.4-tf"


def keras_module(estimator_class=None):
    """tf.keras of a TF 1.x script (its tf.keras.estimator.model_to_estimator making
    `estimator_class` Estimators, the TF 1.x module's, where given).

    Where the tf_keras package is installed (Keras 2, which still runs in a
    TF 1.x graph as TF 1.15's tf.keras did), it is tf.keras: the functional
    API (Input, Model(inputs, outputs)), compile / fit / evaluate / predict,
    save_weights / load_weights, with TF 1.15's variable and checkpoint
    names (its recurrent layers TF 1.15's, keras2_rnn.py), and tf.layers
    take their layer numbers from its per-graph counts, as TF 1.15's two APIs
    shared one. Without it, TF 1.15's layers (the
    recurrent ones included), Sequential and subclassed Model, built here.
    """
    if importlib.util.find_spec("tf_keras") is None:
        return keras_layers.keras_module(keras_rnn.layers_names())
    keras2 = importlib.import_module("tf_keras")
    backend = importlib.import_module("tf_keras.src.backend")
    layer_base.share_names_with_keras2(backend.get_default_graph_uid_map)
    # TF 1.15's optimizers (optimizer_v2, which run in a graph) are Keras 2's legacy ones.
    optimizers = keras2.optimizers
    legacy = {
        name: getattr(optimizers, name)
        for name in ("get", "serialize", "deserialize", "schedules")
        if hasattr(optimizers, name)
    }
    return Namespace(
        "tf.keras",
        keras2,
        {
            "__version__": TF115_KERAS_VERSION,
            "optimizers": Namespace("tf.keras.optimizers", optimizers.legacy, legacy),
            # TF 1.15's recurrent layers and their variable names (keras2_rnn.py).
            "layers": Namespace("tf.keras.layers", keras2.layers, tf115_rnn_layers()),
            # TF 1.15 had tf.keras.wrappers.scikit_learn (Keras 2 no longer does): the
            # module is there, as code of its years reads it at import; its use is refused.
            "wrappers": Namespace("tf.keras.wrappers"),
            # TF 1.15's TensorBoard callback and the files it writes (keras_callbacks.py).
            "callbacks": Namespace(
                "tf.keras.callbacks",
                keras2.callbacks,
                {"TensorBoard": keras_callbacks.tensorboard_class()},
            ),
            # TF 1.15's model_to_estimator (keras_estimator.py).
            "estimator": Namespace(
                "tf.keras.estimator",
                None,
                {
                    "model_to_estimator": keras_estimator.model_to_estimator_function(
                        estimator_class
                    )
                },
            ),
            # TF 1.15's SavedModel export of a compiled model (keras_export.py).
            "experimental": Namespace(
                "tf.keras.experimental",
                getattr(keras2, "experimental", None),
                {
                    "export_saved_model": keras_export.export_saved_model,
                    "load_from_saved_model": keras_export.load_from_saved_model,
                },
            ),
        },
    )


__all__ = [
    "contrib_layers_module",
    "keras_module",
    "layers_module",
    "nn_batch_normalization",
]
