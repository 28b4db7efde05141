"""tf.contrib.eager of TF 1.x: the names of it that graph code of its years used.

Libraries of TF 1.x (Sonnet 1 among them) imported it as `tfe` for defun,
TF 1.x's tf.function (a Python function traced once per input signature
into a graph function, called as one op), and for the eager-mode tests
they made in graph code (executing_eagerly).
"""

import tensorflow as tf

from ..machinery.namespaces import Namespace

_V1 = tf.compat.v1


def defun(
    func=None,
    input_signature=None,
    autograph=True,
    experimental_autograph_options=None,
    experimental_relax_shapes=False,
):
    """tf.contrib.eager.defun: tf.function, with TF 1.15's arguments."""
    return tf.function(
        func,
        input_signature=input_signature,
        autograph=autograph,
        experimental_autograph_options=experimental_autograph_options,
        reduce_retracing=experimental_relax_shapes,
    )


def eager_module():
    """tf.contrib.eager: defun and the names TensorFlow has under its own."""
    return Namespace(
        "tf.contrib.eager",
        None,
        {
            "defun": defun,
            "function": defun,
            "executing_eagerly": tf.executing_eagerly,
            "in_eager_mode": tf.executing_eagerly,
            "custom_gradient": tf.custom_gradient,
            "GradientTape": tf.GradientTape,
            "TensorSpec": tf.TensorSpec,
            "make_template": _V1.make_template,
            "py_func": tf.py_function,
        },
    )
