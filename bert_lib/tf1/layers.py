"""tf.layers and tf.contrib.layers of TF 1.x, on get_variable, for the TF 1.x API module.

TensorFlow 2's tf.compat.v1.layers refuses to run under Keras 3, and Keras
layers in a TF1 graph take process-wide names (`dense_1` in an evaluation
graph built after a training graph), so the evaluation graph would miss
the checkpoint's variables. These functions create their variables with
tf.compat.v1.get_variable under a variable scope uniquified per graph, as
TF 1.x did: `dense`, `dense_1`, ... in every graph alike, with TF 1.x's
variable names (`kernel`, `bias`; `LayerNorm/beta`, `LayerNorm/gamma`) and
arithmetic, so checkpoints written by TF 1.x code load and the numbers are
the original's.
"""

import tensorflow as tf

from .api import Namespace

_V1 = tf.compat.v1


def _activation_output(outputs, activation):
    return activation(outputs) if activation is not None else outputs


def dense(
    inputs,
    units,
    activation=None,
    use_bias=True,
    kernel_initializer=None,
    bias_initializer=None,
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    trainable=True,
    name=None,
    reuse=None,
):
    """tf.layers.dense: activation(inputs @ kernel + bias) over the last axis."""
    inputs = tf.convert_to_tensor(inputs)
    width = inputs.shape.as_list()[-1]
    if width is None:
        raise ValueError(f"tf.layers.dense needs a static last dimension, got {inputs.shape}")
    dtype = inputs.dtype.base_dtype if inputs.dtype.is_floating else tf.float32
    with _V1.variable_scope(name, default_name="dense", values=[inputs], reuse=reuse):
        kernel = _V1.get_variable(
            "kernel",
            [width, units],
            dtype=dtype,
            initializer=kernel_initializer,
            regularizer=kernel_regularizer,
            constraint=kernel_constraint,
            trainable=trainable,
        )
        rank = inputs.shape.ndims
        if rank == 2:
            outputs = tf.matmul(inputs, kernel)
        else:
            outputs = tf.tensordot(inputs, kernel, [[rank - 1], [0]])
            outputs.set_shape(inputs.shape[:-1].concatenate([units]))
        if use_bias:
            bias = _V1.get_variable(
                "bias",
                [units],
                dtype=dtype,
                initializer=bias_initializer or _V1.zeros_initializer(),
                regularizer=bias_regularizer,
                constraint=bias_constraint,
                trainable=trainable,
            )
            outputs = tf.nn.bias_add(outputs, bias)
        outputs = _activation_output(outputs, activation)
        if activity_regularizer is not None:
            _V1.add_to_collection(
                _V1.GraphKeys.REGULARIZATION_LOSSES, activity_regularizer(outputs)
            )
        return outputs


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """tf.layers.dropout: drops `rate` of the inputs when `training` (a bool or a bool tensor)."""
    with _V1.name_scope(name, "dropout", [inputs]):

        def dropped():
            return tf.nn.dropout(inputs, rate=rate, noise_shape=noise_shape, seed=seed)

        if isinstance(training, bool):
            return dropped() if training else tf.identity(inputs)
        return _V1.cond(tf.cast(training, tf.bool), dropped, lambda: tf.identity(inputs))


def flatten(inputs, name=None):
    """tf.layers.flatten: [batch, ...] -> [batch, product of the rest]."""
    with _V1.name_scope(name, "flatten", [inputs]):
        inputs = tf.convert_to_tensor(inputs)
        rest = inputs.shape[1:].num_elements()
        if rest is None:
            rest = -1
        return tf.reshape(inputs, [tf.shape(inputs)[0], rest])


def _pair(value, rank):
    if isinstance(value, int):
        return [value] * rank
    return list(value)


