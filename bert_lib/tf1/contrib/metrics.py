"""tf.contrib.metrics of TF 1.x: the streaming metrics BERT's forks evaluated with.

streaming_pearson_correlation (STS-B's Pearson r) and streaming_concat;
streaming_accuracy and streaming_mean are tf.metrics' under other names,
named as such when used.
"""

import tensorflow as tf

from ..machinery.namespaces import Namespace

_V1 = tf.compat.v1


def streaming_pearson_correlation(
    predictions,
    labels,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """Pearson's r of predictions and labels over every batch seen: (value, update_op).

    Weighted sums are accumulated in float64 local variables.
    """
    with _V1.variable_scope(name, default_name="pearson_r"):
        x = tf.reshape(tf.cast(predictions, tf.float64), [-1])
        y = tf.reshape(tf.cast(labels, tf.float64), [-1])
        w = tf.ones_like(x) if weights is None else tf.reshape(tf.cast(weights, tf.float64), [-1])
        w = w * tf.ones_like(x)
        sums = {}
        updates = []
        for key, batch in (
            ("n", w),
            ("x", w * x),
            ("y", w * y),
            ("xx", w * x * x),
            ("yy", w * y * y),
            ("xy", w * x * y),
        ):
            total = _V1.get_variable(
                key,
                [],
                tf.float64,
                initializer=_V1.zeros_initializer(),
                trainable=False,
                collections=[_V1.GraphKeys.LOCAL_VARIABLES, _V1.GraphKeys.METRIC_VARIABLES],
            )
            sums[key] = total
            updates.append(_V1.assign_add(total, tf.reduce_sum(batch)))

        def value(s):
            n = s["n"]
            covariance = n * s["xy"] - s["x"] * s["y"]
            spread = (n * s["xx"] - s["x"] ** 2) * (n * s["yy"] - s["y"] ** 2)
            return tf.cast(covariance / tf.sqrt(spread), tf.float32)

        result = value(sums)
        with tf.control_dependencies(updates):
            update_op = value({k: tf.identity(v) for k, v in sums.items()})
        for collection in metrics_collections or ():
            _V1.add_to_collection(collection, result)
        for collection in updates_collections or ():
            _V1.add_to_collection(collection, update_op)
        return result, update_op


def streaming_concat(
    values,
    axis=0,
    max_size=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """Every batch's `values` concatenated along `axis`: (value, update_op), in a local
    variable that grows (max_size is not enforced)."""
    del max_size
    with _V1.variable_scope(name, default_name="streaming_concat", values=[values]):
        values = tf.convert_to_tensor(values)
        empty = values.shape.as_list()
        axis = axis % len(empty)
        empty[axis] = 0
        if None in empty:
            raise ValueError(f"streaming_concat needs static dimensions besides axis {axis}")
        array = _V1.Variable(
            tf.zeros(empty, values.dtype),
            trainable=False,
            validate_shape=False,
            collections=[_V1.GraphKeys.LOCAL_VARIABLES, _V1.GraphKeys.METRIC_VARIABLES],
            name="array",
        )
        update_op = _V1.assign(array, tf.concat([array, values], axis), validate_shape=False)
        value = tf.identity(array)
        for collection in metrics_collections or ():
            _V1.add_to_collection(collection, value)
        for collection in updates_collections or ():
            _V1.add_to_collection(collection, update_op)
        return value, update_op


def metrics_module():
    """tf.contrib.metrics."""
    return Namespace(
        "tf.contrib.metrics",
        None,
        {
            "streaming_pearson_correlation": streaming_pearson_correlation,
            "streaming_concat": streaming_concat,
        },
        {"streaming_accuracy": "tf.metrics.accuracy", "streaming_mean": "tf.metrics.mean"},
    )
