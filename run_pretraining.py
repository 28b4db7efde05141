"""Pre-trains BERT with the masked LM and next-sentence objectives.

Same flags, TFRecord features, heads, losses, metrics and eval_results.txt
as the original script; training, checkpoints and distribution go through
the engine (bert_lib/engine; flags --distribution_strategy, --num_gpus, --use_tpu and
friends, --tf_random_seed live there). Input is what
create_pretraining_data.py writes.
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections

import tensorflow as tf
from absl import flags, logging

import modeling
import optimization
from bert_lib import engine, script_flags
from bert_lib.bert_runs import checks, model_fns, output_dir_run, pretraining
from bert_lib.plumbing.errors import UsageError
from bert_lib.task_data import features as features_lib
from bert_lib.task_data import pretraining_packing, pretraining_records

FLAGS = flags.FLAGS

# Required parameters.
script_flags.define_flags(
    "bert_config_file",
    "input_file",
    "output_dir",
    "init_checkpoint",
    "allow_partial_init_checkpoint",
    "max_seq_length",
    "max_predictions_per_seq",
    "do_train",
    "do_eval",
    "train_batch_size",
    "eval_batch_size",
    "learning_rate",
    "save_checkpoints_steps",
    "iterations_per_loop",
    "allow_new_task_in_output_dir",
    module=__name__,
)
script_flags.define_engine_flags(__name__, padding=False)

# Other parameters.
script_flags.define_integer(
    "num_train_steps",
    100000,
    "Number of training steps.",
    script_flags.NON_NEGATIVE,
    module=__name__,
)
script_flags.define_integer(
    "num_warmup_steps",
    10000,
    "Number of warmup steps.",
    script_flags.NON_NEGATIVE,
    module=__name__,
)
script_flags.define_integer(
    "max_eval_steps",
    100,
    "Maximum number of eval steps.",
    script_flags.NON_NEGATIVE,
    module=__name__,
)
# Beyond the original: LAMB for large-batch pre-training.
flags.DEFINE_enum(
    "optimizer",
    "adamw",
    list(optimization.OPTIMIZERS),
    "adamw (default): BERT's Adam with weight decay. lamb: the same moments with "
    "bias correction, then each variable's step scaled by its trust ratio "
    "||w|| / ||step|| (not for LayerNorm and bias variables), for large batches. "
    "Checkpoints of either load into the other.",
)
# Beyond the original: several instances to a row.
flags.DEFINE_bool(
    "pack_sequences",
    False,
    "Pack several instances into each max_seq_length row, each computed as if alone "
    "(its own positions, attention and [CLS]), instead of one padded instance per row: "
    "the same losses and metrics with fewer padded positions computed. "
    "--train_batch_size and --eval_batch_size then count rows.",
)
script_flags.define_integer(
    "max_instances_per_row",
    pretraining_packing.DEFAULT_MAX_INSTANCES_PER_ROW,
    "With --pack_sequences: at most this many instances in a row.",
    script_flags.POSITIVE,
    module=__name__,
)


def model_fn_builder(
    bert_config,
    init_checkpoint,
    learning_rate,
    num_train_steps,
    num_warmup_steps,
    use_tpu,
    use_one_hot_embeddings,
    optimizer="adamw",
    precision="fp32",
    num_accumulation_steps=1,
):
    """Returns the model_fn(features, labels, mode, params) for engine.Estimator.

    Losses and metrics of packed rows average over their instances too.

    TRAIN: loss = masked LM loss + next-sentence loss, optimized with BERT's
    training step (model_fns.train_spec) and the optimizer named `optimizer`
    ("adamw" or "lamb"), accumulating the gradients of
    num_accumulation_steps micro-batches. EVAL: the loss plus
    masked_lm_accuracy, masked_lm_loss, next_sentence_accuracy and
    next_sentence_loss. PREDICT is not supported (ValueError), as in the
    original. The Transformer layers compute in `precision`.
    """
    compute_dtype = model_fns.compute_dtype(precision)

    def model_fn(features, labels, mode, params):
        """Builds the pre-training graph for one mode."""
        del labels
        logging.info("*** Features ***")
        for name in sorted(features.keys()):
            logging.info("  name = %s, shape = %s", name, features[name].shape)

        input_ids = features["input_ids"]
        input_mask = features["input_mask"]
        segment_ids = features["segment_ids"]
        masked_lm_positions = features["masked_lm_positions"]
        masked_lm_ids = features["masked_lm_ids"]
        masked_lm_weights = features["masked_lm_weights"]
        next_sentence_labels = features["next_sentence_labels"]
        packing, next_sentence_weights = _packed_row_features(features)

        is_training = mode == engine.ModeKeys.TRAIN

        model = modeling.BertModel(
            config=bert_config,
            is_training=is_training,
            input_ids=input_ids,
            input_mask=input_mask,
            token_type_ids=segment_ids,
            use_one_hot_embeddings=use_one_hot_embeddings,
            compute_dtype=compute_dtype,
            **packing,
        )

        (masked_lm_loss, masked_lm_example_loss, masked_lm_log_probs) = get_masked_lm_output(
            bert_config,
            model.get_sequence_output(),
            model.get_embedding_table(),
            masked_lm_positions,
            masked_lm_ids,
            masked_lm_weights,
        )
        next_sentence = get_next_sentence_output(
            bert_config, model.get_pooled_output(), next_sentence_labels, next_sentence_weights
        )
        (next_sentence_loss, next_sentence_example_loss, next_sentence_log_probs) = next_sentence
        total_loss = masked_lm_loss + next_sentence_loss

        scaffold_fn = model_fns.warm_start_from_checkpoint(init_checkpoint, use_tpu)

        if mode == engine.ModeKeys.TRAIN:
            return model_fns.train_spec(
                total_loss,
                learning_rate,
                num_train_steps,
                num_warmup_steps,
                precision,
                num_accumulation_steps,
                optimizer=optimizer,
                scaffold_fn=scaffold_fn,
                examples=tf.reduce_sum(next_sentence_weights) if packing else None,
            )
        if mode == engine.ModeKeys.EVAL:
            metric_tensors = [
                masked_lm_example_loss,
                masked_lm_log_probs,
                masked_lm_ids,
                masked_lm_weights,
                next_sentence_example_loss,
                next_sentence_log_probs,
                next_sentence_labels,
            ]
            eval_metrics = _eval_metrics(metric_tensors, next_sentence_weights)
            return engine.EstimatorSpec(
                mode=mode, loss=total_loss, eval_metrics=eval_metrics, scaffold_fn=scaffold_fn
            )
        raise ValueError(f"Only TRAIN and EVAL modes are supported: {mode}")

    return model_fn


def _packed_row_features(features):
    """(BertModel's packing arguments, next_sentence_weights) of packed rows
    (pretraining_packing); ({}, None) for unpacked records."""
    names = ("position_ids", "instance_ids", "cls_positions")
    packing = {name: features[name] for name in names if name in features}
    return packing, features.get("next_sentence_weights")


def _eval_metrics(metric_tensors, next_sentence_weights):
    """EstimatorSpec's eval_metrics: metric_fn's, or packed_metric_fn's for packed rows."""
    if next_sentence_weights is None:
        return (metric_fn, metric_tensors)
    return (packed_metric_fn, [*metric_tensors, next_sentence_weights])


def metric_fn(
    masked_lm_example_loss,
    masked_lm_log_probs,
    masked_lm_ids,
    masked_lm_weights,
    next_sentence_example_loss,
    next_sentence_log_probs,
    next_sentence_labels,
    next_sentence_weights=None,
):
    """The eval metrics: weighted masked LM accuracy / mean loss, next-sentence ones.

    Padding predictions (weight 0) count for nothing in the masked LM metrics,
    nor empty next-sentence slots of packed rows (next_sentence_weights 0).
    Returns {name: (value, update_op)} from tf.compat.v1.metrics.
    """
    masked_lm_log_probs = tf.reshape(masked_lm_log_probs, [-1, masked_lm_log_probs.shape[-1]])
    masked_lm_predictions = tf.argmax(masked_lm_log_probs, axis=-1, output_type=tf.int32)
    masked_lm_example_loss = tf.reshape(masked_lm_example_loss, [-1])
    masked_lm_ids = tf.reshape(masked_lm_ids, [-1])
    masked_lm_weights = tf.reshape(masked_lm_weights, [-1])
    masked_lm_accuracy = tf.compat.v1.metrics.accuracy(
        labels=masked_lm_ids, predictions=masked_lm_predictions, weights=masked_lm_weights
    )
    masked_lm_mean_loss = tf.compat.v1.metrics.mean(
        values=masked_lm_example_loss, weights=masked_lm_weights
    )

    next_sentence_log_probs = tf.reshape(
        next_sentence_log_probs, [-1, next_sentence_log_probs.shape[-1]]
    )
    next_sentence_predictions = tf.argmax(next_sentence_log_probs, axis=-1, output_type=tf.int32)
    next_sentence_labels = tf.reshape(next_sentence_labels, [-1])
    next_sentence_accuracy = tf.compat.v1.metrics.accuracy(
        labels=next_sentence_labels,
        predictions=next_sentence_predictions,
        weights=next_sentence_weights,
    )
    next_sentence_mean_loss = tf.compat.v1.metrics.mean(
        values=next_sentence_example_loss, weights=next_sentence_weights
    )

    return {
        "masked_lm_accuracy": masked_lm_accuracy,
        "masked_lm_loss": masked_lm_mean_loss,
        "next_sentence_accuracy": next_sentence_accuracy,
        "next_sentence_loss": next_sentence_mean_loss,
    }


def packed_metric_fn(*tensors):
    """metric_fn's metrics over packed rows: the next-sentence ones over the instances
    (next_sentence_weights, the last argument), "instances" (how many were evaluated)
    and "loss", the masked LM loss plus the next-sentence loss over all of them."""
    *tensors, next_sentence_weights = tensors
    weights = tf.reshape(next_sentence_weights, [-1])
    metrics = metric_fn(*tensors, next_sentence_weights=weights)
    instances = tf.compat.v1.get_variable(
        "instances",
        [],
        tf.float32,
        tf.compat.v1.zeros_initializer(),
        trainable=False,
        collections=[
            tf.compat.v1.GraphKeys.LOCAL_VARIABLES,
            tf.compat.v1.GraphKeys.METRIC_VARIABLES,
        ],
    )
    metrics["instances"] = (
        tf.cast(instances.read_value(), tf.int64),
        instances.assign_add(tf.reduce_sum(weights)),
    )
    mlm_loss, mlm_update = metrics["masked_lm_loss"]
    nsp_loss, nsp_update = metrics["next_sentence_loss"]
    metrics["loss"] = (mlm_loss + nsp_loss, tf.group(mlm_update, nsp_update))
    return metrics


def get_masked_lm_output(
    bert_config, input_tensor, output_weights, positions, label_ids, label_weights
):
    """The masked LM head and its loss.

    The hidden states at `positions` go through a dense layer with the
    config's activation and a LayerNorm (cls/predictions/transform), then are
    scored against every word embedding (the tied `output_weights`) plus a
    per-token cls/predictions/output_bias.

    Args:
      bert_config: the BertConfig.
      input_tensor: [batch, seq_length, hidden] sequence output.
      output_weights: [vocab_size, hidden] word embedding table.
      positions, label_ids: [batch, max_predictions] int32.
      label_weights: [batch, max_predictions] float32, 1.0 for real
        predictions and 0.0 for padding.

    Returns:
      (loss, per_example_loss, log_probs): loss = sum(weights * nll) /
      (sum(weights) + 1e-5); per_example_loss [batch * max_predictions] is the
      negative log likelihood of each label; log_probs [batch *
      max_predictions, vocab_size].
    """
    input_tensor = gather_indexes(input_tensor, positions)

    with tf.compat.v1.variable_scope("cls/predictions"):
        # One more non-linear transform before the output layer; it is only
        # used in pre-training.
        with tf.compat.v1.variable_scope("transform"):
            input_tensor = modeling.dense(
                input_tensor,
                units=bert_config.hidden_size,
                activation=modeling.get_activation(bert_config.hidden_act),
                kernel_initializer=modeling.create_initializer(bert_config.initializer_range),
                name="dense",
            )
            input_tensor = modeling.layer_norm(input_tensor)

        # The output weights are the input embeddings; only the bias is new.
        output_bias = tf.compat.v1.get_variable(
            "output_bias",
            shape=[bert_config.vocab_size],
            initializer=tf.compat.v1.zeros_initializer(),
        )
        logits = tf.matmul(input_tensor, output_weights, transpose_b=True)
        logits = tf.nn.bias_add(logits, output_bias)
        log_probs = tf.nn.log_softmax(logits, axis=-1)

        label_ids = tf.reshape(label_ids, [-1])
        label_weights = tf.reshape(label_weights, [-1])
        one_hot_labels = tf.one_hot(label_ids, depth=bert_config.vocab_size, dtype=tf.float32)

        # Sequences with fewer than max_predictions_per_seq masks are padded
        # with position 0 and weight 0.0; the weights keep those out.
        per_example_loss = -tf.reduce_sum(log_probs * one_hot_labels, axis=[-1])
        numerator = tf.reduce_sum(label_weights * per_example_loss)
        denominator = tf.reduce_sum(label_weights) + 1e-5
        loss = numerator / denominator

    return (loss, per_example_loss, log_probs)


def get_next_sentence_output(bert_config, input_tensor, labels, weights=None):
    """The next-sentence head: 2-way softmax over the pooled output.

    Label 0 means the second segment really follows the first, 1 that it is
    random. Returns (mean loss, per_example_loss [batch], log_probs
    [batch, 2]). With `weights` (packed rows: 1.0 for each instance's slot,
    0.0 for empty ones) the mean is over the weighted slots.
    """
    with tf.compat.v1.variable_scope("cls/seq_relationship"):
        output_weights = tf.compat.v1.get_variable(
            "output_weights",
            shape=[2, bert_config.hidden_size],
            initializer=modeling.create_initializer(bert_config.initializer_range),
        )
        output_bias = tf.compat.v1.get_variable(
            "output_bias", shape=[2], initializer=tf.compat.v1.zeros_initializer()
        )
        logits = tf.matmul(input_tensor, output_weights, transpose_b=True)
        logits = tf.nn.bias_add(logits, output_bias)
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        labels = tf.reshape(labels, [-1])
        one_hot_labels = tf.one_hot(labels, depth=2, dtype=tf.float32)
        per_example_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1)
        if weights is None:
            loss = tf.reduce_mean(per_example_loss)
        else:
            weights = tf.reshape(weights, [-1])
            loss = tf.math.divide_no_nan(
                tf.reduce_sum(weights * per_example_loss), tf.reduce_sum(weights)
            )
        return (loss, per_example_loss, log_probs)


