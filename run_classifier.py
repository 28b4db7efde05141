"""Fine-tunes BERT on sentence (pair) classification: the GLUE tasks and XNLI.

Same flags, files and outputs as the original script: examples are read by a
per-task processor, turned into output_dir/{train,eval,predict}.tf_record,
trained with the runner, evaluated into eval_results.txt and predicted into
test_results.tsv. Beyond it: every GLUE task (STS-B as regression), each
task's official metric, a GLUE submission file and a SavedModel export; a
task of one's own without writing a processor (--task_name=custom: CSV, TSV
or JSON lines by column name, multi-label, class weights, long texts as
windows); and predictions on a plain text file.
"""

import collections
import json
import os

import tensorflow as tf
from absl import flags, logging

import atomic_write
import checkpoint_shapes
import classifier_data
import dynamic_padding
import eval_results
import features
import modeling
import optimization
import predictor
import runner
import runner_evaluation
import script_flags
import serving
import startup_checks
from errors import UsageError

FLAGS = flags.FLAGS

# Required parameters.
script_flags.define_model_flags()
script_flags.define_fine_tuning_flags()
script_flags.define_runner_flags()
script_flags.define_flags("data_dir", "task_name", "labels", "window_stride")

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
flags.DEFINE_float(
    "multi_label_threshold",
    0.5,
    "With --multi_label: a class is predicted when its probability is at least this.",
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

# Scripts imported later into the same process may redefine the shared names.


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
convert_single_example = classifier_data.convert_single_example
file_based_convert_examples_to_features = classifier_data.file_based_convert_examples_to_features


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
    (dynamic_padding.Settings) cuts and groups the batches.
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
        input_file, name_to_features, is_training, drop_remainder, padding
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
    weightings. `compute_dtype` goes to modeling.BertModel.

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
):
    """Returns the model_fn(features, labels, mode, params) for runner.Estimator.

    Train: Adam with weight decay via optimization.create_optimizer. Eval:
    eval_accuracy (single-label classification) and eval_loss, padding
    examples weighted 0. Predict: {"probabilities": [num_labels] floats}, or
    {"score": float} for regression. `multi_label` and `class_weights` go to
    create_model.
    """

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

        is_training = mode == runner.ModeKeys.TRAIN
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
            compute_dtype=params.get("compute_dtype"),
        )

        scaffold_fn = runner.warm_start_from_checkpoint(init_checkpoint, use_tpu)

        if mode == runner.ModeKeys.TRAIN:
            train_op = optimization.create_optimizer(
                total_loss,
                learning_rate,
                num_train_steps,
                num_warmup_steps,
                use_tpu,
                options=params.get("training_options"),
            )
            return runner.EstimatorSpec(
                mode=mode, loss=total_loss, train_op=train_op, scaffold_fn=scaffold_fn
            )

        if mode == runner.ModeKeys.EVAL:

            def metric_fn(per_example_loss, label_ids, logits, is_real_example):
                metrics = {
                    "eval_loss": tf.compat.v1.metrics.mean(
                        values=per_example_loss, weights=is_real_example
                    )
                }
                if not (is_regression or multi_label):
                    predictions = tf.argmax(logits, axis=-1, output_type=tf.int32)
                    metrics["eval_accuracy"] = tf.compat.v1.metrics.accuracy(
                        labels=label_ids, predictions=predictions, weights=is_real_example
                    )
                return metrics

            return runner.EstimatorSpec(
                mode=mode,
                loss=total_loss,
                eval_metrics=(
                    metric_fn,
                    [per_example_loss, label_ids, logits, is_real_example],
                ),
                scaffold_fn=scaffold_fn,
            )

        output_name = "score" if is_regression else "probabilities"
        predictions = dynamic_padding.pass_index(features, {output_name: probabilities})
        return runner.EstimatorSpec(mode=mode, predictions=predictions, scaffold_fn=scaffold_fn)

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


convert_examples_to_features = classifier_data.convert_examples_to_features

