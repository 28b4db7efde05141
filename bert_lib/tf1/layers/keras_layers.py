"""tf.keras.layers as TF 1.15 ran them inside a graph, for the TF 1.x API module.

In a TF 1.x script, `tf.keras.layers.Dense` is TensorFlow 1.15's Keras:
its variables are named by the layer's name, which comes from a per-graph
counter of each base name shared with tf.layers (layer_base.py): the
eighth dense layer of a graph is `dense_7` whichever API made the first
seven. They live under the name scope the layer is called in
(`bert/dense_7/kernel` inside `tf.variable_scope("bert")`, `vs_1/...` in a
variable scope entered a second time), ignore variable-scope reuse, and
are the layer's alone: no extra variables (Keras 3 adds a
`seed_generator` to every layer that draws random numbers). Initializers,
defaults and arithmetic are TF 1.15's (glorot_uniform kernels, an
Embedding uniform in +-0.05, LayerNormalization's epsilon 1e-3, Dropout
active only with training=True or learning phase 1), so a checkpoint moves
both ways between TF 1.15 and run_tf1.py.

Layers not provided here are Keras 3's: their first use prints one WARNING
line saying that their variables are not named as TF 1.15 named them.
"""

import inspect
import sys

import tensorflow as tf

from ..machinery.namespaces import Namespace, unsupported
from .batch_norm import BatchNormMath, nn_batch_normalization
from .layer_base import (
    KernelAndBias,
    LayerBase,
    Pooling,
    activity_losses,
    channels_first,
    reset_layer_names,
    snake_case,
    static_dim,
    unique_layer_name,
)

_V1 = tf.compat.v1

# ---------------------------------------------------------------------------
# Initializers, activations, regularizers: TF 1.15's Keras defaults


class Zeros(_V1.zeros_initializer):
    """tf.keras.initializers.Zeros."""


class Ones(_V1.ones_initializer):
    """tf.keras.initializers.Ones."""


class Constant(_V1.constant_initializer):
    """tf.keras.initializers.Constant."""


class RandomUniform(_V1.random_uniform_initializer):
    """tf.keras.initializers.RandomUniform: U(-0.05, 0.05) by default."""

    def __init__(self, minval=-0.05, maxval=0.05, seed=None, dtype=tf.float32):
        super().__init__(minval=minval, maxval=maxval, seed=seed, **_dtype_argument(dtype))


class RandomNormal(_V1.random_normal_initializer):
    """tf.keras.initializers.RandomNormal: N(0, 0.05) by default."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=tf.float32):
        super().__init__(mean=mean, stddev=stddev, seed=seed, **_dtype_argument(dtype))


class TruncatedNormal(_V1.truncated_normal_initializer):
    """tf.keras.initializers.TruncatedNormal: N(0, 0.05) truncated at 2 stddev by default."""

    def __init__(self, mean=0.0, stddev=0.05, seed=None, dtype=tf.float32):
        super().__init__(mean=mean, stddev=stddev, seed=seed, **_dtype_argument(dtype))


def _dtype_argument(dtype):
    """TF 1.x's initializers warn when given a dtype; float32 is their default anyway."""
    return {} if tf.as_dtype(dtype) == tf.float32 else {"dtype": dtype}


def _variance_scaling(scale, mode, distribution):
    def make(seed=None):
        return _V1.variance_scaling_initializer(
            scale=scale, mode=mode, distribution=distribution, seed=seed
        )

    return make


_INITIALIZERS = {
    "zeros": Zeros,
    "ones": Ones,
    "constant": Constant,
    "uniform": RandomUniform,
    "random_uniform": RandomUniform,
    "normal": RandomNormal,
    "random_normal": RandomNormal,
    "truncated_normal": TruncatedNormal,
    "glorot_uniform": _V1.glorot_uniform_initializer,
    "glorot_normal": _V1.glorot_normal_initializer,
    "orthogonal": _V1.orthogonal_initializer,
    "identity": _V1.initializers.identity,
    "he_normal": _variance_scaling(2.0, "fan_in", "truncated_normal"),
    "he_uniform": _variance_scaling(2.0, "fan_in", "uniform"),
    "lecun_normal": _variance_scaling(1.0, "fan_in", "truncated_normal"),
    "lecun_uniform": _variance_scaling(1.0, "fan_in", "uniform"),
}