def gather_indexes(sequence_tensor, positions):
    """Picks the vectors at `positions` out of each sequence of the batch.

    sequence_tensor [batch, seq_length, width], positions [batch, n] ->
    [batch * n, width], row b * n + i being sequence_tensor[b, positions[b, i]].
    """
    sequence_shape = modeling.get_shape_list(sequence_tensor, expected_rank=3)
    batch_size = sequence_shape[0]
    seq_length = sequence_shape[1]
    width = sequence_shape[2]

    flat_offsets = tf.reshape(tf.range(0, batch_size, dtype=tf.int32) * seq_length, [-1, 1])
    flat_positions = tf.reshape(positions + flat_offsets, [-1])
    flat_sequence_tensor = tf.reshape(sequence_tensor, [batch_size * seq_length, width])
    return tf.gather(flat_sequence_tensor, flat_positions)


# The original's name for the record parser (int64 features come back as int32).
_decode_record = features_lib.decode_record


def input_fn_builder(
    input_files,
    max_seq_length,
    max_predictions_per_seq,
    is_training,
    num_cpu_threads=4,
    max_instances_per_row=None,
):
    """Returns the input_fn(params) reading pre-training TFRecords.

    Training: the file list shuffled and repeated, files read in parallel
    (interleaved, order not guaranteed unless the engine asks for a
    deterministic pipeline), records shuffled with a buffer of 100.
    Eval: files in the given order, repeated. Both batch
    params["batch_size"] examples and drop the remainder.

    With max_instances_per_row, the records are packed into rows of up to
    that many instances (pretraining_packing) and params["batch_size"]
    counts rows. Training shuffles the rows too, with a buffer of one
    packing window; evaluation reads every record once, in order, the last
    batch filled with empty rows.
    """

    def input_fn(params):
        batch_size = params["batch_size"]
        record = pretraining_records.record_features(max_seq_length, max_predictions_per_seq)
        name_to_features = {
            name: tf.io.FixedLenFeature([length], tf.as_dtype(dtype))
            for name, (length, dtype, _) in record.items()
        }

        if is_training:
            d = tf.data.Dataset.from_tensor_slices(tf.constant(input_files))
            d = d.repeat()
            d = d.shuffle(buffer_size=len(input_files))
            cycle_length = min(num_cpu_threads, len(input_files))
            d = d.interleave(
                tf.data.TFRecordDataset,
                cycle_length=cycle_length,
                num_parallel_calls=cycle_length,
            )
            # Sloppy reading, as the original: files interleave in whatever
            # order they deliver (the engine turns this off for seeded runs).
            options = tf.data.Options()
            options.deterministic = False
            d = d.with_options(options)
            d = d.shuffle(buffer_size=100)
        elif max_instances_per_row is None:
            d = tf.data.TFRecordDataset(input_files)
            # Eval runs a fixed number of steps, so never run out of data.
            d = d.repeat()
        else:
            d = tf.data.TFRecordDataset(input_files)

        d = d.map(
            lambda record: features_lib.decode_record(record, name_to_features),
            num_parallel_calls=num_cpu_threads,
        )
        if max_instances_per_row is not None:
            d = pretraining_packing.pack(
                d,
                max_seq_length,
                pretraining_packing.max_predictions_per_row(
                    max_predictions_per_seq, max_instances_per_row
                ),
                max_instances_per_row,
            )
            if not is_training:
                return pretraining_packing.empty_rows_to_fill(d, batch_size)
            d = d.shuffle(buffer_size=pretraining_packing.PACKING_WINDOW)
        d = d.batch(batch_size, drop_remainder=True)
        return d.prefetch(tf.data.AUTOTUNE)

    return input_fn


