"""Fine-tunes BERT on sentence (pair) classification: the GLUE tasks and XNLI.

Same flags, files and outputs as the original script: examples are read by a
per-task processor, turned into output_dir/{train,eval,predict}.tf_record,
trained with the engine, evaluated into eval_results.txt and predicted into
test_results.tsv. Beyond it: every GLUE task (STS-B as regression), each
task's official metric, a GLUE submission file and a SavedModel export; a
task of one's own without writing a processor (--task_name=custom: CSV, TSV
or JSON lines by column name, multi-label, class weights, long texts as
windows); and predictions on a plain text file.
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections
import json
import os

import tensorflow as tf
from absl import flags, logging

import modeling
from bert_lib import engine, script_flags
from bert_lib.bert_runs import checks, model_fns, output_dir_run
from bert_lib.engine import evaluation
from bert_lib.export import predictor, serving
from bert_lib.plumbing import atomic_write, eval_results, startup_checks
from bert_lib.plumbing.errors import UsageError
from bert_lib.task_data import (
    classifier_data,
    classifier_features,
    classifier_metrics,
    classifier_output,
    classifier_tasks,
    custom_data,
    dynamic_padding,
    features,
)

FLAGS = flags.FLAGS

# Required parameters.
script_flags.define_model_flags(__name__)
script_flags.define_fine_tuning_flags(__name__)
script_flags.define_engine_flags(__name__)
script_flags.define_flags("data_dir", "task_name", "labels", "window_stride", module=__name__)

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


def file_based_input_fn_builder(
    input_file,
    seq_length,
    is_training,
    drop_remainder,
    is_regression=False,
    num_labels=None,
    padding=dynamic_padding.OFF,
):
    """Returns an input_fn(params) reading `input_file` in batches of params["batch_size"].

    Training repeats the records and shuffles them (buffer 100); eval and
    predict read them once, in order. Integer features come out as int32;
    label_ids is float32 when `is_regression`, and [num_labels] 0/1 values
    when `num_labels` is given (multi-label records). `padding`
    (dynamic_padding.Settings) cuts and groups the batches; grouped training
    batches keep the mix of classes (dynamic_padding.stratified_order).
    """
    label_shape = [] if num_labels is None else [num_labels]
    name_to_features = {
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature(label_shape, tf.float32 if is_regression else tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }

    return features.record_input_fn_builder(
        input_file, name_to_features, is_training, drop_remainder, padding, label_key="label_ids"
    )


# Kept under the original's name for code that imports it from here.
_truncate_seq_pair = features.truncate_seq_pair


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
    are those of the whole model (to float32 round-off), but dropout in the
    last layer draws its masks over the rows computed, so a seeded run's
    numbers differ from one without it.

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
            output_layer = tf.nn.dropout(output_layer, rate=0.1)
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

        output_name = "score" if is_regression else "probabilities"
        predictions = dynamic_padding.pass_index(features, {output_name: probabilities})

        if mode == engine.ModeKeys.EVAL:
            metric_fn = _metric_fn_builder(with_accuracy=not (is_regression or multi_label))
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
    --export_dir comes here.
    """
    model_fn = model_fn_builder(
        bert_config,
        num_labels,
        None,
        0.0,
        None,
        None,
        False,
        False,
        is_regression=is_regression,
        multi_label=multi_label,
        precision=precision,
    )
    config = engine.RunConfig(
        model_dir=os.path.dirname(os.path.abspath(checkpoint_path)), use_xla=use_xla
    )
    engine.Estimator(model_fn, config).export_saved_model(
        export_dir, serving.id_inputs, checkpoint_path, predictor_files, cast_weights_once=True
    )


# ---------------------------------------------------------------------------
# The run's steps, in main's order: each takes the values it needs.

# The flags of this script read as they are (the model flags apart, in
# script_flags.ModelSettings).
_FLAG_NAMES = (
    "data_dir task_name output_dir do_train do_eval do_predict export_dir train_batch_size "
    "eval_batch_size predict_batch_size learning_rate num_train_epochs warmup_proportion use_tpu "
    "labels window_stride glue_submission_file text_a_column text_b_column label_column "
    "multi_label label_delimiter multi_label_threshold class_weights long_text_windows "
    "predict_text_file precision num_accumulation_steps allow_new_task_in_output_dir"
).split()

