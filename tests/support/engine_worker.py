"""Trains small models with the engine under one distribution mode, for test_engine_runs.py.

Usage: engine_worker.py MODE OUTPUT_DIR, MODE one of one_device, mirrored
(two logical CPU devices) and multi_worker (cluster from TF_CONFIG). Device
set-up is process-wide, hence a process of its own. For each model (linear,
bert, and bert on packed rows, packed) it writes OUTPUT_DIR/<model>.npz with
the per-step losses (from the TensorBoard events), every variable after
training ("var:<name>"), the final global step and the number of replicas;
multi_worker also writes the weights right after initialization
(<model>_initial.npz). With ENGINE_WORKER_V1_BEHAVIOR set in the environment
it first calls tf.compat.v1.disable_v2_behavior().
"""

import process_setup  # noqa: F401 (quiet TensorFlow on CPU, the repo importable)

# isort: split
import os
import sys

import helpers
import mirrored
import numpy as np
import pretraining_instances
import tensorflow as tf
from absl import logging

import modeling
import run_pretraining
from bert_lib import engine

GOLDEN_RECORDS = os.path.join(helpers.GOLDEN, "pretraining", "default.tfrecord")
GLOBAL_BATCH = 8
PACKED_INSTANCES = 48


class _VariableDump:
    """Saves every global variable after initialization and at the end of training."""

    def __init__(self, initial_path=None):
        self._initial_path = initial_path
        self.values = {}

    def begin(self):
        self._variables = {v.op.name: v for v in tf.compat.v1.global_variables()}

    def _values(self, session):
        names = sorted(self._variables)
        values = session.run([self._variables[name] for name in names])
        return {f"var:{name}": value for name, value in zip(names, values)}

    def after_create_session(self, session, coord):
        del coord
        if self._initial_path:
            np.savez(self._initial_path, **self._values(session))

    def before_run(self, run_context):
        del run_context
        return None

    def after_run(self, run_context, run_values):
        del run_context, run_values

    def end(self, session):
        self.values = self._values(session)
        self.values["step"] = self.values["var:global_step"]


def _losses(model_dir):
    losses = {}
    for name in sorted(os.listdir(model_dir)):
        if name.startswith("events.out.tfevents"):
            for event in tf.compat.v1.train.summary_iterator(os.path.join(model_dir, name)):
                for value in event.summary.value:
                    if value.tag == "loss":
                        losses[event.step] = value.simple_value
    return np.array([losses[step] for step in sorted(losses)], np.float32)


def _train(name, model_fn, input_fn, steps, mode, output_dir, save_initial=False):
    model_dir = os.path.join(output_dir, name)
    config = engine.RunConfig(
        model_dir=model_dir,
        save_checkpoints_steps=100,
        save_summary_steps=1,
        log_step_count_steps=1,
        tf_random_seed=5,
        distribution_strategy=mode,
    )
    estimator = engine.Estimator(model_fn, config, train_batch_size=GLOBAL_BATCH)
    initial = os.path.join(output_dir, f"{name}_initial.npz") if save_initial else None
    dump = _VariableDump(initial)
    estimator.train(input_fn, max_steps=steps, hooks=[dump])
    replicas = 2 if mode != "one_device" else 1
    losses = _losses(model_dir) if os.path.isdir(model_dir) else np.zeros([0])
    np.savez(
        os.path.join(output_dir, f"{name}.npz"), losses=losses, replicas=replicas, **dump.values
    )


def _linear_input_fn(params):
    x = np.sin(np.arange(64 * 3, dtype=np.float32)).reshape(64, 3)
    y = x @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3
    dataset = tf.data.Dataset.from_tensor_slices(({"x": x}, y))
    return dataset.repeat().batch(params["batch_size"], drop_remainder=True)


def _linear_model_fn(features, labels, mode, params):
    del mode, params
    w = tf.compat.v1.get_variable("w", [3, 1], initializer=tf.compat.v1.zeros_initializer())
    b = tf.compat.v1.get_variable("b", [1], initializer=tf.compat.v1.zeros_initializer())
    loss = tf.reduce_mean(tf.square(tf.matmul(features["x"], w) + b - labels))
    global_step = tf.compat.v1.train.get_or_create_global_step()
    train_op = tf.compat.v1.train.AdamOptimizer(0.05).minimize(loss, global_step=global_step)
    return engine.EstimatorSpec(mode=engine.ModeKeys.TRAIN, loss=loss, train_op=train_op)


def _bert_model_fn():
    config = modeling.BertConfig.from_dict(
        helpers.tiny_bert_config(
            30522,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            max_position_embeddings=128,
        )
    )
    return run_pretraining.model_fn_builder(
        bert_config=config,
        init_checkpoint=None,
        learning_rate=1e-3,
        num_train_steps=100,
        num_warmup_steps=0,
        use_tpu=False,
        use_one_hot_embeddings=False,
    )


def main(mode, output_dir):
    logging.set_verbosity(logging.INFO)
    if os.environ.get("ENGINE_WORKER_V1_BEHAVIOR"):
        # Ref variables and no eager mode, as in a script that opts into TF1.
        tf.compat.v1.disable_v2_behavior()
    os.makedirs(output_dir, exist_ok=True)
    if mode == "mirrored":
        mirrored.split_cpu(2)
    # Records in file order (the eval pipeline), so that every mode sees the
    # same examples in each global batch.
    bert_input_fn = run_pretraining.input_fn_builder(
        [GOLDEN_RECORDS], 128, 20, is_training=False, num_cpu_threads=1
    )
    if mode == "multi_worker":
        _train("bert", _bert_model_fn(), bert_input_fn, 4, mode, output_dir, save_initial=True)
        return
    _train("linear", _linear_model_fn, _linear_input_fn, 6, mode, output_dir)
    _train("bert", _bert_model_fn(), bert_input_fn, 5, mode, output_dir)
    # Short instances packed, up to 3 a row, each replica its own rows.
    short_records = pretraining_instances.write_records(
        os.path.join(output_dir, "short.tfrecord"),
        pretraining_instances.random_instances(PACKED_INSTANCES),
    )
    packed_input_fn = run_pretraining.input_fn_builder(
        [short_records], 128, 20, is_training=False, num_cpu_threads=1, max_instances_per_row=3
    )
    _train("packed", _bert_model_fn(), packed_input_fn, 2, mode, output_dir)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
