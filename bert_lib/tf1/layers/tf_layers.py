"""tf.layers and tf.contrib.layers of TF 1.x, on get_variable, for the TF 1.x API module.

TensorFlow 2's tf.compat.v1.layers refuses to run under Keras 3, and Keras
layers in a TF1 graph take process-wide names (`dense_1` in an evaluation
graph built after a training graph), so the evaluation graph would miss
the checkpoint's variables. These layers (classes on layer_base.Layer, and
the functions that make and call them) create their variables with
tf.compat.v1.get_variable under a variable scope uniquified per graph, as
TF 1.x did: `dense`, `dense_1`, ... in every graph alike, with TF 1.x's
variable names (`kernel`, `bias`; `LayerNorm/beta`, `LayerNorm/gamma`) and
arithmetic, so checkpoints written by TF 1.x code load and the numbers are
the original's.
"""

import numbers

import tensorflow as tf

from ..machinery.namespaces import Namespace, unsupported
from .batch_norm import BatchNormMath, nn_batch_normalization
from .layer_base import (
    KernelAndBias,
    Layer,
    Pooling,
    activity_losses,
    static_dim,
)
from .optimizers import OPTIMIZER_CLS_NAMES, optimize_loss

_V1 = tf.compat.v1

# Initializers that are defaults of arguments (fully_connected's biases, batch
# normalization's statistics): one object each, as TF 1.x's signatures had.
_ZEROS = _V1.zeros_initializer()
_ONES = _V1.ones_initializer()


def _activation_output(outputs, activation):
    return activation(outputs) if activation is not None else outputs


class _KernelLayer(KernelAndBias, Layer):
    """tf.layers' Dense and convolutions: the arguments they share (a zero bias unless
    bias_initializer is given, the kernel from the variable scope's default initializer),
    and the activity regularizer's loss, added to tf.GraphKeys.REGULARIZATION_LOSSES."""

    def __init__(
        self,
        activation,
        use_bias,
        kernel_initializer,
        bias_initializer,
        kernel_regularizer,
        bias_regularizer,
        activity_regularizer,
        kernel_constraint,
        bias_constraint,
        trainable,
        name,
        **kwargs,
    ):
        super().__init__(trainable=trainable, name=name, **kwargs)
        self.activation = activation
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer or _V1.zeros_initializer()
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.activity_regularizer = activity_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint

    def _outputs(self, outputs):
        outputs = self._add_bias_and_activate(outputs)
        if self.activity_regularizer is not None:
            for loss in activity_losses(self.activity_regularizer, outputs):
                self._losses.append(loss)
                _V1.add_to_collection(_V1.GraphKeys.REGULARIZATION_LOSSES, loss)
        return outputs


class Dense(_KernelLayer):
    """tf.layers.Dense: activation(inputs @ `kernel` + `bias`) over the last axis."""

    def __init__(
        self,
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
        **kwargs,
    ):
        super().__init__(
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            activity_regularizer,
            kernel_constraint,
            bias_constraint,
            trainable,
            name,
            **kwargs,
        )
        self.units = int(units)

    def build(self, input_shape):
        width = static_dim(tf.TensorShape(input_shape)[-1])
        if width is None:
            raise ValueError(f"tf.layers.dense needs a static last dimension, got {input_shape}")
        self._add_kernel_and_bias([width, self.units])

    def call(self, inputs):
        inputs = tf.convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank == 2:
            outputs = tf.matmul(inputs, self.kernel)
        else:
            outputs = tf.tensordot(inputs, self.kernel, [[rank - 1], [0]])
            outputs.set_shape(inputs.shape[:-1].concatenate([self.units]))
        return self._outputs(outputs)


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
    """tf.layers.dense: a Dense layer in scope `name` (else `dense`, `dense_1`, ...)."""
    inputs = tf.convert_to_tensor(inputs)
    layer = Dense(
        units,
        activation,
        use_bias,
        kernel_initializer,
        bias_initializer,
        kernel_regularizer,
        bias_regularizer,
        activity_regularizer,
        kernel_constraint,
        bias_constraint,
        trainable,
        name=name,
        dtype=_float_dtype(inputs),
        _scope=name,
        _reuse=reuse,
    )
    return layer(inputs)


def _float_dtype(inputs):
    return inputs.dtype.base_dtype if inputs.dtype.is_floating else tf.float32


