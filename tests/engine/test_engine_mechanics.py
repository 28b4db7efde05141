"""How the engine and a model_fn talk, with no back-channel, on a linear model numpy can redo.

- What training needs of a step travels in the EstimatorSpec: a model_fn of
  its own (no BERT module anywhere) gets gradient accumulation by handing
  over its accumulate_op, and its learning rate is logged from the spec.
- The training loop has one extension point, hooks: EveryNSteps runs work
  at exact multiples even inside a run of several steps, and a hook's run
  context saves and stops.
- A saved input position of another pipeline is found out before the model
  and the session are built: one model, one session.
- An evaluation writes its TensorBoard summaries as its argument says.
"""

import os

import numpy as np
import pytest
import tensorflow as tf
from linear_model import LEARNING_RATE, data, input_fn_builder, model_fn, numpy_sgd

from bert_lib import engine


def _estimator(model_dir, model_fn=model_fn, batch_size=8, **config):
    config.setdefault("save_checkpoints_steps", 100)
    config.setdefault("log_step_count_steps", 100)
    run_config = engine.RunConfig(model_dir=str(model_dir), **config)
    return engine.Estimator(
        model_fn, run_config, train_batch_size=batch_size, eval_batch_size=batch_size
    )


def _weights(model_dir):
    checkpoint = engine.newest_checkpoint(str(model_dir))
    return tf.train.load_variable(checkpoint, "w"), tf.train.load_variable(checkpoint, "b")


def _accumulating_model_fn(num_micro_batches):
    """linear_model's model_fn with gradient accumulation of its own making: plain
    gradient descent on the mean gradient of `num_micro_batches` micro-batches."""

    def accumulating(features, labels, mode, params):
        spec = model_fn(features, labels, engine.ModeKeys.EVAL, params)
        variables = tf.compat.v1.trainable_variables()
        grads = tf.gradients(spec.loss, variables)
        sums = [
            tf.compat.v1.get_variable(
                f"{v.op.name}/sum",
                v.shape,
                initializer=tf.compat.v1.zeros_initializer(),
                trainable=False,
                collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
            )
            for v in variables
        ]
        accumulate_op = tf.group(*[s.assign_add(g) for s, g in zip(sums, grads)])
        mean = [(s + g) / num_micro_batches for s, g in zip(sums, grads)]
        rate = tf.constant(LEARNING_RATE)
        apply_op = tf.compat.v1.train.GradientDescentOptimizer(rate).apply_gradients(
            zip(mean, variables), global_step=tf.compat.v1.train.get_or_create_global_step()
        )
        with tf.control_dependencies([apply_op]):
            clear_op = tf.group(*[s.assign(tf.zeros_like(s)) for s in sums])
        return engine.EstimatorSpec(
            mode,
            loss=spec.loss,
            train_op=tf.group(apply_op, clear_op),
            learning_rate=rate,
            accumulate_op=accumulate_op,
        )

    return accumulating


@pytest.mark.parametrize("num_micro_batches", [2, 4])
def test_accumulation_runs_the_accumulate_op_the_spec_carries(tmp_path, num_micro_batches):
    """Micro-batches of 8 / N examples, the spec's accumulate_op N-1 times, then the
    train_op: the steps of whole batches of 8 (numpy), and the learning rate logged."""
    x, y = data()
    estimator = _estimator(
        tmp_path,
        _accumulating_model_fn(num_micro_batches),
        num_accumulation_steps=num_micro_batches,
        save_summary_steps=1,
    )
    estimator.train(input_fn_builder(x, y), max_steps=5)
    w, b = numpy_sgd(x, y, batch_size=8, steps=5)
    got_w, got_b = _weights(tmp_path)
    np.testing.assert_allclose(got_w, w, rtol=1e-5)
    np.testing.assert_allclose(got_b, b, rtol=1e-5)
    rates = [
        value.simple_value
        for name in os.listdir(tmp_path)
        if name.startswith("events.out.tfevents")
        for event in tf.compat.v1.train.summary_iterator(str(tmp_path / name))
        for value in event.summary.value
        if value.tag == "learning_rate"
    ]
    assert rates == [pytest.approx(LEARNING_RATE)] * 5