# What settings_from_flags reads: the model flags (model), the engine's
# config, evaluation while training (eval_options, or None), the padding of
# training and of eval / predict batches, and each flag of _FLAG_NAMES.
Settings = collections.namedtuple(
    "Settings",
    ["model", "run_config", "eval_options", "train_padding", "predict_padding", *_FLAG_NAMES],
)

# What prepare settles before any work, from the Settings: the model
# config, the task's processor and label names (None for regression), the
# tokenizer, the examples of each split and of --predict_text_file asked for
# (else None), the classes' loss weights and the training and warm-up steps
# (else None), and the checked output directory (output_dir_run.OutputDir).
Setup = collections.namedtuple(
    "Setup",
    "settings bert_config processor label_list tokenizer train_examples eval_examples "
    "predict_examples class_weights num_train_steps num_warmup_steps text_examples output",
)

# A split written to output_dir/<name>.tf_record, ready to evaluate or
# predict: its examples (TPU padding last), how many are real, its input_fn
# and steps, and each record's example index when long texts are cut into
# windows (else None).
RecordSet = collections.namedtuple(
    "RecordSet", ["examples", "num_actual", "input_fn", "steps", "owners"]
)


def _window_stride(settings):
    """The stride of long-text windows, or None when texts are truncated."""
    if not settings.long_text_windows:
        return None
    return settings.window_stride or max(1, (settings.model.max_seq_length - 2) // 2)


def _estimator(setup):
    """The engine.Estimator of the task's classifier."""
    settings, label_list = setup.settings, setup.label_list
    model_fn = model_fn_builder(
        bert_config=setup.bert_config,
        num_labels=1 if label_list is None else len(label_list),
        init_checkpoint=settings.model.init_checkpoint,
        learning_rate=settings.learning_rate,
        num_train_steps=setup.num_train_steps,
        num_warmup_steps=setup.num_warmup_steps,
        use_tpu=settings.use_tpu,
        use_one_hot_embeddings=settings.use_tpu,
        is_regression=label_list is None,
        multi_label=settings.multi_label,
        class_weights=setup.class_weights,
        precision=settings.precision,
        num_accumulation_steps=settings.num_accumulation_steps,
        # Cut training batches already draw other dropout masks than full
        # length, so training at [CLS] only costs such a run nothing more.
        pooled_output_only_in_training=settings.train_padding != dynamic_padding.OFF,
    )
    return engine.Estimator(
        model_fn=model_fn,
        config=settings.run_config,
        train_batch_size=settings.train_batch_size,
        eval_batch_size=settings.eval_batch_size,
        predict_batch_size=settings.predict_batch_size,
    )


def prepare_records(examples, name, batch_size, banner, setup):
    """Writes output_dir/<name>.tf_record from eval or predict `examples`; returns its RecordSet.

    On TPU the examples are first padded to whole batches of `batch_size`.
    `banner` heads the lines logged about the set.
    """
    settings = setup.settings
    max_seq_length = settings.model.max_seq_length
    num_actual = len(examples)
    if settings.use_tpu:
        # TPUs need full batches: pad with examples that weigh 0 in every metric.
        while len(examples) % batch_size != 0:
            examples.append(PaddingInputExample())
    path = os.path.join(settings.output_dir, f"{name}.tf_record")
    window_stride = _window_stride(settings)
    owners = file_based_convert_examples_to_features(
        examples,
        setup.label_list,
        max_seq_length,
        setup.tokenizer,
        path,
        multi_label=settings.multi_label,
        window_stride=window_stride,
    )
    logging.info(banner)
    logging.info(
        "  Num examples = %d (%d actual, %d padding)",
        len(examples),
        num_actual,
        len(examples) - num_actual,
    )
    logging.info("  Batch size = %d", batch_size)
    input_fn = file_based_input_fn_builder(
        input_file=path,
        seq_length=max_seq_length,
        is_training=False,
        drop_remainder=bool(settings.use_tpu),
        is_regression=setup.label_list is None,
        num_labels=len(setup.label_list) if settings.multi_label else None,
        padding=settings.predict_padding,
    )
    steps = len(examples) // batch_size if settings.use_tpu else None
    return RecordSet(examples, num_actual, input_fn, steps, owners if window_stride else None)


def _predict_outputs(estimator, input_fn, output_name, count, owners=None, checkpoint_path=None):
    """The first `count` predictions (padding examples come last and are dropped).

    With `owners` (the example index of each record, from long-text windows)
    the records of each example are averaged into one output per example.
    checkpoint_path: the weights to use (default: the newest in output_dir).
    """
    predictions = estimator.predict(input_fn=input_fn, checkpoint_path=checkpoint_path)
    return _example_outputs(predictions, output_name, count, owners)


def _example_outputs(predictions, output_name, count, owners=None):
    """output_name of the first `count` examples from per-record prediction dicts.

    Records come back in input order (batches grouped by length carry their
    index); long-text windows (`owners`) are averaged into one output each.
    """
    ordered = dynamic_padding.in_input_order(predictions)
    if owners is None:
        return engine.first_predictions(ordered, output_name, count)
    num_records = sum(1 for owner in owners if owner < count)
    records = engine.first_predictions(ordered, output_name, num_records)
    return classifier_metrics.combine_windows(records, owners[:num_records], count)


def evaluate_dev_set(
    estimator,
    dev_set,
    metric_names,
    label_list,
    output_name,
    multi_label,
    checkpoint_path=None,
    multi_label_threshold=0.5,
    write_summaries=True,
):
    """The eval_results.txt dict of one checkpoint (default: the newest in output_dir).

    The streaming metrics of the model_fn, then the task's official metrics
    (metric_names) and, for multi-label or windowed data, the scores over
    whole examples (a class predicted at `multi_label_threshold`). The
    official metrics need every output at once (Spearman does not stream):
    the evaluation gathers them in its one pass over the dev set, and they
    are scored in numpy. `write_summaries`: whether the evaluation writes
    the streaming metrics to TensorBoard (see Estimator.evaluate).
    """
    needs_outputs = bool(metric_names) or multi_label or dev_set.owners is not None
    evaluated = estimator.evaluate(
        input_fn=dev_set.input_fn,
        steps=dev_set.steps,
        checkpoint_path=checkpoint_path,
        with_predictions=needs_outputs,
        write_summaries=write_summaries,
    )
    if not needs_outputs:
        return dict(evaluated)
    result, records = evaluated
    result = dict(result)
    real = dev_set.examples[: dev_set.num_actual]
    predictions = _example_outputs(records, output_name, dev_set.num_actual, dev_set.owners)
    if metric_names:
        result.update(
            classifier_metrics.official_metrics(metric_names, real, predictions, label_list)
        )
    if multi_label or dev_set.owners is not None:
        # Scores over whole examples, from each example's averaged windows.
        if dev_set.owners is not None and label_list is not None:
            result.update(
                classifier_metrics.window_metrics(predictions, real, label_list, multi_label)
            )
        if multi_label:
            gold = [classifier_features.multi_hot(e, label_list) for e in real]
            result.update(
                classifier_metrics.multi_label_metrics(gold, predictions, multi_label_threshold)
            )
    return result


def _train(estimator, setup, evaluate):
    """Writes output_dir/train.tf_record and trains, evaluating on the way if asked.

    Returns the results of the final checkpoint when training evaluated it,
    else None.
    """
    settings = setup.settings
    train_file = os.path.join(settings.output_dir, "train.tf_record")
    file_based_convert_examples_to_features(
        setup.train_examples,
        setup.label_list,
        settings.model.max_seq_length,
        setup.tokenizer,
        train_file,
        multi_label=settings.multi_label,
        window_stride=_window_stride(settings),
    )
    logging.info("***** Running training *****")
    logging.info("  Num examples = %d", len(setup.train_examples))
    logging.info("  Batch size = %d", settings.train_batch_size)
    logging.info("  Num steps = %d", setup.num_train_steps)
    train_input_fn = file_based_input_fn_builder(
        input_file=train_file,
        seq_length=settings.model.max_seq_length,
        is_training=True,
        drop_remainder=True,
        is_regression=setup.label_list is None,
        num_labels=len(setup.label_list) if settings.multi_label else None,
        padding=settings.train_padding,
    )
    return evaluation.train_and_evaluate(
        estimator,
        train_input_fn,
        setup.num_train_steps,
        evaluate,
        eval_results.write_eval_results,
        settings.eval_options,
    )


def _predict(estimator, setup, output_name):
    """Predicts the test set into test_results.tsv (and --glue_submission_file)."""
    settings = setup.settings
    test_set = prepare_records(
        setup.predict_examples,
        "predict",
        settings.predict_batch_size,
        "***** Running prediction*****",
        setup,
    )
    outputs = _predict_outputs(
        estimator, test_set.input_fn, output_name, test_set.num_actual, test_set.owners
    )
    logging.info("***** Predict results *****")
    atomic_write.write_text(
        os.path.join(settings.output_dir, "test_results.tsv"),
        classifier_output.format_test_results(outputs),
    )
    submission_file = settings.glue_submission_file
    if submission_file:
        submission_dir = os.path.dirname(submission_file)
        if submission_dir:
            tf.io.gfile.makedirs(submission_dir)
        atomic_write.write_text(
            submission_file, classifier_output.format_glue_submission(outputs, setup.label_list)
        )


def _text_input_fn(feature_list, seq_length, label_shape, label_dtype, padding):
    """An input_fn streaming in-memory InputFeatures, in order, with no TFRecord."""

    def generate():
        for f in feature_list:
            yield {
                "input_ids": f.input_ids,
                "input_mask": f.input_mask,
                "segment_ids": f.segment_ids,
                "label_ids": f.label_id,
            }

    def input_fn(params):
        spec = {
            name: tf.TensorSpec([seq_length], tf.int32)
            for name in ("input_ids", "input_mask", "segment_ids")
        }
        spec["label_ids"] = tf.TensorSpec(label_shape, label_dtype)
        dataset = tf.data.Dataset.from_generator(generate, output_signature=spec)
        return dynamic_padding.batch(dataset, params["batch_size"], False, padding, False)

    return input_fn


def predict_text_file(estimator, setup, output_name):
    """Classifies the examples of --predict_text_file into output_dir/text_predictions.jsonl."""
    settings, label_list, examples = setup.settings, setup.label_list, setup.text_examples
    multi_label, max_seq_length = settings.multi_label, settings.model.max_seq_length
    feature_list, owners = classifier_features.convert_examples_with_owners(
        examples,
        label_list,
        max_seq_length,
        setup.tokenizer,
        multi_label,
        _window_stride(settings),
    )
    if label_list is None:
        label_shape, label_dtype = [], tf.float32
    else:
        label_shape, label_dtype = ([len(label_list)] if multi_label else []), tf.int32
    input_fn = _text_input_fn(
        feature_list, max_seq_length, label_shape, label_dtype, settings.predict_padding
    )
    logging.info(
        "***** Predicting %d texts of %s *****", len(examples), settings.predict_text_file
    )
    outputs = _predict_outputs(estimator, input_fn, output_name, len(examples), owners)
    records = predictor.prediction_records(
        [(e.text_a, e.text_b) for e in examples],
        outputs,
        label_list,
        multi_label,
        settings.multi_label_threshold,
    )
    path = os.path.join(settings.output_dir, "text_predictions.jsonl")
    atomic_write.write_text(
        path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    )
    logging.info("Wrote %d predictions to %s", len(records), path)


def _export(setup):
    """Exports a checkpoint as a SavedModel in --export_dir, with the Predictor's files.

    As for predict: the newest checkpoint in output_dir, else
    init_checkpoint (e.g. a classifier fine-tuned elsewhere).
    """
    settings, label_list, model = setup.settings, setup.label_list, setup.settings.model
    checkpoint_path = engine.newest_checkpoint(settings.output_dir) or model.init_checkpoint
    if not checkpoint_path:
        raise UsageError(
            f"--export_dir: no checkpoint in --output_dir={settings.output_dir} and no "
            "--init_checkpoint to export"
        )
    files = classifier_output.predictor_files(
        model.vocab_file,
        model.do_lower_case,
        label_list,
        settings.multi_label,
        settings.multi_label_threshold,
        model.max_seq_length,
    )
    export_saved_model(
        settings.export_dir,
        checkpoint_path,
        setup.bert_config,
        1 if label_list is None else len(label_list),
        is_regression=label_list is None,
        multi_label=settings.multi_label,
        predictor_files=files,
        precision=settings.precision,
        use_xla=settings.run_config.use_xla,
    )


# ---------------------------------------------------------------------------
# Reading and checking the flags, then main.


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


def _nonempty(examples, split, settings):
    if not examples:
        raise UsageError(
            f"--data_dir={settings.data_dir}: the {split} set of task {settings.task_name} "
            "has no examples"
        )
    return examples


def _check_custom_flags(settings, is_custom):
    """The flags of the user-data features, checked before any work."""
    if settings.multi_label and not is_custom:
        raise UsageError("--multi_label needs --task_name=custom")
    if not 0 < settings.multi_label_threshold < 1:
        raise UsageError(
            f"--multi_label_threshold={settings.multi_label_threshold}: must be between 0 and 1"
        )
    max_seq_length = settings.model.max_seq_length
    if (
        settings.long_text_windows
        and settings.window_stride is not None
        and not 1 <= settings.window_stride <= max_seq_length - 2
    ):
        raise UsageError(
            f"--window_stride={settings.window_stride}: must be between 1 and max_seq_length - 2 "
            f"({max_seq_length - 2})"
        )
    if settings.predict_text_file:
        startup_checks.check_input_file(settings.predict_text_file, "--predict_text_file")


def _custom_processor(settings):
    """A CustomProcessor as the settings say, its label set resolved
    (custom_data.resolve_labels)."""
    processor = custom_data.CustomProcessor(
        text_a_column=settings.text_a_column,
        text_b_column=settings.text_b_column,
        label_column=settings.label_column,
        multi_label=settings.multi_label,
        label_delimiter=settings.label_delimiter,
    )
    custom_data.resolve_labels(
        processor, settings.data_dir, settings.output_dir, settings.labels, settings.do_train
    )
    return processor


def _read_splits(settings, processor, label_list):
    """The examples of the splits and of --predict_text_file asked for (else None each)."""
    data_dir = settings.data_dir
    train = dev = test = texts = None
    if settings.do_train:
        train = _nonempty(processor.get_train_examples(data_dir), "train", settings)
    if settings.do_eval:
        dev = _nonempty(processor.get_dev_examples(data_dir), "dev", settings)
    if settings.do_predict:
        test = _nonempty(processor.get_test_examples(data_dir), "test", settings)
    if settings.predict_text_file:
        texts = classifier_features.read_text_examples(
            settings.predict_text_file, label_list, settings.multi_label
        )
    every = [e for split in (train, dev, test, texts) for e in split or ()]
    features.check_room_for_pairs(every, settings.model.max_seq_length, "the data")
    return train, dev, test, texts


def _check_flags(settings):
    """Checks the flags, and the config, checkpoint and vocabulary they name, before
    anything is written; returns (bert_config, tokenizer) for prepare."""
    check_task_flags(settings)
    return checks.check_model(settings.model, settings.output_dir)


def check_task_flags(settings):
    """The flags of the task and its outputs, checked before any work (this script's and
    run_classifier_with_tfhub.py's)."""
    if not (
        settings.do_train
        or settings.do_eval
        or settings.do_predict
        or settings.export_dir
        or settings.predict_text_file
    ):
        raise UsageError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True "
            "(or --export_dir or --predict_text_file set)."
        )
    if settings.glue_submission_file and not settings.do_predict:
        raise UsageError("--glue_submission_file needs --do_predict")
    if settings.glue_submission_file:
        startup_checks.check_output_file(settings.glue_submission_file, "--glue_submission_file")
    processor = classifier_tasks.get_processor(settings.task_name)
    _check_custom_flags(settings, isinstance(processor, custom_data.CustomProcessor))
    startup_checks.check_new_output_dir(settings.export_dir, "--export_dir")