def _conv(
    rank,
    default_name,
    inputs,
    filters,
    kernel_size,
    strides,
    padding,
    data_format,
    dilation_rate,
    activation,
    use_bias,
    kernel_initializer,
    bias_initializer,
    kernel_regularizer,
    bias_regularizer,
    activity_regularizer,
    trainable,
    name,
    reuse,
):
    """tf.layers.conv1d / conv2d: `kernel` [*kernel_size, in, filters] and `bias` [filters]."""
    if data_format != "channels_last":
        raise ValueError(f"tf.layers.{default_name}: only data_format='channels_last' is provided")
    inputs = tf.convert_to_tensor(inputs)
    channels = inputs.shape.as_list()[-1]
    if channels is None:
        raise ValueError(f"tf.layers.{default_name} needs a static last dimension")
    dtype = inputs.dtype.base_dtype
    with _V1.variable_scope(name, default_name=default_name, values=[inputs], reuse=reuse):
        kernel = _V1.get_variable(
            "kernel",
            [*_pair(kernel_size, rank), channels, filters],
            dtype=dtype,
            initializer=kernel_initializer,
            regularizer=kernel_regularizer,
            trainable=trainable,
        )
        outputs = tf.nn.convolution(
            inputs,
            kernel,
            padding=padding.upper(),
            strides=_pair(strides, rank),
            dilations=_pair(dilation_rate, rank),
        )
        if use_bias:
            bias = _V1.get_variable(
                "bias",
                [filters],
                dtype=dtype,
                initializer=bias_initializer or _V1.zeros_initializer(),
                regularizer=bias_regularizer,
                trainable=trainable,
            )
            outputs = tf.nn.bias_add(outputs, bias)
        outputs = _activation_output(outputs, activation)
        if activity_regularizer is not None:
            _V1.add_to_collection(
                _V1.GraphKeys.REGULARIZATION_LOSSES, activity_regularizer(outputs)
            )
        return outputs


def conv1d(
    inputs,
    filters,
    kernel_size,
    strides=1,
    padding="valid",
    data_format="channels_last",
    dilation_rate=1,
    activation=None,
    use_bias=True,
    kernel_initializer=None,
    bias_initializer=None,
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    trainable=True,
    name=None,
    reuse=None,
):
    """tf.layers.conv1d over [batch, length, channels]."""
    del kernel_constraint, bias_constraint
    return _conv(
        1, "conv1d", inputs, filters, kernel_size, strides, padding, data_format,
        dilation_rate, activation, use_bias, kernel_initializer, bias_initializer,
        kernel_regularizer, bias_regularizer, activity_regularizer, trainable, name, reuse,
    )  # fmt: skip


def conv2d(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1),
    padding="valid",
    data_format="channels_last",
    dilation_rate=(1, 1),
    activation=None,
    use_bias=True,
    kernel_initializer=None,
    bias_initializer=None,
    kernel_regularizer=None,
    bias_regularizer=None,
    activity_regularizer=None,
    kernel_constraint=None,
    bias_constraint=None,
    trainable=True,
    name=None,
    reuse=None,
):
    """tf.layers.conv2d over [batch, height, width, channels]."""
    del kernel_constraint, bias_constraint
    return _conv(
        2, "conv2d", inputs, filters, kernel_size, strides, padding, data_format,
        dilation_rate, activation, use_bias, kernel_initializer, bias_initializer,
        kernel_regularizer, bias_regularizer, activity_regularizer, trainable, name, reuse,
    )  # fmt: skip