class _Recorder(tf.compat.v1.train.SessionRunHook):
    """A plain TF 1.x hook: what its run contexts said."""

    def __init__(self):
        self.seen = []

    def after_run(self, run_context, run_values):
        del run_values
        self.seen.append((type(run_context).__name__, run_context.previous_step, run_context.step))


def test_every_n_steps_is_a_hook_that_sees_each_multiple_saves_and_stops(tmp_path):
    """With runs of up to 5 steps, EveryNSteps(3, ...) still sees steps 3, 6 and 9; its
    action saves step 6 (no save was due) and stops training after step 9."""
    x, y = data()
    seen = []

    def action(step_context):
        seen.append(step_context.step)
        if step_context.step == 6:
            assert step_context.save_checkpoint() == str(tmp_path / "model.ckpt-6")
        if step_context.step == 9:
            step_context.request_stop()

    recorder = _Recorder()
    estimator = _estimator(tmp_path, steps_per_run=5, save_summary_steps=0)
    estimator.train(
        input_fn_builder(x, y), max_steps=20, hooks=[recorder, engine.EveryNSteps(3, action)]
    )
    assert seen == [3, 6, 9]
    assert recorder.seen == [("StepContext", 0, 3), ("StepContext", 3, 6), ("StepContext", 6, 9)]
    state = tf.train.get_checkpoint_state(str(tmp_path))
    assert [engine.checkpoint_step(p) for p in state.all_model_checkpoint_paths] == [6, 9]
    w, b = numpy_sgd(x, y, batch_size=8, steps=9)
    got_w, got_b = _weights(tmp_path)
    np.testing.assert_allclose(got_w, w, rtol=1e-5)
    np.testing.assert_allclose(got_b, b, rtol=1e-5)


def test_a_position_of_another_pipeline_is_found_out_before_model_and_session(
    tmp_path, monkeypatch, caplog
):
    x, y = data()
    _estimator(tmp_path, save_checkpoints_steps=4).train(input_fn_builder(x, y), max_steps=4)
    assert os.path.exists(tmp_path / "model.ckpt-4.input")

    modes, sessions = [], []

    def counting_model_fn(features, labels, mode, params):
        modes.append(mode)
        return model_fn(features, labels, mode, params)

    class CountingSession(tf.compat.v1.Session):
        def __init__(self, *args, **kwargs):
            sessions.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(tf.compat.v1, "Session", CountingSession)
    # Another batch size: another pipeline, whose position cannot be restored.
    estimator = _estimator(tmp_path, counting_model_fn, batch_size=4, save_checkpoints_steps=4)
    with caplog.at_level("WARNING"):
        estimator.train(input_fn_builder(x, y), max_steps=6)
    assert "the input position is not restored" in caplog.text
    assert modes == [engine.ModeKeys.TRAIN]
    assert len(sessions) == 1
    assert engine.checkpoint_step(engine.newest_checkpoint(str(tmp_path))) == 6


def _eval_tags(directory):
    if not os.path.isdir(directory):
        return {}
    tags = {}
    for name in os.listdir(directory):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
            for value in event.summary.value:
                tags[value.tag] = event.step
    return tags


def test_an_evaluation_writes_its_summaries_as_its_argument_says(tmp_path):
    x, y = data()
    estimator = _estimator(tmp_path)
    estimator.train(input_fn_builder(x, y), max_steps=2)
    eval_input_fn = input_fn_builder(x, y, repeat=False)
    result = estimator.evaluate(eval_input_fn, write_summaries=False)
    assert result["global_step"] == 2
    assert _eval_tags(tmp_path / "eval") == {}
    estimator.evaluate(eval_input_fn)
    assert _eval_tags(tmp_path / "eval") == {"mse": 2, "label_mean": 2, "loss": 2}
