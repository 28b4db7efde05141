"""The pieces every script's model_fn is built from: precision, the training step, warm start;
and the Estimator a fine-tuning run builds from its script's model_fn_builder.

A script reads --precision and --num_accumulation_steps into its settings
and passes them to its model_fn_builder, as it passes the learning rate;
the model_fn then builds BertModel in compute_dtype(precision) and returns
train_spec(...) in TRAIN mode. Training, evaluation, prediction and export
build the model from the same arguments, so they compute alike.

What the engine needs of BERT's training step travels in the spec
(engine.EstimatorSpec): the learning rate it logs, the op that accumulates
a micro-batch's gradients, and the float16 loss scale a checkpoint of the
original code lacks.
"""

import collections

import tensorflow as tf
from absl import logging

import modeling
import optimization

from .. import engine
from ..plumbing.errors import UsageError
from ..task_data import dynamic_padding

# What each --precision means, said once: the dtype BertModel's Transformer
# layers compute in (None: float32, the original graph); whether training
# scales the loss (float16 gradients would otherwise underflow); whether an
# export writes its weights as constants of the graph (see
# serving.weights_as_constants).
Precision = collections.namedtuple(
    "Precision", ["compute_dtype", "loss_scaling", "constant_weights_in_export"]
)
PRECISION_SETTINGS = {
    "fp32": Precision(None, False, False),
    "bf16": Precision(tf.bfloat16, False, True),
    "fp16": Precision(tf.float16, True, False),
}


def precision_of(precision):
    """The Precision record of a --precision value (fp32, bf16 or fp16)."""
    if precision not in PRECISION_SETTINGS:
        known = ", ".join(PRECISION_SETTINGS)
        raise ValueError(f"precision must be one of {known}, got {precision!r}")
    return PRECISION_SETTINGS[precision]


def compute_dtype(precision):
    """The dtype BertModel computes in at `precision`; None for fp32."""
    return precision_of(precision).compute_dtype


def dropout_keys(features, is_training):
    """modeling.DropoutKeys of a training batch whose input numbers its examples, else None.

    dynamic_padding numbers the training examples under --dynamic_padding, so
    that dropout draws an example's masks by its number: the sorted
    micro-batches of --group_by_length then make the update of the unsorted
    batch, dropout included. Full-length training keeps tf.nn.dropout, the
    original's.
    """
    if not is_training or dynamic_padding.INDEX_KEY not in features:
        return None
    return modeling.DropoutKeys(features[dynamic_padding.INDEX_KEY])


def training_options(precision, num_accumulation_steps):
    """optimization.TrainingOptions of a run: its accumulation steps, and dynamic loss
    scaling where `precision` asks for it."""
    return optimization.TrainingOptions(
        num_accumulation_steps=num_accumulation_steps,
        dynamic_loss_scaling=precision_of(precision).loss_scaling,
    )


def train_spec(
    loss,
    learning_rate,
    num_train_steps,
    num_warmup_steps,
    precision="fp32",
    num_accumulation_steps=1,
    optimizer="adamw",
    scaffold_fn=None,
    examples=None,
):
    """The TRAIN engine.EstimatorSpec of `loss`: BERT's training step (see
    optimization.create_training_step) with the options of `precision` and
    `num_accumulation_steps`, which the run's RunConfig must give too (its
    input_fn then makes micro-batches). `examples`: the spec's examples, for
    batches holding a varying number of them (packed rows)."""
    step = optimization.create_training_step(
        loss,
        learning_rate,
        num_train_steps,
        num_warmup_steps,
        optimizer=optimizer,
        options=training_options(precision, num_accumulation_steps),
    )
    return engine.EstimatorSpec(
        mode=engine.ModeKeys.TRAIN,
        loss=loss,
        train_op=step.train_op,
        scaffold_fn=scaffold_fn,
        learning_rate=step.learning_rate,
        accumulate_op=step.accumulate_op,
        optional_in_checkpoint=step.optional_in_checkpoint,
        examples=examples,
    )


def warm_start_from_checkpoint(init_checkpoint, use_tpu=False):
    """Starts the graph's trainable variables from `init_checkpoint`, and logs them.

    Call inside a model_fn once the model is built. Every trainable variable
    whose name is in the checkpoint takes its value from there (a shape
    mismatch raises modeling.InputError naming the variable); each is logged
    with its shape and ", *INIT_FROM_CKPT*" when it was found. With no
    init_checkpoint nothing is loaded and only the log is written.

    Returns the spec's scaffold_fn: None, or under use_tpu a callable that
    does the loading when the TPU graph's scaffold is built, which is when
    TPU programs may read checkpoints.
    """
    tvars = tf.compat.v1.trainable_variables()
    assignment_map, loaded_names, scaffold_fn = {}, {}, None
    if init_checkpoint:
        assignment_map, loaded_names = modeling.get_assignment_map_from_checkpoint(
            tvars, init_checkpoint
        )
        if use_tpu:

            def scaffold_fn():
                tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)
                return tf.compat.v1.train.Scaffold()

        else:
            tf.compat.v1.train.init_from_checkpoint(init_checkpoint, assignment_map)

    logging.info("**** Trainable Variables ****")
    for var in tvars:
        note = ", *INIT_FROM_CKPT*" if var.name in loaded_names else ""
        logging.info("  name = %s, shape = %s%s", var.name, var.shape, note)
    return scaffold_fn


def train_steps(
    num_examples,
    train_batch_size,
    num_train_epochs,
    warmup_proportion,
    source,
    noun="training examples",
):
    """(num_train_steps, num_warmup_steps) of `num_examples` training examples, as the
    original computes them from --train_batch_size, --num_train_epochs and
    --warmup_proportion; refuses, naming the numbers, a run of no step at all.

    `source` names where the examples come from, `noun` what they are.
    """
    num_train_steps = int(num_examples / train_batch_size * num_train_epochs)
    if num_train_steps < 1:
        raise UsageError(
            f"{source}: {num_examples} {noun} make {num_train_steps} steps at "
            f"--train_batch_size={train_batch_size} and --num_train_epochs="
            f"{num_train_epochs}; at least one step is needed (more examples or "
            "epochs, or a smaller batch)"
        )
    return num_train_steps, int(num_train_steps * warmup_proportion)


def run_estimator(
    model_fn_builder,
    settings,
    bert_config,
    num_train_steps,
    num_warmup_steps,
    eval_batch_size=None,
    predict_batch_size=None,
    **model_arguments,
):
    """The engine.Estimator of a run (classifier, SQuAD, NER, pre-training).

    Its model_fn is the one `model_fn_builder` (a script's, with the
    original's parameters) builds from `bert_config`, the run's `settings`
    (--init_checkpoint, --learning_rate, --precision; the run config's
    micro-batches per step, --use_tpu for the TPU and its one-hot
    embeddings), the training and warm-up steps, and the task's
    `model_arguments` (num_labels, ...); it runs on settings.run_config with
    the run's batch sizes.
    """
    use_tpu = settings.run_config.use_tpu
    model_fn = model_fn_builder(
        bert_config=bert_config,
        init_checkpoint=settings.model.init_checkpoint,
        learning_rate=settings.learning_rate,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        use_tpu=use_tpu,
        use_one_hot_embeddings=use_tpu,
        precision=settings.precision,
        num_accumulation_steps=settings.run_config.num_accumulation_steps,
        **model_arguments,
    )
    return engine.Estimator(
        model_fn=model_fn,
        config=settings.run_config,
        train_batch_size=settings.train_batch_size,
        eval_batch_size=eval_batch_size,
        predict_batch_size=predict_batch_size,
    )