def _pooling(kind, rank):
    def pool(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
        if data_format != "channels_last":
            raise ValueError("tf.layers pooling: only data_format='channels_last' is provided")
        with _V1.name_scope(name, f"{kind}_pooling{rank}d", [inputs]):
            return tf.nn.pool(
                inputs,
                window_shape=_pair(pool_size, rank),
                pooling_type="MAX" if kind == "max" else "AVG",
                strides=_pair(strides, rank),
                padding=padding.upper(),
            )

    pool.__name__ = f"{kind}_pooling{rank}d"
    pool.__doc__ = f"tf.layers.{kind}_pooling{rank}d (no variables)."
    return pool


max_pooling1d = _pooling("max", 1)
max_pooling2d = _pooling("max", 2)
average_pooling1d = _pooling("average", 1)
average_pooling2d = _pooling("average", 2)


def layer_norm(
    inputs,
    center=True,
    scale=True,
    activation_fn=None,
    reuse=None,
    variables_collections=None,
    outputs_collections=None,
    trainable=True,
    begin_norm_axis=1,
    begin_params_axis=-1,
    scope=None,
):
    """tf.contrib.layers.layer_norm: normalizes over axes begin_norm_axis.. (epsilon 1e-12).

    `LayerNorm/beta` and `LayerNorm/gamma` (or under `scope`) have the shape
    of the axes from begin_params_axis on; the arithmetic is tf.nn.moments
    then tf.nn.batch_normalization, as in TF 1.x.
    """
    inputs = tf.convert_to_tensor(inputs)
    rank = inputs.shape.ndims
    if rank is None:
        raise ValueError("tf.contrib.layers.layer_norm needs inputs of known rank")
    norm_axis = begin_norm_axis % rank
    params_axis = begin_params_axis % rank
    params_shape = inputs.shape[params_axis:]
    if not params_shape.is_fully_defined():
        raise ValueError(f"layer_norm needs static dimensions from axis {params_axis}")
    with _V1.variable_scope(scope, default_name="LayerNorm", values=[inputs], reuse=reuse):
        beta = gamma = None
        collections = _variable_collections(variables_collections)
        if center:
            beta = _V1.get_variable(
                "beta",
                params_shape,
                dtype=inputs.dtype.base_dtype,
                initializer=_V1.zeros_initializer(),
                collections=collections,
                trainable=trainable,
            )
        if scale:
            gamma = _V1.get_variable(
                "gamma",
                params_shape,
                dtype=inputs.dtype.base_dtype,
                initializer=_V1.ones_initializer(),
                collections=collections,
                trainable=trainable,
            )
        mean, variance = tf.nn.moments(inputs, list(range(norm_axis, rank)), keepdims=True)
        outputs = tf.nn.batch_normalization(
            inputs, mean, variance, offset=beta, scale=gamma, variance_epsilon=1e-12
        )
        outputs.set_shape(inputs.shape)
        outputs = _activation_output(outputs, activation_fn)
        for collection in outputs_collections or ():
            _V1.add_to_collection(collection, outputs)
        return outputs


def _variable_collections(extra):
    if not extra:
        return None
    return [_V1.GraphKeys.GLOBAL_VARIABLES, *extra]


def xavier_initializer(uniform=True, seed=None, dtype=tf.float32):
    """tf.contrib.layers.xavier_initializer: Glorot's scaling, fan_avg, factor 1.

    The variable's dtype comes from get_variable, as with any initializer.
    """
    del dtype
    distribution = "uniform" if uniform else "truncated_normal"
    return _V1.variance_scaling_initializer(
        scale=1.0, mode="fan_avg", distribution=distribution, seed=seed
    )


def l2_regularizer(scale, scope=None):
    """tf.contrib.layers.l2_regularizer: weights -> scale * sum(weights ** 2) / 2."""

    def regularize(weights):
        with _V1.name_scope(scope, "l2_regularizer", [weights]):
            return tf.multiply(tf.cast(scale, weights.dtype), tf.nn.l2_loss(weights))

    return regularize


def l1_regularizer(scale, scope=None):
    """tf.contrib.layers.l1_regularizer: weights -> scale * sum(|weights|)."""

    def regularize(weights):
        with _V1.name_scope(scope, "l1_regularizer", [weights]):
            return tf.multiply(tf.cast(scale, weights.dtype), tf.reduce_sum(tf.abs(weights)))

    return regularize


def layers_module():
    """tf.layers: the functions above; the rest of TF 1.x's tf.layers is not provided."""
    return Namespace(
        "tf.layers",
        None,
        {
            "dense": dense,
            "dropout": dropout,
            "flatten": flatten,
            "conv1d": conv1d,
            "conv2d": conv2d,
            "max_pooling1d": max_pooling1d,
            "max_pooling2d": max_pooling2d,
            "average_pooling1d": average_pooling1d,
            "average_pooling2d": average_pooling2d,
        },
    )


def contrib_layers_module():
    return Namespace(
        "tf.contrib.layers",
        None,
        {
            "layer_norm": layer_norm,
            "xavier_initializer": xavier_initializer,
            "flatten": flatten,
            "l1_regularizer": l1_regularizer,
            "l2_regularizer": l2_regularizer,
        },
        {
            "fully_connected": "tf.layers.dense",
            "dropout": "tf.layers.dropout (rate = 1 - keep_prob)",
        },
    )