# Beyond the original, likewise from classifier_data: the other tasks, the
# custom-data reader, the official metrics and the output formats.
MnliMismatchedProcessor = classifier_data.MnliMismatchedProcessor
Sst2Processor = classifier_data.Sst2Processor
QqpProcessor = classifier_data.QqpProcessor
QnliProcessor = classifier_data.QnliProcessor
RteProcessor = classifier_data.RteProcessor
WnliProcessor = classifier_data.WnliProcessor
StsbProcessor = classifier_data.StsbProcessor
CustomProcessor = classifier_data.CustomProcessor
TsvRow = classifier_data.TsvRow
PROCESSORS = classifier_data.PROCESSORS
get_processor = classifier_data.get_processor
multi_hot = classifier_data.multi_hot
convert_example_windows = classifier_data.convert_example_windows
read_text_examples = classifier_data.read_text_examples
accuracy = classifier_data.accuracy
f1_score = classifier_data.f1_score
matthews_corrcoef = classifier_data.matthews_corrcoef
pearson_correlation = classifier_data.pearson_correlation
spearman_correlation = classifier_data.spearman_correlation
compute_metrics = classifier_data.compute_metrics
combine_windows = classifier_data.combine_windows
format_test_results = classifier_data.format_test_results
format_glue_submission = classifier_data.format_glue_submission
predictor_files = classifier_data.predictor_files


def export_saved_model(
    export_dir,
    checkpoint_path,
    bert_config,
    num_labels,
    max_seq_length,
    is_regression=False,
    multi_label=False,
    predictor_files=None,
    precision="fp32",
):
    """Exports the classifier in `checkpoint_path` as a SavedModel for serving.

    The "serving_default" signature takes input_ids, input_mask and
    segment_ids (int32 [batch, length], any length up to the model's
    max_position_embeddings: callers need not pad to `max_seq_length`, which
    is recorded for the Predictor only) and returns "probabilities"
    ([batch, num_labels], sigmoids with `multi_label`) or, for regression,
    "score" ([batch]). The graph is model_fn_builder's in PREDICT mode, with
    its Transformer layers computing in `precision` (its outputs float32),
    exported through runner.Estimator.export_saved_model as main does.
    `predictor_files` (see predictor_files) go to assets.extra/ for
    predictor.Predictor. `export_dir` must not exist; a checkpoint without
    the classifier's variables is a UsageError.
    """
    model_fn = model_fn_builder(
        bert_config, num_labels, None, 0.0, None, None, False, False,
        is_regression=is_regression, multi_label=multi_label,
    )  # fmt: skip
    config = runner.RunConfig(
        model_dir=os.path.dirname(os.path.abspath(checkpoint_path)), precision=precision
    )
    runner.Estimator(model_fn, config).export_saved_model(
        export_dir, serving.id_inputs, checkpoint_path, predictor_files
    )


# ---------------------------------------------------------------------------
# The run's steps, in main's order: each reads the flags it needs.

# What _check_flags settles before any work: the model config, the task's
# processor and label names (None for regression), the tokenizer, the
# runner's config and evaluation options, the examples of each split the
# flags ask for (else None), the classes' loss weights (else None) and the
# training and warm-up steps (else None) and the examples of
# --predict_text_file (else None).
Setup = collections.namedtuple(
    "Setup",
    "bert_config processor label_list tokenizer run_config eval_options train_examples "
    "eval_examples predict_examples class_weights num_train_steps num_warmup_steps "
    "text_examples",
)

# A split written to output_dir/<name>.tf_record, ready to evaluate or
# predict: its examples (TPU padding last), how many are real, its input_fn
# and steps, and each record's example index when long texts are cut into
# windows (else None).
RecordSet = collections.namedtuple(
    "RecordSet", ["examples", "num_actual", "input_fn", "steps", "owners"]
)