def get_initializer(identifier):
    """tf.keras.initializers.get: None, a name (`glorot_uniform`, `Zeros`), or the callable."""
    if identifier is None or callable(identifier):
        return identifier
    if isinstance(identifier, str):
        key = snake_case(identifier) if identifier[:1].isupper() else identifier
        if key in _INITIALIZERS:
            return _INITIALIZERS[key]()
    raise ValueError(f"Unknown initializer: {identifier}")


def initializers_module():
    """tf.keras.initializers with TF 1.15's defaults."""
    names = {
        "Zeros": Zeros,
        "Ones": Ones,
        "Constant": Constant,
        "RandomUniform": RandomUniform,
        "RandomNormal": RandomNormal,
        "TruncatedNormal": TruncatedNormal,
        "GlorotUniform": _V1.glorot_uniform_initializer,
        "GlorotNormal": _V1.glorot_normal_initializer,
        "Orthogonal": _V1.orthogonal_initializer,
        "Identity": _V1.initializers.identity,
        "VarianceScaling": _V1.variance_scaling_initializer,
        "he_normal": _INITIALIZERS["he_normal"],
        "he_uniform": _INITIALIZERS["he_uniform"],
        "lecun_normal": _INITIALIZERS["lecun_normal"],
        "lecun_uniform": _INITIALIZERS["lecun_uniform"],
        "get": get_initializer,
    }
    names.update({k: v for k, v in _INITIALIZERS.items() if k not in names})
    return Namespace("tf.keras.initializers", None, names)


def hard_sigmoid(x):
    """TF 1.15's Keras hard_sigmoid: clip(0.2 x + 0.5, 0, 1)."""
    x = tf.convert_to_tensor(x)
    x = x * tf.constant(0.2, x.dtype) + tf.constant(0.5, x.dtype)
    return tf.clip_by_value(x, 0.0, 1.0)


def _softmax(x, axis=-1):
    return tf.nn.softmax(x, axis=axis)


def _relu(x, alpha=0.0, max_value=None, threshold=0):
    if alpha == 0 and max_value is None and threshold == 0:
        return tf.nn.relu(x)
    negative = tf.nn.relu(-x + threshold) if alpha != 0 else None
    x = tf.nn.relu(x - threshold) + threshold if threshold != 0 else tf.nn.relu(x)
    if max_value is not None:
        x = tf.clip_by_value(x, 0.0, max_value)
    if negative is not None:
        x -= alpha * negative
    return x


_ACTIVATIONS = {
    "softmax": _softmax,
    "relu": _relu,
    "elu": tf.nn.elu,
    "selu": tf.nn.selu,
    "softplus": tf.nn.softplus,
    "softsign": tf.nn.softsign,
    "tanh": tf.tanh,
    "sigmoid": tf.sigmoid,
    "hard_sigmoid": hard_sigmoid,
    "exponential": tf.exp,
    "linear": lambda x: x,
}


def get_activation(identifier):
    """tf.keras.activations.get: None is linear; a name; else the callable."""
    if identifier is None:
        return _ACTIVATIONS["linear"]
    if isinstance(identifier, str):
        if identifier not in _ACTIVATIONS:
            raise ValueError(f"Unknown activation function: {identifier}")
        return _ACTIVATIONS[identifier]
    return identifier


def activations_module():
    """tf.keras.activations, by name as get_activation finds them."""
    return Namespace("tf.keras.activations", None, {**_ACTIVATIONS, "get": get_activation})


class L1L2:
    """tf.keras.regularizers.L1L2: l1 * sum(|x|) + l2 * sum(x ** 2)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = l1
        self.l2 = l2

    def __call__(self, x):
        loss = tf.constant(0.0, x.dtype.base_dtype)
        if self.l1:
            loss += self.l1 * tf.reduce_sum(tf.abs(x))
        if self.l2:
            loss += self.l2 * tf.reduce_sum(tf.square(x))
        return loss


def regularizers_module():
    """tf.keras.regularizers (l1, l2, l1_l2) as TF 1.15's."""
    return Namespace(
        "tf.keras.regularizers",
        None,
        {
            "L1L2": L1L2,
            "l1": lambda l=0.01: L1L2(l1=l),  # noqa: E741
            "l2": lambda l=0.01: L1L2(l2=l),  # noqa: E741
            "l1_l2": lambda l1=0.01, l2=0.01: L1L2(l1=l1, l2=l2),
            "get": lambda identifier: identifier,
        },
    )


