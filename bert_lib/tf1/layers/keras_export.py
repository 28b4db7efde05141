"""tf.keras.experimental.export_saved_model and load_from_saved_model of TF 1.15, on tf_keras.

TF 1.15 exported a compiled Keras model as a SavedModel of up to three
graphs, each a clone of the model rebuilt in a graph of its own: "train"
(with the optimizer's update op) and "eval" when the model was compiled
with a TF or Keras optimizer, and "serve" (the predictions, signature
`serving_default`) always. The variables are those of the clone saved in
Keras's TF format (object-graph names, `layer_with_weights-0/kernel/...`,
the optimizer's slots included), and assets/saved_model.json holds the
model's JSON config, from which load_from_saved_model rebuilds it before
loading those weights. tf_keras no longer has either function; this is
them, with tf_keras's cloning and TensorFlow's SavedModel builder.
"""

import importlib
import os

import tensorflow as tf

_V1 = tf.compat.v1


def _keras(name):
    return importlib.import_module(f"tf_keras.src.{name}")


def _export_utils():
    return importlib.import_module("tensorflow.python.saved_model.model_utils")


def export_saved_model(
    model,
    saved_model_path,
    custom_objects=None,
    as_text=False,
    input_signature=None,
    serving_only=False,
):
    """Writes `model` as a SavedModel in `saved_model_path` (which must not exist or be
    empty), as TF 1.15's tf.keras.experimental.export_saved_model did."""
    if serving_only:
        tf.saved_model.save(model, saved_model_path)
    else:
        _save_v1_format(model, saved_model_path, custom_objects, as_text, input_signature)
    assets = os.path.join(saved_model_path, "assets")
    tf.io.gfile.makedirs(assets)
    with tf.io.gfile.GFile(os.path.join(assets, "saved_model.json"), "w") as f:
        f.write(model.to_json())


def _save_v1_format(model, path, custom_objects, as_text, input_signature):
    if not model._is_graph_network and not isinstance(
        model, _keras("engine.sequential").Sequential
    ):
        raise NotImplementedError(
            "Subclassed models can only be exported for serving. Please set argument "
            "serving_only=True."
        )
    builder = importlib.import_module(
        "tensorflow.python.saved_model.builder_impl"
    )._SavedModelBuilder(path)
    variables_dir = os.path.join(path, "variables")
    tf.io.gfile.makedirs(variables_dir)
    checkpoint = os.path.join(variables_dir, "variables")
    model.save_weights(checkpoint, save_format="tf", overwrite=True)
    modes = importlib.import_module("tensorflow.python.saved_model.model_utils.mode_keys")
    saved = False
    if model.optimizer:
        for mode in (modes.KerasModeKeys.TRAIN, modes.KerasModeKeys.TEST):
            _export_mode(mode, saved, builder, model, custom_objects, checkpoint, input_signature)
            saved = True
    _export_mode(
        modes.KerasModeKeys.PREDICT,
        saved,
        builder,
        model,
        custom_objects,
        checkpoint,
        input_signature,
    )
    builder.save(as_text)


def _export_mode(mode, saved, builder, model, custom_objects, checkpoint, input_signature):
    """Adds one graph of `mode` to `builder`: the model cloned into a graph of its own, its
    weights from `checkpoint` (which the first clone writes anew, with its optimizer's)."""
    backend = _keras("backend")
    modes = importlib.import_module("tensorflow.python.saved_model.model_utils.mode_keys")
    compile_clone = mode != modes.KerasModeKeys.PREDICT
    with (
        tf.Graph().as_default() as graph,
        backend.learning_phase_scope(mode == modes.KerasModeKeys.TRAIN),
    ):
        inputs = None
        if input_signature is not None:
            inputs = tf.nest.map_structure(
                lambda spec: backend.placeholder(
                    shape=spec.shape, dtype=spec.dtype, name=spec.name
                ),
                input_signature,
            )
        clone = _clone(model, inputs, custom_objects, compile_clone)
        if compile_clone:
            graph.add_to_collection(_V1.GraphKeys.GLOBAL_STEP, clone.optimizer.iterations)
        train_op = None
        if mode == modes.KerasModeKeys.TRAIN:
            clone._make_train_function()
            train_op = clone.train_function.updates_op
        elif mode == modes.KerasModeKeys.TEST:
            clone._make_test_function()
        else:
            clone._make_predict_function()
        graph.get_collection_ref(_V1.GraphKeys.UPDATE_OPS).extend(clone.state_updates)
        with _V1.Session().as_default():
            if saved:
                clone.load_weights(checkpoint)
            else:
                clone.load_weights(checkpoint)
                clone.save_weights(checkpoint, save_format="tf", overwrite=True)
                builder._has_saved_variables = True
            builder.add_meta_graph(
                _export_utils().EXPORT_TAG_MAP[mode],
                signature_def_map=_signature_defs(clone, mode),
                saver=_V1.train.Saver(_saveables(clone), allow_empty=True),
                init_op=_V1.local_variables_initializer(),
                train_op=train_op,
            )


def _signature_defs(model, mode):
    modes = importlib.import_module("tensorflow.python.saved_model.model_utils.mode_keys")
    inputs = dict(zip(model.input_names, model.inputs))
    if model.optimizer:
        inputs.update({x.name.split(":")[0]: x for x in model._targets if x is not None})
    outputs = dict(zip(model.output_names, model.outputs))
    metrics = _keras("saving.legacy.saving_utils").extract_model_metrics(model)
    local = set(_V1.get_collection(_V1.GraphKeys.LOCAL_VARIABLES))
    added = set()
    metric_class = _keras("metrics").Metric
    if metrics is not None:
        for key, value in metrics.items():
            if isinstance(value, metric_class):
                added.update(value.variables)
                metrics[key] = (value.result(), value.updates[0])
    for variable in added - local:
        _V1.add_to_collection(_V1.GraphKeys.LOCAL_VARIABLES, variable)
    utils = _export_utils()
    export_outputs = utils.export_outputs_for_mode(
        mode,
        predictions=outputs,
        loss=model.total_loss if model.optimizer else None,
        metrics=metrics,
    )
    return utils.build_all_signature_defs(
        inputs, export_outputs=export_outputs, serving_only=mode == modes.KerasModeKeys.PREDICT
    )


def load_from_saved_model(saved_model_path, custom_objects=None):
    """The model export_saved_model wrote: rebuilt from its JSON config, its weights loaded."""
    with tf.io.gfile.GFile(os.path.join(saved_model_path, "assets", "saved_model.json")) as f:
        config = f.read()
    model = _keras("models").model_from_json(config, custom_objects=custom_objects)
    model.load_weights(os.path.join(saved_model_path, "variables", "variables"))
    return model


def _saveables(model):
    """The model's checkpointed objects under their object-graph names (the names its
    TF-format weights file has), for the graph's Saver."""
    graph_view = importlib.import_module("tensorflow.python.checkpoint.graph_view")
    saveables, _, _ = graph_view.ObjectGraphView(model).serialize_object_graph()
    return saveables


def _clone(model, inputs, custom_objects, compile_clone):
    """tf_keras's clone_and_build_model, which leaves on the model a _get_compile_args that
    takes no arguments (its h5 save, model.save after the export, passes one): the model's
    own is put back."""
    own = model.__dict__.get("_get_compile_args")
    try:
        return _keras("models.cloning").clone_and_build_model(
            model, input_tensors=inputs, custom_objects=custom_objects, compile_clone=compile_clone
        )
    finally:
        if own is None:
            model.__dict__.pop("_get_compile_args", None)
        else:
            model._get_compile_args = own
