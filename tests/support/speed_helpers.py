"""A tiny BERT classifier trained through the engine, for the speed-flag tests.

The model_fn has the shape of run_classifier's (BertModel, pooled output,
softmax cross entropy, BERT's training step through model_fns.train_spec),
small enough that a few steps take a second. Dropout is off so runs are
deterministic. Precision and accumulation reach it as model_fn_builder's
arguments, as they reach the scripts' model_fns.
"""

import numpy as np
import tensorflow as tf
from helpers import tiny_bert_config

import modeling
from bert_lib import engine
from bert_lib.bert_runs import model_fns

SEQ_LENGTH = 16
NUM_LABELS = 3
CONFIG = modeling.BertConfig.from_dict(
    tiny_bert_config(
        60,
        num_attention_heads=4,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        max_position_embeddings=SEQ_LENGTH,
    )
)


def make_data(num_examples=64, seed=3):
    """Token ids, masks with padding and labels that depend on the tokens."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(1, CONFIG.vocab_size, size=(num_examples, SEQ_LENGTH)).astype(np.int32)
    lengths = rng.randint(SEQ_LENGTH // 2, SEQ_LENGTH + 1, size=num_examples)
    mask = (np.arange(SEQ_LENGTH)[None, :] < lengths[:, None]).astype(np.int32)
    ids *= mask
    segments = (np.arange(SEQ_LENGTH)[None, :] >= lengths[:, None] // 2).astype(np.int32) * mask
    labels = (ids[:, 1] % NUM_LABELS).astype(np.int32)
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments, "label_ids": labels}


def input_fn_builder(data, repeat=True):
    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(dict(data))
        if repeat:
            dataset = dataset.repeat()
        return dataset.batch(params["batch_size"], drop_remainder=True)

    return input_fn


def model_fn_builder(
    learning_rate=1e-3,
    num_train_steps=100,
    num_warmup_steps=0,
    precision="fp32",
    num_accumulation_steps=1,
):
    def model_fn(features, labels, mode, params):
        del labels, params
        model = modeling.BertModel(
            config=CONFIG,
            is_training=mode == engine.ModeKeys.TRAIN,
            input_ids=features["input_ids"],
            input_mask=features["input_mask"],
            token_type_ids=features["segment_ids"],
            compute_dtype=model_fns.compute_dtype(precision),
        )
        pooled = model.get_pooled_output()
        output_weights = tf.compat.v1.get_variable(
            "output_weights",
            [NUM_LABELS, CONFIG.hidden_size],
            initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.02),
        )
        output_bias = tf.compat.v1.get_variable(
            "output_bias", [NUM_LABELS], initializer=tf.compat.v1.zeros_initializer()
        )
        logits = tf.nn.bias_add(tf.matmul(pooled, output_weights, transpose_b=True), output_bias)
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        one_hot = tf.one_hot(features["label_ids"], depth=NUM_LABELS, dtype=tf.float32)
        loss = tf.reduce_mean(-tf.reduce_sum(one_hot * log_probs, axis=-1))
        if mode == engine.ModeKeys.PREDICT:
            return engine.EstimatorSpec(
                mode, predictions={"probabilities": tf.nn.softmax(logits), "logits": logits}
            )
        if mode == engine.ModeKeys.EVAL:

            def metric_fn(loss_value):
                return {"eval_loss": tf.compat.v1.metrics.mean(loss_value)}

            return engine.EstimatorSpec(mode, loss=loss, eval_metrics=(metric_fn, [loss]))
        return model_fns.train_spec(
            loss,
            learning_rate,
            num_train_steps,
            num_warmup_steps,
            precision,
            num_accumulation_steps,
        )

    return model_fn


def train(
    model_dir,
    steps,
    batch_size=8,
    data=None,
    seed=1,
    learning_rate=1e-3,
    precision="fp32",
    **config_kwargs,
):
    """Trains `steps` optimizer steps from the same initial weights; returns the Estimator.

    config_kwargs go to the RunConfig; its num_accumulation_steps to the
    model_fn too, as a script passes its setting to both.
    """
    data = make_data() if data is None else data
    settings = dict(save_checkpoints_steps=1000, log_step_count_steps=1, save_summary_steps=0)
    settings.update(config_kwargs)
    config = engine.RunConfig(model_dir=str(model_dir), tf_random_seed=seed, **settings)
    model_fn = model_fn_builder(
        learning_rate=learning_rate,
        precision=precision,
        num_accumulation_steps=config.num_accumulation_steps,
    )
    estimator = engine.Estimator(
        model_fn,
        config,
        train_batch_size=batch_size,
        eval_batch_size=batch_size,
        predict_batch_size=batch_size,
    )
    estimator.train(input_fn_builder(data), max_steps=steps)
    return estimator


def eval_loss(model_dir, data=None, batch_size=8, precision="fp32", **config_kwargs):
    """Mean loss of the newest checkpoint in model_dir over `data` (float32 by default)."""
    data = make_data() if data is None else data
    config = engine.RunConfig(model_dir=str(model_dir), **config_kwargs)
    model_fn = model_fn_builder(precision=precision)
    estimator = engine.Estimator(model_fn, config, eval_batch_size=batch_size)
    return estimator.evaluate(input_fn_builder(data, repeat=False))["eval_loss"]
