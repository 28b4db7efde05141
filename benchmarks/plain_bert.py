"""A plain TF1-style BERT, the yardstick the speed benchmark measures against.

Written the straightforward way the 2018 code is: float32 throughout, the
same layer structure (dense layers on [batch * seq, width] matrices, heads
split with reshape + transpose, LayerNorm through tf.nn.moments and
tf.nn.batch_normalization, tanh GELU), Adam with decoupled weight decay
updating one variable at a time, gradients clipped to global norm 1.0, and a
Python loop that runs one training step per session.run with no XLA. It
shares no code with the project's modeling.py / optimization.py / engine,
so the benchmark compares two independent implementations of the same
arithmetic.
"""

import math
import re

import tensorflow as tf

v1 = tf.compat.v1


def _init(stddev):
    return v1.truncated_normal_initializer(stddev=stddev)


def _dense(x, units, name, activation=None):
    with v1.variable_scope(name):
        kernel = v1.get_variable("kernel", [x.shape[-1], units], initializer=_init(0.02))
        bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
        y = tf.nn.bias_add(tf.matmul(x, kernel), bias)
    return activation(y) if activation is not None else y


def _gelu(x):
    return x * 0.5 * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))


def _layer_norm(x, name="LayerNorm"):
    with v1.variable_scope(name):
        width = x.shape[-1]
        beta = v1.get_variable("beta", [width], initializer=v1.zeros_initializer())
        gamma = v1.get_variable("gamma", [width], initializer=v1.ones_initializer())
        mean, variance = tf.nn.moments(x, [-1], keepdims=True)
        return tf.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-12)


def _dropout(x, rate):
    return tf.nn.dropout(x, rate=rate) if rate else x


def encoder(cfg, input_ids, input_mask, segment_ids, training):
    """Returns (sequence output [B*S, H], pooled output [B, H], word embedding table)."""
    batch, seq = input_ids.shape.as_list()
    hidden, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    head = hidden // heads
    drop = cfg["dropout"] if training else 0.0
    with v1.variable_scope("bert"):
        with v1.variable_scope("embeddings"):
            table = v1.get_variable(
                "word_embeddings", [cfg["vocab_size"], hidden], initializer=_init(0.02)
            )
            x = tf.gather(table, tf.reshape(input_ids, [-1]))
            types = v1.get_variable("token_type_embeddings", [2, hidden], initializer=_init(0.02))
            x += tf.matmul(tf.one_hot(tf.reshape(segment_ids, [-1]), 2), types)
            x = tf.reshape(x, [batch, seq, hidden])
            positions = v1.get_variable(
                "position_embeddings", [512, hidden], initializer=_init(0.02)
            )
            x += tf.expand_dims(tf.slice(positions, [0, 0], [seq, -1]), 0)
            x = _dropout(_layer_norm(x), drop)
        mask = tf.cast(tf.reshape(input_mask, [batch, 1, 1, seq]), tf.float32)
        adder = (1.0 - mask) * -10000.0
        x = tf.reshape(x, [batch * seq, hidden])
        with v1.variable_scope("encoder"):
            for i in range(cfg["num_hidden_layers"]):
                with v1.variable_scope(f"layer_{i}"):
                    with v1.variable_scope("attention"):
                        with v1.variable_scope("self"):

                            def split(t):
                                t = tf.reshape(t, [batch, seq, heads, head])
                                return tf.transpose(t, [0, 2, 1, 3])

                            q = split(_dense(x, hidden, "query"))
                            k = split(_dense(x, hidden, "key"))
                            v = split(_dense(x, hidden, "value"))
                            scores = tf.matmul(q, k, transpose_b=True) * (1.0 / math.sqrt(head))
                            probs = _dropout(tf.nn.softmax(scores + adder), drop)
                            context = tf.transpose(tf.matmul(probs, v), [0, 2, 1, 3])
                            context = tf.reshape(context, [batch * seq, hidden])
                        with v1.variable_scope("output"):
                            a = _dropout(_dense(context, hidden, "dense"), drop)
                            a = _layer_norm(a + x)
                    with v1.variable_scope("intermediate"):
                        h = _dense(a, cfg["intermediate_size"], "dense", _gelu)
                    with v1.variable_scope("output"):
                        h = _dropout(_dense(h, hidden, "dense"), drop)
                        x = _layer_norm(h + a)
        with v1.variable_scope("pooler"):
            first = tf.reshape(x, [batch, seq, hidden])[:, 0, :]
            pooled = _dense(first, hidden, "dense", tf.tanh)
    return x, pooled, table


