"""Shapes the seq2seq modules share: sizes known statically or only at run time, zero
states of a run-time batch size, and an output layer's width."""

import tensorflow as tf


def static_or_dynamic(tensor, axis):
    """The size of `tensor` along `axis`: an int where the graph knows it, else a tensor."""
    size = tensor.shape[axis]
    size = getattr(size, "value", size)
    return size if size is not None else tf.shape(tensor)[axis]


def zeros(size, batch_size, dtype):
    """Zeros [batch_size, size] (or [batch_size] + size), with what is known of the shape.

    Either may be known only at run time (a scalar tensor): the batch of an input
    pipeline (tf.size of its lengths), the memory's length of an attention's alignments.
    """
    batch = tf.reshape(tf.cast(batch_size, tf.int32), [1])
    if isinstance(size, tf.Tensor):
        known = tf.get_static_value(size)
        dims = tf.reshape(tf.cast(size, tf.int32), [1])
        size = tf.TensorShape([None if known is None else int(known)])
    else:
        size = tf.TensorShape(size)
        dims = tf.constant(size.as_list(), dtype=tf.int32)
    value = tf.zeros(tf.concat([batch, dims], 0), dtype=dtype)
    value.set_shape(tf.TensorShape([tf.get_static_value(batch_size)]).concatenate(size))
    return value


def state_shape(size):
    """The TensorShape of a state of `size`: a scalar tensor (an attention's alignments over
    a memory whose length is known only at run time) is one dimension of unknown size."""
    if isinstance(size, tf.Tensor):
        known = tf.get_static_value(size)
        return tf.TensorShape([None if known is None else int(known)])
    return tf.TensorShape(size)


def layer_output_size(layer, input_size):
    """The width of `layer`'s output on rows of input_size: its `units` (Dense), else
    what its compute_output_shape says."""
    units = getattr(layer, "units", None)
    if units is not None:
        return units
    shape = layer.compute_output_shape(tf.TensorShape([None]).concatenate(input_size))
    return tf.TensorShape(shape)[1:]
