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
bert_lib/task_data/ner_data.py, which takes no flags; this script holds the flags, the model
and the run.
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections
import os

import tensorflow as tf
from absl import flags, logging

import modeling
from bert_lib import engine, script_flags
from bert_lib.bert_runs import checks, model_fns, output_dir_run, serving
from bert_lib.plumbing import atomic_write, eval_results, startup_checks
from bert_lib.plumbing.errors import UsageError
from bert_lib.task_data import dynamic_padding, features, ner_data

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
):
    """Builds BERT plus a linear tag head on every position of the sequence output.

    The head is `output_weights` [num_labels, hidden] and `output_bias`
    [num_labels] at no variable scope (the classifier's names and shapes),
    with 0.1 dropout on its input while training. `compute_dtype` goes to
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
            output_layer = tf.nn.dropout(output_layer, rate=0.1)
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


# Every feature of a window's record is one value per position.
_RECORD_KEYS = ("input_ids", "input_mask", "segment_ids", "label_ids", "label_mask")


def file_based_input_fn_builder(
    input_file, seq_length, is_training, drop_remainder, padding=dynamic_padding.OFF
):
    """Returns an input_fn(params) reading `input_file` in batches of params["batch_size"].

    Training repeats and shuffles the records (buffer 100); eval and predict
    read them once, in order. Every feature comes out int32 [seq_length],
    or cut to the batch's longest window by `padding` (dynamic_padding.Settings,
    which may also group windows by length; their predictions carry their index).
    """
    name_to_features = {
        name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in _RECORD_KEYS
    }
    return features.record_input_fn_builder(
        input_file, name_to_features, is_training, drop_remainder, padding, cut_keys=_RECORD_KEYS
    )


# ---------------------------------------------------------------------------
# The run's steps.


def _read_split(name, with_tags, settings):
    path = os.path.join(settings.data_dir, name)
    return path, ner_data.read_conll(path, settings.tag_column, with_tags=with_tags)


def _choose_labels(train_examples, train_path, settings):
    """The tag set: --labels, else output_dir/labels.txt, else the training file's.

    Returns (label_list, write_file): whether labels.txt must be written.
    --labels contradicting an existing labels.txt is a ValueError, as is
    having no source at all.
    """
    tag_scheme = settings.tag_scheme
    label_file = os.path.join(settings.output_dir, features.LABELS_FILE)
    saved = ner_data.read_label_file(label_file) if tf.io.gfile.exists(label_file) else None
    if settings.labels:
        label_list = ner_data.parse_labels_flag(settings.labels, tag_scheme)
        if saved is not None and saved != label_list:
            raise UsageError(
                f"--labels={settings.labels} differs from {label_file} ({','.join(saved)}), "
                "which the checkpoints in --output_dir were trained with"
            )
        return label_list, saved is None
    if saved is not None:
        for label in saved:
            try:
                ner_data.check_tag(label, tag_scheme)
            except ValueError as e:
                raise UsageError(f"{label_file}: {e}") from None
        return saved, False
    if train_examples is None:
        raise UsageError(
            f"no tag set: --output_dir={settings.output_dir} has no labels.txt; train there "
            "first (--do_train) or give --labels"
        )
    ner_data.check_example_tags(train_examples, train_path, tag_scheme)
    return ner_data.labels_from_examples(train_examples), True


def _window_stride(settings):
    """--window_stride, or half a window; more than a window would skip words."""
    max_pieces = settings.model.max_seq_length - 2
    stride = features.window_stride(settings.window_stride, settings.model.max_seq_length)
    if not 1 <= stride <= max_pieces:
        raise UsageError(
            f"--window_stride={settings.window_stride} must be between 1 and max_seq_length - 2 "
            f"= {max_pieces}, or windows would skip words"
        )
    return stride


def _train(estimator, train_examples, train_features, num_train_steps, settings):
    train_file = os.path.join(settings.output_dir, "train.tf_record")
    ner_data.file_based_write_features(train_features, train_file)
    logging.info("***** Running training *****")
    logging.info("  Num sentences = %d", len(train_examples))
    logging.info("  Num windows = %d", len(train_features))
    logging.info("  Batch size = %d", settings.train_batch_size)
    logging.info("  Num steps = %d", num_train_steps)
    train_input_fn = file_based_input_fn_builder(
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
    input_fn = file_based_input_fn_builder(
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
    init_checkpoint = settings.model.init_checkpoint
    checkpoint_path = engine.newest_checkpoint(settings.output_dir) or init_checkpoint
    if not checkpoint_path:
        raise UsageError(
            f"--export_dir: no checkpoint in --output_dir={settings.output_dir} and no "
            "--init_checkpoint to export"
        )
    estimator.export_saved_model(
        settings.export_dir, serving.id_inputs, checkpoint_path, cast_weights_once=True
    )


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

# What _check_flags settles for main: the config, the window stride, the tag
# set (and whether labels.txt is to be written), the tokenizer and each
# split's (path, examples), (None, None) when not run, and the checked
# output directory (output_dir_run.OutputDir).
_Checked = collections.namedtuple(
    "_Checked",
    [
        "bert_config",
        "window_stride",
        "label_list",
        "write_label_file",
        "tokenizer",
        "train",
        "eval",
        "predict",
        "output",
    ],
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
    """Checks the settings, config, data files and tag set before anything is written.

    Every set the run needs is read and every tag checked here, so that a
    bad line stops the run before training rather than after. Returns a
    _Checked.
    """
    if not (settings.do_train or settings.do_eval or settings.do_predict or settings.export_dir):
        raise UsageError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True "
            "(or --export_dir set)."
        )

    bert_config, tokenizer = checks.check_model(settings.model, settings.output_dir)
    startup_checks.check_new_output_dir(settings.export_dir, "--export_dir")
    window_stride = _window_stride(settings)

    nothing = (None, None)
    train = _read_split("train.txt", True, settings) if settings.do_train else nothing
    evaluation = _read_split("dev.txt", True, settings) if settings.do_eval else nothing
    predict = _read_split("test.txt", False, settings) if settings.do_predict else nothing
    label_list, write_label_file = _choose_labels(train[1], train[0], settings)
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
    return _Checked(
        bert_config=bert_config,
        window_stride=window_stride,
        label_list=label_list,
        write_label_file=write_label_file,
        tokenizer=tokenizer,
        train=train,
        eval=evaluation,
        predict=predict,
        output=output,
    )


def main(_):
    logging.set_verbosity(logging.INFO)
    settings = settings_from_flags()
    checked = _check_flags(settings)
    label_list = checked.label_list
    train_path, train_examples = checked.train
    max_seq_length = settings.model.max_seq_length

    def convert(examples):
        return ner_data.convert_examples_to_features(
            examples, label_list, max_seq_length, checked.window_stride, checked.tokenizer
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

    checked.output.start()
    if checked.write_label_file:
        atomic_write.write_text(
            os.path.join(settings.output_dir, features.LABELS_FILE),
            "".join(f"{x}\n" for x in label_list),
        )

    model_fn = model_fn_builder(
        bert_config=checked.bert_config,
        num_labels=len(label_list),
        init_checkpoint=settings.model.init_checkpoint,
        learning_rate=settings.learning_rate,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        use_tpu=settings.use_tpu,
        use_one_hot_embeddings=settings.use_tpu,
        precision=settings.precision,
        num_accumulation_steps=settings.num_accumulation_steps,
    )
    estimator = engine.Estimator(
        model_fn=model_fn,
        config=settings.run_config,
        train_batch_size=settings.train_batch_size,
        eval_batch_size=settings.eval_batch_size,
        predict_batch_size=settings.predict_batch_size,
    )

    if settings.do_train:
        _train(estimator, train_examples, train_features, num_train_steps, settings)

    if settings.do_eval:
        _evaluate(estimator, checked.eval[1], convert, label_list, settings)

    if settings.do_predict:
        predict_path, predict_examples = checked.predict
        _predict(estimator, predict_path, predict_examples, convert, label_list, settings)

    if settings.export_dir:
        _export(estimator, settings)


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
