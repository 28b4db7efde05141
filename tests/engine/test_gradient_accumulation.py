"""--num_accumulation_steps: N micro-batches make the optimizer step of the whole batch.

train_batch_size stays the batch of one optimizer step (one global_step);
the input_fn gets train_batch_size / N. With dropout off, N micro-batches
must give the weights and Adam slots of one step on the N-times batch.
"""

import os

import numpy as np
import pytest
import speed_helpers
import tensorflow as tf
from helpers import SUPPORT, checkpoint_values, run_python

import optimization
from bert_lib import engine

BATCH = 8
STEPS = 3
LEARNING_RATE = 3e-3


def _checkpoint(model_dir):
    return checkpoint_values(engine.newest_checkpoint(str(model_dir)))


@pytest.fixture(scope="module")
def whole_batch_run(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("whole")
    speed_helpers.train(model_dir, STEPS, batch_size=BATCH, learning_rate=LEARNING_RATE)
    return _checkpoint(model_dir)


@pytest.mark.slow
@pytest.mark.parametrize("num_accumulation_steps", [2, 4])
def test_accumulated_steps_equal_whole_batch_steps(
    whole_batch_run, tmp_path, num_accumulation_steps
):
    speed_helpers.train(
        tmp_path,
        STEPS,
        batch_size=BATCH,
        learning_rate=LEARNING_RATE,
        num_accumulation_steps=num_accumulation_steps,
    )
    ours = _checkpoint(tmp_path)
    # Same variables as a plain run (no accumulators saved), same step count.
    assert sorted(ours) == sorted(whole_batch_run)
    assert ours["global_step"] == STEPS
    for name, reference in whole_batch_run.items():
        np.testing.assert_allclose(ours[name], reference, atol=1e-5, rtol=1e-5, err_msg=name)
    # Training did move the weights (output_bias starts at zero).
    assert np.abs(whole_batch_run["output_bias"]).max() > 1e-3


@pytest.mark.slow
def test_accumulation_differs_from_training_on_micro_batches(whole_batch_run, tmp_path):
    """The comparison above can fail: plain steps on the small batch end elsewhere."""
    speed_helpers.train(tmp_path, STEPS * 2, batch_size=BATCH // 2, learning_rate=LEARNING_RATE)
    ours = _checkpoint(tmp_path)
    name = "bert/encoder/layer_0/attention/self/query/kernel"
    assert np.abs(ours[name] - whole_batch_run[name]).max() > 1e-4


def test_batch_must_divide_into_micro_batches(tmp_path):
    with pytest.raises(engine.UsageError, match="num_accumulation_steps"):
        speed_helpers.train(tmp_path, 1, batch_size=6, num_accumulation_steps=4)
    with pytest.raises(engine.UsageError, match="num_accumulation_steps"):
        engine.RunConfig(model_dir=str(tmp_path), num_accumulation_steps=0)


def test_needs_an_accumulate_op_in_the_spec(tmp_path):
    def model_fn(features, labels, mode, params):
        del labels, params
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.ones_initializer())
        loss = tf.reduce_mean(tf.cast(features["input_ids"], tf.float32)) * w
        step = tf.compat.v1.train.get_or_create_global_step()
        train_op = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss, step)
        return engine.EstimatorSpec(mode, loss=loss, train_op=train_op)

    config = engine.RunConfig(model_dir=str(tmp_path), num_accumulation_steps=2)
    estimator = engine.Estimator(model_fn, config, train_batch_size=4)
    with pytest.raises(engine.UsageError, match="EstimatorSpec carries the accumulate_op"):
        estimator.train(speed_helpers.input_fn_builder(speed_helpers.make_data()), max_steps=1)


def test_an_accumulate_op_without_accumulation_is_refused(tmp_path):
    """A model_fn built for 2 micro-batches under a RunConfig of 1: its train_op would
    average accumulators nothing fills."""
    config = engine.RunConfig(model_dir=str(tmp_path))
    model_fn = speed_helpers.model_fn_builder(learning_rate=1e-3, num_accumulation_steps=2)
    estimator = engine.Estimator(model_fn, config, train_batch_size=4)
    with pytest.raises(engine.UsageError, match="carries an accumulate_op .* num_accumulation"):
        estimator.train(speed_helpers.input_fn_builder(speed_helpers.make_data()), max_steps=1)


def test_accumulator_ops_by_hand():
    """Two accumulate runs + one train run apply the mean of three gradients."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [])
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
        loss = x * w
        options = optimization.TrainingOptions(num_accumulation_steps=3)
        step = optimization.create_training_step(loss, 0.1, 100, 0, options=options)
        train_op, accumulate_op = step.train_op, step.accumulate_op
        m = [v for v in tf.compat.v1.global_variables() if v.op.name == "w/adam_m"][0]
        step = tf.compat.v1.train.get_global_step()
        init = [
            tf.compat.v1.global_variables_initializer(),
            tf.compat.v1.local_variables_initializer(),
        ]
    assert accumulate_op is not None
    assert all("grad_accum" in v.op.name for v in graph.get_collection("local_variables"))
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        session.run(accumulate_op, {x: 0.1})
        session.run(accumulate_op, {x: 0.2})
        assert session.run(step) == 0
        session.run(train_op, {x: 0.6})
        assert session.run(step) == 1
        np.testing.assert_allclose(session.run(m), 0.1 * 0.3, rtol=1e-6)
        # Accumulators were cleared: the next step sees only its own gradients.
        session.run(train_op, {x: 0.3})  # alone: mean of (0 + 0 + 0.3) / 3
        np.testing.assert_allclose(session.run(m), 0.9 * 0.03 + 0.1 * 0.1, rtol=1e-6)


@pytest.mark.slow
def test_mirrored_two_cpus_with_accumulation_bf16_and_fp16(tmp_path):
    """Two logical CPU replicas (a process of its own): accumulation + bf16, and fp16 with
    loss scaling, train and agree with one device."""
    result = run_python(os.path.join(SUPPORT, "speed_worker.py"), str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    mirrored = _checkpoint(tmp_path / "mirrored")
    single = _checkpoint(tmp_path / "single")
    assert mirrored["global_step"] == single["global_step"] == 2
    assert sorted(mirrored) == sorted(single)
    # Same global batch per step, split over replicas and micro-batches:
    # float32 math agrees closely; here bf16 rounding is the limit.
    for name, value in single.items():
        np.testing.assert_allclose(mirrored[name], value, atol=2e-3, err_msg=name)
    mirrored = _checkpoint(tmp_path / "mirrored_fp16")
    single = _checkpoint(tmp_path / "single_fp16")
    assert sorted(mirrored) == sorted(single)
    # Both hold the loss scale and its good-step count, which move alike.
    assert {"loss_scale", "loss_scale_good_steps"} <= set(mirrored)
    for name, value in single.items():
        np.testing.assert_allclose(mirrored[name], value, atol=2e-3, err_msg=name)