def classifier_loss(cfg, features, num_labels, training):
    _, pooled, _ = encoder(
        cfg, features["input_ids"], features["input_mask"], features["segment_ids"], training
    )
    if training:
        pooled = tf.nn.dropout(pooled, rate=0.1)
    weights = v1.get_variable(
        "output_weights", [num_labels, cfg["hidden_size"]], initializer=_init(0.02)
    )
    bias = v1.get_variable("output_bias", [num_labels], initializer=v1.zeros_initializer())
    logits = tf.nn.bias_add(tf.matmul(pooled, weights, transpose_b=True), bias)
    log_probs = tf.nn.log_softmax(logits)
    labels = tf.one_hot(features["label_ids"], num_labels)
    return tf.reduce_mean(-tf.reduce_sum(labels * log_probs, axis=-1)), logits


def pretraining_loss(cfg, features, training):
    sequence, pooled, table = encoder(
        cfg, features["input_ids"], features["input_mask"], features["segment_ids"], training
    )
    batch, seq = features["input_ids"].shape.as_list()
    positions = features["masked_lm_positions"]
    offsets = tf.reshape(tf.range(batch) * seq, [-1, 1])
    picked = tf.gather(sequence, tf.reshape(positions + offsets, [-1]))
    with v1.variable_scope("cls/predictions"):
        with v1.variable_scope("transform"):
            picked = _layer_norm(_dense(picked, cfg["hidden_size"], "dense", _gelu))
        bias = v1.get_variable(
            "output_bias", [cfg["vocab_size"]], initializer=v1.zeros_initializer()
        )
        log_probs = tf.nn.log_softmax(
            tf.nn.bias_add(tf.matmul(picked, table, transpose_b=True), bias)
        )
        ids = tf.reshape(features["masked_lm_ids"], [-1])
        weights = tf.reshape(features["masked_lm_weights"], [-1])
        nll = -tf.reduce_sum(log_probs * tf.one_hot(ids, cfg["vocab_size"]), axis=-1)
        mlm = tf.reduce_sum(weights * nll) / (tf.reduce_sum(weights) + 1e-5)
    with v1.variable_scope("cls/seq_relationship"):
        w = v1.get_variable("output_weights", [2, cfg["hidden_size"]], initializer=_init(0.02))
        b = v1.get_variable("output_bias", [2], initializer=v1.zeros_initializer())
        log_probs = tf.nn.log_softmax(tf.nn.bias_add(tf.matmul(pooled, w, transpose_b=True), b))
        labels = tf.one_hot(tf.reshape(features["next_sentence_labels"], [-1]), 2)
        nsp = tf.reduce_mean(-tf.reduce_sum(labels * log_probs, axis=-1))
    return mlm + nsp


def train_op(loss, learning_rate=5e-5, num_train_steps=1000, warmup=100):
    """Linear warmup and decay, global-norm clipping, Adam with weight decay, step += 1."""
    step = v1.train.get_or_create_global_step()
    progress = tf.cast(step, tf.float32)
    lr = learning_rate * (1.0 - tf.minimum(progress, num_train_steps) / num_train_steps)
    lr = tf.where(progress < warmup, learning_rate * progress / warmup, lr)
    tvars = v1.trainable_variables()
    grads, _ = tf.clip_by_global_norm(tf.gradients(loss, tvars), 1.0)
    updates = []
    for grad, var in zip(grads, tvars):
        grad = tf.convert_to_tensor(grad)
        name = var.op.name
        m = v1.get_variable(
            name + "/adam_m", var.shape, trainable=False, initializer=v1.zeros_initializer()
        )
        v = v1.get_variable(
            name + "/adam_v", var.shape, trainable=False, initializer=v1.zeros_initializer()
        )
        next_m = 0.9 * m + 0.1 * grad
        next_v = 0.999 * v + 0.001 * tf.square(grad)
        update = next_m / (tf.sqrt(next_v) + 1e-6)
        if not re.search("LayerNorm|layer_norm|bias", name):
            update += 0.01 * var
        updates += [var.assign(var - lr * update), m.assign(next_m), v.assign(next_v)]
    with tf.control_dependencies(updates):
        return step.assign_add(1)
