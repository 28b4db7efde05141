"""Writing a SavedModel of a graph and a checkpoint, for Estimator.export_saved_model.

The estimator builds the inference graph (the model_fn's predictions from
the serving placeholders); this module restores the checkpoint into it,
refuses a checkpoint whose variables do not fit, and writes the SavedModel
under a temporary name that becomes `export_dir` only when complete, as
tf.estimator's export_saved_model did. Files that go with the graph
(vocabulary, settings) go to the SavedModel's assets.extra/ directory,
which TensorFlow Serving ignores.
"""

import contextlib
import os

import tensorflow as tf
from absl import logging

from ..plumbing import atomic_write, checkpoint_shapes
from ..plumbing.errors import UsageError

EXTRA_DIR = "assets.extra"


def check_checkpoint_holds(checkpoint_path, variables):
    """Raises a UsageError unless the checkpoint has every variable, in its shape.

    Restoring resource variables would otherwise silently take the
    checkpoint's shape (say a 3-class head into a 2-class model).
    """
    saved = checkpoint_shapes.read_shapes(checkpoint_path)
    for variable in variables:
        if variable.op.name not in saved:
            raise UsageError(f"checkpoint {checkpoint_path} has no variable {variable.op.name}")
    expected = {variable.op.name: variable.shape.as_list() for variable in variables}
    checkpoint_shapes.check_shapes(expected, checkpoint_path, saved)


def export_graph(
    export_dir,
    checkpoint_path,
    build_fn,
    extra_files=None,
    cast_weights_once=False,
    weights_as_constants=False,
):
    """Writes the graph of `build_fn` with the variables of `checkpoint_path` (a
    checkpoint, or a directory: its newest checkpoint).

    `build_fn()` is called inside a fresh graph and returns (inputs, outputs),
    dicts of tensors by name that become the "serving_default" signature, or
    (inputs, outputs, alternatives): alternatives ({name: inputs}, further
    tensors a client may feed instead, such as the features after parsing)
    each sign the same outputs as "<name>:serving_default", as tf.estimator's
    receiver_tensors_alternatives did.
    `extra_files` maps a file name to its text, written to
    `export_dir`/assets.extra/. `export_dir` must not exist.

    With `cast_weights_once`, a float32 variable that the graph reads only
    through casts to bfloat16 (or only to float16), as a model computing in
    16 bits reads its float32 weights, is stored in that dtype, cast once
    from the checkpoint here: a call of the SavedModel then casts no weights,
    and computes what the graph that casts them on every call computes. The
    graph is then built twice (`build_fn` is called again with those
    variables made in their 16-bit dtype). A graph with no such variable is
    exported as without the option.

    With `weights_as_constants`, every variable's value is written into the
    graph as a constant and the SavedModel holds no variables: a call reads
    no variable, and TensorFlow's graph optimizations can fold what depends
    on weights alone. The outputs are the same numbers. (Not for graphs
    with lookup tables, which are written with their variables.)
    """
    if tf.io.gfile.exists(export_dir):
        raise UsageError(f"--export_dir={export_dir} already exists; choose a new directory")
    if tf.io.gfile.isdir(checkpoint_path):
        # A directory (such as output_dir/best) stands for the checkpoint its
        # `checkpoint` file names, as it does for --init_checkpoint.
        newest = tf.train.latest_checkpoint(checkpoint_path)
        if newest is None:
            raise UsageError(f"no checkpoint in directory {checkpoint_path}")
        checkpoint_path = newest
    with atomic_write.staged_directory(export_dir, flag="--export_dir") as stage:
        # The SavedModel builder accepts an existing directory while it is empty.
        temp_dir = stage
        graph, inputs, outputs, alternatives = _build_graph(build_fn, {})
        stored_dtypes = _read_only_as_16_bits(graph) if cast_weights_once else {}
        if stored_dtypes:
            graph, inputs, outputs, alternatives = _build_graph(build_fn, stored_dtypes)
        with graph.as_default():
            variables = tf.compat.v1.global_variables()
            check_checkpoint_holds(checkpoint_path, variables)
            cast_once = [v for v in variables if v.op.name in stored_dtypes]
            restored = [v for v in variables if v.op.name not in stored_dtypes]
            saver = tf.compat.v1.train.Saver(restored) if restored else None
            with tf.compat.v1.Session(graph=graph) as sess:
                if saver is not None:
                    saver.restore(sess, checkpoint_path)
                for variable, value in zip(cast_once, _cast_values(checkpoint_path, cast_once)):
                    sess.run(variable.initializer, {variable.initial_value: value})
                # A graph with lookup tables has them filled when the SavedModel is
                # loaded, from their vocabulary files copied into its assets.
                tables = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TABLE_INITIALIZERS)
                if weights_as_constants and variables and not tables:
                    _write_frozen(sess, temp_dir, inputs, outputs, alternatives)
                else:
                    _write(sess, temp_dir, inputs, outputs, tables, alternatives)
        if extra_files:
            extra_dir = os.path.join(temp_dir, EXTRA_DIR)
            tf.io.gfile.makedirs(extra_dir)
            for name, text in extra_files.items():
                with tf.io.gfile.GFile(os.path.join(extra_dir, name), "w") as f:
                    f.write(text)
    logging.info("Exported %s as a SavedModel to %s", checkpoint_path, export_dir)


