"""Fine-tunes BERT on SQuAD 1.1 and 2.0 and writes answer predictions.

Same flags, features, model head and output files as the 2018 script:
predictions.json, nbest_predictions.json and (v2) null_odds.json come out
identical for the same logits and input. After --do_predict on a file that
carries gold answers, the official SQuAD exact-match / F1 scores (v1.1 or
v2.0 rules) are computed in-process and written to eval_results.txt.

Beyond it: --predict_file may also be a plain list of {"context", "question"}
objects (JSON, or one a line in .jsonl) for answering questions outside
SQuAD's nesting, and --export_dir writes the model as a SavedModel giving
start and end logits.

The SQuAD data handling without flags (reading, windows, n-best answers,
scoring) is in squad_data.py; this script keeps the original's names for it.
"""

import collections
import os
import random

import tensorflow as tf
from absl import flags, logging

import dynamic_padding
import eval_results
import modeling
import optimization
import runner
import runner_evaluation
import script_flags
import serving
import squad_data
import startup_checks
import tokenization
from errors import UsageError
from features import record_input_fn_builder
from progress import Progress

FLAGS = flags.FLAGS

# Required parameters.
script_flags.define_model_flags()
script_flags.define_fine_tuning_flags(with_eval=False)
script_flags.define_runner_flags()

# Other parameters.
flags.DEFINE_string("train_file", None, "SQuAD json for training, e.g. train-v1.1.json.")
flags.DEFINE_string(
    "predict_file", None, "SQuAD json to predict on, e.g. dev-v1.1.json or test-v1.1.json."
)
flags.DEFINE_integer(
    "doc_stride", 128, "How far to slide the window when splitting a long document."
)
flags.DEFINE_integer(
    "max_query_length",
    64,
    "Maximum question length in WordPiece tokens; longer questions are cut.",
)
flags.DEFINE_integer(
    "n_best_size", 20, "How many n-best predictions to keep in nbest_predictions.json."
)
flags.DEFINE_integer(
    "max_answer_length",
    30,
    "Longest answer, in WordPiece tokens, that may be predicted (start and end are "
    "predicted independently, so this bounds the pair).",
)
flags.DEFINE_bool(
    "verbose_logging",
    False,
    "Log every data-processing warning; a number of them are expected on SQuAD.",
)
flags.DEFINE_bool(
    "version_2_with_negative",
    False,
    "The SQuAD examples include questions that have no answer (SQuAD 2.0).",
)
flags.DEFINE_float(
    "null_score_diff_threshold",
    0.0,
    "Predict no answer when null score - best non-null score exceeds this.",
)


# The original's data classes, reader and conversion live in squad_data.py,
# which takes every setting as an argument. Their names stay here for code that
# imports them from run_squad (the private ones too: user code imports those).
SquadExample = squad_data.SquadExample
InputFeatures = squad_data.InputFeatures


def read_squad_examples(input_file, is_training):
    """Reads a SQuAD json file into a list of SquadExample, as --version_2_with_negative says.

    See squad_data.read_squad_examples, which takes the setting as an argument.
    """
    return squad_data.read_squad_examples(input_file, is_training, FLAGS.version_2_with_negative)


convert_examples_to_features = squad_data.convert_examples_to_features
_improve_answer_span = squad_data.improve_answer_span
_check_is_max_context = squad_data.check_is_max_context
# Ours: the plain {"context", "question"} files --predict_file also takes.
read_simple_questions = squad_data.read_simple_questions


