"""Fine-tunes BERT on token classification: named entities in CoNLL files.

The original ships no such script, and the usual home-made ones put a word's
label on every WordPiece or score tokens instead of entities. Here each
word's label goes on its first piece only (the other pieces and [CLS]/[SEP]
carry no loss and no prediction), a sentence longer than the window is cut
into overlapping windows with each word predicted in exactly one of them
(the one where it has the most context on both sides), and evaluation
scores whole entities as conlleval does.

Same spine, flags, checkpoints and engine as run_classifier.py: CoNLL files
in --data_dir become output_dir/{train,eval,predict}.tf_record, training
writes the checkpoints, evaluation eval_results.txt, prediction
test_predictions.txt (test.txt with a predicted tag column) and
--export_dir a SavedModel with per-token tag probabilities. The data side
(reading, windows, records, entity scores, the predictions file) is
bert_lib/task_data/ner_data.py, which takes no flags; the steps of a run
after the flags are checked are bert_lib/bert_runs/ner.py, which builds
the model with this script's model_fn_builder; this script holds the
flags and the model.
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections

import tensorflow as tf
from absl import flags, logging

import modeling
from bert_lib import engine, script_flags
from bert_lib.bert_runs import checks, model_fns, ner
from bert_lib.plumbing import startup_checks
from bert_lib.plumbing.errors import UsageError
from bert_lib.task_data import dynamic_padding

FLAGS = flags.FLAGS

# Required parameters.
script_flags.define_model_flags(__name__)
script_flags.define_fine_tuning_flags(__name__)
script_flags.define_engine_flags(__name__, evaluation=False)
script_flags.define_flags("data_dir", "labels", "window_stride", module=__name__)

# Specific to tagging.
script_flags.define_integer(
    "tag_column",
    -1,
    "Which column of train.txt / dev.txt holds the tag: 0-based, negative counts from the "
    "end (default -1, the last). Column 0 is the word. test.txt needs no tags.",
    script_flags.ANY_NUMBER,
    module=__name__,
)
flags.DEFINE_enum(
    "tag_scheme",
    "IOB2",
    ["IOB1", "IOB2", "IOBES"],
    "How tags mark entities: IOB1 (I- inside, B- only to split adjacent entities of one "
    "type, as the original CoNLL-2003 files), IOB2 (B- begins every entity) or IOBES "
    "(also E- ends one and S- is a single word). A tag with another prefix is an error.",
)


def create_model(
    bert_config,
    is_training,
    input_ids,
    input_mask,
    segment_ids,
    labels,
    label_mask,
    num_labels,
    use_one_hot_embeddings,
    compute_dtype=None,
    dropout_keys=None,
):
    """Builds BERT plus a linear tag head on every position of the sequence output.

    The head is `output_weights` [num_labels, hidden] and `output_bias`
    [num_labels] at no variable scope (the classifier's names and shapes),
    with 0.1 dropout on its input while training. `compute_dtype` and
    `dropout_keys` (masks keyed by example, the head's too) go to
    modeling.BertModel.

    Returns:
      (loss, per_token_loss, logits, probabilities): logits and
      probabilities [batch, seq, num_labels]; per_token_loss [batch, seq]
      the cross entropy (0 where label_mask is 0); loss its mean over the
      positions where label_mask is 1. The losses are None without labels.
    """
    model = modeling.BertModel(
        config=bert_config,
        is_training=is_training,
        input_ids=input_ids,
        input_mask=input_mask,
        token_type_ids=segment_ids,
        use_one_hot_embeddings=use_one_hot_embeddings,
        compute_dtype=compute_dtype,
        dropout_keys=dropout_keys,
    )
    output_layer = tf.cast(model.get_sequence_output(), tf.float32)
    hidden_size = tf.compat.v1.dimension_value(output_layer.shape[-1])

    output_weights = tf.compat.v1.get_variable(
        "output_weights",
        [num_labels, hidden_size],
        initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.02),
    )
    output_bias = tf.compat.v1.get_variable(
        "output_bias", [num_labels], initializer=tf.compat.v1.zeros_initializer()
    )

    with tf.compat.v1.variable_scope("loss"):
        if is_training:
            output_layer = modeling.dropout(output_layer, 0.1, dropout_keys)
        logits = tf.einsum("bsh,lh->bsl", output_layer, output_weights)
        logits = tf.nn.bias_add(logits, output_bias)
        probabilities = tf.nn.softmax(logits, axis=-1)
        if labels is None:
            return None, None, logits, probabilities

        mask = tf.cast(label_mask, tf.float32)
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        one_hot_labels = tf.one_hot(labels, depth=num_labels, dtype=tf.float32)
        per_token_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1) * mask
        loss = tf.reduce_sum(per_token_loss) / tf.maximum(tf.reduce_sum(mask), 1.0)
        return loss, per_token_loss, logits, probabilities


def model_fn_builder(
    bert_config,
    num_labels,
    init_checkpoint,
    learning_rate,
    num_train_steps,
    num_warmup_steps,
    use_tpu,
    use_one_hot_embeddings,
    precision="fp32",
    num_accumulation_steps=1,
):
    """Returns the model_fn(features, labels, mode, params) for engine.Estimator.

    Train: Adam with weight decay (model_fns.train_spec, accumulating the
    gradients of num_accumulation_steps micro-batches). Eval: eval_loss, the
    mean cross entropy over scored positions. Predict: {"probabilities":
    [seq, num_labels]}. The Transformer layers compute in `precision`.
    """
    compute_dtype = model_fns.compute_dtype(precision)

    def model_fn(features, labels, mode, params):
        del labels  # Labels travel inside `features`.
        logging.info("*** Features ***")
        for name in sorted(features.keys()):
            logging.info("  name = %s, shape = %s", name, features[name].shape)

        is_training = mode == engine.ModeKeys.TRAIN
        total_loss, per_token_loss, _, probabilities = create_model(
            bert_config,
            is_training,
            features["input_ids"],
            features["input_mask"],
            features["segment_ids"],
            features.get("label_ids"),  # absent, as label_mask, in an export's serving graph
            features.get("label_mask"),
            num_labels,
            use_one_hot_embeddings,
            compute_dtype=compute_dtype,
            dropout_keys=model_fns.dropout_keys(features, is_training),
        )
        scaffold_fn = model_fns.warm_start_from_checkpoint(init_checkpoint, use_tpu)

        if mode == engine.ModeKeys.TRAIN:
            return model_fns.train_spec(
                total_loss,
                learning_rate,
                num_train_steps,
                num_warmup_steps,
                precision,
                num_accumulation_steps,
                scaffold_fn=scaffold_fn,
            )

        if mode == engine.ModeKeys.EVAL:

            def metric_fn(per_token_loss, label_mask):
                weights = tf.cast(label_mask, tf.float32)
                return {"eval_loss": tf.compat.v1.metrics.mean(per_token_loss, weights=weights)}

            return engine.EstimatorSpec(
                mode=mode,
                loss=total_loss,
                eval_metrics=(metric_fn, [per_token_loss, features["label_mask"]]),
                # The entity scores need every word's tag: gathered in the same pass.
                predictions=dynamic_padding.pass_index(features, {"probabilities": probabilities}),
                scaffold_fn=scaffold_fn,
            )

        predictions = dynamic_padding.pass_index(features, {"probabilities": probabilities})
        return engine.EstimatorSpec(mode=mode, predictions=predictions, scaffold_fn=scaffold_fn)

    return model_fn


# ---------------------------------------------------------------------------
# Reading and checking the flags, then main.

# The flags of this script read as they are (the model flags apart, in
# script_flags.ModelSettings).
_FLAG_NAMES = (
    "data_dir output_dir do_train do_eval do_predict export_dir train_batch_size "
    "eval_batch_size predict_batch_size learning_rate num_train_epochs warmup_proportion "
    "use_tpu labels window_stride tag_column tag_scheme precision num_accumulation_steps "
    "allow_new_task_in_output_dir"
).split()

# What settings_from_flags reads: the model flags (model), the engine's
# config, the padding of training and of evaluation / prediction
# (dynamic_padding.Settings) and each flag of _FLAG_NAMES.
Settings = collections.namedtuple(
    "Settings", ["model", "run_config", "train_padding", "predict_padding", *_FLAG_NAMES]
)


def settings_from_flags():
    """Reads the flags once into Settings; refuses engine and padding flags that cannot
    work (UsageError naming the flag; each number's rule was checked as the command line
    was read)."""
    script_flags.check_padding_flags()
    return Settings(
        model=script_flags.model_settings_from_flags(),
        run_config=script_flags.run_config_from_flags(),
        train_padding=script_flags.padding_from_flags(is_training=True),
        predict_padding=script_flags.padding_from_flags(is_training=False),
        **{name: FLAGS[name].value for name in _FLAG_NAMES},
    )


def _check_flags(settings):
    """Checks the settings, config, vocabulary and checkpoint before anything is written;
    returns (bert_config, tokenizer) for ner.prepare, which reads the data."""
    if not (settings.do_train or settings.do_eval or settings.do_predict or settings.export_dir):
        raise UsageError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True "
            "(or --export_dir set)."
        )
    bert_config, tokenizer = checks.check_model(settings.model, settings.output_dir)
    startup_checks.check_new_output_dir(settings.export_dir, "--export_dir")
    return bert_config, tokenizer


def main(_):
    logging.set_verbosity(logging.INFO)
    settings = settings_from_flags()
    bert_config, tokenizer = _check_flags(settings)
    ner.run(ner.prepare(settings, bert_config, tokenizer), model_fn_builder)


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