class Dropout(Layer):
    """tf.layers.Dropout: drops `rate` of the inputs when `training` (a bool or a bool tensor)."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=False):
        def dropped():
            return tf.nn.dropout(
                inputs, rate=self.rate, noise_shape=self.noise_shape, seed=self.seed
            )

        if isinstance(training, bool):
            return dropped() if training else tf.identity(inputs)
        return _V1.cond(tf.cast(training, tf.bool), dropped, lambda: tf.identity(inputs))


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """tf.layers.dropout."""
    return Dropout(rate, noise_shape, seed, name=name)(inputs, training=training)


class Flatten(Layer):
    """tf.layers.Flatten: [batch, ...] -> [batch, product of the rest]."""

    def call(self, inputs):
        inputs = tf.convert_to_tensor(inputs)
        rest = inputs.shape[1:].num_elements()
        if rest is None:
            rest = -1
        return tf.reshape(inputs, [tf.shape(inputs)[0], rest])


def flatten(inputs, name=None, data_format="channels_last"):
    """tf.layers.flatten."""
    del data_format
    return Flatten(name=name)(inputs)


class BatchNormalization(BatchNormMath, Layer):
    """tf.layers.BatchNormalization (batch_norm.py); its updates go to UPDATE_OPS."""

    def __init__(
        self,
        axis=-1,
        momentum=0.99,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_initializer=_ZEROS,
        gamma_initializer=_ONES,
        moving_mean_initializer=_ZEROS,
        moving_variance_initializer=_ONES,
        trainable=True,
        name=None,
        renorm=False,
        virtual_batch_size=None,
        **kwargs,
    ):
        options = self._check_arguments("tf.layers", renorm, virtual_batch_size, kwargs)
        super().__init__(trainable=trainable, name=name, **kwargs)
        self._setup(
            axis,
            momentum,
            epsilon,
            center,
            scale,
            (
                beta_initializer,
                gamma_initializer,
                moving_mean_initializer,
                moving_variance_initializer,
            ),
            options,
        )
        self.updates = []

    def _record_update(self, update):
        self.updates.append(update)
        _V1.add_to_collection(_V1.GraphKeys.UPDATE_OPS, update)

    def call(self, inputs, training=False):
        return self._normalize(inputs, training)


def batch_normalization(
    inputs,
    axis=-1,
    momentum=0.99,
    epsilon=1e-3,
    center=True,
    scale=True,
    beta_initializer=_ZEROS,
    gamma_initializer=_ONES,
    moving_mean_initializer=_ZEROS,
    moving_variance_initializer=_ONES,
    training=False,
    trainable=True,
    name=None,
    reuse=None,
    **kwargs,
):
    """tf.layers.batch_normalization: a BatchNormalization layer in scope `name`."""
    layer = BatchNormalization(
        axis,
        momentum,
        epsilon,
        center,
        scale,
        beta_initializer,
        gamma_initializer,
        moving_mean_initializer,
        moving_variance_initializer,
        trainable,
        name=name,
        _scope=name,
        _reuse=reuse,
        **kwargs,
    )
    return layer(inputs, training=training)


def contrib_batch_norm(
    inputs,
    decay=0.999,
    center=True,
    scale=False,
    epsilon=0.001,
    activation_fn=None,
    param_initializers=None,
    updates_collections=_V1.GraphKeys.UPDATE_OPS,
    is_training=True,
    reuse=None,
    variables_collections=None,
    trainable=True,
    data_format="NHWC",
    scope=None,
    **unsupported_kwargs,
):
    """tf.contrib.layers.batch_norm: tf.layers' batch normalization with contrib's defaults
    (decay 0.999, no gamma), in the variable scope `scope`, default "BatchNorm" (numbered
    BatchNorm_1, ... as variable scopes are), then activation_fn.

    The moving averages' updates go to updates_collections (tf.GraphKeys.UPDATE_OPS, for
    the train op to depend on), or, with None, run with the output itself. renorm,
    batch_weights, zero_debias_moving_mean and adjustment are refused by name.
    """
    for name in ("batch_weights", "renorm", "zero_debias_moving_mean", "adjustment"):
        if unsupported_kwargs.get(name):
            raise unsupported(f"tf.contrib.layers.batch_norm({name}=...)")
    initializers = dict(param_initializers or {})
    if scope is None:
        with _V1.variable_scope(None, default_name="BatchNorm") as numbered:
            scope = numbered.name.split("/")[-1]
    layer = BatchNormalization(
        1 if data_format.startswith("NC") else -1,
        decay,
        epsilon,
        center,
        scale,
        initializers.get("beta", _ZEROS),
        initializers.get("gamma", _ONES),
        initializers.get("moving_mean", _ZEROS),
        initializers.get("moving_variance", _ONES),
        trainable,
        name=scope,
        _scope=scope,
        _reuse=reuse,
    )
    collected = set(_V1.get_collection(_V1.GraphKeys.UPDATE_OPS))
    outputs = layer(inputs, training=is_training)
    updates = [op for op in _V1.get_collection(_V1.GraphKeys.UPDATE_OPS) if op not in collected]
    if updates_collections is None and updates:
        update_ops = _V1.get_collection_ref(_V1.GraphKeys.UPDATE_OPS)
        update_ops[:] = [op for op in update_ops if op not in updates]
        with tf.control_dependencies(updates):
            outputs = tf.identity(outputs)
    elif updates_collections != _V1.GraphKeys.UPDATE_OPS:
        for op in updates:
            _V1.add_to_collections(updates_collections, op)
    for variable in layer.weights if variables_collections else ():
        _V1.add_to_collections(variables_collections, variable)
    return activation_fn(outputs) if activation_fn is not None else outputs


class _Conv(_KernelLayer):
    """tf.layers.Conv1D / Conv2D: `kernel` [*kernel_size, in, filters] and `bias` [filters]."""

    rank = None

    def __init__(
        self,
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
        **kwargs,
    ):
        super().__init__(
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            activity_regularizer,
            kernel_constraint,
            bias_constraint,
            trainable,
            name,
            **kwargs,
        )
        if data_format != "channels_last":
            raise ValueError(
                "tf.layers convolutions: only data_format='channels_last' is provided"
            )
        self._set_convolution(filters, kernel_size, strides, dilation_rate)
        self.padding = padding.upper()

    def build(self, input_shape):
        channels = static_dim(tf.TensorShape(input_shape)[-1])
        if channels is None:
            raise ValueError(f"{type(self).__name__} needs a static last dimension")
        self._add_convolution_kernel(channels)

    def call(self, inputs):
        return self._outputs(self._convolve(inputs, self.padding))


class Conv1D(_Conv):
    """tf.layers.Conv1D: kernel [width, in, filters] and bias, as TF 1.x named them."""

    rank = 1


class Conv2D(_Conv):
    """tf.layers.Conv2D: kernel [height, width, in, filters] and bias, as TF 1.x named them."""

    rank = 2


class Conv3D(_Conv):
    """tf.layers.Conv3D: kernel [depth, height, width, in, filters] and bias, as TF 1.x
    named them."""

    rank = 3


def _conv_function(layer_class, default_strides):
    def conv(
        inputs,
        filters,
        kernel_size,
        strides=default_strides,
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
        inputs = tf.convert_to_tensor(inputs)
        layer = layer_class(
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
            kernel_constraint,
            bias_constraint,
            trainable,
            name=name,
            dtype=_float_dtype(inputs),
            _scope=name,
            _reuse=reuse,
        )
        return layer(inputs)

    name = layer_class.__name__.lower()
    conv.__name__ = name
    conv.__doc__ = f"tf.layers.{name}: a {layer_class.__name__} layer called on `inputs`."
    return conv


conv1d = _conv_function(Conv1D, 1)
conv2d = _conv_function(Conv2D, (1, 1))
conv3d = _conv_function(Conv3D, (1, 1, 1))


def _transposed_length(length, kernel, stride, padding):
    """A transposed convolution's output length along one axis (TF 1.x's
    deconv_output_length without output_padding), for an int or a scalar tensor."""
    if length is None:
        return None
    if padding == "VALID":
        return length * stride + max(kernel - stride, 0)
    return length * stride  # SAME


class Conv2DTranspose(_Conv):
    """tf.layers.Conv2DTranspose: `kernel` [height, width, filters, in] (the shape of the
    Conv2D it transposes) and `bias` [filters]; each spatial axis `strides` times longer,
    with padding 'valid' longer still by kernel_size - strides."""

    rank = 2

    def __init__(
        self,
        filters,
        kernel_size,
        strides=(1, 1),
        padding="valid",
        data_format="channels_last",
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
        **kwargs,
    ):
        super().__init__(
            filters,
            kernel_size,
            strides,
            padding,
            data_format,
            1,
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            activity_regularizer,
            kernel_constraint,
            bias_constraint,
            trainable,
            name,
            **kwargs,
        )

    def build(self, input_shape):
        shape = tf.TensorShape(input_shape)
        if shape.rank != 4:
            raise ValueError(f"Inputs should have rank 4. Received input shape: {shape}")
        channels = static_dim(shape[-1])
        if channels is None:
            raise ValueError(
                "The channel dimension of the inputs should be defined. Found `None`."
            )
        self._add_kernel_and_bias([*self.kernel_size, self.filters, channels], self.filters)

    def call(self, inputs):
        dynamic = tf.shape(inputs)
        static = inputs.shape
        lengths, static_lengths = [], []
        for axis in (1, 2):
            kernel, stride = self.kernel_size[axis - 1], self.strides[axis - 1]
            known = static_dim(static[axis])
            lengths.append(
                _transposed_length(
                    known if known is not None else dynamic[axis], kernel, stride, self.padding
                )
            )
            static_lengths.append(_transposed_length(known, kernel, stride, self.padding))
        output_shape = tf.stack([dynamic[0], *lengths, self.filters])
        outputs = tf.nn.conv2d_transpose(
            inputs,
            self.kernel,
            output_shape,
            strides=(1, *self.strides, 1),
            padding=self.padding,
        )
        outputs.set_shape([static_dim(static[0]), *static_lengths, self.filters])
        return self._outputs(outputs)


def conv2d_transpose(
    inputs,
    filters,
    kernel_size,
    strides=(1, 1),
    padding="valid",
    data_format="channels_last",
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
    """tf.layers.conv2d_transpose: a Conv2DTranspose layer called on `inputs`."""
    inputs = tf.convert_to_tensor(inputs)
    layer = Conv2DTranspose(
        filters,
        kernel_size,
        strides,
        padding,
        data_format,
        activation,
        use_bias,
        kernel_initializer,
        bias_initializer,
        kernel_regularizer,
        bias_regularizer,
        activity_regularizer,
        kernel_constraint,
        bias_constraint,
        trainable,
        name=name,
        dtype=_float_dtype(inputs),
        _scope=name,
        _reuse=reuse,
    )
    return layer(inputs)


class _Pooling(Pooling, Layer):
    """tf.layers max / average pooling (no variables): pool_size and strides required."""

    def __init__(
        self, pool_size, strides, padding="valid", data_format="channels_last", name=None, **kwargs
    ):
        super().__init__(name=name, **kwargs)
        self._set_windows(pool_size, strides, padding, data_format, "tf.layers pooling")


class MaxPooling1D(_Pooling):
    """tf.layers.MaxPooling1D: `pool_size` and `strides` required, as in TF 1.x."""

    rank, kind = 1, "MAX"


class MaxPooling2D(_Pooling):
    """tf.layers.MaxPooling2D: `pool_size` and `strides` required, as in TF 1.x."""

    rank, kind = 2, "MAX"


class AveragePooling1D(_Pooling):
    """tf.layers.AveragePooling1D: `pool_size` and `strides` required, as in TF 1.x."""

    rank, kind = 1, "AVG"


class AveragePooling2D(_Pooling):
    """tf.layers.AveragePooling2D: `pool_size` and `strides` required, as in TF 1.x."""

    rank, kind = 2, "AVG"


class MaxPooling3D(_Pooling):
    """tf.layers.MaxPooling3D: `pool_size` and `strides` required, as in TF 1.x."""

    rank, kind = 3, "MAX"


class AveragePooling3D(_Pooling):
    """tf.layers.AveragePooling3D: `pool_size` and `strides` required, as in TF 1.x."""

    rank, kind = 3, "AVG"


def _pooling_function(layer_class):
    def pool(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
        return layer_class(pool_size, strides, padding, data_format, name=name)(inputs)

    words = layer_class.__name__.replace("Pooling", "_pooling").lower()
    pool.__name__ = words
    pool.__doc__ = f"tf.layers.{words} (no variables)."
    return pool


max_pooling1d = _pooling_function(MaxPooling1D)
max_pooling2d = _pooling_function(MaxPooling2D)
average_pooling1d = _pooling_function(AveragePooling1D)
average_pooling2d = _pooling_function(AveragePooling2D)
max_pooling3d = _pooling_function(MaxPooling3D)
average_pooling3d = _pooling_function(AveragePooling3D)


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
    then tf.nn.batch_normalization, as in TF 1.x (batch_norm.py's).
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
        outputs = nn_batch_normalization(inputs, mean, variance, beta, gamma, 1e-12)
        outputs.set_shape(inputs.shape)
        outputs = _activation_output(outputs, activation_fn)
        for collection in outputs_collections or ():
            _V1.add_to_collection(collection, outputs)
        return outputs


def _variable_collections(extra):
    if not extra:
        return None
    return [_V1.GraphKeys.GLOBAL_VARIABLES, *extra]


# The standard deviation of a unit normal truncated at two standard deviations, which
# tf.compat.v1's VarianceScaling divides its truncated normal's by.
_TRUNCATED_UNIT_STDDEV = 0.87962566103423978


def variance_scaling_initializer(
    factor=2.0, mode="FAN_IN", uniform=False, seed=None, dtype=tf.float32
):
    """tf.contrib.layers.variance_scaling_initializer: He's scaling by default.

    With n the fan-in, fan-out or their mean (mode "FAN_IN", "FAN_OUT",
    "FAN_AVG"), values are uniform in +-sqrt(3 * factor / n), or (uniform
    False) from a normal of standard deviation sqrt(1.3 * factor / n)
    truncated at two of them: contrib's 1.3, which tf.compat.v1's
    VarianceScaling writes as a division by the truncated unit normal's
    deviation; the same random op draws them, so seeded values are TF 1.15's.
    """
    if not tf.as_dtype(dtype).is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
    if uniform:
        scale, distribution = factor, "uniform"
    else:
        scale, distribution = 1.3 * factor * _TRUNCATED_UNIT_STDDEV**2, "truncated_normal"
    return _V1.variance_scaling_initializer(
        scale=scale, mode=mode.lower(), distribution=distribution, seed=seed, dtype=dtype
    )


def xavier_initializer(uniform=True, seed=None, dtype=tf.float32):
    """tf.contrib.layers.xavier_initializer: Glorot's scaling, contrib's variance scaling
    with factor 1 over the mean fan."""
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


def _regularizer(kind, scale, scope, penalty):
    """contrib's l1 / l2 regularizer: weights -> scale * penalty(weights), its op named by its
    scope (`<variable>/Regularizer/l2_regularizer`); a scale of 0 gives no loss (None)."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"scale cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            ending = "." if kind == "l2_regularizer" else ""
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}{ending}")
        if scale == 0.0:
            return lambda _: None

    def regularize(weights):
        with _V1.name_scope(scope, kind, [weights]) as name:
            factor = tf.convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return tf.multiply(factor, penalty(weights), name=name)

    return regularize