# ---------------------------------------------------------------------------
# The layer base


# tf.keras.backend.learning_phase(): 0 unless the script set it (Dropout and
# BatchNormalization-like behaviour when `training` is not passed).
_LEARNING_PHASE = [0]


def learning_phase():
    """tf.keras.backend.learning_phase: 0 (inference) unless set to 1."""
    return _LEARNING_PHASE[0]


def set_learning_phase(value):
    """tf.keras.backend.set_learning_phase: 0 or 1, for calls with training=None."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _LEARNING_PHASE[0] = value


def resolved_training(training):
    """A call's `training` argument, or the learning phase when it is None, as Keras 1.15's."""
    return bool(learning_phase()) if training is None else training


class Layer(LayerBase):
    """tf.keras.layers.Layer in a TF 1.x graph: a per-graph unique name, variables made
    (in build, by add_weight) under the name scope of the first call; its weights, losses
    and updates include those of the layers it holds."""

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        for key in ("input_shape", "batch_input_shape", "input_dim", "batch_size", "dynamic"):
            kwargs.pop(key, None)
        kwargs.pop("autocast", None)
        # Any layer takes one: its loss on the layer's outputs is added when it is called.
        self.activity_regularizer = kwargs.pop("activity_regularizer", None)
        if kwargs:
            raise TypeError(f"Keyword argument not understood: {sorted(kwargs)[0]}")
        self.trainable = trainable
        self._name = name or unique_layer_name(snake_case(type(self).__name__))
        self._dtype = tf.as_dtype(dtype).name if dtype is not None else None
        self.built = False
        self._trainable_weights = []
        self._non_trainable_weights = []
        self._losses = []
        self._updates = []

    @property
    def updates(self):
        """The update ops of this layer and the layers it holds."""
        return list(self._updates) + [x for layer in self._sublayers() for x in layer.updates]

    def _sublayers(self):
        """The Keras layers held in attributes, alone or in lists and tuples."""
        return [v for v in vars(self).values() if isinstance(v, Layer)] + [
            item
            for v in vars(self).values()
            if isinstance(v, (list, tuple))
            for item in v
            if isinstance(item, Layer)
        ]

    def count_params(self):
        """How many numbers the layer's weights hold."""
        return int(sum(tf.TensorShape(w.shape).num_elements() for w in self.weights))

    def get_weights(self):
        """The weights' values, read in the default session."""
        return _V1.get_default_session().run(self.weights)

    def call(self, inputs, **kwargs):
        """The layer's computation; a subclass overrides it."""
        return inputs

    def compute_mask(self, inputs, mask=None):
        """The output's Keras mask: the input's, unless a subclass says otherwise."""
        return mask

    def add_loss(self, losses, inputs=None):
        """Adds a loss tensor (or a list of them) to the layer's losses."""
        del inputs
        self._losses.extend(losses if isinstance(losses, (list, tuple)) else [losses])

    def add_update(self, updates, inputs=None):
        """Adds an update op (or a list of them) to the layer's updates."""
        del inputs
        self._updates.extend(updates if isinstance(updates, (list, tuple)) else [updates])

    def add_weight(
        self,
        name=None,
        shape=None,
        dtype=None,
        initializer=None,
        regularizer=None,
        trainable=True,
        constraint=None,
        **unused,
    ):
        """A variable `name` in the current name scope (the layer's, inside build)."""
        dtype = tf.as_dtype(dtype or self._dtype or tf.float32)
        initializer = get_initializer(initializer)
        if initializer is None:
            if not dtype.is_floating:
                raise ValueError(f"An initializer for variable {name} of type {dtype} is required")
            initializer = _V1.glorot_uniform_initializer()
        shape = tf.TensorShape(shape).as_list() if shape is not None else []
        variable = _V1.Variable(
            lambda: initializer(shape, dtype=dtype),
            name=name,
            trainable=trainable and self.trainable,
            dtype=dtype,
            constraint=constraint,
            use_resource=True,
        )
        (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)
        if regularizer is not None:
            with _V1.name_scope(f"{name}/Regularizer"):
                self._losses.append(regularizer(variable))
        return variable

    add_variable = add_weight

    def __call__(self, inputs, *args, **kwargs):
        with _V1.name_scope(self._name):
            if not self.built:
                first = tf.convert_to_tensor(tf.nest.flatten(inputs)[0])
                if self._dtype is None:
                    self._dtype = (
                        first.dtype.base_dtype.name if first.dtype.is_floating else ("float32")
                    )
                self.build(tf.nest.map_structure(lambda x: tf.convert_to_tensor(x).shape, inputs))
                self.built = True
            mask = kwargs.get("mask")
            if mask is None and _accepts(self.call, "mask"):
                mask = _mask_of(inputs)
                if mask is not None:
                    kwargs["mask"] = mask
            if "training" in kwargs and not _accepts(self.call, "training"):
                kwargs.pop("training")
            outputs = self.call(inputs, *args, **kwargs)
            if self.activity_regularizer is not None:
                self._losses.extend(activity_losses(self.activity_regularizer, outputs))
            output_mask = self.compute_mask(inputs, mask)
            if output_mask is not None:
                for output in tf.nest.flatten(outputs):
                    _set_mask(output, output_mask)
            return outputs

    apply = __call__


