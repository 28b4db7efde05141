"""tf.contrib.slim of TF 1.x: its model_analyzer, which GAN and vision code of its years
called to print the variables of a model it built with other layers (DCGAN's
show_all_variables). Slim's own layers, arg_scope, learning loop and data providers are
not provided: using one stops the run with an ERROR line that names it."""

import tensorflow as tf

from ..machinery.namespaces import Namespace

# What slim's layers are built on here, for the ERROR line of one of them.
_LAYERS_INSTEAD = "tf.layers and tf.contrib.layers"


def tensor_description(var):
    """model_analyzer.tensor_description: "(dtype AxBxC)" of a tensor or variable, an
    unknown dimension "?" as TF 1.x's Dimension printed it."""
    sizes = [
        "?" if tf.compat.dimension_value(size) is None else str(tf.compat.dimension_value(size))
        for size in var.get_shape()
    ]
    return f"({var.dtype.name} {'x'.join(sizes)})"


def analyze_vars(variables, print_info=False):
    """model_analyzer.analyze_vars: (total size, total bytes) of the variables; with
    print_info, a line for each (name, description, size and bytes) and the totals, as
    TF 1.15 printed them."""
    if print_info:
        print("---------")
        print("Variables: name (type shape) [size]")
        print("---------")
    total_size = 0
    total_bytes = 0
    for var in variables:
        # An unknown or scalar shape: TF 1.15 counted num_elements() or 0.
        var_size = var.get_shape().num_elements() or 0
        var_bytes = var_size * var.dtype.size
        total_size += var_size
        total_bytes += var_bytes
        if print_info:
            print(var.name, tensor_description(var), f"[{var_size}, bytes: {var_bytes}]")
    if print_info:
        print(f"Total size of variables: {total_size}")
        print(f"Total bytes of variables: {total_bytes}")
    return total_size, total_bytes


_SLIM_LAYERS = (
    "arg_scope conv2d conv2d_transpose separable_conv2d fully_connected max_pool2d "
    "avg_pool2d batch_norm dropout flatten repeat stack layer_norm"
).split()


def slim_module():
    """tf.contrib.slim: model_analyzer (analyze_vars, tensor_description)."""
    return Namespace(
        "tf.contrib.slim",
        None,
        {
            "model_analyzer": Namespace(
                "tf.contrib.slim.model_analyzer",
                None,
                {"analyze_vars": analyze_vars, "tensor_description": tensor_description},
            )
        },
        {name: _LAYERS_INSTEAD for name in _SLIM_LAYERS},
    )