def l2_regularizer(scale, scope=None):
    """tf.contrib.layers.l2_regularizer: weights -> scale * sum(weights ** 2) / 2."""
    return _regularizer("l2_regularizer", scale, scope, tf.nn.l2_loss)


def l1_regularizer(scale, scope=None):
    """tf.contrib.layers.l1_regularizer: weights -> scale * sum(|weights|)."""
    return _regularizer(
        "l1_regularizer", scale, scope, lambda weights: tf.reduce_sum(tf.abs(weights))
    )


def layers_module():
    """tf.layers: the layers above, as classes and functions; the rest of TF 1.x's
    tf.layers (separable convolutions, transposed 3-D ones) is not provided."""
    names = {
        "Layer": Layer,
        "Dense": Dense,
        "BatchNormalization": BatchNormalization,
        "batch_normalization": batch_normalization,
        "Dropout": Dropout,
        "Flatten": Flatten,
        "Conv1D": Conv1D,
        "Conv2D": Conv2D,
        "Conv2DTranspose": Conv2DTranspose,
        "Conv3D": Conv3D,
        "MaxPooling1D": MaxPooling1D,
        "MaxPooling2D": MaxPooling2D,
        "AveragePooling1D": AveragePooling1D,
        "AveragePooling2D": AveragePooling2D,
        "MaxPooling3D": MaxPooling3D,
        "AveragePooling3D": AveragePooling3D,
        "dense": dense,
        "dropout": dropout,
        "flatten": flatten,
        "conv1d": conv1d,
        "conv2d": conv2d,
        "conv2d_transpose": conv2d_transpose,
        "max_pooling1d": max_pooling1d,
        "max_pooling2d": max_pooling2d,
        "average_pooling1d": average_pooling1d,
        "average_pooling2d": average_pooling2d,
        "conv3d": conv3d,
        "max_pooling3d": max_pooling3d,
        "average_pooling3d": average_pooling3d,
    }
    return Namespace("tf.layers", None, names)