def _write(sess, directory, inputs, outputs, tables=(), alternatives=None):
    """Writes the session's graph and variables as a SavedModel whose serving_default
    signature maps `inputs` to `outputs` (dicts of the graph's tensors by name), and each
    of `alternatives` ({name: inputs}) to them as "<name>:serving_default"."""
    builder = tf.compat.v1.saved_model.Builder(directory)
    signatures = {"serving_default": inputs}
    for name, alternative in (alternatives or {}).items():
        signatures[f"{name}:serving_default"] = alternative
    builder.add_meta_graph_and_variables(
        sess,
        [tf.compat.v1.saved_model.tag_constants.SERVING],
        signature_def_map={
            key: tf.compat.v1.saved_model.predict_signature_def(inputs=fed, outputs=outputs)
            for key, fed in signatures.items()
        },
        assets_collection=tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.ASSET_FILEPATHS)
        or None,
        main_op=tf.group(*tables) if tables else None,
        strip_default_attrs=True,
    )
    builder.save()


def _write_frozen(sess, directory, inputs, outputs, alternatives=None):
    """_write of the session's graph with every variable replaced by a constant of its
    value in the session: the part of the graph that computes `outputs`."""
    graph_def = tf.compat.v1.graph_util.convert_variables_to_constants(
        sess, sess.graph.as_graph_def(), [t.op.name for t in outputs.values()]
    )
    frozen = tf.Graph()
    with frozen.as_default():
        tf.import_graph_def(graph_def, name="")

        def frozen_tensors(tensors):
            return {name: frozen.get_tensor_by_name(t.name) for name, t in tensors.items()}

        with tf.compat.v1.Session(graph=frozen) as frozen_sess:
            _write(
                frozen_sess,
                directory,
                frozen_tensors(inputs),
                frozen_tensors(outputs),
                alternatives={
                    name: frozen_tensors(fed) for name, fed in (alternatives or {}).items()
                },
            )


def _build_graph(build_fn, stored_dtypes):
    """(graph, inputs, outputs, alternatives) of `build_fn` in a new graph; the
    variables named in `stored_dtypes` are made in the dtype it gives them."""

    def getter(getter, name, *args, **kwargs):
        # TensorFlow passes the next getter by this name.
        if name in stored_dtypes:
            kwargs["dtype"] = stored_dtypes[name]
        return getter(name, *args, **kwargs)

    graph = tf.Graph()
    with graph.as_default():
        scope = contextlib.nullcontext()
        if stored_dtypes:
            scope = tf.compat.v1.variable_scope(
                tf.compat.v1.get_variable_scope(), custom_getter=getter
            )
        with scope:
            inputs, outputs, *alternatives = build_fn()
        outputs = {name: tf.identity(tensor, name=name) for name, tensor in outputs.items()}
    return graph, inputs, outputs, (alternatives[0] if alternatives else {})


# What a variable's handle may feed besides its reads: its initialization.
_INITIALIZING_OPS = ("AssignVariableOp", "VarIsInitializedOp")


def _read_only_as_16_bits(graph):
    """{name: dtype} of the float32 resource variables of `graph` whose every read goes
    only into casts to one 16-bit float dtype (bfloat16 or float16)."""
    found = {}
    for variable in graph.get_collection(tf.compat.v1.GraphKeys.GLOBAL_VARIABLES):
        handle = getattr(variable, "handle", None)
        if (
            variable.dtype.base_dtype != tf.float32
            or handle is None
            or handle.dtype != tf.resource
        ):
            continue
        targets = set()
        for consumer in handle.consumers():
            if consumer.type in _INITIALIZING_OPS:
                continue
            if consumer.type != "ReadVariableOp":
                targets.add(None)
                continue
            for reader in consumer.outputs[0].consumers():
                targets.add(reader.get_attr("DstT") if reader.type == "Cast" else None)
        if len(targets) == 1:
            (dtype,) = targets
            if dtype in (tf.bfloat16, tf.float16):
                found[variable.op.name] = dtype
    return found


def _cast_values(checkpoint_path, variables):
    """The checkpoint's values of `variables`, cast to each one's dtype by TensorFlow's
    Cast (the rounding of the cast the exported graph no longer does)."""
    if not variables:
        return []
    reader = tf.train.load_checkpoint(checkpoint_path)
    with tf.Graph().as_default() as graph, tf.compat.v1.Session(graph=graph) as sess:
        value = tf.compat.v1.placeholder(tf.float32)
        casts = {v.dtype.base_dtype: tf.cast(value, v.dtype.base_dtype) for v in variables}
        return [
            sess.run(casts[v.dtype.base_dtype], {value: reader.get_tensor(v.op.name)})
            for v in variables
        ]