def _accepts(function, argument):
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return argument in parameters or any(
        p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


# A Keras mask rides on the tensor it belongs to, as TF 1.x's Keras did (`_keras_mask`).
def _mask_of(inputs):
    flat = tf.nest.flatten(inputs)
    return getattr(flat[0], "_keras_mask", None) if flat else None


def _set_mask(tensor, mask):
    try:
        tensor._keras_mask = mask  # noqa: SLF001
    except AttributeError:
        pass


# ---------------------------------------------------------------------------
# Core layers


class _KernelLayer(KernelAndBias, Layer):
    """Dense and the convolutions: the arguments they share, activations and initializers
    given by name or as callables."""

    def __init__(
        self,
        activation,
        use_bias,
        kernel_initializer,
        bias_initializer,
        kernel_regularizer,
        bias_regularizer,
        kernel_constraint,
        bias_constraint,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.activation = get_activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer = get_initializer(kernel_initializer)
        self.bias_initializer = get_initializer(bias_initializer)
        self.kernel_regularizer = kernel_regularizer
        self.bias_regularizer = bias_regularizer
        self.kernel_constraint = kernel_constraint
        self.bias_constraint = bias_constraint


class Dense(_KernelLayer):
    """activation(inputs @ kernel + bias) over the last axis."""

    def __init__(
        self,
        units,
        activation=None,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        super().__init__(
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            kernel_constraint,
            bias_constraint,
            activity_regularizer=activity_regularizer,
            **kwargs,
        )
        self.units = int(units)

    def build(self, input_shape):
        width = static_dim(tf.TensorShape(input_shape)[-1])
        if width is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined.")
        self._add_kernel_and_bias([width, self.units])

    def call(self, inputs):
        inputs = tf.convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank is not None and rank > 2:
            outputs = tf.tensordot(inputs, self.kernel, [[rank - 1], [0]])
            outputs.set_shape(inputs.shape[:-1].concatenate([self.units]))
        else:
            outputs = tf.matmul(inputs, self.kernel)
        return self._add_bias_and_activate(outputs)


class Embedding(Layer):
    """`embeddings` [input_dim, output_dim], U(-0.05, 0.05) by default; mask_zero masks id 0."""

    def __init__(
        self,
        input_dim,
        output_dim,
        embeddings_initializer="uniform",
        embeddings_regularizer=None,
        activity_regularizer=None,
        embeddings_constraint=None,
        mask_zero=False,
        input_length=None,
        **kwargs,
    ):
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.input_dim = input_dim
        self.output_dim = output_dim
        self.embeddings_initializer = get_initializer(embeddings_initializer)
        self.embeddings_regularizer = embeddings_regularizer
        self.embeddings_constraint = embeddings_constraint
        self.mask_zero = mask_zero
        self.input_length = input_length

    def build(self, input_shape):
        self.embeddings = self.add_weight(
            "embeddings",
            [self.input_dim, self.output_dim],
            initializer=self.embeddings_initializer,
            regularizer=self.embeddings_regularizer,
            constraint=self.embeddings_constraint,
        )

    def call(self, inputs):
        inputs = tf.convert_to_tensor(inputs)
        if inputs.dtype not in (tf.int32, tf.int64):
            inputs = tf.cast(inputs, tf.int32)
        return tf.nn.embedding_lookup(self.embeddings, inputs)

    def compute_mask(self, inputs, mask=None):
        if not self.mask_zero:
            return None
        return tf.not_equal(inputs, 0)


class LayerNormalization(Layer):
    """Normalizes over `axis` (epsilon 1e-3 by default); `gamma` then `beta`, of that shape."""

    def __init__(
        self,
        axis=-1,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_initializer="zeros",
        gamma_initializer="ones",
        beta_regularizer=None,
        gamma_regularizer=None,
        beta_constraint=None,
        gamma_constraint=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self._initializers = (
            get_initializer(gamma_initializer),
            get_initializer(beta_initializer),
        )
        self._regularizers = (gamma_regularizer, beta_regularizer)
        self._constraints = (gamma_constraint, beta_constraint)

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        rank = input_shape.ndims
        self.axis = sorted(a % rank for a in self.axis)
        shape = [static_dim(input_shape[a]) for a in self.axis]
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight(
                "gamma",
                shape,
                initializer=self._initializers[0],
                regularizer=self._regularizers[0],
                constraint=self._constraints[0],
            )
        if self.center:
            self.beta = self.add_weight(
                "beta",
                shape,
                initializer=self._initializers[1],
                regularizer=self._regularizers[1],
                constraint=self._constraints[1],
            )

    def call(self, inputs):
        inputs = tf.convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        broadcast = [1] * rank
        for a in self.axis:
            broadcast[a] = static_dim(inputs.shape[a])

        def shaped(value):
            if value is not None and len(self.axis) != rank and self.axis != [rank - 1]:
                return tf.reshape(value, broadcast)
            return value

        mean, variance = tf.nn.moments(inputs, self.axis, keepdims=True)
        return nn_batch_normalization(
            inputs, mean, variance, shaped(self.beta), shaped(self.gamma), self.epsilon
        )


class Dropout(Layer):
    """Drops `rate` of the inputs when training (training=True, or learning phase 1)."""

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.rate = rate
        self.noise_shape = noise_shape
        self.seed = seed

    def call(self, inputs, training=None):
        training = resolved_training(training)

        def dropped():
            return tf.nn.dropout(
                inputs, rate=self.rate, noise_shape=self.noise_shape, seed=self.seed
            )

        if isinstance(training, (bool, int)):
            return dropped() if training and self.rate > 0 else tf.identity(inputs)
        return _V1.cond(tf.cast(training, tf.bool), dropped, lambda: tf.identity(inputs))


class Activation(Layer):
    """tf.keras.layers.Activation: an activation, by name or function."""

    def __init__(self, activation, **kwargs):
        super().__init__(**kwargs)
        self.activation = get_activation(activation)

    def call(self, inputs):
        return self.activation(inputs)


class Flatten(Layer):
    """tf.keras.layers.Flatten: each example to one dimension."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)

    def call(self, inputs):
        inputs = tf.convert_to_tensor(inputs)
        rest = inputs.shape[1:].num_elements()
        return tf.reshape(inputs, [tf.shape(inputs)[0], -1 if rest is None else rest])


class Reshape(Layer):
    """tf.keras.layers.Reshape: each example to `target_shape`."""

    def __init__(self, target_shape, **kwargs):
        super().__init__(**kwargs)
        self.target_shape = tuple(target_shape)

    def call(self, inputs):
        return tf.reshape(inputs, [tf.shape(inputs)[0], *self.target_shape])


class Permute(Layer):
    """tf.keras.layers.Permute: the example axes reordered (1-based `dims`)."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        self.dims = tuple(dims)

    def call(self, inputs):
        return tf.transpose(inputs, [0, *self.dims])


class Lambda(Layer):
    """function(inputs, **arguments)."""

    def __init__(self, function, output_shape=None, mask=None, arguments=None, **kwargs):
        super().__init__(**kwargs)
        self.function = function
        self.arguments = dict(arguments or {})

    def call(self, inputs, mask=None, training=None):
        return self.function(inputs, **self.arguments)


class _Merge(Layer):
    def call(self, inputs):
        return self._merge(list(inputs))


class Concatenate(_Merge):
    """tf.keras.layers.Concatenate: the inputs along `axis`."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def _merge(self, inputs):
        return tf.concat(inputs, axis=self.axis)


class Add(_Merge):
    """tf.keras.layers.Add: the inputs' sum."""

    def _merge(self, inputs):
        return tf.add_n(inputs) if len(inputs) > 2 else inputs[0] + inputs[1]


class Subtract(_Merge):
    """tf.keras.layers.Subtract: the first input minus the second."""

    def _merge(self, inputs):
        return inputs[0] - inputs[1]


class Multiply(_Merge):
    """tf.keras.layers.Multiply: the inputs' product."""

    def _merge(self, inputs):
        output = inputs[0]
        for value in inputs[1:]:
            output = output * value
        return output


class Average(_Merge):
    """tf.keras.layers.Average: the inputs' mean."""

    def _merge(self, inputs):
        output = inputs[0]
        for value in inputs[1:]:
            output = output + value
        return output / len(inputs)


class Maximum(_Merge):
    """tf.keras.layers.Maximum: the inputs' elementwise maximum."""

    def _merge(self, inputs):
        output = inputs[0]
        for value in inputs[1:]:
            output = tf.maximum(output, value)
        return output


def _merge_function(layer_class):
    def merge(inputs, **kwargs):
        return layer_class(**kwargs)(inputs)

    merge.__name__ = layer_class.__name__.lower()
    return merge


# ---------------------------------------------------------------------------
# Convolutions and pooling over [batch, steps, channels] / [batch, h, w, channels]


class _Conv(_KernelLayer):
    rank = None

    def __init__(
        self,
        filters,
        kernel_size,
        strides=1,
        padding="valid",
        data_format=None,
        dilation_rate=1,
        activation=None,
        use_bias=True,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        kernel_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        bias_constraint=None,
        **kwargs,
    ):
        super().__init__(
            activation,
            use_bias,
            kernel_initializer,
            bias_initializer,
            kernel_regularizer,
            bias_regularizer,
            kernel_constraint,
            bias_constraint,
            activity_regularizer=activity_regularizer,
            **kwargs,
        )
        if data_format not in (None, "channels_last"):
            raise unsupported(
                f"tf.keras.layers.{type(self).__name__}(data_format={data_format!r})"
            )
        self._set_convolution(filters, kernel_size, strides, dilation_rate)
        self.padding = padding.lower()

    def build(self, input_shape):
        self._add_convolution_kernel(static_dim(tf.TensorShape(input_shape)[-1]))

    def call(self, inputs):
        padding = self.padding
        if padding == "causal":
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            inputs = tf.pad(inputs, [[0, 0], [left, 0], [0, 0]])
            padding = "valid"
        return self._add_bias_and_activate(self._convolve(inputs, padding))


class Conv1D(_Conv):
    """tf.keras.layers.Conv1D of TF 1.15: kernel [width, in, filters] and bias."""

    rank = 1


class Conv2D(_Conv):
    """tf.keras.layers.Conv2D of TF 1.15: kernel [height, width, in, filters] and bias."""

    rank = 2


class _Pooling(Pooling, Layer):
    """Max / average pooling: windows of 2 by default, strides the window's by default."""

    def __init__(self, pool_size=2, strides=None, padding="valid", data_format=None, **kwargs):
        super().__init__(**kwargs)
        strides = strides if strides is not None else pool_size
        api = f"tf.keras.layers.{type(self).__name__}"
        self._set_windows(pool_size, strides, padding, data_format, api)


class MaxPooling1D(_Pooling):
    """tf.keras.layers.MaxPooling1D: windows of 2 by default."""

    rank, kind = 1, "MAX"


class AveragePooling1D(_Pooling):
    """tf.keras.layers.AveragePooling1D: windows of 2 by default."""

    rank, kind = 1, "AVG"


class MaxPooling2D(_Pooling):
    """tf.keras.layers.MaxPooling2D: windows of 2x2 by default."""

    rank, kind = 2, "MAX"


class AveragePooling2D(_Pooling):
    """tf.keras.layers.AveragePooling2D: windows of 2x2 by default."""

    rank, kind = 2, "AVG"


class GlobalMaxPooling1D(Layer):
    """The maximum over steps (axis 1, or 2 with data_format="channels_first")."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        api = "tf.keras.layers.GlobalMaxPooling1D"
        self.steps_axis = 2 if channels_first(data_format, api) else 1

    def call(self, inputs):
        return tf.reduce_max(inputs, axis=self.steps_axis)


class GlobalAveragePooling1D(Layer):
    """The mean over steps (over the unmasked ones when the inputs carry a mask)."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        api = "tf.keras.layers.GlobalAveragePooling1D"
        self.steps_axis = 2 if channels_first(data_format, api) else 1

    def call(self, inputs, mask=None):
        axis = self.steps_axis
        if mask is None:
            return tf.reduce_mean(inputs, axis=axis)
        mask = tf.expand_dims(tf.cast(mask, inputs.dtype), 3 - axis)
        return tf.reduce_sum(inputs * mask, axis=axis) / tf.reduce_sum(mask, axis=axis)

    def compute_mask(self, inputs, mask=None):
        return None


class BatchNormalization(BatchNormMath, Layer):
    """TF 1.15's Keras BatchNormalization (batch_norm.py): batch statistics only with
    training=True or learning phase 1; its updates are the layer's `updates`."""

    def __init__(
        self,
        axis=-1,
        momentum=0.99,
        epsilon=1e-3,
        center=True,
        scale=True,
        beta_initializer="zeros",
        gamma_initializer="ones",
        moving_mean_initializer="zeros",
        moving_variance_initializer="ones",
        renorm=False,
        virtual_batch_size=None,
        **kwargs,
    ):
        options = self._check_arguments("tf.keras.layers", renorm, virtual_batch_size, kwargs)
        super().__init__(**kwargs)
        initializers = (
            beta_initializer,
            gamma_initializer,
            moving_mean_initializer,
            moving_variance_initializer,
        )
        self._setup(
            axis,
            momentum,
            epsilon,
            center,
            scale,
            tuple(get_initializer(i) for i in initializers),
            options,
        )

    def _record_update(self, update):
        self._updates.append(update)

    def call(self, inputs, training=None):
        return self._normalize(inputs, resolved_training(training))


# ---------------------------------------------------------------------------
# Sequential and subclassed models


class Sequential(Layer):
    """tf.keras.Sequential called on tensors: its layers in order, under its name scope."""

    def __init__(self, layers=None, name=None):
        super().__init__(name=name)
        self.layers = []
        for layer in layers or []:
            self.add(layer)

    def add(self, layer):
        """Appends a layer; calls run the layers in order."""
        self.layers.append(layer)

    def call(self, inputs, training=None, mask=None):
        outputs = inputs
        for layer in self.layers:
            kwargs = {"training": training} if _accepts(layer.call, "training") else {}
            outputs = layer(outputs, **kwargs)
        return outputs


class Model(Layer):
    """tf.keras.Model subclassed (layers as attributes, call(inputs)); not the functional
    Model(inputs, outputs), which needs Keras's symbolic inputs."""

    def __init__(self, *args, **kwargs):
        if args or "inputs" in kwargs or "outputs" in kwargs:
            raise unsupported(
                "tf.keras.Model(inputs, outputs)",
                "a subclassed tf.keras.Model or tf.keras.Sequential",
            )
        super().__init__(**kwargs)


# ---------------------------------------------------------------------------
# Keras 3 for the rest, with one WARNING line for each layer used


_WARNED = set()


def _keras3_layer(name, real):
    def make(*args, **kwargs):
        if name not in _WARNED:
            _WARNED.add(name)
            sys.stderr.write(
                f"WARNING: tf.keras.layers.{name} is Keras 3's here, not TF 1.15's: its "
                "variables are not named as TF 1.15 named them (checkpoints holding them do not "
                "move between TF 1.15 and run_tf1.py)\n"
            )
        return real(*args, **kwargs)

    make.__name__ = name
    return make


class _Keras3Layers(Namespace):
    """tf.keras.layers: this module's layers, else Keras 3's with a warning."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        real = getattr(tf.keras.layers, name, None)
        if real is None:
            raise unsupported(f"tf.keras.layers.{name}")
        value = _keras3_layer(name, real) if isinstance(real, type) else real
        self.__dict__[name] = value
        return value


def layers_names(recurrent_layers):
    """tf.keras.layers' names: this module's layers and `recurrent_layers` (keras_rnn's,
    which build on this module, so the caller brings them)."""
    names = {
        cls.__name__: cls
        for cls in (
            Layer,
            Dense,
            Embedding,
            LayerNormalization,
            Dropout,
            Activation,
            Flatten,
            Reshape,
            Permute,
            Lambda,
            Concatenate,
            Add,
            Subtract,
            Multiply,
            Average,
            Maximum,
            Conv1D,
            Conv2D,
            MaxPooling1D,
            AveragePooling1D,
            MaxPooling2D,
            AveragePooling2D,
            GlobalMaxPooling1D,
            GlobalAveragePooling1D,
            BatchNormalization,
        )
    }
    names.update(
        {
            "MaxPool1D": MaxPooling1D,
            "AvgPool1D": AveragePooling1D,
            "MaxPool2D": MaxPooling2D,
            "AvgPool2D": AveragePooling2D,
            "GlobalMaxPool1D": GlobalMaxPooling1D,
            "GlobalAvgPool1D": GlobalAveragePooling1D,
            "Convolution1D": Conv1D,
            "Convolution2D": Conv2D,
        }
    )
    for layer_class in (Concatenate, Add, Subtract, Multiply, Average, Maximum):
        names[layer_class.__name__.lower()] = _merge_function(layer_class)
    names.update(recurrent_layers)
    return names


def backend_module():
    """tf.keras.backend: Keras 3's, with TF 1.x's learning phase and name counter."""
    return Namespace(
        "tf.keras.backend",
        tf.keras.backend,
        {
            "learning_phase": learning_phase,
            "set_learning_phase": set_learning_phase,
            "clear_session": reset_layer_names,
            "reset_uids": reset_layer_names,
            "get_session": _V1.get_default_session,
            "hard_sigmoid": hard_sigmoid,
        },
    )


# What reads or writes a whole model (h5 files of TF 1.15, JSON configs): Keras 2's, which
# only the tf_keras package has (Keras 3 reads neither TF 1.15's configs nor graphs).
_H5_AND_CONFIG = (
    "load_model",
    "save_model",
    "model_from_json",
    "model_from_yaml",
    "model_from_config",
)


def _needs_tf_keras(api):
    def refuse(*args, **kwargs):
        raise unsupported(api, "the tf_keras package (pip install tf_keras), TF 1.15's Keras 2")

    refuse.__name__ = api.rsplit(".", 1)[-1]
    return refuse


def keras_module(recurrent_layers):
    """tf.keras in a TF 1.x script: TF 1.15's layers (`recurrent_layers` among them),
    initializers, activations, regularizers, Sequential and subclassed Model; the rest
    is Keras 3's."""
    layers = _Keras3Layers("tf.keras.layers", None, layers_names(recurrent_layers))
    return Namespace(
        "tf.keras",
        tf.keras,
        {
            "layers": layers,
            "initializers": initializers_module(),
            "activations": activations_module(),
            "regularizers": regularizers_module(),
            "backend": backend_module(),
            "Sequential": Sequential,
            "Model": Model,
            "models": Namespace(
                "tf.keras.models",
                tf.keras.models,
                {
                    "Sequential": Sequential,
                    "Model": Model,
                    **{
                        name: _needs_tf_keras(f"tf.keras.models.{name}") for name in _H5_AND_CONFIG
                    },
                },
            ),
        },
        {"Input": None},
    )