def fully_connected(
    inputs,
    num_outputs,
    activation_fn=tf.nn.relu,
    normalizer_fn=None,
    normalizer_params=None,
    weights_initializer=None,
    weights_regularizer=None,
    biases_initializer=_ZEROS,
    biases_regularizer=None,
    reuse=None,
    variables_collections=None,
    outputs_collections=None,
    trainable=True,
    scope=None,
):
    """tf.contrib.layers.fully_connected: `weights` (Glorot uniform) and `biases` in scope
    `fully_connected` (uniquified) or `scope`; relu by default; a normalizer_fn replaces the
    biases. The variables are model variables too."""
    inputs = tf.convert_to_tensor(inputs)
    width = static_dim(inputs.shape[-1])
    collections = [_V1.GraphKeys.GLOBAL_VARIABLES, _V1.GraphKeys.MODEL_VARIABLES]
    collections += list(variables_collections or [])
    with _V1.variable_scope(scope, default_name="fully_connected", values=[inputs], reuse=reuse):
        weights = _V1.get_variable(
            "weights",
            [width, num_outputs],
            dtype=inputs.dtype.base_dtype,
            initializer=weights_initializer or xavier_initializer(),
            regularizer=weights_regularizer,
            collections=collections,
            trainable=trainable,
        )
        rank = inputs.shape.ndims
        if rank == 2:
            outputs = tf.matmul(inputs, weights)
        else:
            outputs = tf.tensordot(inputs, weights, [[rank - 1], [0]])
            outputs.set_shape(inputs.shape[:-1].concatenate([num_outputs]))
        if normalizer_fn is not None:
            outputs = normalizer_fn(outputs, **(normalizer_params or {}))
        elif biases_initializer is not None:
            biases = _V1.get_variable(
                "biases",
                [num_outputs],
                dtype=inputs.dtype.base_dtype,
                initializer=biases_initializer,
                regularizer=biases_regularizer,
                collections=collections,
                trainable=trainable,
            )
            outputs = tf.nn.bias_add(outputs, biases)
        outputs = _activation_output(outputs, activation_fn)
        for collection in outputs_collections or ():
            _V1.add_to_collection(collection, outputs)
        return outputs


