"""tf.keras.estimator.model_to_estimator of TF 1.15, on tf_keras and this project's Estimator.

TF 1.15 made an Estimator of a compiled Keras model whose model_fn clones
the model into the Estimator's graph, on the input_fn's features (a tensor,
a list, or a dict keyed by the model's input names; a dict of `features`
and `sample_weights` to weight the examples) and labels (the same, keyed by
output names), compiled like the original, its optimizer counting steps in
the global step. It gives:

- predictions (and the serving signature's outputs): {output name: output};
- loss: the compiled model's total loss; in evaluation, the compiled
  metrics too, under Keras's names (`acc` for "accuracy");
- train_op: the compiled model's update op.

Before the Estimator is made, a graph network's weights (the model's own,
where they were set or trained; else new ones drawn under the config's
tf_random_seed) are saved with a name-based saver as
model_dir/keras/keras_model.ckpt, and the Estimator warm-starts from it: its
first training starts from the model's weights. tf_keras has the cloning,
but its model_to_estimator needs the tensorflow_estimator package, which
TensorFlow 2.16+ does not have; this is TF 1.15's, with the Estimator of
the TF 1.x module.
"""

import importlib
import os
import tempfile

import tensorflow as tf
from absl import logging

from ..estimator import EstimatorSpec, ModeKeys, RunConfig, estimator_classes
from ..estimator.export import PredictOutput
from ..machinery.namespaces import unsupported

_V1 = tf.compat.v1


def _keras(name):
    return importlib.import_module(f"tf_keras.src.{name}")


def _tensor(value):
    if isinstance(value, (tf.Tensor, tf.SparseTensor, tf.Variable)):
        return value
    return _V1.convert_to_tensor_or_sparse_tensor(value)


def _ordered(values, names, what, order):
    """`values` (None, a tensor, a list or tuple, or a dict keyed by `names`) as a list."""
    if values is None:
        return None
    if isinstance(values, (list, tuple)):
        return [_tensor(v) for v in values]
    if isinstance(values, dict):
        different = set(values) ^ set(names)
        if different:
            raise KeyError(
                f"The dictionary passed into {what} does not have the expected {order} keys "
                f"defined in the keras model.\n\tExpected keys: {set(names)}\n\t{what} keys: "
                f"{set(values)}\n\tDifference: {different}"
            )
        return [_tensor(values[name]) for name in names]
    return [_tensor(values)]


def _keras_io(model, features, labels):
    """(input tensors, target tensors, sample weights) of the model from the input_fn's."""
    weights = None
    if isinstance(features, dict) and set(features) == {"features", "sample_weights"}:
        features, weights = features["features"], features["sample_weights"]
    graph_network = model._is_graph_network  # noqa: SLF001
    input_names = output_names = None
    if isinstance(features, dict):
        input_names = (
            model.input_names
            if graph_network
            else [f"input_{i}" for i in range(1, len(features) + 1)]
        )
    if isinstance(labels, dict):
        output_names = (
            model.output_names
            if graph_network
            else [f"output_{i}" for i in range(1, len(labels) + 1)]
        )
    if isinstance(model.inputs, dict):
        inputs = {name: _tensor(features[name]) for name in model.inputs}
    else:
        inputs = _ordered(features, input_names, "features", "inputs")
    return inputs, _ordered(labels, output_names, "labels", "outputs"), weights


def _clone(mode, model, custom_objects, features=None, labels=None, optimizer_config=None):
    """The model rebuilt in the current graph on the Estimator's tensors, compiled (but to
    predict) with the global step as its optimizer's iterations."""
    backend = _keras("backend")
    backend.set_learning_phase(mode == ModeKeys.TRAIN)
    inputs, targets, weights = _keras_io(model, features, labels)
    compile_clone = mode != ModeKeys.PREDICT
    global_step = None
    if compile_clone:
        global_step = _V1.train.get_or_create_global_step()
        backend.track_variable(global_step)
    own = model.__dict__.get("_get_compile_args")
    try:
        clone = _keras("models.cloning").clone_and_build_model(
            model,
            inputs,
            targets,
            custom_objects,
            compile_clone=compile_clone,
            in_place_reset=not model._is_graph_network,  # noqa: SLF001
            optimizer_iterations=global_step,
            optimizer_config=optimizer_config,
        )
    finally:  # cloning leaves on the model a _get_compile_args of its own (keras_export.py)
        if own is None:
            model.__dict__.pop("_get_compile_args", None)
        else:
            model._get_compile_args = own  # noqa: SLF001
    if weights is not None:
        weights = _keras("engine.training_utils_v1").standardize_sample_weights(
            weights, clone.output_names
        )
        clone._compile_weights_loss_and_weighted_metrics(weights)  # noqa: SLF001
    return clone


def _optimizer_config(model):
    try:
        if isinstance(model.optimizer, (tuple, list)):
            return [optimizer.get_config() for optimizer in model.optimizer]
        return model.optimizer.get_config()
    except (NotImplementedError, AttributeError):  # tf.train optimizers have no config
        return None


