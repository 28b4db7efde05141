"""tf.contrib.slim's data helpers of TF 1.x that tensor2tensor's input pipeline reads with.

parallel_reader.get_data_files lists the files of a pattern (or of a list of
them); tfexample_decoder.TFExampleDecoder parses a serialized tf.train.Example
with its features' specs and gives each item through its handler, the
Tensor handler's (a feature as a dense tensor; a variable-length one made
dense with its default value, optionally reshaped) the one provided.
"""

import tensorflow as tf

from ..machinery.namespaces import Namespace

_V1 = tf.compat.v1


def get_data_files(data_sources):
    """parallel_reader.get_data_files: the files of a pattern (glob characters * ? [) or
    the path itself, for one source or a list of them; none is a ValueError."""
    if isinstance(data_sources, (list, tuple)):
        data_files = []
        for source in data_sources:
            data_files += get_data_files(source)
    elif "*" in data_sources or "?" in data_sources or "[" in data_sources:
        data_files = _V1.gfile.Glob(data_sources)
    else:
        data_files = [data_sources]
    if not data_files:
        raise ValueError(f"No data files found in {data_sources}")
    return data_files


class ItemHandler:
    """tfexample_decoder.ItemHandler: the parsed features an item is made of (keys)."""

    def __init__(self, keys):
        if not isinstance(keys, (tuple, list)):
            keys = [keys]
        self._keys = keys

    @property
    def keys(self):
        return self._keys

    def tensors_to_item(self, keys_to_tensors):
        raise NotImplementedError


class Tensor(ItemHandler):
    """tfexample_decoder.Tensor: one feature as a dense tensor; a SparseTensor (a
    variable-length feature) made dense with default_value, then reshaped to `shape`, or
    to the shape read from the features `shape_keys`, where given."""

    def __init__(self, tensor_key, shape_keys=None, shape=None, default_value=0):
        if shape_keys and shape is not None:
            raise ValueError("Cannot specify both shape_keys and shape parameters.")
        if shape_keys and not isinstance(shape_keys, list):
            shape_keys = [shape_keys]
        self._tensor_key = tensor_key
        self._shape_keys = shape_keys
        self._shape = shape
        self._default_value = default_value
        keys = [tensor_key]
        if shape_keys:
            keys.extend(shape_keys)
        super().__init__(keys)

    def tensors_to_item(self, keys_to_tensors):
        tensor = keys_to_tensors[self._tensor_key]
        shape = self._shape
        if self._shape_keys:
            dims = []
            for key in self._shape_keys:
                dim = keys_to_tensors[key]
                if isinstance(dim, tf.SparseTensor):
                    dim = tf.sparse.to_dense(dim)
                dims.append(dim)
            shape = tf.reshape(tf.stack(dims), [-1])
        if isinstance(tensor, tf.SparseTensor):
            if shape is not None:
                tensor = tf.sparse.reshape(tensor, shape)
            return tf.sparse.to_dense(tensor, self._default_value)
        if shape is not None:
            tensor = tf.reshape(tensor, shape)
        return tensor


class TFExampleDecoder:
    """tfexample_decoder.TFExampleDecoder: parses a serialized tf.train.Example with
    keys_to_features and gives the items of items_to_handlers."""

    def __init__(self, keys_to_features, items_to_handlers):
        self._keys_to_features = keys_to_features
        self._items_to_handlers = items_to_handlers

    def list_items(self):
        return list(self._items_to_handlers.keys())

    def decode(self, serialized_example, items=None):
        """The items (all, in list_items' order, if None) of one serialized Example."""
        example = tf.reshape(serialized_example, shape=[])
        parsed = _V1.parse_single_example(example, self._keys_to_features)
        # Fixed-length features reshaped to their spec's shape, in the keys' sorted order.
        for key in sorted(self._keys_to_features):
            feature = self._keys_to_features[key]
            if isinstance(feature, _V1.io.FixedLenFeature):
                parsed[key] = tf.reshape(parsed[key], feature.shape)
        if not items:
            items = self._items_to_handlers.keys()
        outputs = []
        for item in items:
            handler = self._items_to_handlers[item]
            keys_to_tensors = {key: parsed[key] for key in handler.keys}
            outputs.append(handler.tensors_to_item(keys_to_tensors))
        return outputs


def parallel_reader_module():
    """tf.contrib.slim.parallel_reader: get_data_files."""
    return Namespace("tf.contrib.slim.parallel_reader", None, {"get_data_files": get_data_files})


def tfexample_decoder_module():
    """tf.contrib.slim.tfexample_decoder: TFExampleDecoder with the Tensor handler."""
    return Namespace(
        "tf.contrib.slim.tfexample_decoder",
        None,
        {"TFExampleDecoder": TFExampleDecoder, "ItemHandler": ItemHandler, "Tensor": Tensor},
    )
