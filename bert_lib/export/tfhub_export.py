"""A checkpoint of the scripts out as a BERT encoder in the TF Hub SavedModel format.

The forward pass is `modeling.BertModel`'s own graph code
(tfhub_encoder.bert_outputs), traced in a tf.function whose variables are
trainable tf.Variables holding the checkpoint's values (named as in the
checkpoint), so its outputs are BertModel's and gradients reach every
weight. The SavedModel also carries assets/bert_config.json, so that
importing it back (tfhub_import) restores every setting exactly, and a
`serving_default` signature with flat outputs (encoder_outputs_<i> for the
layers) for TensorFlow Serving.
"""

import os
import shutil
import tempfile
import time

import numpy as np
import tensorflow as tf
from absl import logging

import modeling

from ..bert_runs import checks
from ..plumbing import atomic_write, checkpoint_shapes, fileio, startup_checks
from ..plumbing import vocab_file as vocab_file_reader
from ..plumbing.errors import UsageError
from . import tf_checkpoint
from .tfhub_encoder import (
    CONFIG_ASSET,
    MLM_HEAD,
    VOCAB_ASSET,
    bert_outputs,
    encoder_variable_names,
    input_specs,
)


class _Reusable(tf.Module):
    """A tf.Module whose `variables` and `trainable_variables` are saved attributes.

    tf.Module computes both as properties, and a SavedModel keeps no
    properties; the class attributes below shadow them, so that assigning
    lists makes them attributes that tf.saved_model.save writes and
    tf.saved_model.load gives back, as the Reusable SavedModel API asks.
    """

    variables = None
    trainable_variables = None


def _callable_object(config, variables, names, with_positions):
    """A saveable object whose __call__(inputs, training) runs the encoder."""
    obj = _Reusable()
    obj.variables = [variables[name] for name in names]
    obj.trainable_variables = list(obj.variables)
    obj.regularization_losses = []

    @tf.function(autograph=False)
    def call(inputs, training=False):
        return bert_outputs(config, variables, inputs, training)

    for training in (False, True):
        call.get_concrete_function(input_specs(with_positions), training=training)
    obj.__call__ = call
    return obj


def _serving_signature(config, variables):
    """serving_default for TF Serving: flat outputs, one encoder_outputs_<i> per layer."""

    @tf.function(autograph=False, input_signature=[input_specs()])
    def serve(inputs):
        outputs = bert_outputs(config, variables, inputs, training=False)
        flat = {k: outputs[k] for k in ("pooled_output", "sequence_output", "default")}
        for index, layer in enumerate(outputs["encoder_outputs"]):
            flat[f"encoder_outputs_{index}"] = layer
        return flat

    return serve.get_concrete_function()


def _load_config(bert_config):
    if isinstance(bert_config, modeling.BertConfig):
        config = modeling.BertConfig.from_dict(bert_config.to_dict())
        config.validate()
        return config
    if not bert_config or not fileio.exists(bert_config) or fileio.isdir(bert_config):
        raise UsageError(f"--bert_config_file={bert_config}: no such file")
    try:
        return modeling.BertConfig.from_json_file(bert_config)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _checkpoint_values(values, path, config, names):
    """{name: float32 array} for `names`, checked against the config's shapes."""
    missing = [name for name in names if name not in values]
    if missing:
        hint = ""
        if missing[0] in MLM_HEAD:
            hint = " (exporting the masked LM head needs a pre-training checkpoint)"
        raise UsageError(f"checkpoint {path} has no variable {missing[0]}{hint}")
    shapes = modeling.bert_variable_shapes(config)
    checkpoint_shapes.check_shapes(
        {name: shapes[name] for name in names},
        path,
        in_checkpoint={name: list(values[name].shape) for name in names},
        hint=" (does --bert_config_file belong to this checkpoint?)",
    )
    out = {}
    for name in names:
        value = values[name]
        if value.dtype.kind != "f":
            raise UsageError(f"checkpoint {path}: variable {name} is {value.dtype}, not a float")
        out[name] = value.astype(np.float32)
    return out