# The flags of this script read as they are (the model flags apart, in
# script_flags.ModelSettings).
_FLAG_NAMES = (
    "input_file output_dir do_train do_eval train_batch_size eval_batch_size learning_rate "
    "num_train_steps num_warmup_steps max_eval_steps max_predictions_per_seq "
    "save_checkpoints_steps optimizer precision num_accumulation_steps "
    "allow_new_task_in_output_dir pack_sequences max_instances_per_row"
).split()

# The flags whose values the records give when they are left out.
_LENGTH_FLAGS = ("max_seq_length", "max_predictions_per_seq")

# What settings_from_flags reads: the model flags (model), the engine's
# config, evaluation while training (eval_options, or None), which of
# _LENGTH_FLAGS the command line gave (lengths_given) and each flag of
# _FLAG_NAMES.
Settings = collections.namedtuple(
    "Settings", ["model", "run_config", "eval_options", "lengths_given", *_FLAG_NAMES]
)


def settings_from_flags():
    """Reads the flags once into Settings; refuses engine flags that cannot work."""
    return Settings(
        model=script_flags.model_settings_from_flags(),
        eval_options=script_flags.evaluation_options_from_flags(
            FLAGS.do_train and FLAGS.do_eval, "--do_train and --do_eval"
        ),
        run_config=script_flags.run_config_from_flags(),
        lengths_given={name for name in _LENGTH_FLAGS if FLAGS[name].present},
        **{name: FLAGS[name].value for name in _FLAG_NAMES},
    )


