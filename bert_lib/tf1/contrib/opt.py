"""tf.contrib.opt of TF 1.x: LazyAdamOptimizer, the Adam tensor2tensor trains with.

LazyAdamOptimizer is tf.train.AdamOptimizer but for sparse gradients (an
embedding's rows gathered), where only the rows of the batch move: their
first and second moments are decayed and updated, and the variable's rows
stepped, while every other row, and its moments, stays as it was. Dense
gradients are Adam's. Its slots (m, v) and accumulators (beta1_power,
beta2_power) are Adam's, so checkpoints are TF 1.15's.
"""

import tensorflow as tf

from ..machinery.namespaces import Namespace

_V1 = tf.compat.v1


class LazyAdamOptimizer(_V1.train.AdamOptimizer):
    """tf.contrib.opt.LazyAdamOptimizer: Adam, with sparse gradients updating only the
    moments and the rows they touch."""

    def _apply_sparse_shared(self, grad, var, indices, scatter_update, scatter_sub):
        dtype = var.dtype.base_dtype
        beta1_power, beta2_power = (tf.cast(p, dtype) for p in self._get_beta_accumulators())
        lr_t = tf.cast(self._lr_t, dtype)
        beta1_t = tf.cast(self._beta1_t, dtype)
        beta2_t = tf.cast(self._beta2_t, dtype)
        epsilon_t = tf.cast(self._epsilon_t, dtype)
        lr = lr_t * tf.sqrt(1 - beta2_power) / (1 - beta1_power)
        m = self.get_slot(var, "m")
        m_t = scatter_update(m, indices, beta1_t * tf.gather(m, indices) + (1 - beta1_t) * grad)
        v = self.get_slot(var, "v")
        v_t = scatter_update(
            v, indices, beta2_t * tf.gather(v, indices) + (1 - beta2_t) * tf.square(grad)
        )
        m_rows = tf.gather(m_t, indices)
        v_rows = tf.gather(v_t, indices)
        var_update = scatter_sub(var, indices, lr * m_rows / (tf.sqrt(v_rows) + epsilon_t))
        return tf.group(var_update, m_t, v_t)

    def _apply_sparse(self, grad, var):
        return self._apply_sparse_shared(
            grad.values,
            var,
            grad.indices,
            lambda x, i, v: _V1.scatter_update(x, i, v, use_locking=self._use_locking),
            lambda x, i, v: _V1.scatter_sub(x, i, v, use_locking=self._use_locking),
        )

    def _resource_apply_sparse(self, grad, var, indices):
        def update(x, i, v):
            with tf.control_dependencies(
                [tf.raw_ops.ResourceScatterUpdate(resource=x.handle, indices=i, updates=v)]
            ):
                return x.value()

        def subtract(x, i, v):
            with tf.control_dependencies(
                [tf.raw_ops.ResourceScatterSub(resource=x.handle, indices=i, updates=v)]
            ):
                return x.value()

        return self._apply_sparse_shared(grad, var, indices, update, subtract)


def opt_module():
    """tf.contrib.opt: LazyAdamOptimizer."""
    return Namespace("tf.contrib.opt", None, {"LazyAdamOptimizer": LazyAdamOptimizer})