def prepare(settings, bert_config, tokenizer):
    """The run's Setup, settled before anything is written: the task's processor and
    labels (resolved for custom data), the output directory checked against earlier
    runs, every split asked for read, the steps and class weights.

    Every split the settings ask for is read here, so that a bad row stops
    the run before hours of training rather than after. Both classifier
    scripts call it once their flags and model are checked (_check_flags).
    """
    processor = classifier_tasks.get_processor(settings.task_name)
    is_custom = isinstance(processor, custom_data.CustomProcessor)
    if is_custom:
        processor = _custom_processor(settings)
    label_list = processor.get_labels()
    if settings.class_weights and label_list is None:
        raise UsageError(f"--class_weights: task {settings.task_name} is a regression task")
    output = _check_output_dir(settings, bert_config, label_list, is_custom)
    train_examples, eval_examples, predict_examples, text_examples = _read_splits(
        settings, processor, label_list
    )
    num_train_steps = num_warmup_steps = None
    if settings.do_train:
        num_train_steps, num_warmup_steps = model_fns.train_steps(
            len(train_examples),
            settings.train_batch_size,
            settings.num_train_epochs,
            settings.warmup_proportion,
            f"--data_dir={settings.data_dir}",
        )
    output.check_trained_model(
        {
            "--do_eval": settings.do_eval,
            "--do_predict": settings.do_predict,
            "--predict_text_file": settings.predict_text_file,
            "--export_dir": settings.export_dir,
        }
    )
    class_weights = None
    if settings.class_weights:
        class_weights = custom_data.parse_class_weights(
            settings.class_weights, label_list, train_examples, settings.multi_label
        )
        logging.info("Class weights: %s", dict(zip(label_list, class_weights)))
    return Setup(
        settings=settings,
        bert_config=bert_config,
        processor=processor,
        label_list=label_list,
        tokenizer=tokenizer,
        train_examples=train_examples,
        eval_examples=eval_examples,
        predict_examples=predict_examples,
        class_weights=class_weights,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        text_examples=text_examples,
        output=output,
    )


