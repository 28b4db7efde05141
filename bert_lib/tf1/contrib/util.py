"""tf.contrib.util of TF 1.x: tensor_util's helpers, which TensorFlow keeps under other
names (tf.get_static_value, tf.make_tensor_proto, tf.make_ndarray)."""

import tensorflow as tf

from ..machinery.namespaces import Namespace


def constant_value(tensor, partial=False):
    """tf.contrib.util.constant_value: the value of a tensor known when the graph is
    built, as a numpy array, else None."""
    return tf.get_static_value(tensor, partial=partial)


def util_module():
    """tf.contrib.util: constant_value, make_tensor_proto, make_ndarray."""
    return Namespace(
        "tf.contrib.util",
        None,
        {
            "constant_value": constant_value,
            "make_tensor_proto": tf.make_tensor_proto,
            "make_ndarray": tf.make_ndarray,
        },
    )
