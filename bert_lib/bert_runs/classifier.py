"""The classifier's run, from checked settings to the files it writes.

run_classifier.py and run_classifier_with_tfhub.py read their flags into
Settings and check them; these are the steps they share after that:
check_task_flags (the task's flags, before any work), prepare (the
run's Setup: the task's kind and labels, the output directory checked,
every split read, before anything is written) and run (train, evaluate,
predict, export, in main's order). The model comes from the script: each
step that builds one takes the script's model_fn_builder, so the head and
its model_fn are written once, in run_classifier.py.
"""

import collections
import json
import os

import tensorflow as tf
from absl import logging

from .. import engine
from ..engine import evaluation
from ..plumbing import atomic_write, eval_results, startup_checks
from ..plumbing.errors import UsageError
from ..task_data import (
    classifier_data,
    classifier_features,
    classifier_metrics,
    classifier_output,
    classifier_tasks,
    custom_data,
    dynamic_padding,
    label_set,
    text_pairs,
)
from . import model_fns, onnx_export, output_dir_run, serving

# What prepare settles before any work, from the Settings: the model
# config, the task's processor (its is_custom: the user's data, whose labels
# are kept in labels.txt) and its kind (classifier_tasks.TaskKind: the
# labels, regression or multi-label), the tokenizer, the examples of each
# split and of --predict_text_file asked for (else None), the classes' loss
# weights and the training and warm-up steps (else None), and the checked
# output directory (output_dir_run.OutputDir).
Setup = collections.namedtuple(
    "Setup",
    "settings bert_config processor task tokenizer train_examples eval_examples "
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
    return text_pairs.window_stride(settings.window_stride, settings.model.max_seq_length)


def estimator_of(setup, model_fn_builder):
    """The engine.Estimator of the task's classifier, whose model_fn `model_fn_builder`
    (run_classifier.model_fn_builder's parameters) builds."""
    settings, task = setup.settings, setup.task
    return model_fns.run_estimator(
        model_fn_builder,
        settings,
        setup.bert_config,
        setup.num_train_steps,
        setup.num_warmup_steps,
        eval_batch_size=settings.eval_batch_size,
        predict_batch_size=settings.predict_batch_size,
        num_labels=task.num_outputs,
        is_regression=task.is_regression,
        multi_label=task.multi_label,
        class_weights=setup.class_weights,
        # Cut training batches already draw other dropout masks than full
        # length, so training at [CLS] only costs such a run nothing more.
        pooled_output_only_in_training=settings.train_padding != dynamic_padding.OFF,
    )


def _input_fn(path, is_training, drop_remainder, padding, setup):
    """The input_fn over the records of `path`, as the task's kind reads them."""
    task = setup.task
    return classifier_features.file_based_input_fn_builder(
        input_file=path,
        seq_length=setup.settings.model.max_seq_length,
        is_training=is_training,
        drop_remainder=drop_remainder,
        is_regression=task.is_regression,
        num_labels=task.num_outputs if task.multi_label else None,
        padding=padding,
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
            examples.append(classifier_data.PaddingInputExample())
    path = os.path.join(settings.output_dir, f"{name}.tf_record")
    window_stride = _window_stride(settings)
    owners = classifier_features.file_based_convert_examples_to_features(
        examples,
        setup.task.labels,
        max_seq_length,
        setup.tokenizer,
        path,
        multi_label=setup.task.multi_label,
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
    input_fn = _input_fn(path, False, bool(settings.use_tpu), settings.predict_padding, setup)
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
    task,
    checkpoint_path=None,
    multi_label_threshold=0.5,
    write_summaries=True,
):
    """The eval_results.txt dict of one checkpoint (default: the newest in output_dir).

    `task` is the run's classifier_tasks.TaskKind.

    The streaming metrics of the model_fn, then the task's official metrics
    (metric_names) and, for multi-label or windowed data, the scores over
    whole examples (a class predicted at `multi_label_threshold`). The
    official metrics need every output at once (Spearman does not stream):
    the evaluation gathers them in its one pass over the dev set, and they
    are scored in numpy. `write_summaries`: whether the evaluation writes
    the streaming metrics to TensorBoard (see Estimator.evaluate).
    """
    label_list, multi_label = task.labels, task.multi_label
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
    predictions = _example_outputs(records, task.output_name, dev_set.num_actual, dev_set.owners)
    if metric_names:
        result.update(classifier_metrics.official_metrics(metric_names, real, predictions, task))
    if multi_label or dev_set.owners is not None:
        # Scores over whole examples, from each example's averaged windows.
        if dev_set.owners is not None and not task.is_regression:
            result.update(classifier_metrics.window_metrics(predictions, real, task))
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
    classifier_features.file_based_convert_examples_to_features(
        setup.train_examples,
        setup.task.labels,
        settings.model.max_seq_length,
        setup.tokenizer,
        train_file,
        multi_label=setup.task.multi_label,
        window_stride=_window_stride(settings),
    )
    logging.info("***** Running training *****")
    logging.info("  Num examples = %d", len(setup.train_examples))
    logging.info("  Batch size = %d", settings.train_batch_size)
    logging.info("  Num steps = %d", setup.num_train_steps)
    train_input_fn = _input_fn(train_file, True, True, settings.train_padding, setup)
    return evaluation.train_and_evaluate(
        estimator,
        train_input_fn,
        setup.num_train_steps,
        evaluate,
        eval_results.write_eval_results,
        settings.eval_options,
    )


def _predict(estimator, setup):
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
        estimator, test_set.input_fn, setup.task.output_name, test_set.num_actual, test_set.owners
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
            submission_file, classifier_output.format_glue_submission(outputs, setup.task)
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


def predict_text_file(estimator, setup):
    """Classifies the examples of --predict_text_file into output_dir/text_predictions.jsonl."""
    settings, task, examples = setup.settings, setup.task, setup.text_examples
    label_list, multi_label = task.labels, task.multi_label
    max_seq_length = settings.model.max_seq_length
    feature_list, owners = classifier_features.convert_examples_with_owners(
        examples,
        label_list,
        max_seq_length,
        setup.tokenizer,
        multi_label,
        _window_stride(settings),
    )
    if task.is_regression:
        label_shape, label_dtype = [], tf.float32
    else:
        label_shape, label_dtype = ([task.num_outputs] if multi_label else []), tf.int32
    input_fn = _text_input_fn(
        feature_list, max_seq_length, label_shape, label_dtype, settings.predict_padding
    )
    logging.info(
        "***** Predicting %d texts of %s *****", len(examples), settings.predict_text_file
    )
    outputs = _predict_outputs(estimator, input_fn, task.output_name, len(examples), owners)
    records = classifier_output.prediction_records(
        [(e.text_a, e.text_b) for e in examples],
        outputs,
        task,
        settings.multi_label_threshold,
    )
    path = os.path.join(settings.output_dir, "text_predictions.jsonl")
    atomic_write.write_text(
        path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    )
    logging.info("Wrote %d predictions to %s", len(records), path)


def _export(setup, model_fn_builder):
    """Exports a checkpoint as a SavedModel in --export_dir, with the Predictor's files.

    As for predict: the newest checkpoint in output_dir, else
    init_checkpoint (e.g. a classifier fine-tuned elsewhere).
    """
    settings, task, model = setup.settings, setup.task, setup.settings.model
    checkpoint_path = serving.checkpoint_to_export(settings.output_dir, model.init_checkpoint)
    files = classifier_output.predictor_files(
        model.vocab_file,
        model.do_lower_case,
        task.labels,
        task.multi_label,
        settings.multi_label_threshold,
        model.max_seq_length,
    )
    export_saved_model(
        model_fn_builder,
        settings.export_dir,
        checkpoint_path,
        setup.bert_config,
        task.num_outputs,
        is_regression=task.is_regression,
        multi_label=task.multi_label,
        predictor_files=files,
        precision=settings.precision,
        use_xla=settings.run_config.use_xla,
        export_formats=onnx_export.parse_formats(settings.export_format),
    )


def export_saved_model(
    model_fn_builder,
    export_dir,
    checkpoint_path,
    bert_config,
    num_labels,
    is_regression=False,
    multi_label=False,
    predictor_files=None,
    precision="fp32",
    use_xla=False,
    export_formats=(onnx_export.SAVED_MODEL,),
):
    """run_classifier.export_saved_model, whose docstring says what is written, with
    the script's `model_fn_builder` (run_classifier.model_fn_builder's parameters)."""

    def write_saved_model(path, precision):
        serving.export_model(
            model_fn_builder,
            path,
            checkpoint_path,
            bert_config,
            precision=precision,
            use_xla=use_xla,
            predictor_files=predictor_files,
            num_labels=num_labels,
            is_regression=is_regression,
            multi_label=multi_label,
        )

    onnx_export.export(export_dir, write_saved_model, precision, export_formats)


# ---------------------------------------------------------------------------
# Checking the task and settling the run before any work.


def _nonempty(examples, split, settings):
    if not examples:
        raise UsageError(
            f"--data_dir={settings.data_dir}: the {split} set of task {settings.task_name} "
            "has no examples"
        )
    return examples


def _check_custom_flags(settings, processor):
    """The flags of the user-data features, checked before any work."""
    if settings.multi_label and not processor.is_custom:
        raise UsageError("--multi_label needs --task_name=custom")
    _window_stride(settings)
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


def _read_splits(settings, processor, task):
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
        texts = classifier_features.read_text_examples(settings.predict_text_file, task)
    every = [e for split in (train, dev, test, texts) for e in split or ()]
    text_pairs.check_room_for_pairs(every, settings.model.max_seq_length, "the data")
    return train, dev, test, texts


def check_task_flags(settings):
    """The flags of the task and its outputs, checked before any work (run_classifier.py's
    and run_classifier_with_tfhub.py's); returns the task's processor for prepare."""
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
    _check_custom_flags(settings, processor)
    startup_checks.check_new_output_dir(settings.export_dir, "--export_dir")
    onnx_export.check_export(
        onnx_export.parse_formats(settings.export_format), settings.export_dir
    )
    return processor


def prepare(settings, processor, bert_config, tokenizer):
    """The run's Setup, settled before anything is written: the task's kind and labels
    (resolved for custom data), the output directory checked against earlier runs,
    every split asked for read, the steps and class weights.

    `processor` is check_task_flags'. Every split the settings ask for is
    read here, so that a bad row stops the run before hours of training
    rather than after. Both classifier scripts call it once their flags and
    model are checked (their _check_flags).
    """
    if processor.is_custom:
        processor = _custom_processor(settings)
    task = classifier_tasks.processor_task_kind(processor)
    if settings.class_weights and task.is_regression:
        raise UsageError(f"--class_weights: task {settings.task_name} is a regression task")
    output = _check_output_dir(settings, bert_config, task, processor.is_custom)
    train_examples, eval_examples, predict_examples, text_examples = _read_splits(
        settings, processor, task
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
            settings.class_weights, task.labels, train_examples, task.multi_label
        )
        logging.info("Class weights: %s", dict(zip(task.labels, class_weights)))
    return Setup(
        settings=settings,
        bert_config=bert_config,
        processor=processor,
        task=task,
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


def _check_output_dir(settings, bert_config, task, is_custom):
    """--output_dir's earlier run must be this run (output_dir_run); returns its OutputDir."""
    num_labels = task.num_outputs
    head = {"output_weights": [num_labels, bert_config.hidden_size], "output_bias": [num_labels]}
    run = output_dir_run.Run(
        f"classification --task_name={settings.task_name.lower()}",
        task.labels,
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


def run(setup, model_fn_builder):
    """Trains, evaluates, predicts and exports as a checked Setup asks: the main of
    run_classifier.py and of run_classifier_with_tfhub.py after their checks, with the
    script's model_fn_builder (run_classifier.model_fn_builder's parameters)."""
    settings, task = setup.settings, setup.task

    setup.output.start()
    if setup.processor.is_custom:
        label_set.save(settings.output_dir, task.labels)

    estimator = estimator_of(setup, model_fn_builder)

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
            task,
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
        _predict(estimator, setup)

    if settings.predict_text_file:
        predict_text_file(estimator, setup)

    if settings.export_dir:
        _export(setup, model_fn_builder)
