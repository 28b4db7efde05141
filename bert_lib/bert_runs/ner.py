"""The named-entity run, from checked settings to the files it writes.

run_ner.py reads its flags into Settings and checks them; these are the
steps after that: prepare (the run's Setup: every split read and its tags
checked, the tag set chosen, the output directory checked, before
anything is written) and run (train, evaluate, predict, export, in main's
order). The model comes from the script's model_fn_builder, so the head
and its model_fn are written once, in run_ner.py.
"""

import collections
import os

from absl import logging

from .. import engine
from ..plumbing import atomic_write, eval_results
from ..plumbing.errors import UsageError
from ..task_data import dynamic_padding, label_set, ner_data, text_pairs
from . import model_fns, output_dir_run, serving

# What prepare settles before any work: the settings, the config, the window
# stride, the tag set, the tokenizer
# and each split's (path, examples), (None, None) when not run, and the checked
# output directory (output_dir_run.OutputDir).
Setup = collections.namedtuple(
    "Setup",
    [
        "settings",
        "bert_config",
        "window_stride",
        "label_list",
        "tokenizer",
        "train",
        "eval",
        "predict",
        "output",
    ],
)


def prepare(settings, bert_config, tokenizer):
    """The run's Setup, settled before anything is written: every set the run needs
    read and every tag checked, so that a bad line stops the run before training rather
    than after; the tag set chosen; the output directory checked against earlier runs."""
    window_stride = text_pairs.window_stride(settings.window_stride, settings.model.max_seq_length)

    nothing = (None, None)
    train = _read_split("train.txt", True, settings) if settings.do_train else nothing
    evaluation = _read_split("dev.txt", True, settings) if settings.do_eval else nothing
    predict = _read_split("test.txt", False, settings) if settings.do_predict else nothing
    label_list = choose_labels(train[1], train[0], settings)
    for path, examples in (train, evaluation):
        if examples is not None:
            ner_data.check_example_tags(examples, path, settings.tag_scheme, label_list)

    num_labels = len(label_list)
    head = {"output_weights": [num_labels, bert_config.hidden_size], "output_bias": [num_labels]}
    output = output_dir_run.check(
        settings.output_dir,
        output_dir_run.Run("tagging", label_list, bert_config, head, True),
        settings.model,
        settings.allow_new_task_in_output_dir,
        settings.do_train,
        inputs=output_dir_run.directory_files("--data_dir", settings.data_dir),
    )
    output.check_trained_model(
        {
            "--do_eval": settings.do_eval,
            "--do_predict": settings.do_predict,
            "--export_dir": settings.export_dir,
        }
    )
    return Setup(
        settings=settings,
        bert_config=bert_config,
        window_stride=window_stride,
        label_list=label_list,
        tokenizer=tokenizer,
        train=train,
        eval=evaluation,
        predict=predict,
        output=output,
    )


def _read_split(name, with_tags, settings):
    path = os.path.join(settings.data_dir, name)
    return path, ner_data.read_conll(path, settings.tag_column, with_tags=with_tags)


def choose_labels(train_examples, train_path, settings):
    """The tag set: --labels, else output_dir/labels.txt, else the training file's (O
    first, then the others sorted), by label_set.resolve's rule; every tag is checked
    against --tag_scheme. No source at all is a UsageError."""
    tag_scheme = settings.tag_scheme

    def from_training():
        if train_examples is None:
            raise UsageError(
                f"no tag set: --output_dir={settings.output_dir} has no labels.txt; train "
                "there first (--do_train) or give --labels"
            )
        ner_data.check_example_tags(train_examples, train_path, tag_scheme)
        tags = label_set.labels_from_examples(
            [example.labels for example in train_examples], first=[ner_data.OUTSIDE]
        )
        return tags, train_path

    label_list, _ = label_set.resolve(
        settings.output_dir,
        settings.labels,
        from_training,
        check=lambda tag: ner_data.check_tag(tag, tag_scheme),
        noun="tag",
    )
    return label_list


def _train(estimator, train_examples, train_features, num_train_steps, settings):
    train_file = os.path.join(settings.output_dir, "train.tf_record")
    ner_data.file_based_write_features(train_features, train_file)
    logging.info("***** Running training *****")
    logging.info("  Num sentences = %d", len(train_examples))
    logging.info("  Num windows = %d", len(train_features))
    logging.info("  Batch size = %d", settings.train_batch_size)
    logging.info("  Num steps = %d", num_train_steps)
    train_input_fn = ner_data.file_based_input_fn_builder(
        input_file=train_file,
        seq_length=settings.model.max_seq_length,
        is_training=True,
        drop_remainder=True,
        padding=settings.train_padding,
    )
    estimator.train(input_fn=train_input_fn, max_steps=num_train_steps)