def _check_output_dir(settings, bert_config, label_list, is_custom):
    """--output_dir's earlier run must be this run (output_dir_run); returns its OutputDir."""
    num_labels = 1 if label_list is None else len(label_list)
    head = {"output_weights": [num_labels, bert_config.hidden_size], "output_bias": [num_labels]}
    run = output_dir_run.Run(
        f"classification --task_name={settings.task_name.lower()}",
        label_list,
        bert_config,
        head,
        is_custom,
    )
    return output_dir_run.check(
        settings.output_dir,
        run,
        settings.model,
        settings.allow_new_task_in_output_dir,
        settings.do_train,
        inputs=[
            *output_dir_run.directory_files("--data_dir", settings.data_dir),
            ("--predict_text_file", settings.predict_text_file),
        ],
        outputs=[("--glue_submission_file", settings.glue_submission_file)],
    )


def run(setup):
    """Trains, evaluates, predicts and exports as a checked Setup asks (main's work
    after the checks; run_classifier_with_tfhub's too)."""
    settings, label_list = setup.settings, setup.label_list
    output_name = "score" if label_list is None else "probabilities"

    setup.output.start()
    labels_path = os.path.join(settings.output_dir, custom_data.LABELS_FILE)
    is_custom = isinstance(setup.processor, custom_data.CustomProcessor)
    if is_custom and not tf.io.gfile.exists(labels_path):
        atomic_write.write_text(labels_path, "".join(f"{name}\n" for name in label_list))

    estimator = _estimator(setup)

    dev_set = None
    if settings.do_eval:
        dev_set = prepare_records(
            setup.eval_examples,
            "eval",
            settings.eval_batch_size,
            "***** Running evaluation *****",
            setup,
        )

    def evaluate(checkpoint_path=None, write_summaries=True):
        return evaluate_dev_set(
            estimator,
            dev_set,
            setup.processor.metric_names,
            label_list,
            output_name,
            settings.multi_label,
            checkpoint_path,
            settings.multi_label_threshold,
            write_summaries,
        )

    final_result = None
    if settings.do_train:
        final_result = _train(estimator, setup, evaluate)

    if settings.do_eval:
        result = final_result or evaluate()
        eval_results.write_eval_results(
            os.path.join(settings.output_dir, "eval_results.txt"), result
        )

    if settings.do_predict:
        _predict(estimator, setup, output_name)

    if settings.predict_text_file:
        predict_text_file(estimator, setup, output_name)

    if settings.export_dir:
        _export(setup)


def main(_):
    logging.set_verbosity(logging.INFO)
    settings = settings_from_flags()
    bert_config, tokenizer = _check_flags(settings)
    run(prepare(settings, bert_config, tokenizer))


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("task_name")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