def _window_stride():
    """The stride of long-text windows, or None when texts are truncated."""
    if not FLAGS.long_text_windows:
        return None
    return FLAGS.window_stride or max(1, (FLAGS.max_seq_length - 2) // 2)


def _estimator(setup):
    """The runner.Estimator of the task's classifier."""
    model_fn = model_fn_builder(
        bert_config=setup.bert_config,
        num_labels=1 if setup.label_list is None else len(setup.label_list),
        init_checkpoint=FLAGS.init_checkpoint,
        learning_rate=FLAGS.learning_rate,
        num_train_steps=setup.num_train_steps,
        num_warmup_steps=setup.num_warmup_steps,
        use_tpu=FLAGS.use_tpu,
        use_one_hot_embeddings=FLAGS.use_tpu,
        is_regression=setup.label_list is None,
        multi_label=FLAGS.multi_label,
        class_weights=setup.class_weights,
    )
    return runner.Estimator(
        model_fn=model_fn,
        config=setup.run_config,
        train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size,
    )


def prepare_records(examples, name, batch_size, banner, setup):
    """Writes output_dir/<name>.tf_record from eval or predict `examples`; returns its RecordSet.

    With --use_tpu the examples are first padded to whole batches of
    `batch_size`. `banner` heads the lines logged about the set.
    """
    num_actual = len(examples)
    if FLAGS.use_tpu:
        # TPUs need full batches: pad with examples that weigh 0 in every metric.
        while len(examples) % batch_size != 0:
            examples.append(PaddingInputExample())
    path = os.path.join(FLAGS.output_dir, f"{name}.tf_record")
    window_stride = _window_stride()
    owners = file_based_convert_examples_to_features(
        examples, setup.label_list, FLAGS.max_seq_length, setup.tokenizer, path,
        multi_label=FLAGS.multi_label, window_stride=window_stride,
    )  # fmt: skip
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
        seq_length=FLAGS.max_seq_length,
        is_training=False,
        drop_remainder=bool(FLAGS.use_tpu),
        is_regression=setup.label_list is None,
        num_labels=len(setup.label_list) if FLAGS.multi_label else None,
        padding=script_flags.padding_from_flags(is_training=False),
    )
    steps = len(examples) // batch_size if FLAGS.use_tpu else None
    return RecordSet(examples, num_actual, input_fn, steps, owners if window_stride else None)


def _predict_outputs(estimator, input_fn, output_name, count, owners=None, checkpoint_path=None):
    """The first `count` predictions (padding examples come last and are dropped).

    With `owners` (the example index of each record, from long-text windows)
    the records of each example are averaged into one output per example.
    checkpoint_path: the weights to use (default: the newest in output_dir).
    """
    if owners is not None:
        num_records = sum(1 for owner in owners if owner < count)
        records = _predict_outputs(
            estimator, input_fn, output_name, num_records, checkpoint_path=checkpoint_path
        )
        return classifier_data.combine_windows(records, owners[:num_records], count)
    predictions = estimator.predict(input_fn=input_fn, checkpoint_path=checkpoint_path)
    # Batches grouped by length come back in input order.
    outputs = runner.first_predictions(
        dynamic_padding.in_input_order(predictions), output_name, count
    )
    return outputs


def evaluate_dev_set(
    estimator, dev_set, metric_names, label_list, output_name, multi_label, checkpoint_path=None
):
    """The eval_results.txt dict of one checkpoint (default: the newest in output_dir).

    The streaming metrics of the model_fn, then the task's official metrics
    (metric_names) and, for multi-label or windowed data, the scores over
    whole examples, all from predictions of the same checkpoint.
    """
    result = dict(
        estimator.evaluate(
            input_fn=dev_set.input_fn, steps=dev_set.steps, checkpoint_path=checkpoint_path
        )
    )
    real = dev_set.examples[: dev_set.num_actual]

    def outputs():
        return _predict_outputs(
            estimator, dev_set.input_fn, output_name, dev_set.num_actual, dev_set.owners,
            checkpoint_path=checkpoint_path,
        )  # fmt: skip

    if metric_names:
        # The official metrics need every prediction at once (Spearman does
        # not stream), so predict over the dev set and score it in numpy.
        result.update(classifier_data.official_metrics(metric_names, real, outputs(), label_list))
    if multi_label or dev_set.owners is not None:
        # Scores over whole examples, from each example's averaged windows.
        predictions = outputs()
        if dev_set.owners is not None and label_list is not None:
            result.update(
                classifier_data.window_metrics(predictions, real, label_list, multi_label)
            )
        if multi_label:
            gold = [multi_hot(e, label_list) for e in real]
            result.update(
                classifier_data.multi_label_metrics(gold, predictions, FLAGS.multi_label_threshold)
            )
    return result


