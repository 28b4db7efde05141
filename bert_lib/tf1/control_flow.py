"""tf.cond of TF 1.x: TensorFlow 2's, with TF 1.15's message where it refuses branches of
different dtypes (the one refusal TF 1.x code of its years met and printed)."""

import re

import tensorflow as tf

_V1 = tf.compat.v1

# TensorFlow 2's wording of the refusal, for one output of each branch.
_DTYPES_DIFFER = re.compile(
    r"^Outputs of 'true_fn' and 'false_fn' must have the same type\(s\)\. "
    r"Received (\w+) from 'true_fn' and (\w+) from 'false_fn'\.$"
)


def cond(pred=None, true_fn=None, false_fn=None, strict=False, name=None, fn1=None, fn2=None):
    """tf.cond (compat.v1's, fn1 / fn2 included); branches whose outputs differ in dtype
    are refused with TF 1.15's "Outputs of true_fn and false_fn must have the same type:
    float32, uint8"."""
    try:
        return _V1.cond(pred, true_fn, false_fn, strict=strict, name=name, fn1=fn1, fn2=fn2)
    except ValueError as error:
        match = _DTYPES_DIFFER.match(str(error))
        if match is None:
            raise
        raise ValueError(
            "Outputs of true_fn and false_fn must have the same type: "
            f"{match.group(1)}, {match.group(2)}"
        ) from None
