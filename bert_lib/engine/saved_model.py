"""Writing a SavedModel of a graph and a checkpoint, for Estimator.export_saved_model.

The estimator builds the inference graph (the model_fn's predictions from
the serving placeholders); this module restores the checkpoint into it,
refuses a checkpoint whose variables do not fit, and writes the SavedModel
under a temporary name that becomes `export_dir` only when complete, as
tf.estimator's export_saved_model did. Files that go with the graph
(vocabulary, settings) go to the SavedModel's assets.extra/ directory,
which TensorFlow Serving ignores.
"""

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


def export_graph(export_dir, checkpoint_path, build_fn, extra_files=None):
    """Writes the graph of `build_fn` with the variables of `checkpoint_path` (a
    checkpoint, or a directory: its newest checkpoint).

    `build_fn()` is called inside a fresh graph and returns (inputs, outputs),
    dicts of tensors by name that become the "serving_default" signature.
    `extra_files` maps a file name to its text, written to
    `export_dir`/assets.extra/. `export_dir` must not exist.
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
        graph = tf.Graph()
        with graph.as_default():
            inputs, outputs = build_fn()
            outputs = {name: tf.identity(tensor, name=name) for name, tensor in outputs.items()}
            variables = tf.compat.v1.global_variables()
            check_checkpoint_holds(checkpoint_path, variables)
            saver = tf.compat.v1.train.Saver(variables)
            with tf.compat.v1.Session(graph=graph) as sess:
                saver.restore(sess, checkpoint_path)
                builder = tf.compat.v1.saved_model.Builder(temp_dir)
                signature = tf.compat.v1.saved_model.predict_signature_def(
                    inputs=inputs, outputs=outputs
                )
                # A graph with lookup tables has them filled when the SavedModel is
                # loaded, from their vocabulary files copied into its assets.
                tables = tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.TABLE_INITIALIZERS)
                builder.add_meta_graph_and_variables(
                    sess,
                    [tf.compat.v1.saved_model.tag_constants.SERVING],
                    signature_def_map={"serving_default": signature},
                    assets_collection=tf.compat.v1.get_collection(
                        tf.compat.v1.GraphKeys.ASSET_FILEPATHS
                    )
                    or None,
                    main_op=tf.group(*tables) if tables else None,
                    strip_default_attrs=True,
                )
                builder.save()
        if extra_files:
            extra_dir = os.path.join(temp_dir, EXTRA_DIR)
            tf.io.gfile.makedirs(extra_dir)
            for name, text in extra_files.items():
                with tf.io.gfile.GFile(os.path.join(extra_dir, name), "w") as f:
                    f.write(text)
    logging.info("Exported %s as a SavedModel to %s", checkpoint_path, export_dir)