def _train(estimator, setup, evaluate):
    """Writes output_dir/train.tf_record and trains, evaluating on the way if asked.

    Returns the results of the final checkpoint when training evaluated it,
    else None.
    """
    train_file = os.path.join(FLAGS.output_dir, "train.tf_record")
    file_based_convert_examples_to_features(
        setup.train_examples, setup.label_list, FLAGS.max_seq_length, setup.tokenizer,
        train_file, multi_label=FLAGS.multi_label, window_stride=_window_stride(),
    )  # fmt: skip
    logging.info("***** Running training *****")
    logging.info("  Num examples = %d", len(setup.train_examples))
    logging.info("  Batch size = %d", FLAGS.train_batch_size)
    logging.info("  Num steps = %d", setup.num_train_steps)
    train_input_fn = file_based_input_fn_builder(
        input_file=train_file,
        seq_length=FLAGS.max_seq_length,
        is_training=True,
        drop_remainder=True,
        is_regression=setup.label_list is None,
        num_labels=len(setup.label_list) if FLAGS.multi_label else None,
        padding=script_flags.padding_from_flags(is_training=True),
    )
    return runner_evaluation.train_and_evaluate(
        estimator, train_input_fn, setup.num_train_steps, evaluate,
        eval_results.write_eval_results,
        setup.eval_options,
    )  # fmt: skip


