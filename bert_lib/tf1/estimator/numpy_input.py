"""tf.estimator.inputs.numpy_input_fn of TF 1.15: an input_fn of numpy arrays.

TF 1.15's fed the arrays through a queue: `batch_size` examples at a time,
`num_epochs` times over (None: for ever, every batch full; else the last
batch of the last epoch possibly short), shuffled or in order; features a
dict with x's keys (the tensor itself when x is one array), labels y's
tensor or dict (none when y is None). Here the same batches come from a
Dataset, which is what the Estimator reads; shuffling draws its own order,
as TF 1.15's queue did (unseeded).
"""

import tensorflow as tf

_DIRECT = "__direct_np_input__"


def _features(x):
    if isinstance(x, dict):
        if not x:
            raise ValueError("x cannot be an empty dict")
        return dict(x)
    if not hasattr(x, "shape"):
        raise TypeError(f"x must be a dict or array; got {type(x).__name__}")
    return {_DIRECT: x}


def numpy_input_fn(
    x, y=None, batch_size=128, num_epochs=1, shuffle=None, queue_capacity=1000, num_threads=1
):
    """An input_fn giving batches of x (and y), as TF 1.15's numpy_input_fn."""
    del num_threads
    if not isinstance(shuffle, bool):
        raise ValueError(
            "shuffle must be provided and explicitly set as boolean (it is recommended to "
            f"set it as True for training); got {shuffle}"
        )

    def input_fn():
        features = _features(x)
        if isinstance(y, dict):
            if not y:
                raise ValueError("y cannot be empty dict, use None instead.")
            duplicate = set(features) & set(y)
            if duplicate:
                raise ValueError(
                    f"{len(duplicate)} duplicate keys are found in both x and y: {duplicate}"
                )
        arrays = list(features.values()) + (
            [] if y is None else list(y.values()) if isinstance(y, dict) else [y]
        )
        if len({len(a) for a in arrays}) != 1:
            raise ValueError(
                "Length of tensors in x and y is mismatched. All elements in x and y must "
                "have the same length.\n"
                f"Shapes in x: { {k: v.shape for k, v in features.items()} }\n"
                f"Shapes in y: {None if y is None else getattr(y, 'shape', None)}\n"
            )
        element = features if y is None else (features, y)
        dataset = tf.data.Dataset.from_tensor_slices(element)
        if shuffle:
            dataset = dataset.shuffle(max(queue_capacity, batch_size))
        dataset = dataset.repeat(num_epochs).batch(batch_size, drop_remainder=num_epochs is None)
        if _DIRECT in features:
            direct = lambda f: f[_DIRECT]  # noqa: E731
            dataset = dataset.map(
                (lambda f, labels: (direct(f), labels)) if y is not None else direct
            )
        return dataset

    return input_fn
