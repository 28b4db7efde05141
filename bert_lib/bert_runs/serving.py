"""The serving inputs of BERT's SavedModels, which run_classifier, run_squad and run_ner export.

engine.Estimator.export_saved_model(export_dir, id_inputs, checkpoint)
builds the model_fn's PREDICT graph on these placeholders and writes it
with the checkpoint's weights (engine/saved_model.py).
"""

import tensorflow as tf


def id_inputs():
    """The inputs of every export: int32 [batch, length] input_ids, input_mask and segment_ids.

    Any batch size and any length up to the model's max_position_embeddings,
    so that a batch of short texts need not be padded to max_seq_length.
    """
    return {
        name: tf.compat.v1.placeholder(tf.int32, [None, None], name=name)
        for name in ("input_ids", "input_mask", "segment_ids")
    }
