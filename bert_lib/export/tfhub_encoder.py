"""What a BERT encoder in the TF Hub SavedModel format is, and its forward pass.

TensorFlow users share BERT encoders as TF2 SavedModels in the format TF Hub
and Kaggle publish (bert_en_uncased_L-12_H-768_A-12, the Small BERTs, the
domain experts) and TensorFlow Model Garden's `export_tfhub` writes. What
makes a SavedModel such an encoder, as loaded by `tf.saved_model.load`:

  * calling it with a dict of int32 [batch, seq] tensors `input_word_ids`,
    `input_mask` (1 = real token) and `input_type_ids`, and `training=`
    True or False (dropout), returns a dict: `pooled_output` [batch,
    hidden], `sequence_output` [batch, seq, hidden], `encoder_outputs` (a
    list, one [batch, seq, hidden] per layer) and `default` (the same as
    `pooled_output`); any batch size and sequence length;
  * `variables`, `trainable_variables` (a list of tf.Variables each) and
    `regularization_losses` (a list of functions, here none): what
    `hub.KerasLayer(path, trainable=True)` reads to fine-tune it;
  * `vocab_file`, a tf.saved_model.Asset (assets/vocab.txt), and
    `do_lower_case`, a non-trainable bool tf.Variable: how to tokenize;
  * optionally `mlm`, an object called the same way with one more input,
    int32 [batch, num_predictions] `masked_lm_positions`, that also returns
    `mlm_logits` [batch, num_predictions, vocab_size], and that has its own
    `variables` and `trainable_variables` (the encoder's and the head's).

tfhub_export writes one from a checkpoint of the scripts; tfhub_import reads
one (tfhub_mapping tells what each of its variables is) and writes its
checkpoint. Both compute the encoder with bert_outputs below, which is
modeling.BertModel's own graph code over variables held elsewhere.
"""

import tensorflow as tf

import modeling

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")
MASKED_LM_POSITIONS = "masked_lm_positions"
# Asset names inside an exported SavedModel (assets/<name>).
VOCAB_ASSET = "vocab.txt"
CONFIG_ASSET = "bert_config.json"
# The masked LM head's variables (run_pretraining's cls/predictions), whose
# output weights are the word embeddings.
MLM_HEAD = (
    "cls/predictions/transform/dense/kernel",
    "cls/predictions/transform/dense/bias",
    "cls/predictions/transform/LayerNorm/gamma",
    "cls/predictions/transform/LayerNorm/beta",
    "cls/predictions/output_bias",
)


def input_specs(with_positions=False):
    """The TensorSpecs an encoder is called with: int32 [batch, seq] INPUT_NAMES, and
    MASKED_LM_POSITIONS [batch, n] for its mlm."""
    specs = {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES}
    if with_positions:
        specs[MASKED_LM_POSITIONS] = tf.TensorSpec([None, None], tf.int32, MASKED_LM_POSITIONS)
    return specs


def encoder_variable_names(config, with_mlm=False):
    """The checkpoint names an encoder of `config` is made of, in a fixed order.

    The pooler is included; with_mlm adds the masked LM head (MLM_HEAD).
    """
    shapes = modeling.bert_variable_shapes(config)
    names = sorted(name for name in shapes if name.startswith("bert/"))
    if with_mlm:
        names += list(MLM_HEAD)
    return names


# ---------------------------------------------------------------------------
# The forward pass: BertModel's graph code over variables held elsewhere


def _variable_getter(variables):
    """A custom getter handing out `variables[name]` instead of creating variables.

    BertModel asks for each weight by its checkpoint name through
    tf.compat.v1.get_variable; answering from a dict lets the same graph
    code run over the tf.Variables of a SavedModel (exporting) or over
    tensors fed in (checking an import), in a tf.function or a graph.
    """

    def getter(getter, name, *args, shape=None, **kwargs):
        del getter, args, kwargs  # nothing is created
        if name not in variables:
            raise KeyError(f"no value for variable {name}")
        value = variables[name]
        if shape is not None and list(value.shape) != list(shape):
            raise ValueError(f"variable {name} has shape {list(value.shape)}, not {list(shape)}")
        return value

    return getter


def bert_outputs(config, variables, inputs, training=False):
    """The encoder's outputs for `inputs`, computed by modeling.BertModel.

    Call it while a tf.function is being traced. `variables` maps checkpoint
    names (bert/..., and cls/predictions/... for the masked LM) to
    tf.Variables or tensors; `inputs` is the dict of int32 [batch, seq]
    INPUT_NAMES, plus MASKED_LM_POSITIONS [batch, n] for `mlm_logits`.
    Returns {pooled_output, sequence_output, encoder_outputs (list), default}
    and, with positions, mlm_logits [batch, n, vocab_size].
    """
    getter = _variable_getter(variables)
    with tf.compat.v1.variable_scope("", custom_getter=getter, reuse=tf.compat.v1.AUTO_REUSE):
        model = modeling.BertModel(
            config,
            is_training=bool(training),
            input_ids=inputs["input_word_ids"],
            input_mask=inputs["input_mask"],
            token_type_ids=inputs["input_type_ids"],
            scope="bert",
        )
        outputs = {
            "pooled_output": model.get_pooled_output(),
            "sequence_output": model.get_sequence_output(),
            "encoder_outputs": list(model.get_all_encoder_layers()),
            "default": model.get_pooled_output(),
        }
        if MASKED_LM_POSITIONS in inputs:
            outputs["mlm_logits"] = masked_lm_logits(
                config,
                model.get_sequence_output(),
                model.get_embedding_table(),
                inputs[MASKED_LM_POSITIONS],
            )
    return outputs


def masked_lm_logits(config, sequence_output, embedding_table, positions):
    """The pre-training masked LM head's logits [batch, n, vocab_size] at `positions`.

    As run_pretraining's head (cls/predictions): a dense layer with the
    config's activation and a LayerNorm, then scores against every word
    embedding plus cls/predictions/output_bias. Variables come from the
    enclosing variable scope.
    """
    picked = tf.gather(sequence_output, positions, batch_dims=1)  # [batch, n, hidden]
    with tf.compat.v1.variable_scope("cls/predictions"):
        with tf.compat.v1.variable_scope("transform"):
            picked = modeling.dense(
                picked,
                config.hidden_size,
                activation=modeling.get_activation(config.hidden_act),
                name="dense",
            )
            picked = modeling.layer_norm(picked)
        output_bias = tf.compat.v1.get_variable("output_bias", shape=[config.vocab_size])
    flat = modeling.reshape_to_matrix(picked)
    logits = tf.nn.bias_add(tf.matmul(flat, embedding_table, transpose_b=True), output_bias)
    shape = tf.shape(positions)
    return tf.reshape(logits, [shape[0], shape[1], config.vocab_size])
