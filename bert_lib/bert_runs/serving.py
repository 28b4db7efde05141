"""BERT's SavedModels, which run_classifier, run_squad and run_ner export: the checkpoint
an export takes, its serving inputs, and the export of a script's model.

engine.Estimator.export_saved_model(export_dir, id_inputs, checkpoint)
builds the model_fn's PREDICT graph on these placeholders and writes it
with the checkpoint's weights (engine/saved_model.py).
"""

import os

import tensorflow as tf

from .. import engine
from ..plumbing.errors import UsageError
from . import model_fns


def checkpoint_to_export(output_dir, init_checkpoint):
    """What --export_dir exports, as predict would use: the newest checkpoint in
    `output_dir`, else `init_checkpoint` (a model fine-tuned elsewhere); neither is a
    UsageError."""
    checkpoint_path = engine.newest_checkpoint(output_dir) or init_checkpoint
    if not checkpoint_path:
        raise UsageError(
            f"--export_dir: no checkpoint in --output_dir={output_dir} and no "
            "--init_checkpoint to export"
        )
    return checkpoint_path


def id_inputs():
    """The inputs of every export: int32 [batch, length] input_ids, input_mask and segment_ids.

    Any batch size and any length up to the model's max_position_embeddings,
    so that a batch of short texts need not be padded to max_seq_length.
    """
    return {
        name: tf.compat.v1.placeholder(tf.int32, [None, None], name=name)
        for name in ("input_ids", "input_mask", "segment_ids")
    }


def weights_as_constants(precision):
    """Whether an export at `precision` writes its weights as constants of the graph.

    At bf16 it does: a call then reads no variable, and one request at a
    time cost less CPU time (BENCHMARKS.md, "One request at a time"). At
    float32 it does not: oneDNN's float32 matmul reorders constant weights
    again for each new input shape, and requests of varying lengths cost
    more than with variables. The numbers are the same to round-off.
    """
    return model_fns.precision_of(precision).constant_weights_in_export


def export_model(
    model_fn_builder,
    export_dir,
    checkpoint_path,
    bert_config,
    precision="fp32",
    use_xla=False,
    predictor_files=None,
    **model_arguments,
):
    """Writes the model of `checkpoint_path` as a SavedModel in `export_dir`.

    The graph is the PREDICT graph of the model_fn that `model_fn_builder`
    (a script's, with the original's parameters) builds from `bert_config`
    and the task's `model_arguments` (num_labels, ...), computing in
    `precision`, with XLA if `use_xla`, as predict builds it; its inputs are
    id_inputs. `predictor_files` ({name: text}) go to assets.extra/.
    """
    model_fn = model_fn_builder(
        bert_config=bert_config,
        init_checkpoint=None,
        learning_rate=0.0,
        num_train_steps=None,
        num_warmup_steps=None,
        use_tpu=False,
        use_one_hot_embeddings=False,
        precision=precision,
        **model_arguments,
    )
    config = engine.RunConfig(
        model_dir=os.path.dirname(os.path.abspath(checkpoint_path)), use_xla=use_xla
    )
    engine.Estimator(model_fn, config).export_saved_model(
        export_dir,
        id_inputs,
        checkpoint_path,
        predictor_files,
        cast_weights_once=True,
        weights_as_constants=weights_as_constants(precision),
    )
