"""The SQuAD run, from checked settings to the files it writes.

run_squad.py reads its flags into Settings and checks them; these are the
steps after that: prepare (the run's Setup: the training questions read
and shuffled, the predict file read, the output directory checked, before
anything is written) and run (train, predict and score, export, in main's
order). The model comes from the script's model_fn_builder, so the head
and its model_fn are written once, in run_squad.py.
"""

import collections
import os
import random

from absl import logging

from ..engine import evaluation
from ..plumbing import eval_results
from ..plumbing.errors import UsageError
from ..plumbing.progress import Progress
from ..task_data import (
    dynamic_padding,
    squad_answers,
    squad_data,
    squad_features,
    squad_scoring,
)
from . import model_fns, output_dir_run, serving

# What prepare settles before any work, from the checked Settings: the model
# config and tokenizer, the shuffled training questions and the training and
# warm-up steps they make (else None), and the checked output directory
# (output_dir_run.OutputDir).
Setup = collections.namedtuple(
    "Setup",
    "settings bert_config tokenizer train_examples num_train_steps num_warmup_steps output",
)


def prepare(settings, bert_config, tokenizer):
    """The run's Setup, settled before anything is written: --train_file read and
    shuffled, --predict_file read (a malformed one fails now, not after training), its
    answers there if evaluation while training scores them, a checkpoint to export, and
    the output directory checked against earlier runs."""
    train_examples = num_train_steps = num_warmup_steps = None
    if settings.do_train:
        train_examples, num_train_steps, num_warmup_steps = _train_set(settings)
    if settings.do_predict:
        # Fail on a malformed predict file now, not after training.
        _read_examples(settings.predict_file, False, settings)
    if settings.eval_options is not None and _predict_file_golds(settings) is None:
        raise UsageError(
            f"--eval_every_n_steps scores the predictions on --predict_file, but "
            f"{settings.predict_file} has no gold answers"
        )
    if settings.export_dir and not settings.do_train:
        # Nothing to export: say so before predicting.
        serving.checkpoint_to_export(settings.output_dir, settings.model.init_checkpoint)
    head = {"cls/squad/output_weights": [2, bert_config.hidden_size], "cls/squad/output_bias": [2]}
    output = output_dir_run.check(
        settings.output_dir,
        output_dir_run.Run("SQuAD question answering", None, bert_config, head, None),
        settings.model,
        settings.allow_new_task_in_output_dir,
        settings.do_train,
        inputs=[("--train_file", settings.train_file), ("--predict_file", settings.predict_file)],
    )
    output.check_trained_model(
        {"--do_predict": settings.do_predict, "--export_dir": settings.export_dir}
    )
    return Setup(
        settings=settings,
        bert_config=bert_config,
        tokenizer=tokenizer,
        train_examples=train_examples,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        output=output,
    )


def _write_features(examples, tokenizer, settings, is_training, filename, output_fn=None):
    """Converts examples into windows written to `filename`; returns the FeatureWriter.

    Each feature also goes to `output_fn`, when given.
    """
    writer = squad_features.FeatureWriter(filename=filename, is_training=is_training)

    def process(feature):
        if output_fn is not None:
            output_fn(feature)
        writer.process_feature(feature)

    with writer:
        squad_features.convert_examples_to_features(
            examples=examples,
            tokenizer=tokenizer,
            max_seq_length=settings.model.max_seq_length,
            doc_stride=settings.doc_stride,
            max_query_length=settings.max_query_length,
            is_training=is_training,
            output_fn=process,
        )
    return writer


def _train(estimator, setup, predict_set=None):
    """Trains; with settings.eval_options, predicts on and scores predict_set as they ask.

    Returns the final checkpoint's scores when it was scored, else None.
    """
    settings, tokenizer = setup.settings, setup.tokenizer
    train_writer = _write_features(
        setup.train_examples,
        tokenizer,
        settings,
        True,
        os.path.join(settings.output_dir, "train.tf_record"),
    )
    logging.info("***** Running training *****")
    logging.info("  Num orig examples = %d", len(setup.train_examples))
    logging.info("  Num split examples = %d", train_writer.num_features)
    logging.info("  Batch size = %d", settings.train_batch_size)
    logging.info("  Num steps = %d", setup.num_train_steps)
    train_input_fn = squad_features.input_fn_builder(
        input_file=train_writer.filename,
        seq_length=settings.model.max_seq_length,
        is_training=True,
        drop_remainder=True,
        padding=settings.train_padding,
    )

    def evaluate(checkpoint_path, write_summaries):
        del write_summaries  # Predicting writes none.
        return _predict(estimator, tokenizer, settings, predict_set, checkpoint_path)

    return evaluation.train_and_evaluate(
        estimator,
        train_input_fn,
        setup.num_train_steps,
        evaluate,
        eval_results.write_eval_results,
        settings.eval_options,
    )


# --predict_file written to output_dir/eval.tf_record, ready to predict: its
# examples, their features (the windows) and the input_fn.
RecordSet = collections.namedtuple("RecordSet", ["examples", "features", "input_fn"])


def _read_examples(input_file, is_training, settings):
    return squad_data.read_squad_examples(
        input_file, is_training, settings.version_2_with_negative
    )


