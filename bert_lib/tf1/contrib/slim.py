"""tf.contrib.slim of TF 1.x: its model_analyzer, which GAN and vision code of its years
called to print the variables of a model it built with other layers (DCGAN's
show_all_variables). Slim's own layers, arg_scope, learning loop and data providers are
not provided: using one stops the run with an ERROR line that names it. Its nets
(resnet_v1, resnet_v2, vgg) can be imported by TF 1.15's module paths, as libraries
that offer them among many models do at import (tensor2tensor); calling one stops the
run with an ERROR line that names it."""

import tensorflow as tf

from ..machinery.namespaces import Namespace, unsupported
from . import slim_data

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


# TF 1.15's tf.contrib.slim.nets modules and the functions each had.
_NETS = {
    "resnet_v1": "resnet_v1 resnet_v1_50 resnet_v1_101 resnet_v1_152 resnet_v1_200 "
    "resnet_v1_block bottleneck resnet_arg_scope",
    "resnet_v2": "resnet_v2 resnet_v2_50 resnet_v2_101 resnet_v2_152 resnet_v2_200 "
    "resnet_v2_block bottleneck resnet_arg_scope",
    "vgg": "vgg_a vgg_16 vgg_19 vgg_arg_scope",
}


def _refused_net(api):
    """A slim net's function: imported as in TF 1.15, refused (ERROR) when called."""

    def refused(*args, **kwargs):
        raise unsupported(api, _LAYERS_INSTEAD)

    refused.__name__ = api.rsplit(".", 1)[-1]
    refused.__doc__ = f"{api}: not provided (slim's layers are not); calling it is refused."
    return refused


def _nets_module():
    """tf.contrib.slim.nets: TF 1.15's net modules, whose functions refuse when called."""
    modules = {}
    for module, names in _NETS.items():
        api = f"tf.contrib.slim.nets.{module}"
        modules[module] = Namespace(
            api, None, {name: _refused_net(f"{api}.{name}") for name in names.split()}
        )
    return Namespace("tf.contrib.slim.nets", None, modules)


def slim_module():
    """tf.contrib.slim: model_analyzer (analyze_vars, tensor_description); nets, whose
    functions are refused when called."""
    return Namespace(
        "tf.contrib.slim",
        None,
        {
            "model_analyzer": Namespace(
                "tf.contrib.slim.model_analyzer",
                None,
                {"analyze_vars": analyze_vars, "tensor_description": tensor_description},
            ),
            "nets": _nets_module(),
            "parallel_reader": slim_data.parallel_reader_module(),
            "tfexample_decoder": slim_data.tfexample_decoder_module(),
        },
        {name: _LAYERS_INSTEAD for name in _SLIM_LAYERS},
    )
