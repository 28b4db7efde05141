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

The SQuAD data handling without flags is in bert_lib/task_data/, one module
per job: squad_data.py (reading), squad_features.py (windows),
squad_answers.py (n-best answers) and squad_scoring.py (EM/F1); this script
keeps the original's names for it. The steps of a run after the flags are
checked (reading the files, training, predicting and scoring, exporting)
are in bert_lib/bert_runs/squad.py, which builds the model with this
script's model_fn_builder.
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections

import tensorflow as tf
from absl import flags, logging

import modeling
import tokenization
from bert_lib import engine, script_flags
from bert_lib.bert_runs import checks, model_fns, serving, squad
from bert_lib.plumbing import startup_checks
from bert_lib.plumbing.errors import UsageError
from bert_lib.task_data import (
    dynamic_padding,
    squad_answers,
    squad_data,
    squad_features,
)

FLAGS = flags.FLAGS

# Required parameters.
script_flags.define_model_flags(__name__)
script_flags.define_fine_tuning_flags(__name__, with_eval=False)
script_flags.define_engine_flags(__name__)

# Other parameters.
flags.DEFINE_string("train_file", None, "SQuAD json for training, e.g. train-v1.1.json.")
flags.DEFINE_string(
    "predict_file", None, "SQuAD json to predict on, e.g. dev-v1.1.json or test-v1.1.json."
)
script_flags.define_integer(
    "doc_stride",
    128,
    "How far to slide the window when splitting a long document.",
    script_flags.POSITIVE,
    module=__name__,
)
script_flags.define_integer(
    "max_query_length",
    64,
    "Maximum question length in WordPiece tokens; longer questions are cut.",
    script_flags.POSITIVE,
    module=__name__,
)
script_flags.define_integer(
    "n_best_size",
    20,
    "How many n-best predictions to keep in nbest_predictions.json.",
    script_flags.POSITIVE,
    module=__name__,
)
script_flags.define_integer(
    "max_answer_length",
    30,
    "Longest answer, in WordPiece tokens, that may be predicted (start and end are "
    "predicted independently, so this bounds the pair).",
    script_flags.POSITIVE,
    module=__name__,
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
script_flags.define_float(
    "null_score_diff_threshold",
    0.0,
    "Predict no answer when null score - best non-null score exceeds this.",
    script_flags.ANY_NUMBER,
    module=__name__,
)


# The original's data classes, reader and conversion live in task_data/squad_data.py and
# squad_features.py, which take every setting as an argument. Their names stay here for code that
# imports them from run_squad (the private ones too: user code imports those).
SquadExample = squad_data.SquadExample
InputFeatures = squad_features.InputFeatures


def read_squad_examples(input_file, is_training):
    """Reads a SQuAD json file into a list of SquadExample, as --version_2_with_negative says.

    See squad_data.read_squad_examples, which takes the setting as an argument.
    """
    return squad_data.read_squad_examples(input_file, is_training, FLAGS.version_2_with_negative)


convert_examples_to_features = squad_features.convert_examples_to_features
_improve_answer_span = squad_features.improve_answer_span
_check_is_max_context = squad_features.check_is_max_context


def create_model(
    bert_config,
    is_training,
    input_ids,
    input_mask,
    segment_ids,
    use_one_hot_embeddings,
    compute_dtype=None,
    dropout_keys=None,
):
    """Builds BERT plus the span head; returns (start_logits, end_logits), [batch, seq].

    `compute_dtype` and `dropout_keys` (masks keyed by example) go to
    modeling.BertModel.
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
    precision="fp32",
    num_accumulation_steps=1,
):
    """Returns the model_fn closure for engine.Estimator (TRAIN and PREDICT).

    The Transformer layers compute in `precision` (fp32, bf16 or fp16);
    training accumulates the gradients of num_accumulation_steps
    micro-batches per step (model_fns.train_spec).
    """
    compute_dtype = model_fns.compute_dtype(precision)

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
        is_training = mode == engine.ModeKeys.TRAIN

        start_logits, end_logits = create_model(
            bert_config=bert_config,
            is_training=is_training,
            input_ids=input_ids,
            input_mask=input_mask,
            segment_ids=segment_ids,
            use_one_hot_embeddings=use_one_hot_embeddings,
            compute_dtype=compute_dtype,
            dropout_keys=model_fns.dropout_keys(features, is_training),
        )

        scaffold_fn = model_fns.warm_start_from_checkpoint(init_checkpoint, use_tpu)

        if mode == engine.ModeKeys.TRAIN:
            seq_length = modeling.get_shape_list(input_ids)[1]

            def compute_loss(logits, positions):
                one_hot_positions = tf.one_hot(positions, depth=seq_length, dtype=tf.float32)
                log_probs = tf.nn.log_softmax(logits, axis=-1)
                return -tf.reduce_mean(tf.reduce_sum(one_hot_positions * log_probs, axis=-1))

            start_loss = compute_loss(start_logits, features["start_positions"])
            end_loss = compute_loss(end_logits, features["end_positions"])
            total_loss = (start_loss + end_loss) / 2.0
            return model_fns.train_spec(
                total_loss,
                learning_rate,
                num_train_steps,
                num_warmup_steps,
                precision,
                num_accumulation_steps,
                scaffold_fn=scaffold_fn,
            )
        if mode == engine.ModeKeys.PREDICT:
            predictions = {"start_logits": start_logits, "end_logits": end_logits}
            if unique_ids is not None:
                predictions["unique_ids"] = unique_ids
            return engine.EstimatorSpec(
                mode=mode, predictions=predictions, scaffold_fn=scaffold_fn
            )
        raise ValueError(f"Only TRAIN and PREDICT modes are supported: {mode}")

    return model_fn


input_fn_builder = squad_features.input_fn_builder


def export_saved_model(export_dir, checkpoint_path, bert_config, precision="fp32", use_xla=False):
    """Exports the SQuAD model in `checkpoint_path` as a SavedModel for serving.

    The "serving_default" signature takes input_ids, input_mask and
    segment_ids (int32 [batch, length], laid out as
    convert_examples_to_features builds them, of any length up to the
    model's max_position_embeddings) and returns start_logits and
    end_logits ([batch, length]). The graph is model_fn_builder's in
    PREDICT mode, computing in `precision` and compiled with XLA if
    `use_xla`, as prediction computes. Written complete or not at all;
    `export_dir` must not exist. --export_dir comes here.
    """
    serving.export_model(
        model_fn_builder,
        export_dir,
        checkpoint_path,
        bert_config,
        precision=precision,
        use_xla=use_xla,
    )


RawResult = squad_answers.RawResult


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

    squad_answers.write_predictions with --version_2_with_negative,
    --null_score_diff_threshold and --verbose_logging; returns
    (all_predictions, all_nbest_json, scores_diff_json).
    """
    return squad_answers.write_predictions(
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
    """squad_answers.get_final_text, logging its failures as --verbose_logging says."""
    return squad_answers.get_final_text(pred_text, orig_text, do_lower_case, FLAGS.verbose_logging)


_get_best_indexes = squad_answers.get_best_indexes
_compute_softmax = squad_answers.compute_softmax
FeatureWriter = squad_features.FeatureWriter


def validate_flags_or_throw(bert_config):
    """Raises UsageError, naming the flag, for inconsistent flags, before any work.

    The original's check, on the values settings_from_flags reads: the
    casing against the checkpoint's name, the tasks and their files, and
    --max_seq_length against the model and the windows.
    """
    settings = settings_from_flags()
    model = settings.model
    tokenization.validate_case_matches_checkpoint(model.do_lower_case, model.init_checkpoint)
    _check_tasks(settings)
    checks.check_seq_length(model.max_seq_length, bert_config)
    _check_windows(settings)


def _check_tasks(settings):
    """Something to do, and a file for each task asked for."""
    if not settings.do_train and not settings.do_predict and not settings.export_dir:
        raise UsageError("At least one of `do_train` or `do_predict` must be True.")
    startup_checks.check_new_output_dir(settings.export_dir, "--export_dir")
    if settings.do_train and not settings.train_file:
        raise UsageError("If `do_train` is True, then `train_file` must be specified.")
    if settings.do_predict and not settings.predict_file:
        raise UsageError("If `do_predict` is True, then `predict_file` must be specified.")


def _check_windows(settings):
    """Room in a window for the question and some context, and a --doc_stride that lets
    windows overlap."""
    max_seq_length, max_query_length = settings.model.max_seq_length, settings.max_query_length
    if max_seq_length <= max_query_length + 3:
        raise UsageError(
            f"The max_seq_length ({max_seq_length}) must be greater than "
            f"max_query_length ({max_query_length}) + 3"
        )
    doc_stride = settings.doc_stride
    window = max_seq_length - max_query_length - 3
    if doc_stride > window:
        # Windows then start a window apart, without overlap: not the stride asked for.
        message = (
            f"--doc_stride={doc_stride} is larger than the context a window holds "
            f"(max_seq_length - max_query_length - 3 = {window} word pieces)"
        )
        if settings.doc_stride_given:
            raise UsageError(f"{message}: windows would not overlap; use at most {window}")
        logging.warning("%s: windows follow each other without overlap", message)


# ---------------------------------------------------------------------------
# Reading and checking the flags, then main.

# The flags of this script read as they are (the model flags apart, in
# script_flags.ModelSettings).
_FLAG_NAMES = (
    "output_dir do_train do_predict export_dir train_file predict_file train_batch_size "
    "predict_batch_size learning_rate num_train_epochs warmup_proportion use_tpu doc_stride "
    "max_query_length n_best_size max_answer_length verbose_logging version_2_with_negative "
    "null_score_diff_threshold precision num_accumulation_steps allow_new_task_in_output_dir"
).split()

# What settings_from_flags reads: the model flags (model), the engine's
# config, evaluation while training (eval_options, or None), the padding of
# training and of prediction batches, whether --doc_stride was given, and
# each flag of _FLAG_NAMES.
Settings = collections.namedtuple(
    "Settings",
    [
        "model",
        "run_config",
        "eval_options",
        "train_padding",
        "predict_padding",
        "doc_stride_given",
        *_FLAG_NAMES,
    ],
)


def settings_from_flags():
    """Reads the flags once into Settings; refuses engine and padding flags that cannot
    work (UsageError naming the flag; each number's rule was checked as the command line
    was read).

    Prediction batches are cut only when --length_bucket is given: SQuAD
    windows are mostly full already (doc_stride fills them), and at full
    length the n-best lists rank every position's logits as the original
    does, padding included; cut batches have no logits for the padding they
    drop, so their n-best lists rank the word pieces alone and may differ
    from the original's in the rare window whose padding logits reach its
    top n_best_size.
    """
    script_flags.check_padding_flags()
    predict_padding = dynamic_padding.OFF
    if FLAGS["length_bucket"].present:
        predict_padding = script_flags.padding_from_flags(is_training=False)
    return Settings(
        model=script_flags.model_settings_from_flags(),
        eval_options=script_flags.evaluation_options_from_flags(
            FLAGS.do_train and FLAGS.do_predict, "--do_train and --do_predict"
        ),
        run_config=script_flags.run_config_from_flags(),
        train_padding=script_flags.padding_from_flags(is_training=True),
        predict_padding=predict_padding,
        doc_stride_given=FLAGS["doc_stride"].present,
        **{name: FLAGS[name].value for name in _FLAG_NAMES},
    )


def _check_flags(settings):
    """Checks the settings, config, vocabulary, checkpoint and data files' names before any
    work; returns (bert_config, tokenizer) for squad.prepare, which reads the files."""
    bert_config, tokenizer = checks.check_model(settings.model, settings.output_dir)
    _check_tasks(settings)
    _check_windows(settings)
    if settings.do_train:
        startup_checks.check_input_file(settings.train_file, "--train_file")
    if settings.do_predict:
        startup_checks.check_input_file(settings.predict_file, "--predict_file")
    return bert_config, tokenizer


def main(_):
    logging.set_verbosity(logging.INFO)
    settings = settings_from_flags()
    bert_config, tokenizer = _check_flags(settings)
    squad.run(squad.prepare(settings, bert_config, tokenizer), model_fn_builder)


if __name__ == "__main__":
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main, max_seq_length=384)
