"""tf.contrib.predictor of TF 1.x: a SavedModel (or an Estimator) as a function of numpy.

Serving scripts of TF 1.x's years loaded an export once and called it per
request: `predict_fn = tf.contrib.predictor.from_saved_model(export_dir)`,
then `predict_fn({"x": batch})["probabilities"]`. Here the SavedModel is
loaded into a graph and session of its own, as TF 1.15 did, and its
signature's inputs and outputs are fed and fetched by their keys.
"""

import shutil
import tempfile

import tensorflow as tf

from ..machinery.namespaces import Namespace

_V1 = tf.compat.v1
_DEFAULT_TAGS = "serve"
_DEFAULT_SIGNATURE = "serving_default"


class Predictor:
    """Callable: {input key: numpy array} -> {output key: numpy array}, in its own session."""

    def __init__(self, graph, session, feed_tensors, fetch_tensors):
        self._graph = graph
        self._session = session
        self._feed_tensors = feed_tensors
        self._fetch_tensors = fetch_tensors

    @property
    def graph(self):
        return self._graph

    @property
    def session(self):
        return self._session

    @property
    def feed_tensors(self):
        return self._feed_tensors

    @property
    def fetch_tensors(self):
        return self._fetch_tensors

    def __repr__(self):
        return (
            f"{type(self).__name__} with feed tensors {self._feed_tensors} and fetch_tensors "
            f"{self._fetch_tensors}"
        )

    def __call__(self, input_dict):
        """The outputs for `input_dict`, whose keys must be among feed_tensors' (as in TF
        1.15, a key left out is not fed, and a key with the value None neither)."""
        unexpected = set(input_dict) - set(self._feed_tensors)
        if unexpected:
            raise ValueError(
                f"Got unexpected keys in input_dict: {unexpected}\n"
                f"expected: {set(self._feed_tensors)}"
            )
        feed_dict = {
            tensor: input_dict[key]
            for key, tensor in self._feed_tensors.items()
            if input_dict.get(key) is not None
        }
        return self._session.run(fetches=self._fetch_tensors, feed_dict=feed_dict)


def _meta_graph_signature(meta_graph, key, export_dir):
    key = key or _DEFAULT_SIGNATURE
    signatures = meta_graph.signature_def
    if key in signatures:
        return signatures[key]
    alternative = f"default_input_alternative:{key}"
    if alternative in signatures:
        return signatures[alternative]
    raise ValueError(
        f'Got signature_def_key "{key}". Available signatures are {list(signatures)}. '
        f"(SavedModel {export_dir})"
    )


def from_saved_model(
    export_dir,
    signature_def_key=None,
    signature_def=None,
    input_names=None,
    output_names=None,
    tags=None,
    graph=None,
    config=None,
):
    """A Predictor of the SavedModel in export_dir: its signature `signature_def_key`
    ("serving_default" if none is named), or the given signature_def, or the tensors named
    by input_names / output_names ({key: tensor name})."""
    if (input_names is None) != (output_names is None):
        raise ValueError(
            "input_names and output_names must both be specified or both be unspecified."
        )
    chosen = (signature_def_key is not None) + (signature_def is not None)
    if chosen + (input_names is not None) > 1:
        raise ValueError(
            "You must specify at most one of signature_def_key OR signature_def OR"
            "(input_names AND output_names)."
        )
    tags = tags or _DEFAULT_TAGS
    graph = graph or tf.Graph()
    with graph.as_default():
        session = _V1.Session(config=config)
        meta_graph = _V1.saved_model.loader.load(session, tags.split(","), export_dir)
    if input_names is None:
        if signature_def is None:
            signature_def = _meta_graph_signature(meta_graph, signature_def_key, export_dir)
        input_names = {key: info.name for key, info in signature_def.inputs.items()}
        output_names = {key: info.name for key, info in signature_def.outputs.items()}
    return Predictor(
        graph,
        session,
        {key: graph.get_tensor_by_name(name) for key, name in input_names.items()},
        {key: graph.get_tensor_by_name(name) for key, name in output_names.items()},
    )


def from_estimator(estimator, serving_input_receiver_fn, output_key=None, graph=None, config=None):
    """A Predictor of an Estimator's newest checkpoint: its PREDICT graph on the receiver's
    inputs, exported to a scratch directory and loaded from there (the export's
    "serving_default" signature maps the receiver tensors to the predictions)."""
    scratch = tempfile.mkdtemp(prefix="tf1_predictor_")
    try:
        export_dir = estimator.export_saved_model(scratch, serving_input_receiver_fn)
        if isinstance(export_dir, bytes):
            export_dir = export_dir.decode("utf-8")
        return from_saved_model(
            export_dir, signature_def_key=output_key, graph=graph, config=config
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def predictor_module():
    """tf.contrib.predictor."""
    return Namespace(
        "tf.contrib.predictor",
        None,
        {"from_saved_model": from_saved_model, "from_estimator": from_estimator},
        {"from_contrib_estimator": "tf.contrib.predictor.from_estimator"},
    )
