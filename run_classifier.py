"""Fine-tunes BERT on sentence (pair) classification: the GLUE tasks and XNLI.

Same flags, files and outputs as the original script: examples are read by a
per-task processor, turned into output_dir/{train,eval,predict}.tf_record,
trained with the engine, evaluated into eval_results.txt and predicted into
test_results.tsv. Beyond it: every GLUE task (STS-B as regression), each
task's official metric, a GLUE submission file and a SavedModel export; a
task of one's own without writing a processor (--task_name=custom: CSV, TSV
or JSON lines by column name, multi-label, class weights, long texts as
windows); and predictions on a plain text file.

The data side without flags is in bert_lib/task_data/ (classifier_*.py,
custom_data.py); the steps of a run after the flags are checked (the
task's kind and labels, the splits read, training, evaluation,
prediction, export) are in bert_lib/bert_runs/classifier.py, which builds
the model with this script's model_fn_builder.
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections

import tensorflow as tf
from absl import flags, logging

import modeling
from bert_lib import engine, script_flags
from bert_lib.bert_runs import checks, classifier, model_fns
from bert_lib.task_data import (
    classifier_data,
    classifier_features,
    classifier_tasks,
    dynamic_padding,
    text_pairs,
)

FLAGS = flags.FLAGS

# Required parameters.
script_flags.define_model_flags(__name__)
script_flags.define_fine_tuning_flags(__name__)
script_flags.define_engine_flags(__name__)
script_flags.define_flags(
    "data_dir", "task_name", "labels", "window_stride", "export_format", module=__name__
)

# Other parameters.

# Beyond the original.
flags.DEFINE_string(
    "glue_submission_file",
    None,
    "With --do_predict: also write the test predictions here in the GLUE submission "
    "format (header 'index<TAB>prediction', the task's label names or STS-B scores).",
)

flags.DEFINE_string(
    "text_a_column",
    "text",
    "--task_name=custom: the column (or JSON key) holding the text of each example.",
)
flags.DEFINE_string(
    "text_b_column",
    None,
    "--task_name=custom: the column holding the second text of a pair; unset for single texts.",
)
flags.DEFINE_string(
    "label_column", "label", "--task_name=custom: the column holding the label(s)."
)
flags.DEFINE_bool(
    "multi_label",
    False,
    "--task_name=custom: each example has any number of labels (separated by "
    "--label_delimiter); one sigmoid per class and binary cross-entropy.",
)
flags.DEFINE_string("label_delimiter", "|", "With --multi_label: separates the labels of a row.")
script_flags.define_float(
    "multi_label_threshold",
    0.5,
    "With --multi_label: a class is predicted when its probability is at least this.",
    script_flags.Valid("between 0 and 1, both excluded", lambda value: 0 < value < 1),
    module=__name__,
)
flags.DEFINE_string(
    "class_weights",
    None,
    "Weights of the classes in the training loss: 'balanced' (n / (classes * count) "
    "from the training set) or 'label:weight,...' (unnamed classes weigh 1).",
)
flags.DEFINE_bool(
    "long_text_windows",
    False,
    "Cut a single text longer than max_seq_length into overlapping windows instead of "
    "truncating it: training uses every window, eval and predict average the windows' "
    "probabilities. Pairs are still truncated.",
)
flags.DEFINE_string(
    "predict_text_file",
    None,
    "Plain text to classify, one example a line ('text_a ||| text_b' for pairs); the "
    "predictions go to output_dir/text_predictions.jsonl.",
)


# The original's data classes, processors and conversions live in
# classifier_data (no flags, so other code can use them); the script keeps
# their names for code that imports them from here.
InputExample = classifier_data.InputExample
PaddingInputExample = classifier_data.PaddingInputExample
InputFeatures = classifier_data.InputFeatures
DataProcessor = classifier_data.DataProcessor
XnliProcessor = classifier_data.XnliProcessor
MnliProcessor = classifier_data.MnliProcessor
MrpcProcessor = classifier_data.MrpcProcessor
ColaProcessor = classifier_data.ColaProcessor
convert_single_example = classifier_features.convert_single_example
file_based_convert_examples_to_features = (
    classifier_features.file_based_convert_examples_to_features
)


file_based_input_fn_builder = classifier_features.file_based_input_fn_builder


# Kept under the original's name for code that imports it from here.
_truncate_seq_pair = text_pairs.truncate_seq_pair


def create_model(
    bert_config,
    is_training,
    input_ids,
    input_mask,
    segment_ids,
    labels,
    num_labels,
    use_one_hot_embeddings,
    is_regression=False,
    multi_label=False,
    class_weights=None,
    compute_dtype=None,
    pooled_output_only_in_training=False,
    dropout_keys=None,
):
    """Builds BERT plus a linear head on the pooled [CLS] output.

    The head is `output_weights` [num_labels, hidden] and `output_bias`
    [num_labels], at no variable scope, with 0.1 dropout on its input while
    training. Classification: softmax cross entropy. Regression (num_labels
    must be 1): the single logit is the score, loss is the squared error.
    Multi-label (`labels` [batch, num_labels] 0/1): one sigmoid per class,
    per-example loss the mean over classes of the binary cross-entropy.

    `class_weights` ([num_labels] floats) weigh the training loss only:
    loss = mean over examples of weight[label] * per_example_loss, or for
    multi-label the mean over examples and classes of weight[class] * BCE.
    per_example_loss stays unweighted, so eval_loss is comparable across
    weightings. `compute_dtype` goes to modeling.BertModel, which builds
    only what the pooled output needs when not training, and in training
    too with `pooled_output_only_in_training`: the loss and every gradient
    are those of the whole model (to float32 round-off), but tf.nn.dropout
    in the last layer draws its masks over the rows computed, so a seeded
    run's numbers differ from one without it. `dropout_keys`
    (modeling.DropoutKeys) keys every dropout's masks, the head's too, by
    example: the [CLS] row then draws the masks of the whole layer's.

    Returns:
      (loss, per_example_loss, logits, probabilities): probabilities is
      [batch, num_labels] softmax (sigmoid) output, or the [batch] scores for
      regression. loss and per_example_loss are None when `labels` is None.
    """
    model = modeling.BertModel(
        config=bert_config,
        is_training=is_training,
        input_ids=input_ids,
        input_mask=input_mask,
        token_type_ids=segment_ids,
        use_one_hot_embeddings=use_one_hot_embeddings,
        compute_dtype=compute_dtype,
        # The head reads the pooled output alone, so the last layer can be
        # computed at [CLS] only: the same outputs and gradients, less work.
        pooled_output_only=pooled_output_only_in_training or not is_training,
        dropout_keys=dropout_keys,
    )
    output_layer = model.get_pooled_output()
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
        logits = tf.matmul(output_layer, output_weights, transpose_b=True)
        logits = tf.nn.bias_add(logits, output_bias)

        if is_regression:
            probabilities = tf.squeeze(logits, axis=-1)
        elif multi_label:
            probabilities = tf.sigmoid(logits)
        else:
            probabilities = tf.nn.softmax(logits, axis=-1)

        if labels is None:
            return None, None, logits, probabilities

        if multi_label:
            return _multi_label_loss(logits, labels, class_weights) + (logits, probabilities)
        if is_regression:
            per_example_loss = tf.square(probabilities - tf.cast(labels, tf.float32))
        else:
            log_probs = tf.nn.log_softmax(logits, axis=-1)
            one_hot_labels = tf.one_hot(labels, depth=num_labels, dtype=tf.float32)
            per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
        if class_weights is None:
            loss = tf.reduce_mean(per_example_loss)
        else:
            weights = tf.gather(tf.constant(class_weights, tf.float32), labels)
            loss = tf.reduce_mean(weights * per_example_loss)
        return loss, per_example_loss, logits, probabilities


def _multi_label_loss(logits, labels, class_weights):
    """(loss, per_example_loss) of independent sigmoids; see create_model."""
    per_class = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(labels, tf.float32), logits=logits
    )
    per_example_loss = tf.reduce_mean(per_class, axis=-1)
    if class_weights is None:
        return tf.reduce_mean(per_example_loss), per_example_loss
    weighted = per_class * tf.constant(class_weights, tf.float32)
    return tf.reduce_mean(weighted), per_example_loss


def _metric_fn_builder(with_accuracy):
    """The evaluation's metric_fn: eval_loss over the real examples, and eval_accuracy
    `with_accuracy` (single-label classification)."""

    def metric_fn(per_example_loss, label_ids, logits, is_real_example):
        metrics = {
            "eval_loss": tf.compat.v1.metrics.mean(
                values=per_example_loss, weights=is_real_example
            )
        }
        if with_accuracy:
            predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
            metrics["eval_accuracy"] = tf.compat.v1.metrics.accuracy(
                labels=label_ids, predictions=predictions, weights=is_real_example
            )
        return metrics

    return metric_fn


def model_fn_builder(
    bert_config,
    num_labels,
    init_checkpoint,
    learning_rate,
    num_train_steps,
    num_warmup_steps,
    use_tpu,
    use_one_hot_embeddings,
    is_regression=False,
    multi_label=False,
    class_weights=None,
    precision="fp32",
    num_accumulation_steps=1,
    pooled_output_only_in_training=False,
):
    """Returns the model_fn(features, labels, mode, params) for engine.Estimator.

    Train: model_fns.train_spec (Adam with weight decay; num_accumulation_steps
    micro-batches a step). Eval: eval_accuracy (single-label classification)
    and eval_loss, padding examples weighted 0, and the predictions too (for
    the official metrics). Predict: {"probabilities": [num_labels] floats}, or
    {"score": float} for regression. `multi_label`, `class_weights` and
    `pooled_output_only_in_training` go to create_model; the Transformer
    layers compute in `precision`.
    """
    compute_dtype = model_fns.compute_dtype(precision)
    task = classifier_tasks.TaskKind(
        classifier_tasks.kind_of(is_regression, multi_label), None, num_labels
    )

    def model_fn(features, labels, mode, params):
        del labels  # Labels travel inside `features`.
        logging.info("*** Features ***")
        for name in sorted(features.keys()):
            logging.info("  name = %s, shape = %s", name, features[name].shape)

        input_ids = features["input_ids"]
        input_mask = features["input_mask"]
        segment_ids = features["segment_ids"]
        label_ids = features.get("label_ids")  # absent in an export's serving graph
        if "is_real_example" in features:
            is_real_example = tf.cast(features["is_real_example"], dtype=tf.float32)
        else:
            is_real_example = tf.ones(tf.shape(input_ids)[:1], dtype=tf.float32)

        is_training = mode == engine.ModeKeys.TRAIN
        total_loss, per_example_loss, logits, probabilities = create_model(
            bert_config,
            is_training,
            input_ids,
            input_mask,
            segment_ids,
            label_ids,
            num_labels,
            use_one_hot_embeddings,
            is_regression=is_regression,
            multi_label=multi_label,
            class_weights=class_weights,
            compute_dtype=compute_dtype,
            pooled_output_only_in_training=pooled_output_only_in_training,
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

        predictions = dynamic_padding.pass_index(features, {task.output_name: probabilities})

        if mode == engine.ModeKeys.EVAL:
            metric_fn = _metric_fn_builder(with_accuracy=task.has_accuracy)
            return engine.EstimatorSpec(
                mode=mode,
                loss=total_loss,
                eval_metrics=(metric_fn, [per_example_loss, label_ids, logits, is_real_example]),
                predictions=predictions,
                scaffold_fn=scaffold_fn,
            )

        return engine.EstimatorSpec(mode=mode, predictions=predictions, scaffold_fn=scaffold_fn)

    return model_fn


def input_fn_builder(features, seq_length, is_training, drop_remainder):
    """Returns an input_fn over in-memory `InputFeatures` (small data sets only).

    The whole set becomes graph constants, so this does not scale; the
    script itself reads TFRecords through file_based_input_fn_builder.
    """
    label_dtype = tf.float32 if any(isinstance(f.label_id, float) for f in features) else tf.int32
    num_examples = len(features)
    columns = {
        "input_ids": [f.input_ids for f in features],
        "input_mask": [f.input_mask for f in features],
        "segment_ids": [f.segment_ids for f in features],
        "label_ids": [f.label_id for f in features],
    }

    def input_fn(params):
        batch_size = params["batch_size"]
        tensors = {
            name: tf.constant(values, shape=[num_examples, seq_length], dtype=tf.int32)
            for name, values in columns.items()
            if name != "label_ids"
        }
        tensors["label_ids"] = tf.constant(
            columns["label_ids"], shape=[num_examples], dtype=label_dtype
        )
        d = tf.data.Dataset.from_tensor_slices(tensors)
        if is_training:
            d = d.repeat()
            d = d.shuffle(buffer_size=100)
        return d.batch(batch_size=batch_size, drop_remainder=drop_remainder)

    return input_fn


convert_examples_to_features = classifier_features.convert_examples_to_features


def export_saved_model(
    export_dir,
    checkpoint_path,
    bert_config,
    num_labels,
    is_regression=False,
    multi_label=False,
    predictor_files=None,
    precision="fp32",
    use_xla=False,
    export_formats=("saved_model",),
):
    """Exports the classifier in `checkpoint_path` as a SavedModel for serving.

    The "serving_default" signature takes input_ids, input_mask and
    segment_ids (int32 [batch, length], any length up to the model's
    max_position_embeddings) and returns "probabilities" ([batch,
    num_labels], sigmoids with `multi_label`) or, for regression, "score"
    ([batch]). The graph is model_fn_builder's in PREDICT mode, with its
    Transformer layers computing in `precision` (its outputs float32; at bf16
    or fp16 their weights stored in 16 bits) and with XLA if `use_xla`, as predict does.
    `predictor_files` (classifier_output.predictor_files) go to
    assets.extra/ for predictor.Predictor. `export_dir` must not exist; a
    checkpoint without the classifier's variables is a UsageError. main's
    --export_dir comes here. `export_formats` (onnx_export.parse_formats of
    --export_format) adds the ONNX files beside the SavedModel: model.onnx
    (float32 at any `precision`) and, with "onnx_int8", model_int8.onnx.
    """
    classifier.export_saved_model(
        model_fn_builder,
        export_dir,
        checkpoint_path,
        bert_config,
        num_labels,
        is_regression=is_regression,
        multi_label=multi_label,
        predictor_files=predictor_files,
        precision=precision,
        use_xla=use_xla,
        export_formats=export_formats,
    )


# ---------------------------------------------------------------------------
# Reading and checking the flags, then main.

# The flags of this script read as they are (the model flags apart, in
# script_flags.ModelSettings).
_FLAG_NAMES = (
    "data_dir task_name output_dir do_train do_eval do_predict export_dir train_batch_size "
    "eval_batch_size predict_batch_size learning_rate num_train_epochs warmup_proportion use_tpu "
    "labels window_stride glue_submission_file text_a_column text_b_column label_column "
    "multi_label label_delimiter multi_label_threshold class_weights long_text_windows "
    "predict_text_file precision num_accumulation_steps allow_new_task_in_output_dir "
    "export_format"
).split()

# What settings_from_flags reads: the model flags (model), the engine's
# config, evaluation while training (eval_options, or None), the padding of
# training and of eval / predict batches, and each flag of _FLAG_NAMES.
Settings = collections.namedtuple(
    "Settings",
    ["model", "run_config", "eval_options", "train_padding", "predict_padding", *_FLAG_NAMES],
)


def settings_from_flags():
    """Reads the flags once into Settings; refuses engine and padding flags that cannot
    work (UsageError naming the flag; each number's rule was checked as the command line
    was read)."""
    script_flags.check_padding_flags()
    return Settings(
        model=script_flags.model_settings_from_flags(),
        eval_options=script_flags.evaluation_options_from_flags(
            FLAGS.do_train and FLAGS.do_eval, "--do_train and --do_eval"
        ),
        run_config=script_flags.run_config_from_flags(),
        train_padding=script_flags.padding_from_flags(is_training=True),
        predict_padding=script_flags.padding_from_flags(is_training=False),
        **{name: FLAGS[name].value for name in _FLAG_NAMES},
    )


def _check_flags(settings):
    """Checks the flags, and the task, config, checkpoint and vocabulary they name, before
    anything is written; returns (processor, bert_config, tokenizer) for prepare."""
    processor = classifier.check_task_flags(settings)
    return (processor, *checks.check_model(settings.model, settings.output_dir))


def main(_):
    logging.set_verbosity(logging.INFO)
    settings = settings_from_flags()
    processor, bert_config, tokenizer = _check_flags(settings)
    setup = classifier.prepare(settings, processor, bert_config, tokenizer)
    classifier.run(setup, model_fn_builder)


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("task_name")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
