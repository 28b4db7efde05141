"""tf.contrib.compiler of TF 1.x: XLA's jit scope."""

import tensorflow as tf

from ..machinery.namespaces import Namespace


def experimental_jit_scope(compile_ops=True, separate_compiled_gradients=False):
    """tf.contrib.compiler.jit.experimental_jit_scope: XLA-compile the ops made inside."""
    return tf.xla.experimental.jit_scope(
        compile_ops=compile_ops, separate_compiled_gradients=separate_compiled_gradients
    )


def compiler_module():
    """tf.contrib.compiler (jit.experimental_jit_scope)."""
    return Namespace(
        "tf.contrib.compiler",
        None,
        {
            "jit": Namespace(
                "tf.contrib.compiler.jit",
                None,
                {"experimental_jit_scope": experimental_jit_scope},
            )
        },
    )