def _predict(estimator, setup, output_name):
    """Predicts the test set into test_results.tsv (and --glue_submission_file)."""
    test_set = prepare_records(
        setup.predict_examples, "predict", FLAGS.predict_batch_size,
        "***** Running prediction*****", setup,
    )  # fmt: skip
    outputs = _predict_outputs(
        estimator, test_set.input_fn, output_name, test_set.num_actual, test_set.owners
    )
    logging.info("***** Predict results *****")
    atomic_write.write_text(
        os.path.join(FLAGS.output_dir, "test_results.tsv"), format_test_results(outputs)
    )
    if FLAGS.glue_submission_file:
        submission_dir = os.path.dirname(FLAGS.glue_submission_file)
        if submission_dir:
            tf.io.gfile.makedirs(submission_dir)
        atomic_write.write_text(
            FLAGS.glue_submission_file, format_glue_submission(outputs, setup.label_list)
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


def predict_text_file(estimator, tokenizer, label_list, output_name, multi_label, examples=None):
    """Classifies --predict_text_file (its `examples`, when already read) into
    output_dir/text_predictions.jsonl."""
    if examples is None:
        examples = read_text_examples(FLAGS.predict_text_file, label_list, multi_label)
    feature_list, owners = classifier_data.convert_examples_with_owners(
        examples, label_list, FLAGS.max_seq_length, tokenizer, multi_label, _window_stride()
    )
    if label_list is None:
        label_shape, label_dtype = [], tf.float32
    else:
        label_shape, label_dtype = ([len(label_list)] if multi_label else []), tf.int32
    input_fn = _text_input_fn(
        feature_list,
        FLAGS.max_seq_length,
        label_shape,
        label_dtype,
        script_flags.padding_from_flags(is_training=False),
    )
    logging.info("***** Predicting %d texts of %s *****", len(examples), FLAGS.predict_text_file)
    outputs = _predict_outputs(estimator, input_fn, output_name, len(examples), owners)
    records = predictor.prediction_records(
        [(e.text_a, e.text_b) for e in examples],
        outputs,
        label_list,
        multi_label,
        FLAGS.multi_label_threshold,
    )
    path = os.path.join(FLAGS.output_dir, "text_predictions.jsonl")
    atomic_write.write_text(
        path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    )
    logging.info("Wrote %d predictions to %s", len(records), path)


def _export(estimator, label_list):
    """Exports a checkpoint as a SavedModel in --export_dir, with the Predictor's files."""
    # As for predict: the newest checkpoint in output_dir, else init_checkpoint
    # (e.g. a classifier fine-tuned elsewhere).
    checkpoint_path = runner.newest_checkpoint(FLAGS.output_dir) or FLAGS.init_checkpoint
    if not checkpoint_path:
        raise UsageError(
            f"--export_dir: no checkpoint in --output_dir={FLAGS.output_dir} and no "
            "--init_checkpoint to export"
        )
    estimator.export_saved_model(
        FLAGS.export_dir,
        serving.id_inputs,
        checkpoint_path,
        assets_extra=predictor_files(
            FLAGS.vocab_file,
            FLAGS.do_lower_case,
            label_list,
            FLAGS.multi_label,
            FLAGS.multi_label_threshold,
            FLAGS.max_seq_length,
        ),
    )


# ---------------------------------------------------------------------------
# Checking the flags, then main.


def _check_file_flag(name):
    startup_checks.check_input_file(getattr(FLAGS, name), f"--{name}")


def _nonempty(examples, split):
    if not examples:
        raise UsageError(
            f"--data_dir={FLAGS.data_dir}: the {split} set of task {FLAGS.task_name} "
            "has no examples"
        )
    return examples


def _check_custom_flags(is_custom):
    """The flags of the user-data features, checked before any work."""
    if FLAGS.multi_label and not is_custom:
        raise UsageError("--multi_label needs --task_name=custom")
    if not 0 < FLAGS.multi_label_threshold < 1:
        raise UsageError(
            f"--multi_label_threshold={FLAGS.multi_label_threshold}: must be between 0 and 1"
        )
    if (
        FLAGS.long_text_windows
        and FLAGS.window_stride is not None
        and not 1 <= FLAGS.window_stride <= FLAGS.max_seq_length - 2
    ):
        raise UsageError(
            f"--window_stride={FLAGS.window_stride}: must be between 1 and max_seq_length - 2 "
            f"({FLAGS.max_seq_length - 2})"
        )
    if FLAGS.predict_text_file:
        _check_file_flag("predict_text_file")


def _custom_processor():
    """A CustomProcessor from the flags, its label set resolved.

    The labels come from --labels, else from output_dir/labels.txt of an
    earlier run, else from the training file (sorted); a --labels that
    differs from labels.txt is an error, as the checkpoint's class order
    follows labels.txt.
    """
    processor = CustomProcessor(
        text_a_column=FLAGS.text_a_column,
        text_b_column=FLAGS.text_b_column,
        label_column=FLAGS.label_column,
        multi_label=FLAGS.multi_label,
        label_delimiter=FLAGS.label_delimiter,
    )
    labels_path = os.path.join(FLAGS.output_dir, classifier_data.LABELS_FILE)
    saved = None
    if tf.io.gfile.exists(labels_path):
        saved = classifier_data.read_labels_file(labels_path)
    if FLAGS.labels:
        labels, source = classifier_data.parse_labels_flag(FLAGS.labels), "--labels"
        if saved is not None and saved != labels:
            raise UsageError(
                f"--labels={FLAGS.labels} differs from {labels_path} ({','.join(saved)}) of an "
                "earlier run; use another --output_dir"
            )
    elif saved is not None:
        labels, source = saved, labels_path
    else:
        if not FLAGS.do_train:
            try:
                classifier_data.find_split_file(FLAGS.data_dir, "train")
            except ValueError:
                raise UsageError(
                    f"--task_name=custom: no {labels_path} and no train file in "
                    f"--data_dir={FLAGS.data_dir} to take the labels from; pass --labels"
                ) from None
        train_examples = processor.get_train_examples(FLAGS.data_dir)
        labels = classifier_data.labels_from_examples(train_examples, FLAGS.multi_label)
        train_file = classifier_data.find_split_file(FLAGS.data_dir, "train")
        source = f"{train_file} ({len(train_examples)} rows)"
    if len(labels) < (1 if FLAGS.multi_label else 2):
        found = ", ".join(labels) if labels else "none"
        raise UsageError(
            f"--task_name=custom: {source} gives the labels {found}; a classifier needs at "
            "least two labels"
        )
    processor.set_labels(labels)
    return processor


def _check_flags():
    """Checks the flags, config, checkpoints, vocabulary and data before anything is written.

    Every split the flags ask for is read here, so that a bad row stops the
    run before hours of training rather than after. Returns the run's Setup.
    """
    if not (
        FLAGS.do_train
        or FLAGS.do_eval
        or FLAGS.do_predict
        or FLAGS.export_dir
        or FLAGS.predict_text_file
    ):
        raise UsageError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True "
            "(or --export_dir or --predict_text_file set)."
        )
    if FLAGS.glue_submission_file and not FLAGS.do_predict:
        raise UsageError("--glue_submission_file needs --do_predict")
    eval_options = script_flags.evaluation_options_from_flags(
        FLAGS.do_train and FLAGS.do_eval, "--do_train and --do_eval"
    )

    script_flags.check_padding_flags()
    script_flags.check_batch_flags()
    bert_config, tokenizer = script_flags.check_model_flags()

    processor = get_processor(FLAGS.task_name)
    is_custom = isinstance(processor, CustomProcessor)
    _check_custom_flags(is_custom)
    if is_custom:
        processor = _custom_processor()
    label_list = processor.get_labels()
    if FLAGS.class_weights and label_list is None:
        raise UsageError(f"--class_weights: task {FLAGS.task_name} is a regression task")
    num_labels = 1 if label_list is None else len(label_list)
    if FLAGS.export_dir and tf.io.gfile.exists(FLAGS.export_dir):
        raise UsageError(f"--export_dir={FLAGS.export_dir} already exists; choose a new directory")
    checkpoint_shapes.check_head_of_newest_checkpoint(
        FLAGS.output_dir, num_labels, bert_config.hidden_size
    )
    run_config = script_flags.run_config_from_flags()

    train_examples = eval_examples = predict_examples = None
    num_train_steps = num_warmup_steps = None
    if FLAGS.do_train:
        train_examples = _nonempty(processor.get_train_examples(FLAGS.data_dir), "train")
    if FLAGS.do_eval:
        eval_examples = _nonempty(processor.get_dev_examples(FLAGS.data_dir), "dev")
    if FLAGS.do_predict:
        predict_examples = _nonempty(processor.get_test_examples(FLAGS.data_dir), "test")
    text_examples = None
    if FLAGS.predict_text_file:
        text_examples = read_text_examples(FLAGS.predict_text_file, label_list, FLAGS.multi_label)
    if FLAGS.do_train:
        num_train_steps, num_warmup_steps = script_flags.train_steps_from_flags(
            len(train_examples), f"--data_dir={FLAGS.data_dir}", "training examples"
        )

    class_weights = None
    if FLAGS.class_weights:
        class_weights = classifier_data.parse_class_weights(
            FLAGS.class_weights, label_list, train_examples, FLAGS.multi_label
        )
        logging.info("Class weights: %s", dict(zip(label_list, class_weights)))
    return Setup(
        bert_config, processor, label_list, tokenizer, run_config, eval_options,
        train_examples, eval_examples, predict_examples, class_weights,
        num_train_steps, num_warmup_steps, text_examples,
    )  # fmt: skip


