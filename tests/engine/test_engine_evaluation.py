"""Evaluating while training (bert_lib/engine/evaluation.py) on a linear model numpy can redo.

The model is least squares with plain gradient descent, so the weights of
every evaluated (and kept) checkpoint and its mean squared error are worked
out step by step in numpy. Where a test needs a metric that goes up and
down on cue, its evaluate function reads it from a table by step: the
metric is the script's business, what is tested is what the engine does
with it.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from helpers import write_checkpoint
from linear_model import data, input_fn_builder, model_fn, numpy_sgd

from bert_lib import engine
from bert_lib.engine import evaluation

BATCH_SIZE = 8


def _estimator(model_dir, **config):
    config.setdefault("save_checkpoints_steps", 100)
    config.setdefault("log_step_count_steps", 100)
    config.setdefault("distribution_strategy", "one_device")
    return engine.Estimator(
        model_fn,
        engine.RunConfig(model_dir=str(model_dir), **config),
        train_batch_size=BATCH_SIZE,
        eval_batch_size=BATCH_SIZE,
    )


def _write_results(path, result):
    with open(path, "w") as f:
        f.write("".join(f"{key} = {result[key]}\n" for key in sorted(result)))


def _scripted(scores, key="score"):
    """For _train: an evaluate function whose metric is scores[step of the checkpoint]."""

    def evaluate(checkpoint_path, write_summaries):
        del write_summaries  # nothing of its own to write
        step = engine.checkpoint_step(checkpoint_path)
        return {key: scores[step], "global_step": step}

    return lambda estimator: evaluate


def _train(model_dir, make_evaluate, max_steps, every, metric=None, patience=None, **config):
    """Trains with evaluation; make_evaluate(estimator) gives the evaluate function."""
    x, y = data()
    estimator = _estimator(model_dir, **config)
    options = evaluation.check_options(every, metric, patience, True, "")
    return evaluation.train_and_evaluate(
        estimator,
        input_fn_builder(x, y),
        max_steps,
        make_evaluate(estimator),
        _write_results,
        options,
    )


def _history(model_dir):
    with open(os.path.join(model_dir, evaluation.HISTORY_FILE)) as f:
        return [json.loads(line) for line in f]


def _checkpoint_steps(model_dir):
    state = tf.train.get_checkpoint_state(str(model_dir))
    return [engine.checkpoint_step(path) for path in state.all_model_checkpoint_paths]


def _eval_scalars(model_dir, tag):
    values = {}
    eval_dir = os.path.join(model_dir, "eval")
    for name in os.listdir(eval_dir):
        for event in tf.compat.v1.train.summary_iterator(os.path.join(eval_dir, name)):
            for value in event.summary.value:
                if value.tag == tag:
                    values.setdefault(event.step, []).append(value.simple_value)
    return values


@pytest.mark.slow
def test_evaluates_every_n_steps_and_at_the_end_with_numpy_weights(tmp_path):
    x, y = data()

    def mse_of(estimator):
        return lambda path, write_summaries: estimator.evaluate(
            input_fn_builder(x, y, repeat=False),
            checkpoint_path=path,
            write_summaries=write_summaries,
        )

    final = _train(tmp_path, mse_of, max_steps=10, every=3)

    history = _history(tmp_path)
    assert [entry["global_step"] for entry in history] == [3, 6, 9, 10]
    for entry in history:
        w, b = numpy_sgd(x, y, BATCH_SIZE, entry["global_step"])
        expected = np.mean((x @ w + b - y) ** 2)
        np.testing.assert_allclose(entry["mse"], expected, rtol=1e-5)
    assert final == {key: history[-1][key] for key in final}
    # A checkpoint was saved at every evaluation though none was due (every 100 steps).
    assert _checkpoint_steps(tmp_path) == [3, 6, 9, 10]
    # One TensorBoard point per evaluation and metric, no duplicates from evaluate().
    scalars = _eval_scalars(tmp_path, "mse")
    assert sorted(scalars) == [3, 6, 9, 10]
    for entry in history:
        assert scalars[entry["global_step"]] == [pytest.approx(entry["mse"], rel=1e-6)]
    # Without a metric there is no best directory.
    assert not os.path.exists(tmp_path / "best")


@pytest.mark.slow
def test_best_checkpoint_survives_rotation_and_holds_its_weights(tmp_path):
    x, y = data()
    scores = {2: 1.0, 4: 5.0, 6: 3.0, 8: 2.0, 10: 4.0}
    final = _train(
        tmp_path, _scripted(scores), max_steps=10, every=2, metric="score", keep_checkpoint_max=1
    )
    assert final == {"score": 4.0, "global_step": 10}
    # Rotation kept only the newest checkpoint in output_dir ...
    assert _checkpoint_steps(tmp_path) == [10]
    assert not os.path.exists(tmp_path / "model.ckpt-4.index")
    # ... and the best, step 4, lives on in best/ with its own checkpoint file.
    best = tmp_path / "best"
    assert engine.newest_checkpoint(str(best)) == str(best / "model.ckpt-4")
    assert sorted(f for f in os.listdir(best) if f.startswith("model.ckpt")) == [
        "model.ckpt-4.data-00000-of-00001",
        "model.ckpt-4.index",
        "model.ckpt-4.meta",
    ]
    assert (best / "eval_results.txt").read_text() == "global_step = 4\nscore = 5.0\n"
    w, b = numpy_sgd(x, y, BATCH_SIZE, 4)
    np.testing.assert_allclose(tf.train.load_variable(str(best), "w"), w, rtol=1e-5)
    np.testing.assert_allclose(tf.train.load_variable(str(best), "b"), b, rtol=1e-5)
    # It restores like any checkpoint directory.
    estimator = _estimator(tmp_path / "elsewhere")
    result = estimator.evaluate(input_fn_builder(x, y, repeat=False), checkpoint_path=str(best))
    assert result["global_step"] == 4
    np.testing.assert_allclose(result["mse"], np.mean((x @ w + b - y) ** 2), rtol=1e-5)


@pytest.mark.slow
def test_early_stopping_stops_at_the_kth_evaluation_without_improvement(tmp_path):
    scores = {2: 1.0, 4: 3.0, 6: 2.0, 8: 3.0, 10: 9.0, 12: 9.0}
    final = _train(tmp_path, _scripted(scores), max_steps=12, every=2, metric="score", patience=2)
    # Steps 6 and 8 do not beat step 4's 3.0 (equal is no improvement): stop at 8.
    assert final == {"score": 3.0, "global_step": 8}
    assert [entry["global_step"] for entry in _history(tmp_path)] == [2, 4, 6, 8]
    assert engine.checkpoint_step(engine.newest_checkpoint(str(tmp_path))) == 8
    assert engine.newest_checkpoint(str(tmp_path / "best")).endswith("model.ckpt-4")
    # The same command again does not train past the stop, nor count step 8 twice.
    again = _train(tmp_path, _scripted(scores), max_steps=12, every=2, metric="score", patience=2)
    assert again == final
    assert engine.checkpoint_step(engine.newest_checkpoint(str(tmp_path))) == 8
    assert len(_history(tmp_path)) == 4


@pytest.mark.slow
def test_a_restarted_run_carries_the_best_and_the_patience_count_over(tmp_path):
    scores = {2: 1.0, 4: 2.0, 6: 1.0, 8: 1.5, 10: 1.0, 12: 1.0, 14: 7.0}
    _train(tmp_path, _scripted(scores), max_steps=6, every=2, metric="score", patience=3)
    final = _train(tmp_path, _scripted(scores), max_steps=14, every=2, metric="score", patience=3)
    # Step 6 already counted once without improvement, so 8 and 10 make three.
    assert final["global_step"] == 10
    assert [entry["global_step"] for entry in _history(tmp_path)] == [2, 4, 6, 8, 10]
    assert engine.newest_checkpoint(str(tmp_path / "best")).endswith("model.ckpt-4")


@pytest.mark.slow
@pytest.mark.parametrize(
    "key, best_step", [("val_loss", 4), ("eval_loss", 4), ("accuracy", 6), ("f1", 6)]
)
def test_loss_like_metrics_are_minimised_and_others_maximised(tmp_path, key, best_step):
    scores = {2: 2.0, 4: 0.5, 6: 3.0}
    _train(tmp_path, _scripted(scores, key), max_steps=6, every=2, metric=key)
    assert engine.newest_checkpoint(str(tmp_path / "best")).endswith(f"model.ckpt-{best_step}")
    text = (tmp_path / "best" / "eval_results.txt").read_text()
    assert f"{key} = {scores[best_step]}\n" in text


def test_metric_direction_follows_the_name():
    assert evaluation.is_minimised("loss")
    assert evaluation.is_minimised("masked_lm_loss")
    assert evaluation.is_minimised("eval_loss")
    assert not evaluation.is_minimised("eval_accuracy")
    assert not evaluation.is_minimised("masked_lm_accuracy")
    assert not evaluation.is_minimised("f1")


@pytest.mark.slow
def test_an_unknown_metric_names_the_flag_and_the_results(tmp_path):
    with pytest.raises(engine.UsageError, match="--best_checkpoint_metric=acc is not an") as e:
        _train(tmp_path, _scripted({2: 1.0}), max_steps=4, every=2, metric="acc")
    assert "global_step, score" in str(e.value)


@pytest.mark.parametrize(
    "every, metric, patience, can_evaluate, message",
    [
        (None, "score", None, True, "--best_checkpoint_metric needs --eval_every_n_steps"),
        (None, None, 3, True, "--early_stopping_patience needs --eval_every_n_steps"),
        (0, None, None, True, "--eval_every_n_steps must be positive, got 0"),
        (5, None, None, False, "--eval_every_n_steps needs --do_train and --do_eval"),
        (5, None, 3, True, "--early_stopping_patience needs --best_checkpoint_metric"),
        (5, "score", 0, True, "--early_stopping_patience must be positive, got 0"),
        (5, " ", None, True, "--best_checkpoint_metric is empty"),
    ],
)
def test_inconsistent_options_are_usage_errors(every, metric, patience, can_evaluate, message):
    with pytest.raises(engine.UsageError, match=message):
        evaluation.check_options(every, metric, patience, can_evaluate, "--do_train and --do_eval")


def test_options_off_by_default():
    assert evaluation.check_options(None, None, None, False, "") is None


def test_multi_worker_is_refused_before_training(tmp_path):
    estimator = _estimator(tmp_path, distribution_strategy="multi_worker")
    options = evaluation.check_options(2, None, None, True, "")
    with pytest.raises(engine.UsageError, match="multi_worker"):
        evaluation.train_and_evaluate(
            estimator, None, 4, lambda path, write_summaries: {}, _write_results, options
        )


def test_keep_checkpoint_max_must_not_be_negative():
    with pytest.raises(engine.UsageError, match="--keep_checkpoint_max must be >= 0"):
        engine.RunConfig("out", keep_checkpoint_max=-1)


def test_best_directory_names_its_checkpoint_relative_to_itself(tmp_path, monkeypatch):
    """With a relative output_dir, and after the directory is moved, best/ still resolves."""
    source = tmp_path / "trained"
    source.mkdir()
    prefix = write_checkpoint(str(source / "model.ckpt-7"), {"w": np.arange(3.0)})
    monkeypatch.chdir(tmp_path)
    best = evaluation.BestCheckpoint("out", lambda path, result: None)
    best.keep(prefix, {"eval_accuracy": 0.5})
    assert tf.train.latest_checkpoint("out/best") == os.path.join("out/best", "model.ckpt-7")
    os.rename("out", "moved")
    found = tf.train.latest_checkpoint(str(tmp_path / "moved" / "best"))
    assert found == str(tmp_path / "moved" / "best" / "model.ckpt-7")
    np.testing.assert_array_equal(tf.train.load_variable(found, "w"), np.arange(3.0))
