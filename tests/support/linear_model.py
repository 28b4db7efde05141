"""A least-squares model the engine trains, and numpy gradient descent that redoes it.

Every step of it can be recomputed in numpy, so the engine tests can check
checkpoints, resumption, evaluation and prediction against exact weights.
"""

import numpy as np
import tensorflow as tf

from bert_lib import engine

NUM_FEATURES = 3
LEARNING_RATE = 0.1
TRUE_W = np.array([[1.5], [-2.0], [0.5]], dtype=np.float32)


def data(num_examples=48, nan_at=None):
    """Deterministic features and labels; every batch differs from the others."""
    x = np.linspace(-1.0, 1.0, num_examples * NUM_FEATURES, dtype=np.float32)
    x = np.sin(7.0 * x).reshape(num_examples, NUM_FEATURES).astype(np.float32)
    y = (x @ TRUE_W + 0.25).astype(np.float32)
    if nan_at is not None:
        x[nan_at] = np.nan
    return x, y


def input_fn_builder(x, y, repeat=True):
    def input_fn(params):
        dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
        if repeat:
            dataset = dataset.repeat()
        return dataset.batch(params["batch_size"], drop_remainder=True)

    return input_fn


def model_fn(features, labels, mode, params):
    del params
    w = tf.compat.v1.get_variable(
        "w", [NUM_FEATURES, 1], initializer=tf.compat.v1.constant_initializer(0.1)
    )
    b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
    prediction = tf.matmul(features["x"], w) + b
    if mode == engine.ModeKeys.PREDICT:
        return engine.EstimatorSpec(mode, predictions={"y": prediction[:, 0], "x": features["x"]})
    per_example = tf.square(prediction - labels)[:, 0]
    loss = tf.reduce_mean(per_example)
    if mode == engine.ModeKeys.EVAL:

        def metric_fn(per_example, labels):
            return {
                "mse": tf.compat.v1.metrics.mean(per_example),
                "label_mean": tf.compat.v1.metrics.mean(labels),
            }

        return engine.EstimatorSpec(
            mode, loss=loss, eval_metrics=(metric_fn, [per_example, labels])
        )
    global_step = tf.compat.v1.train.get_or_create_global_step()
    learning_rate = tf.constant(LEARNING_RATE)
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(learning_rate)
    train_op = optimizer.minimize(loss, global_step=global_step)
    return engine.EstimatorSpec(mode, loss=loss, train_op=train_op, learning_rate=learning_rate)


def numpy_sgd(x, y, batch_size, steps, start=0):
    """Weights after `steps` of full-batch-mean gradient descent from the initializers."""
    w = np.full((NUM_FEATURES, 1), 0.1, np.float64)
    b = np.zeros([1], np.float64)
    batches_per_epoch = len(x) // batch_size
    for step in range(start, start + steps):
        i = (step % batches_per_epoch) * batch_size
        xb, yb = x[i : i + batch_size].astype(np.float64), y[i : i + batch_size]
        error = xb @ w + b - yb
        w -= LEARNING_RATE * 2.0 * xb.T @ error / batch_size
        b -= LEARNING_RATE * 2.0 * error.mean(axis=0)
    return w, b
