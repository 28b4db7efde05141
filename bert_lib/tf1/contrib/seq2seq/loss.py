"""tf.contrib.seq2seq.sequence_loss of TF 1.x: the weighted per-token cross-entropy,
averaged or summed over time and batch as its four switches say (a zero denominator
gives zero)."""

import tensorflow as tf

_V1 = tf.compat.v1


def _rank(tensor):
    return len(tensor.get_shape())


def sequence_loss(
    logits,
    targets,
    weights,
    average_across_timesteps=True,
    average_across_batch=True,
    sum_over_timesteps=False,
    sum_over_batch=False,
    softmax_loss_function=None,
    name=None,
):
    """Weighted cross-entropy of logits [batch, time, classes] against targets [batch,
    time], weights [batch, time].

    Averaged over both axes (the default): sum of weighted losses / sum of weights.
    Summed over both: / the number of nonzero weights. Otherwise per axis: an average
    over one axis gives a vector over the other; sum_over_* divides by the nonzero
    weights of that axis. An average switch wins over the other axis's sum switch, as in
    TF 1.15. A zero denominator gives 0.
    """
    if _rank(logits) != 3:
        raise ValueError("Logits must be a [batch_size x sequence_length x logits] tensor")
    if _rank(targets) != 2:
        raise ValueError("Targets must be a [batch_size x sequence_length] tensor")
    if _rank(weights) != 2:
        raise ValueError("Weights must be a [batch_size x sequence_length] tensor")
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError(
            "average_across_timesteps and sum_over_timesteps cannot be set to True at same time."
        )
    if average_across_batch and sum_over_batch:
        raise ValueError(
            "average_across_batch and sum_over_batch cannot be set to True at same time."
        )
    with tf.name_scope(name or "sequence_loss"):
        flat_logits = tf.reshape(logits, [-1, tf.shape(logits)[2]])
        flat_targets = tf.reshape(targets, [-1])
        if softmax_loss_function is None:
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=flat_targets, logits=flat_logits
            )
        else:
            losses = softmax_loss_function(labels=flat_targets, logits=flat_logits)
        losses *= tf.reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return tf.math.divide_no_nan(tf.reduce_sum(losses), tf.reduce_sum(weights))
        if sum_over_timesteps and sum_over_batch:
            count = tf.cast(tf.math.count_nonzero(weights), losses.dtype)
            return tf.math.divide_no_nan(tf.reduce_sum(losses), count)
        losses = tf.reshape(losses, tf.shape(logits)[0:2])
        if average_across_timesteps or average_across_batch:
            axis = [0] if average_across_batch else [1]
            return tf.math.divide_no_nan(
                tf.reduce_sum(losses, axis=axis), tf.reduce_sum(weights, axis=axis)
            )
        if sum_over_timesteps or sum_over_batch:
            axis = [0] if sum_over_batch else [1]
            count = tf.cast(tf.math.count_nonzero(weights, axis=axis), losses.dtype)
            return tf.math.divide_no_nan(tf.reduce_sum(losses, axis=axis), count)
        return losses