def create_model(
    bert_config,
    is_training,
    input_ids,
    input_mask,
    segment_ids,
    use_one_hot_embeddings,
    compute_dtype=None,
):
    """Builds BERT plus the span head; returns (start_logits, end_logits), [batch, seq].

    `compute_dtype` goes to modeling.BertModel.
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
    final_hidden = model.get_sequence_output()
    batch_size, seq_length, hidden_size = modeling.get_shape_list(final_hidden, expected_rank=3)

    output_weights = tf.compat.v1.get_variable(
        "cls/squad/output_weights",
        [2, hidden_size],
        initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.02),
    )
    output_bias = tf.compat.v1.get_variable(
        "cls/squad/output_bias", [2], initializer=tf.compat.v1.zeros_initializer()
    )

    final_hidden_matrix = tf.reshape(final_hidden, [batch_size * seq_length, hidden_size])
    logits = tf.matmul(final_hidden_matrix, output_weights, transpose_b=True)
    logits = tf.nn.bias_add(logits, output_bias)
    logits = tf.reshape(logits, [batch_size, seq_length, 2])
    start_logits, end_logits = tf.unstack(tf.transpose(logits, [2, 0, 1]), axis=0)
    return start_logits, end_logits


def model_fn_builder(
    bert_config,
    init_checkpoint,
    learning_rate,
    num_train_steps,
    num_warmup_steps,
    use_tpu,
    use_one_hot_embeddings,
):
    """Returns the model_fn closure for runner.Estimator (TRAIN and PREDICT)."""

    def model_fn(features, labels, mode, params):
        """Span-prediction model_fn: cross-entropy training, logits for predict."""
        del labels
        logging.info("*** Features ***")
        for name in sorted(features.keys()):
            logging.info("  name = %s, shape = %s", name, features[name].shape)

        unique_ids = features.get("unique_ids")  # absent in an export's serving graph
        input_ids = features["input_ids"]
        input_mask = features["input_mask"]
        segment_ids = features["segment_ids"]
        is_training = mode == runner.ModeKeys.TRAIN

        start_logits, end_logits = create_model(
            bert_config=bert_config,
            is_training=is_training,
            input_ids=input_ids,
            input_mask=input_mask,
            segment_ids=segment_ids,
            use_one_hot_embeddings=use_one_hot_embeddings,
            compute_dtype=params.get("compute_dtype"),
        )

        scaffold_fn = runner.warm_start_from_checkpoint(init_checkpoint, use_tpu)

        if mode == runner.ModeKeys.TRAIN:
            seq_length = modeling.get_shape_list(input_ids)[1]

            def compute_loss(logits, positions):
                one_hot_positions = tf.one_hot(positions, depth=seq_length, dtype=tf.float32)
                log_probs = tf.nn.log_softmax(logits, axis=-1)
                return -tf.reduce_mean(tf.reduce_sum(one_hot_positions * log_probs, axis=-1))

            start_loss = compute_loss(start_logits, features["start_positions"])
            end_loss = compute_loss(end_logits, features["end_positions"])
            total_loss = (start_loss + end_loss) / 2.0
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
        if mode == runner.ModeKeys.PREDICT:
            predictions = {"start_logits": start_logits, "end_logits": end_logits}
            if unique_ids is not None:
                predictions["unique_ids"] = unique_ids
            return runner.EstimatorSpec(
                mode=mode, predictions=predictions, scaffold_fn=scaffold_fn
            )
        raise ValueError(f"Only TRAIN and PREDICT modes are supported: {mode}")

    return model_fn


def input_fn_builder(
    input_file, seq_length, is_training, drop_remainder, padding=dynamic_padding.OFF
):
    """Returns an input_fn reading FeatureWriter records in batches of params["batch_size"].

    Training repeats the records forever and shuffles them (buffer 100).
    `padding` (dynamic_padding.Settings) cuts and groups the batches; the
    predictions carry unique_ids, so their order does not matter.
    """
    name_to_features = {
        "unique_ids": tf.io.FixedLenFeature([], tf.int64),
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
    }
    if is_training:
        name_to_features["start_positions"] = tf.io.FixedLenFeature([], tf.int64)
        name_to_features["end_positions"] = tf.io.FixedLenFeature([], tf.int64)
    return record_input_fn_builder(
        input_file, name_to_features, is_training, drop_remainder, padding
    )


def export_saved_model(export_dir, checkpoint_path, bert_config, max_seq_length, precision="fp32"):
    """Exports the SQuAD model in `checkpoint_path` as a SavedModel for serving.

    The "serving_default" signature takes input_ids, input_mask and
    segment_ids (int32 [batch, length], laid out as
    convert_examples_to_features builds them, of any length up to the
    model's max_position_embeddings: callers need not pad to
    `max_seq_length`) and returns start_logits and end_logits ([batch,
    length]). The graph is model_fn_builder's in PREDICT mode, computing in
    `precision`, exported through runner.Estimator.export_saved_model as
    main does. Written complete or not at all; `export_dir` must not exist.
    """
    del max_seq_length  # The graph takes any length.
    model_fn = model_fn_builder(bert_config, None, 0.0, None, None, False, False)
    config = runner.RunConfig(
        model_dir=os.path.dirname(os.path.abspath(checkpoint_path)), precision=precision
    )
    runner.Estimator(model_fn, config).export_saved_model(
        export_dir, serving.id_inputs, checkpoint_path
    )


RawResult = squad_data.RawResult


def write_predictions(
    all_examples,
    all_features,
    all_results,
    n_best_size,
    max_answer_length,
    do_lower_case,
    output_prediction_file,
    output_nbest_file,
    output_null_log_odds_file,
):
    """Writes predictions.json, nbest_predictions.json and (v2) null_odds.json.

    squad_data.write_predictions with --version_2_with_negative,
    --null_score_diff_threshold and --verbose_logging; returns
    (all_predictions, all_nbest_json, scores_diff_json).
    """
    return squad_data.write_predictions(
        all_examples,
        all_features,
        all_results,
        n_best_size,
        max_answer_length,
        do_lower_case,
        output_prediction_file,
        output_nbest_file,
        output_null_log_odds_file,
        FLAGS.version_2_with_negative,
        FLAGS.null_score_diff_threshold,
        FLAGS.verbose_logging,
    )


def get_final_text(pred_text, orig_text, do_lower_case):
    """squad_data.get_final_text, logging its failures as --verbose_logging says."""
    return squad_data.get_final_text(pred_text, orig_text, do_lower_case, FLAGS.verbose_logging)


_get_best_indexes = squad_data.get_best_indexes
_compute_softmax = squad_data.compute_softmax
FeatureWriter = squad_data.FeatureWriter
# Ours: the official SQuAD v1.1 / v2.0 scores, computed after --do_predict.
squad_v1_scores = squad_data.squad_v1_scores
squad_v2_scores = squad_data.squad_v2_scores


def validate_flags_or_throw(bert_config):
    """Raises UsageError, naming the flag, for inconsistent flags, before any work."""
    tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)
    script_flags.check_padding_flags()

    if not FLAGS.do_train and not FLAGS.do_predict and not FLAGS.export_dir:
        raise UsageError("At least one of `do_train` or `do_predict` must be True.")
    if FLAGS.export_dir and tf.io.gfile.exists(FLAGS.export_dir):
        raise UsageError(f"--export_dir={FLAGS.export_dir} already exists; choose a new directory")
    if FLAGS.do_train and not FLAGS.train_file:
        raise UsageError("If `do_train` is True, then `train_file` must be specified.")
    if FLAGS.do_predict and not FLAGS.predict_file:
        raise UsageError("If `do_predict` is True, then `predict_file` must be specified.")
    startup_checks.check_seq_length(FLAGS.max_seq_length, bert_config)
    if FLAGS.max_seq_length <= FLAGS.max_query_length + 3:
        raise UsageError(
            f"The max_seq_length ({FLAGS.max_seq_length}) must be greater than "
            f"max_query_length ({FLAGS.max_query_length}) + 3"
        )
    if FLAGS.doc_stride < 1:
        raise UsageError(f"--doc_stride must be positive, got {FLAGS.doc_stride}")
    window = FLAGS.max_seq_length - FLAGS.max_query_length - 3
    if FLAGS.doc_stride > window:
        # Windows then start a window apart, without overlap: not the stride asked for.
        message = (
            f"--doc_stride={FLAGS.doc_stride} is larger than the context a window holds "
            f"(max_seq_length - max_query_length - 3 = {window} word pieces)"
        )
        if FLAGS["doc_stride"].present:
            raise UsageError(f"{message}: windows would not overlap; use at most {window}")
        logging.warning("%s: windows follow each other without overlap", message)


# ---------------------------------------------------------------------------
# The run's steps: train, predict and score, then _check_flags() and main.


def _train(estimator, tokenizer, train_set, predict_set=None, eval_options=None):
    """Trains; with eval_options, predicts on and scores predict_set as they ask.

    Returns the final checkpoint's scores when it was scored, else None.
    """
    train_writer = FeatureWriter(
        filename=os.path.join(FLAGS.output_dir, "train.tf_record"), is_training=True
    )
    with train_writer:
        convert_examples_to_features(
            examples=train_set.examples,
            tokenizer=tokenizer,
            max_seq_length=FLAGS.max_seq_length,
            doc_stride=FLAGS.doc_stride,
            max_query_length=FLAGS.max_query_length,
            is_training=True,
            output_fn=train_writer.process_feature,
        )
    logging.info("***** Running training *****")
    logging.info("  Num orig examples = %d", len(train_set.examples))
    logging.info("  Num split examples = %d", train_writer.num_features)
    logging.info("  Batch size = %d", FLAGS.train_batch_size)
    logging.info("  Num steps = %d", train_set.num_train_steps)
    train_input_fn = input_fn_builder(
        input_file=train_writer.filename,
        seq_length=FLAGS.max_seq_length,
        is_training=True,
        drop_remainder=True,
        padding=script_flags.padding_from_flags(is_training=True),
    )

    def evaluate(checkpoint_path):
        return _predict(estimator, tokenizer, predict_set, checkpoint_path)

    return runner_evaluation.train_and_evaluate(
        estimator,
        train_input_fn,
        train_set.num_train_steps,
        evaluate,
        eval_results.write_eval_results,
        eval_options,
    )


# --predict_file ready to predict: its examples, their features and the input_fn.
PredictSet = collections.namedtuple("PredictSet", ["examples", "features", "input_fn"])


def _predict_set(tokenizer):
    """Reads --predict_file and writes its features to output_dir/eval.tf_record."""
    eval_examples = read_squad_examples(input_file=FLAGS.predict_file, is_training=False)
    eval_features = []
    eval_writer = FeatureWriter(
        filename=os.path.join(FLAGS.output_dir, "eval.tf_record"), is_training=False
    )
    with eval_writer:

        def append_feature(feature):
            eval_features.append(feature)
            eval_writer.process_feature(feature)

        convert_examples_to_features(
            examples=eval_examples,
            tokenizer=tokenizer,
            max_seq_length=FLAGS.max_seq_length,
            doc_stride=FLAGS.doc_stride,
            max_query_length=FLAGS.max_query_length,
            is_training=False,
            output_fn=append_feature,
        )

    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(eval_examples))
    logging.info("  Num split examples = %d", len(eval_features))
    logging.info("  Batch size = %d", FLAGS.predict_batch_size)

    predict_input_fn = input_fn_builder(
        input_file=eval_writer.filename,
        seq_length=FLAGS.max_seq_length,
        is_training=False,
        drop_remainder=False,
        padding=_prediction_padding(),
    )
    return PredictSet(eval_examples, eval_features, predict_input_fn)


def _prediction_padding():
    """Cut prediction batches only when --length_bucket is given.

    SQuAD windows are mostly full already (doc_stride fills them), and at
    full length the n-best lists rank every position's logits as the
    original does, padding included; cut batches have no logits for the
    padding they drop, so their n-best lists rank the word pieces alone and
    may differ from the original's in the rare window whose padding logits
    reach its top n_best_size.
    """
    if not FLAGS["length_bucket"].present:
        return dynamic_padding.OFF
    return script_flags.padding_from_flags(is_training=False)


def _predict(estimator, tokenizer, predict_set=None, checkpoint_path=None):
    """Writes the predictions of one checkpoint (default: the newest in output_dir) and,
    when --predict_file has answers, eval_results.txt; returns the scores or None."""
    if predict_set is None:
        predict_set = _predict_set(tokenizer)
    eval_examples, eval_features, predict_input_fn = predict_set
    # A cut batch has logits for its longest window's width only: keep each
    # window's word pieces. At full length every position is kept, as before.
    cut = _prediction_padding() != dynamic_padding.OFF
    num_tokens = {feature.unique_id: len(feature.tokens) for feature in eval_features}
    all_results = []
    progress = Progress("Predicting", len(eval_features), "windows")
    predictions = estimator.predict(input_fn=predict_input_fn, checkpoint_path=checkpoint_path)
    for result in predictions:
        progress.update(len(all_results))
        unique_id = int(result["unique_ids"])
        length = num_tokens[unique_id] if cut else None
        all_results.append(
            RawResult(
                unique_id=unique_id,
                start_logits=[float(x) for x in result["start_logits"].flat[:length]],
                end_logits=[float(x) for x in result["end_logits"].flat[:length]],
            )
        )

    output_prediction_file = os.path.join(FLAGS.output_dir, "predictions.json")
    output_nbest_file = os.path.join(FLAGS.output_dir, "nbest_predictions.json")
    output_null_log_odds_file = os.path.join(FLAGS.output_dir, "null_odds.json")
    predictions, _, null_odds = write_predictions(
        eval_examples,
        eval_features,
        all_results,
        FLAGS.n_best_size,
        FLAGS.max_answer_length,
        FLAGS.do_lower_case,
        output_prediction_file,
        output_nbest_file,
        output_null_log_odds_file,
    )
    return _score(predictions, null_odds)


def _predict_file_golds():
    """The gold answers of --predict_file by question id, or None (logged) if it has none."""
    if read_simple_questions(FLAGS.predict_file) is not None:
        logging.info("%s is a plain question list: no answers to score.", FLAGS.predict_file)
        return None
    golds = squad_data.gold_answers(squad_data.load_squad_json(FLAGS.predict_file))
    if golds is not None and not FLAGS.version_2_with_negative and not any(golds.values()):
        golds = None
    if golds is None:
        logging.info("No gold answers in %s: skipping EM/F1.", FLAGS.predict_file)
    return golds


def _score(predictions, null_odds):
    """Scores the predictions against the predict file's answers, if it has them."""
    golds = _predict_file_golds()
    if golds is None:
        return None
    if FLAGS.version_2_with_negative:
        results = squad_v2_scores(golds, predictions, na_probs=null_odds)
    else:
        results = squad_v1_scores(golds, predictions)
    output_eval_file = os.path.join(FLAGS.output_dir, "eval_results.txt")
    eval_results.write_eval_results(output_eval_file, results)
    return results


