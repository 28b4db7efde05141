"""Batch normalization of TF 1.x: tf.layers.BatchNormalization / batch_normalization and
tf.keras.layers.BatchNormalization, for tf_layers.py and keras_layers.py.

Variables `gamma`, `beta` (trainable), `moving_mean`, `moving_variance`,
made in that order; epsilon 1e-3, momentum 0.99 by default. In training
the batch's moments over every axis but `axis` normalize, and each moving
statistic moves as TF 1.15 moved it: var -= (var - batch value) * (1 -
momentum); for 4-D inputs normalized over their channels (TF 1.15's fused
kernel) the variance moved toward is the unbiased one, n / (n - 1) times
the batch's. Otherwise the moving statistics normalize. The update ops go
to tf.GraphKeys.UPDATE_OPS for tf.layers (so `with
tf.control_dependencies(update_ops)` runs them), to the layer's `updates`
for Keras, as in TF 1.15.

All of them, and tf.contrib.layers.layer_norm, normalize through
nn_batch_normalization below, which is also tf.nn.batch_normalization of the
TF 1.x module.
"""

import tensorflow as tf

from ..machinery.namespaces import unsupported
from .layer_base import static_dim

_V1 = tf.compat.v1


def nn_batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    """tf.nn.batch_normalization of TF 1.x: (x - mean) / sqrt(variance + epsilon) * scale +
    offset, in TF 1.15's arithmetic and to its last bit.

    TF 1.15 computed inv = rsqrt(variance + epsilon) * scale, then x * inv +
    (offset - mean * inv). This computes x * inv - (mean * inv - offset),
    the same numbers bit for bit (a difference negated is the negated
    difference, exactly), in a graph TensorFlow 2's oneDNN optimizer does
    not take for a layer normalization: in a frozen graph (scale and offset
    constants, the moments over the last axis, as bert-as-service serves
    BERT) it replaces the sum TF 1.15 built by one fused layer-norm op of
    epsilon 0.001, whatever epsilon was given (BERT's is 1e-12): the
    sentence vectors of a small BERT moved by up to 0.024.
    """
    with _V1.name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        inv = tf.math.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv *= scale
        shift = mean * inv
        if offset is not None:
            shift -= offset
        return x * tf.cast(inv, x.dtype) - tf.cast(shift, x.dtype)


class BatchNormMath:
    """The arithmetic and variables both layer kinds share; the host class gives
    add_weight and _record_update(op)."""

    # Arguments of both APIs that are taken and not applied here (they change nothing
    # without renormalization; `fused` and `adjustment` only how the kernel runs).
    _NOT_APPLIED = ("renorm_clipping", "renorm_momentum", "fused", "adjustment")
    # Arguments of both APIs for the trainable variables, as add_weight takes them.
    _WEIGHT_OPTIONS = (
        "beta_regularizer",
        "gamma_regularizer",
        "beta_constraint",
        "gamma_constraint",
    )

    @classmethod
    def _check_arguments(cls, api, renorm, virtual_batch_size, kwargs):
        """Refuses batch renormalization and virtual batches (`api` names the class);
        takes the arguments not applied here out of `kwargs`, and returns those of
        beta and gamma ({name: value}, for _setup)."""
        if renorm or virtual_batch_size:
            raise unsupported(f"{api}.BatchNormalization(renorm= / virtual_batch_size=)")
        for key in cls._NOT_APPLIED:
            kwargs.pop(key, None)
        return {key: kwargs.pop(key, None) for key in cls._WEIGHT_OPTIONS}

    def _setup(self, axis, momentum, epsilon, center, scale, initializers, weight_options):
        self.axis = list(axis) if isinstance(axis, (list, tuple)) else [axis]
        self.momentum = momentum
        self.epsilon = epsilon
        self.center = center
        self.scale = scale
        self._bn_initializers = initializers  # beta, gamma, moving mean, moving variance
        self._bn_weight_options = weight_options

    def build(self, input_shape):
        input_shape = tf.TensorShape(input_shape)
        rank = input_shape.ndims
        self.axis = sorted(a % rank for a in self.axis)
        shape = [static_dim(input_shape[a]) for a in self.axis]
        beta_init, gamma_init, mean_init, variance_init = self._bn_initializers
        options = self._bn_weight_options
        self.gamma = self.beta = None
        if self.scale:
            self.gamma = self.add_weight(
                "gamma",
                shape,
                initializer=gamma_init,
                regularizer=options["gamma_regularizer"],
                constraint=options["gamma_constraint"],
            )
        if self.center:
            self.beta = self.add_weight(
                "beta",
                shape,
                initializer=beta_init,
                regularizer=options["beta_regularizer"],
                constraint=options["beta_constraint"],
            )
        self.moving_mean = self.add_weight(
            "moving_mean", shape, initializer=mean_init, trainable=False
        )
        self.moving_variance = self.add_weight(
            "moving_variance", shape, initializer=variance_init, trainable=False
        )

    def _normalize(self, inputs, training):
        inputs = tf.convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        reduction = [a for a in range(rank) if a not in self.axis]
        broadcast = [1] * rank
        for a in self.axis:
            broadcast[a] = static_dim(inputs.shape[a])

        def shaped(value):
            if value is None or self.axis == [rank - 1]:
                return value
            return tf.reshape(value, broadcast)

        def normalized(mean, variance):
            return nn_batch_normalization(
                inputs,
                shaped(mean),
                shaped(variance),
                shaped(self.beta),
                shaped(self.gamma),
                self.epsilon,
            )

        if isinstance(training, (bool, int)) and not training:
            return normalized(self.moving_mean, self.moving_variance)
        mean, variance = tf.nn.moments(inputs, reduction)
        target_variance = variance
        if rank == 4 and self.axis in ([1], [3]):
            count = tf.cast(tf.size(inputs) // tf.size(variance), variance.dtype)
            target_variance = variance * count / (count - 1.0)
        updates = [
            self._moving_update(self.moving_mean, mean, training, "AssignMovingAvg"),
            self._moving_update(
                self.moving_variance, target_variance, training, "AssignMovingAvg_1"
            ),
        ]
        for update in updates:
            self._record_update(update)
        if isinstance(training, (bool, int)):
            return normalized(mean, variance)
        training = tf.cast(training, tf.bool)
        return _V1.cond(
            training,
            lambda: normalized(mean, variance),
            lambda: normalized(self.moving_mean, self.moving_variance),
        )

    def _moving_update(self, variable, value, training, name):
        decay = tf.constant(1.0 - self.momentum, variable.dtype.base_dtype)

        def update():
            return tf.identity(_V1.assign_sub(variable, (variable - value) * decay, name=name))

        if isinstance(training, (bool, int)):
            return update()
        return _V1.cond(tf.cast(training, tf.bool), update, lambda: tf.identity(variable))