def export_encoder(checkpoint, bert_config, vocab_file, do_lower_case, output_dir, with_mlm=False):
    """Writes a checkpoint of the scripts as a TF Hub-format BERT encoder SavedModel.

    Args:
      checkpoint: checkpoint path prefix, or a directory (its newest
        checkpoint): Google's, one the scripts wrote, one hf_to_tf wrote.
      bert_config: path of its bert_config.json, or a modeling.BertConfig.
      vocab_file: its vocab.txt; becomes the `vocab_file` asset (vocab.txt).
      do_lower_case: bool, stored as the `do_lower_case` variable.
      output_dir: the SavedModel directory to create; must not exist.
      with_mlm: also export the masked LM head as the `mlm` sub-object (the
        checkpoint must have cls/predictions/*).

    Returns:
      dict: output_dir, variables (how many), with_mlm.

    Raises:
      UsageError: a missing or unreadable input, a checkpoint that lacks a
        variable or does not fit the config, a vocabulary the scripts would
        refuse with this config (checks.check_converted_model), or an
        existing output_dir. Nothing is left in
        output_dir's place then: the SavedModel is written to a staging
        directory renamed into place only when complete.
    """
    start = time.time()
    config = _load_config(bert_config)
    if not vocab_file or not fileio.exists(vocab_file) or fileio.isdir(vocab_file):
        raise UsageError(f"--vocab_file={vocab_file}: no such file")
    vocab = vocab_file_reader.read_lines(vocab_file, "--vocab_file")
    if len(vocab) > config.vocab_size:
        raise UsageError(
            f"--vocab_file={vocab_file}: {len(vocab)} tokens, more than vocab_size "
            f"{config.vocab_size}"
        )
    if not output_dir:
        raise UsageError("--output_dir is required")
    startup_checks.check_new_output_dir(output_dir, "--output_dir")
    values, path = tf_checkpoint.read_checkpoint(checkpoint, "--input")
    config_source = bert_config if isinstance(bert_config, str) else "the config given"
    sources = checks.Sources(config_source, path, vocab_file, "--vocab_file", "--do_lower_case")
    checks.check_converted_model(config, list(values), vocab, bool(do_lower_case), sources)
    names = encoder_variable_names(config, with_mlm)
    left_out = sorted(set(values) - set(names))
    if left_out:
        logging.info("Checkpoint variables not exported (%d): %s", len(left_out), left_out)
    values = _checkpoint_values(values, path, config, names)
    encoder_names = encoder_variable_names(config)

    with tempfile.TemporaryDirectory() as assets:
        vocab_copy = os.path.join(assets, VOCAB_ASSET)
        with fileio.open_binary(vocab_file) as source, open(vocab_copy, "wb") as copy:
            shutil.copyfileobj(source, copy)
        config_copy = os.path.join(assets, CONFIG_ASSET)
        with open(config_copy, "w", encoding="utf-8") as f:
            f.write(config.to_json_string())
        variables = {name: tf.Variable(values[name], name=name) for name in names}
        root = _callable_object(config, variables, encoder_names, with_positions=False)
        root.vocab_file = tf.saved_model.Asset(vocab_copy)
        root.bert_config_file = tf.saved_model.Asset(config_copy)
        root.do_lower_case = tf.Variable(
            bool(do_lower_case), trainable=False, name="do_lower_case"
        )
        if with_mlm:
            root.mlm = _callable_object(config, variables, names, with_positions=True)
        signatures = {"serving_default": _serving_signature(config, variables)}
        with atomic_write.staged_directory(output_dir, flag="--output_dir") as stage:
            tf.saved_model.save(root, stage, signatures=signatures)
    logging.info(
        "Exported %s (%d variables%s) to %s in %.1f s",
        path,
        len(names),
        ", with the masked LM head" if with_mlm else "",
        output_dir,
        time.time() - start,
    )
    return {"output_dir": output_dir, "variables": len(names), "with_mlm": bool(with_mlm)}