# Training questions and the step counts they make.
TrainSet = collections.namedtuple("TrainSet", ["examples", "num_train_steps", "num_warmup_steps"])


def _train_set():
    """Reads --train_file, shuffled, and the steps it makes; refuses a file too small for one."""
    train_examples = read_squad_examples(input_file=FLAGS.train_file, is_training=True)
    num_train_steps, num_warmup_steps = script_flags.train_steps_from_flags(
        len(train_examples), FLAGS.train_file, "usable training questions"
    )
    # Shuffling here spares the input pipeline a document-sized buffer.
    random.Random(12345).shuffle(train_examples)
    return TrainSet(train_examples, num_train_steps, num_warmup_steps)


def _checkpoint_to_export():
    """The newest checkpoint in --output_dir, else --init_checkpoint (UsageError if neither)."""
    checkpoint_path = runner.newest_checkpoint(FLAGS.output_dir) or FLAGS.init_checkpoint
    if not checkpoint_path:
        raise UsageError(
            f"--export_dir: no checkpoint in --output_dir={FLAGS.output_dir} and no "
            "--init_checkpoint to export"
        )
    return checkpoint_path


def _check_flags():
    """Checks the flags, config, vocabulary, checkpoint and data files before any work.

    Returns (bert_config, tokenizer, run_config, eval_options, train_set);
    train_set is None without --do_train.
    """
    bert_config, tokenizer = script_flags.check_model_flags()
    validate_flags_or_throw(bert_config)
    script_flags.check_batch_flags()
    if FLAGS.do_train:
        startup_checks.check_input_file(FLAGS.train_file, "--train_file")
    if FLAGS.do_predict:
        startup_checks.check_input_file(FLAGS.predict_file, "--predict_file")
    eval_options = script_flags.evaluation_options_from_flags(
        FLAGS.do_train and FLAGS.do_predict, "--do_train and --do_predict"
    )
    run_config = script_flags.run_config_from_flags()

    train_set = _train_set() if FLAGS.do_train else None
    if FLAGS.do_predict:
        # Fail on a malformed predict file now, not after training.
        read_squad_examples(input_file=FLAGS.predict_file, is_training=False)
    if eval_options is not None and _predict_file_golds() is None:
        raise UsageError(
            f"--eval_every_n_steps scores the predictions on --predict_file, but "
            f"{FLAGS.predict_file} has no gold answers"
        )
    if FLAGS.export_dir and not FLAGS.do_train:
        _checkpoint_to_export()  # Nothing to export: say so before predicting.
    return bert_config, tokenizer, run_config, eval_options, train_set


