"""Random ops of TF 1.x code seeded as TF 1.15 seeded them, from the graph seed alone.

TF 1.x code seeds a whole run with `tf.set_random_seed(seed)` and gives its
ops no seed of their own (OpenAI's GPT fine-tuning: its classifier's initial
weights and every dropout mask). TF 1.15 gave such an op, as its own seed,
the number of ops already in the graph; TensorFlow 2 counts the random ops
instead (0 for the first, 1 for the next), so the same script draws other
numbers, and trains and predicts otherwise. Two things give TF 1.15's draws
back:

- `seed_as_tf115` puts TF 1.15's rule in TensorFlow's `get_seed` for the
  ops user code builds (user_code.user_location: user code on the stack);
  TensorFlow's, the project's and other packages' own ops keep TensorFlow's
  rule. A graph without a seed, and an op with one, are as before.
- The number of ops before each random op must then be TF 1.15's: the ops
  TF 1.x code calls most before its random ones are built here as TF 1.15
  built them, op for op (`dropout`, its `random_uniform`, `split`), where
  TensorFlow 2 leaves some out. What they compute is unchanged.
"""

import numbers

import tensorflow as tf
from tensorflow.python.framework import random_seed, tensor_util
from tensorflow.python.util import deprecation

from .machinery.user_code import user_location

_V1 = tf.compat.v1

_MAXINT32 = 2**31 - 1

# TensorFlow's own get_seed, while seed_as_tf115 has replaced it.
_tensorflow_get_seed = None


def _tf115_get_seed(op_seed):
    """TensorFlow's get_seed, but for the ops of user code in a graph with a seed and no
    op seed, whose op seed is, as in TF 1.15, the number of ops already in the graph."""
    if op_seed is None and not tf.executing_eagerly():
        graph = _V1.get_default_graph()
        if graph.seed is not None and user_location() is not None:
            seeds = (graph.seed % _MAXINT32, graph.version % _MAXINT32)
            return (0, _MAXINT32) if seeds == (0, 0) else seeds
    return _tensorflow_get_seed(op_seed)


def seed_as_tf115():
    """Puts TF 1.15's op seeds in TensorFlow's get_seed for the ops user code builds."""
    global _tensorflow_get_seed
    if _tensorflow_get_seed is None:
        _tensorflow_get_seed = random_seed.get_seed
        random_seed.get_seed = _tf115_get_seed


def restore():
    """TensorFlow's get_seed as TensorFlow has it (tests)."""
    global _tensorflow_get_seed
    if _tensorflow_get_seed is not None:
        random_seed.get_seed = _tensorflow_get_seed
        _tensorflow_get_seed = None


def random_uniform(shape, minval=0, maxval=None, dtype=tf.float32, seed=None, name=None):
    """tf.random_uniform as TF 1.15 built it: for floats, the bounds as constants and the
    draw scaled and shifted by them (`rnd * (max - min) + min`) even when they are 0 and
    1, which TensorFlow 2 leaves out; the numbers are the same."""
    dtype = tf.as_dtype(dtype)
    if dtype.is_floating:
        minval = float(minval) if isinstance(minval, numbers.Integral) else minval
        maxval = 1.0 if maxval is None else maxval
        maxval = float(maxval) if isinstance(maxval, numbers.Integral) else maxval
    return _V1.random_uniform(shape, minval, maxval, dtype, seed, name)


def _noise_shape(x, noise_shape):
    """TF 1.15's: x's shape, or noise_shape with its unknown sizes taken from x's."""
    if noise_shape is None:
        return tf.shape(x)
    try:
        given = tf.TensorShape(noise_shape)
    except (TypeError, ValueError):
        return noise_shape
    if x.shape.rank is not None and x.shape.rank == given.rank:
        return tf.TensorShape(
            [ours if theirs is None else theirs for ours, theirs in zip(x.shape, given)]
        )
    return noise_shape


def dropout_v2(x, rate, noise_shape=None, seed=None, name=None):
    """tf.nn.dropout(x, rate=...) as TF 1.15 built it, op for op."""
    with _V1.name_scope(name, "dropout", [x]) as name:
        x = _V1.convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(
                "x has to be a floating point tensor since it's going to be scaled. "
                f"Got a {x.dtype} tensor instead."
            )
        if isinstance(rate, numbers.Real):
            if not 0 <= rate < 1:
                raise ValueError(
                    f"rate must be a scalar tensor or a float in the range [0, 1), got {rate:g}"
                )
            if rate == 0:
                return x
        rate = _V1.convert_to_tensor(rate, dtype=x.dtype, name="rate")
        rate.get_shape().assert_has_rank(0)
        if tensor_util.constant_value(rate) == 0:
            return x
        random_tensor = random_uniform(_noise_shape(x, noise_shape), seed=seed, dtype=x.dtype)
        keep_prob = 1 - rate
        scale = 1 / keep_prob
        keep_mask = random_tensor >= rate
        kept = x * scale * tf.cast(keep_mask, x.dtype)
        kept.set_shape(x.get_shape())
        return kept


@deprecation.deprecated_args(
    None,
    "Please use `rate` instead of `keep_prob`. Rate should be set to `rate = 1 - keep_prob`.",
    "keep_prob",
)
def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """tf.nn.dropout of TF 1.x: keep_prob (with TF 1.15's deprecation warning), or rate;
    built as TF 1.15 built it."""
    try:
        from_keep_prob = 1.0 - keep_prob if keep_prob is not None else None
    except TypeError:
        raise ValueError(
            f"keep_prob must be a floating point number or Tensor (got {keep_prob!r})"
        ) from None
    if rate is not None and from_keep_prob is not None:
        raise ValueError("Cannot specify both 'rate' and 'keep_prob'")
    rate = from_keep_prob if rate is None else rate
    if rate is None:
        raise ValueError(f"You must provide a rate to dropout: {rate}")
    return dropout_v2(x, rate, noise_shape=noise_shape, seed=seed, name=name)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """tf.split as TF 1.15 built it: the number of splits made a constant first (an op of
    its own, before the split's name scope), which TensorFlow 2 leaves out."""
    if isinstance(num_or_size_splits, (numbers.Integral, _V1.Dimension)):
        _V1.convert_to_tensor(num_or_size_splits)
    return tf.split(value, num_or_size_splits, axis=axis, num=num, name=name)