def _tag_sentences(
    estimator, examples, convert, record_name, batch_size, label_list, settings, evaluate
):
    """Writes the windows of `examples` to output_dir/<record_name>.tf_record and tags them.

    Returns (evaluated, tags): with `evaluate`, the evaluation's dict (the
    streaming loss) from the same pass over the records that tagged them,
    else None; and each sentence's predicted tags, one per word.
    """
    max_seq_length, use_tpu = settings.model.max_seq_length, settings.use_tpu
    feature_list = convert(examples)
    num_actual = len(feature_list)
    if use_tpu:
        while len(feature_list) % batch_size != 0:
            feature_list.append(ner_data.padding_features(max_seq_length))
    record_file = os.path.join(settings.output_dir, f"{record_name}.tf_record")
    ner_data.file_based_write_features(feature_list, record_file)
    logging.info("  Num sentences = %d", len(examples))
    logging.info("  Num windows = %d (%d padding)", num_actual, len(feature_list) - num_actual)
    logging.info("  Batch size = %d", batch_size)
    input_fn = ner_data.file_based_input_fn_builder(
        input_file=record_file,
        seq_length=max_seq_length,
        is_training=False,
        drop_remainder=bool(use_tpu),
        padding=settings.predict_padding,
    )
    evaluated = None
    if evaluate:
        # On TPU the last batch is padded to size; every batch is evaluated.
        steps = len(feature_list) // batch_size if use_tpu else None
        evaluated, records = estimator.evaluate(
            input_fn=input_fn, steps=steps, with_predictions=True
        )
    else:
        records = estimator.predict(input_fn=input_fn)
    ordered = dynamic_padding.in_input_order(records)
    outputs = engine.first_predictions(ordered, "probabilities", num_actual)
    tags = ner_data.word_predictions(examples, feature_list, outputs, label_list)
    return evaluated, tags


def _evaluate(estimator, eval_examples, convert, label_list, settings):
    """Entity scores from the dev predictions (they need every word's tag at once)
    and the streaming loss, both of one pass, into output_dir/eval_results.txt."""
    logging.info("***** Running evaluation *****")
    evaluated, predicted = _tag_sentences(
        estimator,
        eval_examples,
        convert,
        "eval",
        settings.eval_batch_size,
        label_list,
        settings,
        evaluate=True,
    )
    result = ner_data.conll_scores(
        [example.labels for example in eval_examples],
        predicted,
        ner_data.entity_types(label_list),
    )
    result["eval_loss"] = evaluated["eval_loss"]
    result["global_step"] = evaluated["global_step"]
    eval_results.write_eval_results(os.path.join(settings.output_dir, "eval_results.txt"), result)


def _predict(estimator, predict_path, predict_examples, convert, label_list, settings):
    logging.info("***** Running prediction*****")
    _, predicted = _tag_sentences(
        estimator,
        predict_examples,
        convert,
        "predict",
        settings.predict_batch_size,
        label_list,
        settings,
        evaluate=False,
    )
    atomic_write.write_text(
        os.path.join(settings.output_dir, "test_predictions.txt"),
        ner_data.format_predictions(predict_path, predict_examples, predicted),
    )


def _export(estimator, settings):
    """As predict: the newest checkpoint in output_dir, else --init_checkpoint."""
    estimator.export_saved_model(
        settings.export_dir,
        serving.id_inputs,
        serving.checkpoint_to_export(settings.output_dir, settings.model.init_checkpoint),
        cast_weights_once=True,
        weights_as_constants=serving.weights_as_constants(settings.precision),
    )


def run(setup, model_fn_builder):
    """Trains, evaluates, tags and exports as a checked Setup asks: run_ner.py's main
    after its checks, with its model_fn_builder."""
    settings = setup.settings
    label_list = setup.label_list
    train_path, train_examples = setup.train
    max_seq_length = settings.model.max_seq_length

    def convert(examples):
        return ner_data.convert_examples_to_features(
            examples, label_list, max_seq_length, setup.window_stride, setup.tokenizer
        )

    train_features = num_train_steps = num_warmup_steps = None
    if settings.do_train:
        train_features = convert(train_examples)
        num_train_steps, num_warmup_steps = model_fns.train_steps(
            len(train_features),
            settings.train_batch_size,
            settings.num_train_epochs,
            settings.warmup_proportion,
            train_path,
            "training windows",
        )

    setup.output.start()
    label_set.save(settings.output_dir, label_list)

    estimator = model_fns.run_estimator(
        model_fn_builder,
        settings,
        setup.bert_config,
        num_train_steps,
        num_warmup_steps,
        eval_batch_size=settings.eval_batch_size,
        predict_batch_size=settings.predict_batch_size,
        num_labels=len(label_list),
    )

    if settings.do_train:
        _train(estimator, train_examples, train_features, num_train_steps, settings)

    if settings.do_eval:
        _evaluate(estimator, setup.eval[1], convert, label_list, settings)

    if settings.do_predict:
        predict_path, predict_examples = setup.predict
        _predict(estimator, predict_path, predict_examples, convert, label_list, settings)

    if settings.export_dir:
        _export(estimator, settings)