def main(_):
    logging.set_verbosity(logging.INFO)

    bert_config, tokenizer, run_config, eval_options, train_set = _check_flags()
    tf.io.gfile.makedirs(FLAGS.output_dir)

    model_fn = model_fn_builder(
        bert_config=bert_config,
        init_checkpoint=FLAGS.init_checkpoint,
        learning_rate=FLAGS.learning_rate,
        num_train_steps=train_set.num_train_steps if train_set else None,
        num_warmup_steps=train_set.num_warmup_steps if train_set else None,
        use_tpu=FLAGS.use_tpu,
        use_one_hot_embeddings=FLAGS.use_tpu,
    )
    estimator = runner.Estimator(
        model_fn=model_fn,
        config=run_config,
        train_batch_size=FLAGS.train_batch_size,
        predict_batch_size=FLAGS.predict_batch_size,
    )

    predict_set = final_result = None
    if FLAGS.do_train:
        if eval_options is not None:
            predict_set = _predict_set(tokenizer)
        final_result = _train(estimator, tokenizer, train_set, predict_set, eval_options)
        del train_set
    if FLAGS.do_predict and final_result is None:
        # (Evaluating while training already wrote the final checkpoint's files.)
        _predict(estimator, tokenizer, predict_set)
    if FLAGS.export_dir:
        estimator.export_saved_model(FLAGS.export_dir, serving.id_inputs, _checkpoint_to_export())


if __name__ == "__main__":
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main, max_seq_length=384)
