"""A training process for test_preemption.py to send signals to.

Usage: preemption_worker.py MODEL_DIR MODEL [PLAN]

MODEL is "linear" (the least-squares model of linear_model.py on a
shuffled input, 16 steps, a checkpoint every 4) or "bert_fp16" (the tiny
BERT classifier of speed_helpers.py at --precision=fp16 with the loss scale
growing every 3 good steps, 10 steps, a checkpoint every 4) or "predict"
(the linear model predicting slowly into an output file written
atomically). With TF_CONFIG set, training is multi-worker. The process
runs through errors.call, as the scripts do.

PLAN says when the process signals itself, with real signals:
  "TERM@6"      SIGTERM in the middle of the step that starts at global step
                6 (that step is slowed down to a second, the signal comes
                0.3 s into it);
  "INT,INT@6"   two SIGINTs 0.2 s apart in the middle of that step;
  "TERM@4+"     SIGTERM right after the step that ends at global step 4,
                before the checkpoint that step is due for is written.
"""

import process_setup  # noqa: F401 (quiet TensorFlow on CPU, the repo importable)

# isort: split
import os
import signal
import sys
import threading
import time

import numpy as np
import speed_helpers
import tensorflow as tf
from absl import logging
from linear_model import NUM_FEATURES, data
from linear_model import model_fn as linear_model_fn

import optimization
from bert_lib import engine
from bert_lib.plumbing import atomic_write, errors

SEED = 5
LINEAR_STEPS = 16
BERT_STEPS = 10
SAVE_STEPS = 4
LOSS_SCALE_GROWTH_INTERVAL = 3
SLOW_STEP_SECONDS = 1.0


def linear_input_fn(params):
    """The linear model's examples, repeated and shuffled (an op-level seed, so the
    order is the same with or without --tf_random_seed)."""
    x, y = data()
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat()
    dataset = dataset.shuffle(16, seed=3)
    return dataset.batch(params["batch_size"], drop_remainder=True)


def bert_input_fn(params):
    dataset = tf.data.Dataset.from_tensor_slices(speed_helpers.make_data()).repeat()
    return dataset.shuffle(16, seed=3).batch(params["batch_size"], drop_remainder=True)


class SignalPlan:
    """Sends the planned signals; slows down the step they are sent in.

    A SessionRunHook-like object (before_run / after_run) for Estimator.train,
    plus `slow_op`, which a model_fn's train op runs: it sleeps while a
    planned step is in flight.
    """

    def __init__(self, plan):
        self.signals, self.step, self.after = [], None, False
        if plan:
            names, _, at = plan.partition("@")
            self.signals = [getattr(signal, f"SIG{name}") for name in names.split(",")]
            self.after = at.endswith("+")
            self.step = int(at.rstrip("+"))
        self._slow = False

    def slow_op(self):
        def sleep(value):
            if self._slow:
                time.sleep(SLOW_STEP_SECONDS)
            return value

        return tf.numpy_function(sleep, [tf.constant(0, tf.int32)], tf.int32)

    def _send(self, delay):
        for signum in self.signals:
            time.sleep(delay)
            os.kill(os.getpid(), signum)

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        del session, coord

    def before_run(self, run_context):
        step = int(run_context.session.run(tf.compat.v1.train.get_global_step()))
        self._slow = step == self.step and not self.after
        if self._slow:
            threading.Thread(
                target=self._send, args=(0.3 if len(self.signals) == 1 else 0.2,)
            ).start()
        return None

    def after_run(self, run_context, run_values):
        del run_values
        step = int(run_context.session.run(tf.compat.v1.train.get_global_step()))
        if self.after and step == self.step:
            self._send(0.0)
            time.sleep(0.3)  # the signal is recorded before the loop goes on

    def end(self, session):
        del session


def with_slow_steps(model_fn, plan):
    """model_fn whose train op also runs plan.slow_op() (made after the model's ops)."""

    def slowed(features, labels, mode, params):
        spec = model_fn(features, labels, mode, params)
        if mode != engine.ModeKeys.TRAIN:
            return spec
        train_op = tf.group(spec.train_op, plan.slow_op())
        return engine.EstimatorSpec(mode, loss=spec.loss, train_op=train_op)

    return slowed


def estimator(model_dir, model, plan, tf_random_seed=None):
    """The Estimator a run of MODEL trains with (multi-worker when TF_CONFIG is set)."""
    strategy = "multi_worker" if os.environ.get("TF_CONFIG") else "one_device"
    if model == "bert_fp16":
        optimization.LOSS_SCALE_GROWTH_INTERVAL = LOSS_SCALE_GROWTH_INTERVAL
        model_fn, seed = speed_helpers.model_fn_builder(1e-3, precision="fp16"), SEED
    else:
        model_fn, seed = linear_model_fn, tf_random_seed
    config = engine.RunConfig(
        model_dir=model_dir,
        save_checkpoints_steps=SAVE_STEPS,
        log_step_count_steps=1,
        tf_random_seed=seed,
        distribution_strategy=strategy,
    )
    return engine.Estimator(
        with_slow_steps(model_fn, plan), config, train_batch_size=8, predict_batch_size=4
    )


def train(model_dir, model, plan_text):
    plan = SignalPlan(plan_text)
    # Multi-worker runs are seeded: they resume through the seeded skip.
    seed = SEED if os.environ.get("TF_CONFIG") else None
    if model == "bert_fp16":
        estimator(model_dir, model, plan).train(bert_input_fn, BERT_STEPS, hooks=[plan])
    else:
        estimator(model_dir, model, plan, seed).train(linear_input_fn, LINEAR_STEPS, hooks=[plan])


def predict_slowly(model_dir, output_file):
    """Writes one line per prediction through atomic_write, a batch every 0.05 s."""

    def input_fn(params):
        x = np.linspace(-1.0, 1.0, 4000 * NUM_FEATURES, dtype=np.float32)
        dataset = tf.data.Dataset.from_tensor_slices({"x": x.reshape(-1, NUM_FEATURES)})
        dataset = dataset.batch(params["batch_size"])
        return dataset.map(
            lambda f: {
                "x": tf.ensure_shape(
                    tf.numpy_function(_pause, [f["x"]], tf.float32), [None, NUM_FEATURES]
                )
            }
        )

    predictions = estimator(model_dir, "linear", SignalPlan("")).predict(input_fn)
    with atomic_write.atomic_files([output_file], "w") as (f,):
        for prediction in predictions:
            f.write(f"{prediction['y']}\n")
            f.flush()


def _pause(x):
    time.sleep(0.05)
    return x


def main(model_dir, model, plan_text=""):
    logging.set_verbosity(logging.INFO)
    if model == "predict":
        predict_slowly(model_dir, plan_text)
    else:
        train(model_dir, model, plan_text)


if __name__ == "__main__":
    errors.call(main, *sys.argv[1:])