def _check_flags(settings):
    """Checks the settings, the config, the checkpoint and the records before any work.

    Returns (settings, bert_config, input_files, the checked
    output_dir_run.OutputDir); the returned settings carry the records'
    lengths for length flags left out.
    """
    if not settings.do_train and not settings.do_eval:
        raise UsageError("At least one of `do_train` or `do_eval` must be True.")
    for name, value in (
        ("bert_config_file", settings.model.bert_config_file),
        ("input_file", settings.input_file),
        ("output_dir", settings.output_dir),
    ):
        if not value:
            raise UsageError(f"--{name} must be set")
    # Each number's own rule was checked as the command line was read. The
    # step counts may be 0 there, since a run that does not train (or does
    # not evaluate) never uses them; a run that does needs at least one step.
    steps = {}
    if settings.do_train:
        steps["num_train_steps"] = settings.num_train_steps
    if settings.do_eval:
        steps["max_eval_steps"] = settings.max_eval_steps
    for name, value in steps.items():
        if value <= 0:
            raise UsageError(f"--{name} must be positive, got {value}")
    input_files = pretraining.input_files(settings.input_file)
    max_seq_length, max_predictions_per_seq = pretraining.lengths_from_data(
        input_files,
        {
            "max_seq_length": settings.model.max_seq_length,
            "max_predictions_per_seq": settings.max_predictions_per_seq,
        },
        settings.lengths_given,
    )
    settings = settings._replace(
        model=settings.model._replace(max_seq_length=max_seq_length),
        max_predictions_per_seq=max_predictions_per_seq,
    )
    bert_config, _ = checks.check_model(settings.model, settings.output_dir, with_vocab=False)
    pretraining.check_record_shapes(input_files, max_seq_length, max_predictions_per_seq)
    pretraining.check_framing(input_files)
    heads = {
        name: shape
        for name, shape in modeling.bert_variable_shapes(bert_config).items()
        if name.startswith("cls/")
    }
    output = output_dir_run.check(
        settings.output_dir,
        output_dir_run.Run("pre-training", None, bert_config, heads, None),
        settings.model,
        settings.allow_new_task_in_output_dir,
        settings.do_train,
        inputs=[("--input_file", path) for path in input_files],
    )
    # With no checkpoint at all, the untrained model's loss is a baseline.
    output.check_trained_model({"--do_eval": settings.do_eval}, untrained_ok=True)
    return settings, bert_config, input_files, output


def main(_):
    logging.set_verbosity(logging.INFO)
    settings, bert_config, input_files, output = _check_flags(settings_from_flags())
    output.start()
    pretraining.run(settings, bert_config, input_files, model_fn_builder, input_fn_builder)


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