def main(_):
    logging.set_verbosity(logging.INFO)

    setup = _check_flags()
    label_list = setup.label_list
    output_name = "score" if label_list is None else "probabilities"

    tf.io.gfile.makedirs(FLAGS.output_dir)
    labels_path = os.path.join(FLAGS.output_dir, classifier_data.LABELS_FILE)
    if isinstance(setup.processor, CustomProcessor) and not tf.io.gfile.exists(labels_path):
        atomic_write.write_text(labels_path, "".join(f"{name}\n" for name in label_list))

    estimator = _estimator(setup)

    dev_set = None
    if FLAGS.do_eval:
        dev_set = prepare_records(
            setup.eval_examples, "eval", FLAGS.eval_batch_size,
            "***** Running evaluation *****", setup,
        )  # fmt: skip

    def evaluate(checkpoint_path=None):
        return evaluate_dev_set(
            estimator, dev_set, setup.processor.metric_names, label_list, output_name,
            FLAGS.multi_label, checkpoint_path,
        )  # fmt: skip

    final_result = None
    if FLAGS.do_train:
        final_result = _train(estimator, setup, evaluate)

    if FLAGS.do_eval:
        result = final_result or evaluate()
        eval_results.write_eval_results(os.path.join(FLAGS.output_dir, "eval_results.txt"), result)

    if FLAGS.do_predict:
        _predict(estimator, setup, output_name)

    if FLAGS.predict_text_file:
        predict_text_file(
            estimator, setup.tokenizer, label_list, output_name, FLAGS.multi_label,
            setup.text_examples,
        )  # fmt: skip

    if FLAGS.export_dir:
        _export(estimator, label_list)


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("task_name")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
