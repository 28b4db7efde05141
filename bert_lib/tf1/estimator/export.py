"""tf.estimator.export and Estimator.export_saved_model of TF 1.x, for the TF 1.x module.

Research code on BERT often ends by exporting a SavedModel for serving:
a serving_input_receiver_fn returns a ServingInputReceiver (the features
the model_fn gets, and the tensors a client feeds), and
estimator.export_saved_model(export_dir_base, that_fn) writes the model_fn's
PREDICT graph with the newest checkpoint's weights to
export_dir_base/<timestamp>, with a "serving_default" signature from the
receiver tensors to the predictions (and one more, "<name>:serving_default",
for each of its receiver_tensors_alternatives), and returns that directory
(bytes), as TF 1.x did. A receiver TF 1.15 refused (features that are not
tensors, keys that are not strings) is refused with TF 1.15's message at the
user's line that made it. The writing is this project's engine's
(engine.export_graph).
"""

import collections
import os
import time

import tensorflow as tf

from ... import engine
from ...plumbing import errors
from ..machinery.namespaces import Namespace
from ..machinery.user_code import user_location
from ..machinery.user_errors import UserCodeError

_V1 = tf.compat.v1


# The key a lone tensor is given, per argument of a receiver (TF 1.15's).
_SINGLE_NAMES = {
    "feature": "feature",
    "receiver_tensor": "input",
    "receiver_tensors_alternative": "input",
}


def _refused(message):
    """A receiver TF 1.15 refused, with its message, at the user's line that made it."""
    where = user_location()
    return UserCodeError(f"{where}: {message}" if where else message)


def _is_tensor(value):
    return isinstance(value, (tf.Tensor, tf.SparseTensor))


def _checked_dict(tensors, field, int_keys=False):
    """`tensors` as {name: tensor} (a lone tensor under its field's name), refused where
    TF 1.15 refused it: None, keys other than strings (or ints where allowed), values
    other than tensors and sparse tensors."""
    if tensors is None:
        raise _refused(f"{field}s must be defined.")
    if not isinstance(tensors, dict):
        tensors = {_SINGLE_NAMES[field]: tensors}
    for name, tensor in tensors.items():
        if not isinstance(name, str):
            if not int_keys:
                raise _refused(f"{field} keys must be strings: {name}.")
            if not isinstance(name, int):
                raise _refused(f"{field} keys must be strings or ints: {name}.")
        if not _is_tensor(tensor):
            raise _refused(f"{field} {name} must be a Tensor or SparseTensor.")
    return tensors


class ServingInputReceiver(
    collections.namedtuple(
        "ServingInputReceiver", ["features", "receiver_tensors", "receiver_tensors_alternatives"]
    )
):
    """What a serving_input_receiver_fn returns: the model_fn's features (a dict, a lone
    tensor under "feature"), the fed tensors (a dict, a lone one under "input") and
    further groups of them, each checked as TF 1.15 checked it."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        features = _checked_dict(features, "feature", int_keys=True)
        receiver_tensors = _checked_dict(receiver_tensors, "receiver_tensor")
        alternatives = receiver_tensors_alternatives
        if alternatives is not None:
            if not isinstance(alternatives, dict):
                raise _refused(f"receiver_tensors_alternatives must be a dict: {alternatives}.")
            alternatives = {
                name: _checked_dict(tensors, "receiver_tensors_alternative")
                for name, tensors in alternatives.items()
            }
        return super().__new__(cls, features, receiver_tensors, alternatives)


class TensorServingInputReceiver(ServingInputReceiver):
    """A receiver whose model_fn gets one tensor (or sparse tensor) as its features."""

    def __new__(cls, features, receiver_tensors, receiver_tensors_alternatives=None):
        if features is None:
            raise _refused("features must be defined.")
        if not _is_tensor(features):
            raise _refused("feature must be a Tensor or SparseTensor.")
        receiver = super().__new__(cls, features, receiver_tensors, receiver_tensors_alternatives)
        return receiver._replace(features=features)


def build_raw_serving_input_receiver_fn(features, default_batch_size=None):
    """A receiver fn that feeds placeholders shaped like `features` ({name: tensor})."""

    def serving_input_receiver_fn():
        placeholders = {
            name: _V1.placeholder(
                t.dtype,
                tf.TensorShape([default_batch_size]).concatenate(t.shape[1:]),
                name=getattr(getattr(t, "op", None), "name", None),
            )
            for name, t in features.items()
        }
        return ServingInputReceiver(placeholders, placeholders)

    return serving_input_receiver_fn


def build_parsing_serving_input_receiver_fn(feature_spec, default_batch_size=None):
    """A receiver fn that is fed serialized tf.Examples ("examples") and parses them."""

    def serving_input_receiver_fn():
        examples = _V1.placeholder(tf.string, [default_batch_size], name="input_example_tensor")
        features = _V1.parse_example(examples, feature_spec)
        return ServingInputReceiver(features, {"examples": examples})

    return serving_input_receiver_fn


class PredictOutput:
    """An EstimatorSpec's export_outputs entry; the export signs the predictions."""

    def __init__(self, outputs=None, scores=None, classes=None, value=None):
        self.outputs = (
            outputs
            if outputs is not None
            else {
                k: v for k, v in (("scores", scores), ("classes", classes), ("value", value)) if v
            }
        )


def _timestamped_dir(export_dir_base):
    while True:
        path = os.path.join(export_dir_base, str(int(time.time())))
        if not tf.io.gfile.exists(path):
            return path
        time.sleep(1)


def export_saved_model(
    estimator,
    model_fn,
    export_dir_base,
    serving_input_receiver_fn,
    assets_extra=None,
    checkpoint_path=None,
):
    """Writes estimator's PREDICT graph and a checkpoint's weights; returns the directory.

    model_fn(features) is the estimator's model_fn in PREDICT mode, returning
    its predictions dict. `assets_extra` ({destination: source file}) are
    copied to assets.extra/.
    """
    checkpoint = checkpoint_path or estimator.latest_checkpoint()
    if not checkpoint:
        raise errors.UsageError(f"Couldn't find trained model at {estimator.model_dir}.")
    extra = {}
    for destination, source in (assets_extra or {}).items():
        with tf.io.gfile.GFile(source, "r") as f:
            extra[destination] = f.read()
    export_dir = _timestamped_dir(export_dir_base)

    def build():
        receiver = serving_input_receiver_fn()
        alternatives = receiver.receiver_tensors_alternatives or {}
        return dict(receiver.receiver_tensors), model_fn(receiver.features), alternatives

    engine.export_graph(export_dir, checkpoint, build, extra)
    return export_dir.encode()


def export_module():
    """tf.estimator.export."""
    return Namespace(
        "tf.estimator.export",
        None,
        {
            "ServingInputReceiver": ServingInputReceiver,
            "TensorServingInputReceiver": TensorServingInputReceiver,
            "build_raw_serving_input_receiver_fn": build_raw_serving_input_receiver_fn,
            "build_parsing_serving_input_receiver_fn": build_parsing_serving_input_receiver_fn,
            "PredictOutput": PredictOutput,
            "ClassificationOutput": PredictOutput,
            "RegressionOutput": PredictOutput,
        },
    )
