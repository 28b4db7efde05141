"""input_fns that return the tensors of a Dataset iterator, as TF 1.x Estimator code wrote them.

Estimator code of 2017-2019 often ended its input_fn with
`dataset.make_one_shot_iterator().get_next()` (or an initializable
iterator's), returning (features, labels) tensors where tf.estimator also
took a Dataset. The engine reads a Dataset, so while the input_fn runs the
iterators it makes are recorded with their Dataset; when what it returns is
taken straight from one iterator's get_next() (all of it, or some of it,
rearranged: `features, labels = it.get_next(); return {"x": features},
labels`), the input_fn's result is that Dataset mapped to the same
structure: the same elements, in the same order, that get_next() gave
TF 1.x's Estimator. Anything else (tensors computed from get_next() by
further ops, queue-based readers: tf.train.batch, shuffle_batch,
string_input_producer) is refused in one line naming the API.
"""

import contextlib

import tensorflow as tf
from tensorflow.python.data.ops import dataset_ops

from ..machinery.namespaces import unsupported

_GET_NEXT = ("IteratorGetNext", "IteratorGetNextSync")
_MAKERS = ("_make_one_shot_iterator", "_make_initializable_iterator")


@contextlib.contextmanager
def recorded_iterators():
    """Within the block, {iterator resource tensor name: Dataset} of every TF 1.x iterator
    a Dataset makes (make_one_shot_iterator, make_initializable_iterator, and the
    tf.data functions of the same names, which call these)."""
    made = {}
    originals = {name: getattr(dataset_ops.DatasetV1, name) for name in _MAKERS}

    def recording(original):
        def make(self, *args, **kwargs):
            iterator = original(self, *args, **kwargs)
            made[iterator._iterator_resource.name] = self  # noqa: SLF001 (TensorFlow's)
            return iterator

        return make

    for name, original in originals.items():
        setattr(dataset_ops.DatasetV1, name, recording(original))
    try:
        yield made
    finally:
        for name, original in originals.items():
            setattr(dataset_ops.DatasetV1, name, original)


def as_dataset(returned, made):
    """The Dataset whose elements are what the input_fn returned, per get_next(); refuses
    (UnsupportedAPIError) tensors that do not come straight from a recorded iterator."""
    leaves = tf.nest.flatten(returned)
    ops = {leaf.op for leaf in leaves if isinstance(leaf, tf.Tensor)}
    source = ops.pop() if len(ops) == 1 else None
    if (
        not leaves
        or len(ops)
        or not all(isinstance(leaf, tf.Tensor) for leaf in leaves)
        or source.type not in _GET_NEXT
        or source.inputs[0].name not in made
    ):
        raise unsupported(
            "an input_fn returning tensors other than a Dataset iterator's get_next() "
            "(queue readers such as tf.train.batch or shuffle_batch, or ops after get_next)",
            "an input_fn returning the tf.data.Dataset, or its iterator's get_next()",
        )
    picked = [leaf.value_index for leaf in leaves]

    def element_as_returned(*element):
        flat = tf.nest.flatten(element)
        return tf.nest.pack_sequence_as(returned, [flat[i] for i in picked])

    return made[source.inputs[0].name].map(element_as_returned)