def contrib_dropout(
    inputs,
    keep_prob=0.5,
    noise_shape=None,
    is_training=True,
    outputs_collections=None,
    scope=None,
    seed=None,
):
    """tf.contrib.layers.dropout: keeps `keep_prob` of the inputs when is_training."""
    with _V1.name_scope(scope, "Dropout", [inputs]):
        outputs = Dropout(1 - keep_prob, noise_shape, seed)(inputs, training=is_training)
        for collection in outputs_collections or ():
            _V1.add_to_collection(collection, outputs)
        return outputs


def contrib_layers_module():
    """tf.contrib.layers: layer_norm, fully_connected, initializers, regularizers."""
    return Namespace(
        "tf.contrib.layers",
        None,
        {
            "layer_norm": layer_norm,
            "batch_norm": contrib_batch_norm,
            "xavier_initializer": xavier_initializer,
            "xavier_initializer_conv2d": xavier_initializer,
            "variance_scaling_initializer": variance_scaling_initializer,
            "flatten": flatten,
            "fully_connected": fully_connected,
            "linear": lambda inputs, num_outputs, **kwargs: fully_connected(
                inputs, num_outputs, activation_fn=None, **kwargs
            ),
            "dropout": contrib_dropout,
            "l1_regularizer": l1_regularizer,
            "l2_regularizer": l2_regularizer,
            "apply_regularization": apply_regularization,
            "optimize_loss": optimize_loss,
            "OPTIMIZER_CLS_NAMES": OPTIMIZER_CLS_NAMES,
        },
    )


def apply_regularization(regularizer, weights_list=None):
    """tf.contrib.layers.apply_regularization: the sum of regularizer(w) over weights_list
    (default: the graph's weights collection), also added to the regularization losses."""
    if weights_list is None:
        weights_list = _V1.get_collection(_V1.GraphKeys.WEIGHTS)
    penalties = [regularizer(w) for w in weights_list]
    penalties = [p for p in penalties if p is not None]
    if not penalties:
        return tf.constant(0.0)
    total = tf.add_n(penalties)
    _V1.add_to_collection(_V1.GraphKeys.REGULARIZATION_LOSSES, total)
    return total