def _model_fn(model, custom_objects):
    optimizer_config = _optimizer_config(model)

    def model_fn(features, labels, mode):
        clone = _clone(mode, model, custom_objects, features, labels, optimizer_config)
        predictions = dict(zip(clone.output_names, clone.outputs))
        loss = train_op = metrics = None
        if mode != ModeKeys.PREDICT:
            if mode == ModeKeys.TRAIN:
                clone._make_train_function()  # noqa: SLF001
            else:
                clone._make_test_function()  # noqa: SLF001
            loss = clone.total_loss
            if getattr(clone, "_compile_metrics", None):
                metrics = {m.name: m for m in clone._compile_metric_functions}  # noqa: SLF001
        if mode == ModeKeys.TRAIN:
            train_op = clone.train_function.updates_op
        if (
            not model._is_graph_network  # noqa: SLF001
            and getattr(model, "_original_attributes_cache", None) is not None
        ):
            _keras("models.cloning").in_place_subclassed_model_state_restoration(model)
        return EstimatorSpec(
            mode=mode,
            predictions=predictions,
            loss=loss,
            train_op=train_op,
            eval_metric_ops=metrics,
            export_outputs={"serving_default": PredictOutput(predictions)},
        )

    return model_fn


def _weights_initialized(model):
    return any(
        getattr(weight, "_keras_initialized", False)
        for layer in model.layers
        for weight in layer.weights
    )


def _save_first_checkpoint(model, custom_objects, config):
    """model_dir/keras/keras_model.ckpt (unless a checkpoint is there already): the model's
    weights, or new ones, in the graph of a training clone; its path."""
    keras_dir = os.path.join(config.model_dir, "keras")
    latest = tf.train.latest_checkpoint(keras_dir)
    if latest:
        return latest
    weights = model.get_weights() if _weights_initialized(model) else None
    tf.io.gfile.makedirs(keras_dir)
    with tf.Graph().as_default():
        _V1.set_random_seed(config.tf_random_seed)
        _V1.train.create_global_step()
        clone = _clone(ModeKeys.TRAIN, model, custom_objects)
        clone._make_train_function()  # noqa: SLF001
        with _V1.Session(config=config.session_config) as session:
            if weights:
                clone.set_weights(weights)
            _keras("backend")._initialize_variables(session)  # noqa: SLF001
            path = os.path.join(keras_dir, "keras_model.ckpt")
            _V1.train.Saver().save(session, path)
    return path


def _config_with_model_dir(config, model_dir):
    """TF 1.15's: model_dir from the argument or the config (the same when both are given),
    else a new temporary folder."""
    config = config or RunConfig()
    if model_dir is not None and config.model_dir is not None and model_dir != config.model_dir:
        raise ValueError(
            "`model_dir` are set both in constructor and `RunConfig`, but with different "
            f"values. In constructor: '{model_dir}', in `RunConfig`: '{config.model_dir}' "
        )
    if model_dir is None:
        model_dir = config.model_dir
    if model_dir is None:
        model_dir = tempfile.mkdtemp()
        logging.warning("Using temporary folder as model directory: %s", model_dir)
    return config.replace(model_dir=model_dir)


def model_to_estimator_function(estimator_class=None):
    """tf.keras.estimator.model_to_estimator making `estimator_class` Estimators (the TF 1.x
    module's, on run_tf1.py's devices; by default those of one device)."""
    estimator_class = estimator_class or estimator_classes()["Estimator"]

    def model_to_estimator(
        keras_model=None,
        keras_model_path=None,
        custom_objects=None,
        model_dir=None,
        config=None,
        checkpoint_format="saver",
    ):
        """An Estimator of a compiled Keras model (or of the h5 file at keras_model_path),
        warm-started from its weights, as TF 1.15's."""
        if not (keras_model or keras_model_path):
            raise ValueError("Either `keras_model` or `keras_model_path` needs to be provided.")
        if keras_model and keras_model_path:
            raise ValueError(
                "Please specity either `keras_model` or `keras_model_path`, but not both."
            )
        config = _config_with_model_dir(config, model_dir)
        if keras_model:
            logging.info("Using the Keras model provided.")
        else:
            logging.info("Loading models from %s", keras_model_path)
            keras_model = _keras("models").load_model(keras_model_path)
        if checkpoint_format == "checkpoint":
            raise unsupported(
                "model_to_estimator(checkpoint_format='checkpoint')",
                "the default, checkpoint_format='saver'",
            )
        if checkpoint_format != "saver":
            raise ValueError(
                'Checkpoint format must be one of "checkpoint" or "saver". Got '
                f"{checkpoint_format}"
            )
        if not getattr(keras_model, "optimizer", None):
            raise ValueError(
                "The given keras model has not been compiled yet. Please compile the model "
                "with `model.compile()` before calling `model_to_estimator()`."
            )
        model_fn = _model_fn(keras_model, custom_objects)
        warm_start = None
        if keras_model._is_graph_network:  # noqa: SLF001
            warm_start = _save_first_checkpoint(keras_model, custom_objects, config)
        elif keras_model.built:
            logging.warning(
                "You are creating an Estimator from a Keras model manually subclassed from "
                "`Model`, that was already called on some inputs (and thus already had "
                "weights). We are currently unable to preserve the model's state (its "
                "weights) as part of the estimator in this case. Be warned that the estimator "
                "has been created using a freshly initialized version of your model.\nNote "
                "that this doesn't affect the state of the model instance you passed as "
                "`keras_model` argument."
            )
        return estimator_class(model_fn, config=config, warm_start_from=warm_start)

    return model_to_estimator
