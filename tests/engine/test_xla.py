"""--use_xla: the step is marked for XLA compilation and matches the float32 numerics.

Random-number and initializer ops are kept out of XLA, so with the same seed
an XLA run starts from the same weights; dropout is off in the test model,
so the only differences left are XLA's float32 reordering and fusion.
"""

import json

import numpy as np
import pytest
import speed_helpers
import tensorflow as tf
from extract_features_helpers import run_extract_features, write_model_files
from helpers import checkpoint_values

from bert_lib import engine

# Every test here trains or starts a script.
pytestmark = pytest.mark.slow

STEPS = 3
LEARNING_RATE = 3e-3


class _GraphProbe:
    """An engine hook that records which ops of the training graph are marked for XLA."""

    def __init__(self):
        self.compiled = []
        self.not_compiled = []

    def begin(self):
        for op in tf.compat.v1.get_default_graph().get_operations():
            try:
                marked = op.get_attr("_XlaCompile")
            except ValueError:
                marked = False
            (self.compiled if marked else self.not_compiled).append(op)

    def after_create_session(self, session, coord):
        del session, coord

    def before_run(self, run_context):
        del run_context

    def after_run(self, run_context, run_values):
        del run_context, run_values

    def end(self, session):
        del session


def _train(model_dir, **kwargs):
    probe = _GraphProbe()
    data = speed_helpers.make_data()
    config = engine.RunConfig(
        model_dir=str(model_dir),
        save_summary_steps=0,
        log_step_count_steps=1,
        tf_random_seed=1,
        **kwargs,
    )
    estimator = engine.Estimator(
        speed_helpers.model_fn_builder(learning_rate=LEARNING_RATE),
        config,
        train_batch_size=8,
        predict_batch_size=8,
    )
    estimator.train(speed_helpers.input_fn_builder(data), max_steps=STEPS, hooks=[probe])
    predictions = [
        p["logits"] for p in estimator.predict(speed_helpers.input_fn_builder(data, repeat=False))
    ]
    weights = checkpoint_values(engine.newest_checkpoint(str(model_dir)))
    return probe, np.stack(predictions), weights


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return {
        "fp32": _train(tmp_path_factory.mktemp("fp32")),
        "xla": _train(tmp_path_factory.mktemp("xla"), use_xla=True),
    }


def test_xla_marks_the_step_but_not_random_or_input_ops(runs):
    plain_probe, xla_probe = runs["fp32"][0], runs["xla"][0]
    assert not plain_probe.compiled
    compiled_types = {op.type for op in xla_probe.compiled}
    # Forward, backward and the optimizer update are all in.
    assert {"MatMul", "BatchMatMulV2", "Softmax", "Tanh", "AssignVariableOp"} <= compiled_types
    assert any(op.name.startswith("gradients") for op in xla_probe.compiled)
    for op in xla_probe.compiled:
        assert op.type not in ("TruncatedNormal", "RandomUniform", "IteratorGetNext"), op.name
        assert "Initializer" not in op.name


def test_xla_training_matches_fp32(runs):
    reference, ours = runs["fp32"][2], runs["xla"][2]
    assert sorted(reference) == sorted(ours)
    assert ours["global_step"] == STEPS
    for name, value in reference.items():
        np.testing.assert_allclose(ours[name], value, atol=2e-5, rtol=1e-4, err_msg=name)


def test_xla_predictions_match_fp32(runs):
    reference, ours = runs["fp32"][1], runs["xla"][1]
    assert reference.shape == (64, speed_helpers.NUM_LABELS)
    np.testing.assert_allclose(ours, reference, atol=1e-5, rtol=1e-4)


def _features(path):
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f]
    return np.array(
        [
            layer["values"]
            for record in records
            for token in record["features"]
            for layer in token["layers"]
        ]
    )


def test_scripts_take_the_speed_flags(tmp_path):
    """extract_features with --use_xla --precision=bf16: bf16-close to the default output."""
    model_files, plain_dir, fast_dir = tmp_path / "model", tmp_path / "plain", tmp_path / "fast"
    for directory in (model_files, plain_dir, fast_dir):
        directory.mkdir()
    write_model_files(model_files)
    proc = run_extract_features(model_files, plain_dir, "-1,0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    fast_flags = ["--use_xla", "--precision=bf16"]
    proc = run_extract_features(model_files, fast_dir, "-1,0", *fast_flags)
    assert proc.returncode == 0, proc.stderr[-3000:]
    plain = _features(plain_dir / "out" / "features.jsonl")
    fast = _features(fast_dir / "out" / "features.jsonl")
    assert plain.shape == fast.shape and np.abs(plain).max() > 0.5
    np.testing.assert_allclose(fast, plain, atol=0.08, rtol=0.05)
    assert not np.array_equal(fast, plain)  # the flags took effect


def test_several_steps_per_run_equal_one_step_per_run(tmp_path):
    """--steps_per_run: a graph loop of steps gives the weights of one step per run."""
    runs = {}
    for steps_per_run in (1, 3):
        model_dir = tmp_path / f"k{steps_per_run}"
        speed_helpers.train(
            model_dir,
            7,
            learning_rate=LEARNING_RATE,
            steps_per_run=steps_per_run,
            log_step_count_steps=4,
            save_checkpoints_steps=5,
        )
        runs[steps_per_run] = checkpoint_values(engine.newest_checkpoint(str(model_dir)))
        # Saved at the boundary (5) and at the end (7), as with one step per run.
        state = tf.train.get_checkpoint_state(str(model_dir))
        steps = sorted(engine.checkpoint_step(p) for p in state.all_model_checkpoint_paths)
        assert steps == [5, 7]
    assert sorted(runs[1]) == sorted(runs[3])
    assert runs[3]["global_step"] == 7
    for name, value in runs[1].items():
        np.testing.assert_allclose(runs[3][name], value, atol=1e-6, rtol=1e-6, err_msg=name)
    with pytest.raises(engine.UsageError, match="steps_per_run"):
        engine.RunConfig(model_dir=str(tmp_path), steps_per_run=0)
