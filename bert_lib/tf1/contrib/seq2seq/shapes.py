"""Shapes the seq2seq modules share: sizes known statically or only at run time, zero
states of a run-time batch size, and an output layer's width."""

import tensorflow as tf


def static_or_dynamic(tensor, axis):
    """The size of `tensor` along `axis`: an int where the graph knows it, else a tensor."""
    size = tensor.shape[axis]
    size = getattr(size, "value", size)
    return size if size is not None else tf.shape(tensor)[axis]


def zeros(size, batch_size, dtype):
    """Zeros [batch_size, size] (or [batch_size] + size), with what is known of the shape."""
    size = tf.TensorShape(size)
    dims = tf.constant(size.as_list(), dtype=tf.int32)
    batch = tf.reshape(tf.cast(batch_size, tf.int32), [1])
    value = tf.zeros(tf.concat([batch, dims], 0), dtype=dtype)
    value.set_shape(tf.TensorShape([tf.get_static_value(batch_size)]).concatenate(size))
    return value


def layer_output_size(layer, input_size):
    """The width of `layer`'s output on rows of input_size: its `units` (Dense), else
    what its compute_output_shape says."""
    units = getattr(layer, "units", None)
    if units is not None:
        return units
    shape = layer.compute_output_shape(tf.TensorShape([None]).concatenate(input_size))
    return tf.TensorShape(shape)[1:]