def _predict_set(tokenizer, settings):
    """Reads --predict_file and writes its features to output_dir/eval.tf_record."""
    eval_examples = _read_examples(settings.predict_file, False, settings)
    eval_features = []
    eval_writer = _write_features(
        eval_examples,
        tokenizer,
        settings,
        False,
        os.path.join(settings.output_dir, "eval.tf_record"),
        eval_features.append,
    )
    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(eval_examples))
    logging.info("  Num split examples = %d", len(eval_features))
    logging.info("  Batch size = %d", settings.predict_batch_size)

    predict_input_fn = squad_features.input_fn_builder(
        input_file=eval_writer.filename,
        seq_length=settings.model.max_seq_length,
        is_training=False,
        drop_remainder=False,
        padding=settings.predict_padding,
    )
    return RecordSet(eval_examples, eval_features, predict_input_fn)


def _predict(estimator, tokenizer, settings, predict_set=None, checkpoint_path=None):
    """Writes the predictions of one checkpoint (default: the newest in output_dir) and,
    when --predict_file has answers, eval_results.txt; returns the scores or None."""
    if predict_set is None:
        predict_set = _predict_set(tokenizer, settings)
    eval_examples, eval_features, predict_input_fn = predict_set
    # A cut batch has logits for its longest window's width only: keep each
    # window's word pieces. At full length every position is kept, as before.
    cut = settings.predict_padding != dynamic_padding.OFF
    num_tokens = {feature.unique_id: len(feature.tokens) for feature in eval_features}
    all_results = []
    progress = Progress("Predicting", len(eval_features), "windows")
    predictions = estimator.predict(input_fn=predict_input_fn, checkpoint_path=checkpoint_path)
    for result in predictions:
        progress.update(len(all_results))
        unique_id = int(result["unique_ids"])
        length = num_tokens[unique_id] if cut else None
        all_results.append(
            squad_answers.RawResult(
                unique_id=unique_id,
                start_logits=[float(x) for x in result["start_logits"].flat[:length]],
                end_logits=[float(x) for x in result["end_logits"].flat[:length]],
            )
        )

    output_dir = settings.output_dir
    predictions, _, null_odds = squad_answers.write_predictions(
        eval_examples,
        eval_features,
        all_results,
        settings.n_best_size,
        settings.max_answer_length,
        settings.model.do_lower_case,
        os.path.join(output_dir, "predictions.json"),
        os.path.join(output_dir, "nbest_predictions.json"),
        os.path.join(output_dir, "null_odds.json"),
        settings.version_2_with_negative,
        settings.null_score_diff_threshold,
        settings.verbose_logging,
    )
    return _score(predictions, null_odds, settings)


def _predict_file_golds(settings):
    """The gold answers of --predict_file by question id, or None (logged) if it has none."""
    predict_file = settings.predict_file
    if squad_data.read_simple_questions(predict_file) is not None:
        logging.info("%s is a plain question list: no answers to score.", predict_file)
        return None
    golds = squad_scoring.gold_answers(squad_data.load_squad_json(predict_file))
    if golds is not None and not settings.version_2_with_negative and not any(golds.values()):
        golds = None
    if golds is None:
        logging.info("No gold answers in %s: skipping EM/F1.", predict_file)
    return golds


def _score(predictions, null_odds, settings):
    """Scores the predictions against the predict file's answers, if it has them."""
    golds = _predict_file_golds(settings)
    if golds is None:
        return None
    if settings.version_2_with_negative:
        results = squad_scoring.squad_v2_scores(golds, predictions, na_probs=null_odds)
    else:
        results = squad_scoring.squad_v1_scores(golds, predictions)
    output_eval_file = os.path.join(settings.output_dir, "eval_results.txt")
    eval_results.write_eval_results(output_eval_file, results)
    return results


def _train_set(settings):
    """Reads --train_file, shuffled, and the steps it makes; refuses a file too small for one.

    Returns (examples, num_train_steps, num_warmup_steps).
    """
    train_examples = _read_examples(settings.train_file, True, settings)
    num_train_steps, num_warmup_steps = model_fns.train_steps(
        len(train_examples),
        settings.train_batch_size,
        settings.num_train_epochs,
        settings.warmup_proportion,
        settings.train_file,
        "usable training questions",
    )
    # Shuffling here spares the input pipeline a document-sized buffer.
    random.Random(12345).shuffle(train_examples)
    return train_examples, num_train_steps, num_warmup_steps


def run(setup, model_fn_builder):
    """Trains, predicts and scores, and exports as a checked Setup asks: run_squad.py's
    main after its checks, with its model_fn_builder."""
    settings, bert_config = setup.settings, setup.bert_config
    setup.output.start()
    estimator = model_fns.run_estimator(
        model_fn_builder,
        settings,
        bert_config,
        setup.num_train_steps,
        setup.num_warmup_steps,
        predict_batch_size=settings.predict_batch_size,
    )

    predict_set = final_result = None
    if settings.do_train:
        if settings.eval_options is not None:
            predict_set = _predict_set(setup.tokenizer, settings)
        final_result = _train(estimator, setup, predict_set)
        # The training questions are not needed again: let them go before predicting.
        setup = setup._replace(train_examples=None)
    if settings.do_predict and final_result is None:
        # (Evaluating while training already wrote the final checkpoint's files.)
        _predict(estimator, setup.tokenizer, settings, predict_set)
    if settings.export_dir:
        serving.export_model(
            model_fn_builder,
            settings.export_dir,
            serving.checkpoint_to_export(settings.output_dir, settings.model.init_checkpoint),
            bert_config,
            precision=settings.precision,
            use_xla=settings.run_config.use_xla,
        )
