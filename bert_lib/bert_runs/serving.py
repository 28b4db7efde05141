"""The serving inputs of BERT's SavedModels, which run_classifier, run_squad and run_ner export.

engine.Estimator.export_saved_model(export_dir, id_inputs, checkpoint)
builds the model_fn's PREDICT graph on these placeholders and writes it
with the checkpoint's weights (engine/saved_model.py).
"""

import tensorflow as tf

from . import model_fns


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
