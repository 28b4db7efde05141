"""The engine on a linear model whose every step numpy can redo.

Each test builds a least-squares model with get_variable and plain gradient
descent, so checkpoints, resumption, evaluation and prediction can be checked
against weights computed step by step in numpy. Multi-device and
multi-worker runs need process-wide device set-up and live in
tests/support/engine_worker.py, started as subprocesses.
"""

import json
import os
import socket
import subprocess
import time

import helpers
import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from linear_model import (
    LEARNING_RATE,
    NUM_FEATURES,
    data,
    input_fn_builder,
    model_fn,
    numpy_sgd,
)

import optimization
from bert_lib import engine
from bert_lib.task_data import pretraining_packing


def _estimator(model_dir, model_fn=model_fn, batch_size=8, **config):
    config.setdefault("save_checkpoints_steps", 4)
    config.setdefault("log_step_count_steps", 5)
    config.setdefault("distribution_strategy", "one_device")
    run_config = engine.RunConfig(model_dir=str(model_dir), **config)
    return engine.Estimator(
        model_fn,
        run_config,
        train_batch_size=batch_size,
        eval_batch_size=batch_size,
        predict_batch_size=batch_size,
    )


def _checkpoint_steps(model_dir):
    state = tf.train.get_checkpoint_state(str(model_dir))
    return [engine.checkpoint_step(path) for path in state.all_model_checkpoint_paths]


@pytest.mark.slow
def test_training_matches_numpy_and_keeps_the_five_newest_checkpoints(tmp_path):
    x, y = data()
    estimator = _estimator(tmp_path, save_checkpoints_steps=2)
    estimator.train(input_fn_builder(x, y), max_steps=13)

    checkpoint = engine.newest_checkpoint(str(tmp_path))
    assert os.path.basename(checkpoint) == "model.ckpt-13"
    # Every 2 steps plus the final one; only the 5 newest stay on disk.
    assert _checkpoint_steps(tmp_path) == [6, 8, 10, 12, 13]
    index_files = sorted(f for f in os.listdir(tmp_path) if f.endswith(".index"))
    assert index_files == [f"model.ckpt-{s}.index" for s in (10, 12, 13, 6, 8)]
    assert sorted(name for name, _ in tf.train.list_variables(checkpoint)) == [
        "b",
        "global_step",
        "w",
    ]
    w, b = numpy_sgd(x, y, batch_size=8, steps=13)
    np.testing.assert_allclose(tf.train.load_variable(checkpoint, "w"), w, rtol=1e-5)
    np.testing.assert_allclose(tf.train.load_variable(checkpoint, "b"), b, rtol=1e-5)


@pytest.mark.slow
def test_resumed_training_continues_from_the_newest_checkpoint(tmp_path):
    x, y = data()
    input_fn = input_fn_builder(x, y)
    estimator = _estimator(tmp_path, save_checkpoints_steps=3, tf_random_seed=7)
    estimator.train(input_fn, max_steps=7)
    # The same call again has nothing left to do.
    estimator.train(input_fn, max_steps=7)
    assert engine.checkpoint_step(engine.newest_checkpoint(str(tmp_path))) == 7
    estimator.train(input_fn, steps=8)
    checkpoint = engine.newest_checkpoint(str(tmp_path))
    assert engine.checkpoint_step(checkpoint) == 15
    # Retention survives restarts: older checkpoints of earlier runs are pruned too.
    assert _checkpoint_steps(tmp_path) == [6, 7, 9, 12, 15]
    assert not os.path.exists(tmp_path / "model.ckpt-3.index")
    # Seeded runs skip the batches trained on before, so the trajectory is
    # that of one uninterrupted run.
    w, _ = numpy_sgd(x, y, batch_size=8, steps=15)
    np.testing.assert_allclose(tf.train.load_variable(checkpoint, "w"), w, rtol=1e-5)


@pytest.mark.slow
def test_training_without_max_steps_stops_when_the_input_ends(tmp_path):
    x, y = data(num_examples=44)
    estimator = _estimator(tmp_path, save_checkpoints_steps=100)
    estimator.train(input_fn_builder(x, y, repeat=False))
    # 44 examples make 5 full batches of 8; the last step is saved.
    checkpoint = engine.newest_checkpoint(str(tmp_path))
    assert engine.checkpoint_step(checkpoint) == 5
    w, _ = numpy_sgd(x, y, batch_size=8, steps=5)
    np.testing.assert_allclose(tf.train.load_variable(checkpoint, "w"), w, rtol=1e-5)


@pytest.mark.slow
def test_evaluate_and_predict_use_the_newest_checkpoint(tmp_path):
    x, y = data()
    estimator = _estimator(tmp_path)
    estimator.train(input_fn_builder(x, y), max_steps=6)
    checkpoint = engine.newest_checkpoint(str(tmp_path))
    w = tf.train.load_variable(checkpoint, "w").astype(np.float64)
    b = tf.train.load_variable(checkpoint, "b").astype(np.float64)
    expected = x.astype(np.float64) @ w + b

    result = estimator.evaluate(input_fn_builder(x, y, repeat=False))
    assert result["global_step"] == 6
    assert set(result) == {"mse", "label_mean", "loss", "global_step"}
    np.testing.assert_allclose(result["mse"], np.mean((expected - y) ** 2), rtol=1e-5)
    np.testing.assert_allclose(result["label_mean"], y.mean(), rtol=1e-5)
    # All batches have the same size, so the mean batch loss is the mse.
    np.testing.assert_allclose(result["loss"], result["mse"], rtol=1e-5)
    assert estimator.evaluate(input_fn_builder(x, y, repeat=False)) == result

    partial = estimator.evaluate(input_fn_builder(x, y), steps=2)
    np.testing.assert_allclose(partial["mse"], np.mean((expected[:16] - y[:16]) ** 2), rtol=1e-5)
    assert os.listdir(tmp_path / "eval")

    predictions = list(estimator.predict(input_fn_builder(x[:20], y[:20], repeat=False)))
    assert len(predictions) == 16  # two full batches of 8; drop_remainder drops 4
    np.testing.assert_allclose([p["y"] for p in predictions], expected[:16, 0], rtol=1e-5)
    np.testing.assert_array_equal(predictions[3]["x"], x[3])
    batches = list(
        estimator.predict(input_fn_builder(x, y, repeat=False), yield_single_examples=False)
    )
    assert [batch["y"].shape for batch in batches] == [(8,)] * 6


def _model_fn_predicting_in_eval(features, labels, mode, params):
    """model_fn, with its predictions in the EVAL spec too."""
    spec = model_fn(features, labels, mode, params)
    if mode != engine.ModeKeys.EVAL:
        return spec
    prediction = tf.compat.v1.get_default_graph().get_tensor_by_name("add:0")
    return spec._replace(predictions={"y": prediction[:, 0], "x": features["x"]})


def test_evaluate_with_predictions_reads_the_input_once(tmp_path):
    x, y = data()
    estimator = _estimator(tmp_path, model_fn=_model_fn_predicting_in_eval)
    estimator.train(input_fn_builder(x, y), max_steps=6)
    checkpoint = engine.newest_checkpoint(str(tmp_path))
    w = tf.train.load_variable(checkpoint, "w").astype(np.float64)
    b = tf.train.load_variable(checkpoint, "b").astype(np.float64)
    expected = x.astype(np.float64) @ w + b

    calls = []
    counted = input_fn_builder(x, y, repeat=False)

    def input_fn(params):
        calls.append(1)
        return counted(params)

    result, predictions = estimator.evaluate(input_fn, with_predictions=True)
    assert len(calls) == 1
    assert result == estimator.evaluate(input_fn_builder(x, y, repeat=False))
    np.testing.assert_allclose(result["mse"], np.mean((expected - y) ** 2), rtol=1e-5)
    assert len(predictions) == len(x)
    np.testing.assert_allclose([p["y"] for p in predictions], expected[:, 0], rtol=1e-5)
    np.testing.assert_array_equal(predictions[5]["x"], x[5])

    # Two batches only: the predictions of those two.
    _, partial = estimator.evaluate(input_fn_builder(x, y), steps=2, with_predictions=True)
    np.testing.assert_allclose([p["y"] for p in partial], expected[:16, 0], rtol=1e-5)


def test_evaluate_with_predictions_needs_them_in_the_eval_spec(tmp_path):
    x, y = data()
    estimator = _estimator(tmp_path)
    with pytest.raises(ValueError, match="EVAL spec with predictions"):
        estimator.evaluate(input_fn_builder(x, y, repeat=False), with_predictions=True)


@pytest.mark.slow
def test_evaluate_without_checkpoint_uses_initializers_or_given_checkpoint(tmp_path):
    x, y = data()
    fresh = _estimator(tmp_path / "fresh")
    result = fresh.evaluate(input_fn_builder(x, y, repeat=False))
    expected = x @ np.full((NUM_FEATURES, 1), 0.1, np.float32)
    np.testing.assert_allclose(result["mse"], np.mean((expected - y) ** 2), rtol=1e-5)
    assert result["global_step"] == 0

    trained = _estimator(tmp_path / "trained")
    trained.train(input_fn_builder(x, y), max_steps=4)
    by_path = fresh.evaluate(
        input_fn_builder(x, y, repeat=False), checkpoint_path=str(tmp_path / "trained")
    )
    assert by_path == trained.evaluate(input_fn_builder(x, y, repeat=False))
    assert by_path["global_step"] == 4
    with pytest.raises(engine.UsageError, match="not found"):
        fresh.evaluate(input_fn_builder(x, y), checkpoint_path=str(tmp_path / "nothing"))


@pytest.mark.slow
def test_tensorboard_events_hold_loss_learning_rate_and_rates(tmp_path):
    x, y = data()
    estimator = _estimator(tmp_path, save_summary_steps=2, log_step_count_steps=3)
    estimator.train(input_fn_builder(x, y), max_steps=10)
    scalars = {}
    event_files = [f for f in os.listdir(tmp_path) if f.startswith("events.out.tfevents")]
    assert len(event_files) == 1
    for event in tf.compat.v1.train.summary_iterator(str(tmp_path / event_files[0])):
        for value in event.summary.value:
            scalars.setdefault(value.tag, {})[event.step] = value.simple_value
    assert sorted(scalars["loss"]) == [1, 2, 4, 6, 8, 10]
    assert scalars["learning_rate"] == {
        s: pytest.approx(LEARNING_RATE) for s in (1, 2, 4, 6, 8, 10)
    }
    assert sorted(scalars["global_step/sec"]) == [3, 6, 9, 10]
    assert all(v > 0 for v in scalars["examples/sec"].values())
    # The loss logged at step 2 is that of the batch step 2 trained on.
    w, b = numpy_sgd(x, y, batch_size=8, steps=1)
    error = x[8:16] @ w + b - y[8:16]
    assert scalars["loss"][2] == pytest.approx(float(np.mean(error**2)), rel=1e-5)


@pytest.mark.slow
def test_every_training_step_fetches_the_same_tensors(tmp_path, monkeypatch):
    # A session optimizes its graph and builds an executor for each new set of
    # fetches, which at BERT size costs about a step; so the steps that log
    # or write summaries must ask for what the others ask for.
    fetched = []
    session_run = tf.compat.v1.Session.run

    def recording_run(self, fetches, *args, **kwargs):
        if isinstance(fetches, dict) and "loss" in fetches:
            fetched.append(tuple(sorted(map(str, fetches))))
        return session_run(self, fetches, *args, **kwargs)

    monkeypatch.setattr(tf.compat.v1.Session, "run", recording_run)
    x, y = data()
    estimator = _estimator(tmp_path, save_summary_steps=2, log_step_count_steps=3)
    estimator.train(input_fn_builder(x, y), max_steps=7)
    assert len(fetched) == 7
    assert set(fetched) == {("learning_rate", "loss", "step")}


def test_output_dir_that_is_a_file_is_a_one_line_error(tmp_path):
    path = tmp_path / "not_a_dir"
    path.write_text("x")
    x, y = data()
    with pytest.raises(engine.UsageError, match="is a file, not a directory") as error:
        _estimator(path).train(input_fn_builder(x, y), max_steps=2)
    assert "\n" not in str(error.value)
    assert path.read_text() == "x"


@pytest.mark.slow
def test_nan_loss_stops_training_and_keeps_the_last_good_checkpoint(tmp_path):
    # Example 60 is in the batch of step 8 (batches of 8, 6 per pass).
    x, y = data(num_examples=72, nan_at=60)
    estimator = _estimator(tmp_path, save_checkpoints_steps=3)
    with pytest.raises(engine.NanLossError, match="at step 8") as error:
        estimator.train(input_fn_builder(x, y), max_steps=20)
    assert "model.ckpt-6" in str(error.value)
    checkpoint = engine.newest_checkpoint(str(tmp_path))
    assert engine.checkpoint_step(checkpoint) == 6
    assert np.all(np.isfinite(tf.train.load_variable(checkpoint, "w")))
    assert _checkpoint_steps(tmp_path) == [3, 6]


def _bert_style_model_fn(features, labels, mode, params):
    """The original's variable names: output_weights/output_bias, Adam slots, global_step."""
    del params
    weights = tf.compat.v1.get_variable("output_weights", [1, NUM_FEATURES])
    bias = tf.compat.v1.get_variable("output_bias", [1])
    prediction = tf.matmul(features["x"], weights, transpose_b=True) + bias
    loss = tf.reduce_mean(tf.square(prediction - labels))
    train_op = optimization.create_optimizer(loss, 0.01, 100, 0, False)
    return engine.EstimatorSpec(mode, loss=loss, train_op=train_op)


@pytest.mark.slow
def test_checkpoint_of_a_plain_saver_with_original_names_resumes(tmp_path):
    rng = np.random.RandomState(3)
    saved = {
        "output_weights": rng.randn(1, NUM_FEATURES).astype(np.float32),
        "output_bias": rng.randn(1).astype(np.float32),
    }
    for name in list(saved):
        saved[f"{name}/adam_m"] = rng.randn(*saved[name].shape).astype(np.float32)
        saved[f"{name}/adam_v"] = rng.uniform(1.0, 2.0, saved[name].shape).astype(np.float32)
    helpers.write_checkpoint(
        tmp_path / "model.ckpt", {**saved, "global_step": np.int64(40)}, global_step=40
    )

    x, y = data()
    estimator = _estimator(tmp_path, model_fn=_bert_style_model_fn)
    estimator.train(input_fn_builder(x, y), max_steps=41)
    checkpoint = engine.newest_checkpoint(str(tmp_path))
    assert engine.checkpoint_step(checkpoint) == 41

    # One AdamWeightDecay step (step 40 of 100, no warmup) from the saved
    # slots, on the first batch, worked out in numpy.
    w, b = saved["output_weights"].astype(np.float64), saved["output_bias"].astype(np.float64)
    xb, yb = x[:8].astype(np.float64), y[:8, 0].astype(np.float64)
    error = xb @ w[0] + b[0] - yb
    grads = {"output_weights": (2 * error @ xb / 8)[None, :], "output_bias": [2 * error.mean()]}
    norm = np.sqrt(sum(np.sum(np.square(g)) for g in grads.values()))
    learning_rate = 0.01 * (1 - 40 / 100)
    for name, grad in grads.items():
        grad = np.asarray(grad) * (1.0 / max(norm, 1.0))
        decay = 0.01 if name == "output_weights" else 0.0
        expected, m, _ = npr.adam_step(
            saved[name],
            saved[f"{name}/adam_m"],
            saved[f"{name}/adam_v"],
            grad,
            learning_rate,
            decay,
        )
        np.testing.assert_allclose(tf.train.load_variable(checkpoint, name), expected, rtol=1e-5)
        np.testing.assert_allclose(
            tf.train.load_variable(checkpoint, f"{name}/adam_m"), m, rtol=1e-5
        )


def test_run_config_flag_errors_are_usage_errors():
    with pytest.raises(engine.UsageError, match="--use_tpu needs --tpu_name"):
        engine.RunConfig("out", use_tpu=True, distribution_strategy="one_device")
    with pytest.raises(engine.UsageError, match="cannot be combined"):
        engine.RunConfig("out", use_tpu=True, tpu_name="t", distribution_strategy="mirrored")
    with pytest.raises(engine.UsageError, match="needs --distribution_strategy=mirrored"):
        engine.RunConfig("out", num_gpus=2, distribution_strategy="one_device")
    with pytest.raises(engine.UsageError, match="one_device, mirrored or multi_worker"):
        engine.RunConfig("out", distribution_strategy="horovod")
    with pytest.raises(engine.UsageError, match="model_dir"):
        engine.RunConfig("")


def test_iterations_per_loop_is_ignored_with_a_warning_only_when_given(caplog):
    caplog.set_level("WARNING")
    config = engine.RunConfig("out")
    assert config.steps_per_run == 1
    assert "iterations_per_loop" not in caplog.text
    config = engine.RunConfig("out", iterations_per_loop=50)
    assert config.steps_per_run == 1
    assert "--iterations_per_loop is ignored" in caplog.text
    assert "--steps_per_run" in caplog.text


def test_mirrored_with_more_gpus_than_visible_is_a_usage_error(tmp_path):
    x, y = data()
    estimator = _estimator(tmp_path, distribution_strategy="mirrored", num_gpus=2)
    with pytest.raises(engine.UsageError, match="--num_gpus=2 but only 0 GPU"):
        estimator.train(input_fn_builder(x, y), max_steps=1)


@pytest.mark.parametrize(
    "tf_config, message",
    [
        (None, "needs the TF_CONFIG environment variable"),
        ("{not json", "TF_CONFIG is not valid cluster JSON"),
        ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}', "outside"),
    ],
)
def test_multi_worker_without_a_valid_tf_config_is_a_usage_error(
    tmp_path, monkeypatch, tf_config, message
):
    if tf_config is None:
        monkeypatch.delenv("TF_CONFIG", raising=False)
    else:
        monkeypatch.setenv("TF_CONFIG", tf_config)
    x, y = data()
    estimator = _estimator(tmp_path, distribution_strategy="multi_worker")
    with pytest.raises(engine.UsageError, match=message):
        estimator.train(input_fn_builder(x, y), max_steps=1)


def test_use_tpu_builds_a_tpu_strategy_from_the_tpu_flags(tmp_path, monkeypatch):
    calls = {}

    class FakeResolver:
        def __init__(self, tpu=None, zone=None, project=None):
            calls["resolver"] = (tpu, zone, project)

        def master(self):
            return "grpc://10.0.0.2:8470"

    class FakeStrategy:
        def __init__(self, resolver, steps_per_run):
            calls["strategy"] = (type(resolver), steps_per_run)
            raise RuntimeError("stop after construction")

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", FakeResolver)
    monkeypatch.setattr(tf.compat.v1.distribute.experimental, "TPUStrategy", FakeStrategy)
    x, y = data()
    estimator = _estimator(
        tmp_path, use_tpu=True, tpu_name="my-tpu", tpu_zone="us-central1-b", gcp_project="proj"
    )
    with pytest.raises(RuntimeError, match="stop after construction"):
        estimator.train(input_fn_builder(x, y), max_steps=1)
    assert calls == {
        "resolver": ("my-tpu", "us-central1-b", "proj"),
        "strategy": (FakeResolver, 1),
    }


def test_batch_size_must_split_evenly_over_replicas(tmp_path):
    x, y = data()
    estimator = _estimator(tmp_path, batch_size=0)
    with pytest.raises(engine.UsageError, match="train_batch_size=0"):
        estimator.train(input_fn_builder(x, y), max_steps=1)


def _run_main_in_subprocess(body, tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {helpers.REPO!r})\n"
        "from bert_lib import engine, script_flags\n"
        f"{body}\n"
        "script_flags.run_main(main)\n"
    )
    return helpers.run_python(str(script))


@pytest.mark.slow
def test_run_main_turns_user_errors_into_one_line_and_exit_1(tmp_path):
    done = _run_main_in_subprocess(
        "def main(argv):\n"
        "    raise engine.UsageError('--input_file: x.tfrecord matches no files')",
        tmp_path,
    )
    assert helpers.error_line(done) == "ERROR: --input_file: x.tfrecord matches no files"

    done = _run_main_in_subprocess(
        "import tensorflow as tf\n"
        "def main(argv):\n"
        "    raise tf.errors.InvalidArgumentError(None, None, 'Graph execution error:\\n\\n"
        "Key: input_ids.  Cannot parse\\n\\t [[{{node ParseExample}}]]')",
        tmp_path,
    )
    assert helpers.error_line(done) == "ERROR: InvalidArgumentError: Key: input_ids.  Cannot parse"
    assert "ERROR: InvalidArgumentError: Key: input_ids.  Cannot parse\n" in done.stderr

    done = _run_main_in_subprocess(
        "def main(argv):\n    raise KeyError('a bug keeps its traceback')", tmp_path
    )
    assert done.returncode != 0
    assert "Traceback" in done.stderr


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(args, env=None):
    return helpers.start_python(
        os.path.join(helpers.SUPPORT, "engine_worker.py"),
        *args,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(process):
    output, _ = process.communicate(timeout=helpers.SUBPROCESS_TIMEOUT)
    assert process.returncode == 0, output[-3000:]
    return output


@pytest.fixture(scope="module")
def worker_runs(tmp_path_factory):
    """Runs all distributed workers at once: one device, two logical CPUs, two workers.

    Started together, they finish in about the time of the slowest.
    """
    root = tmp_path_factory.mktemp("workers")
    ports = [_free_port(), _free_port()]
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    processes = {
        "one": _worker(["one_device", str(root / "one")]),
        # Under TF1 behaviour (ref variables), which must not change a number.
        "two": _worker(
            ["mirrored", str(root / "two")],
            env=dict(os.environ, ENGINE_WORKER_V1_BEHAVIOR="1"),
        ),
    }
    for index in range(2):
        env = {
            "TF_CONFIG": json.dumps(
                {"cluster": cluster, "task": {"type": "worker", "index": index}}
            )
        }
        processes[f"worker{index}"] = _worker(
            ["multi_worker", str(root / f"worker{index}")], env=env
        )
    try:
        outputs = {name: _finish(process) for name, process in processes.items()}
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
    return root, outputs


@pytest.mark.slow
def test_packed_rows_under_mirrored_train_and_count_the_one_device_instances(worker_runs):
    """Each replica packs and trains its own rows: the instances counted over both
    replicas are those of one device's batches of the same rows, the losses agree as
    the unpacked model's do, and rows hold more instances than one."""
    root, _ = worker_runs
    single = np.load(root / "one" / "packed.npz")
    mirrored = np.load(root / "two" / "packed.npz")
    assert int(mirrored["var:global_step"]) == int(single["var:global_step"]) == 2
    # Two steps of 8 rows: the instances of the first 16 rows the packer makes of the
    # records, more than one a row.
    rows = pretraining_packing.pack(
        pretraining_packing.decoded_records([str(root / "one" / "short.tfrecord")], 128, 20),
        128,
        21,
        3,
    )
    counts = [int(np.sum(row["next_sentence_weights"])) for row in rows.take(16)]
    assert int(mirrored["var:examples_trained"]) == int(single["var:examples_trained"])
    assert int(single["var:examples_trained"]) == sum(counts) > 16
    np.testing.assert_allclose(mirrored["losses"], single["losses"], rtol=5e-3)


@pytest.mark.slow
def test_two_logical_cpus_mirrored_give_the_one_device_loss_curve(worker_runs):
    """Same global batch over 1 and 2 replicas: same losses (and weights).

    The mirrored run also uses TF1 behaviour (ref variables), the one-device
    run TF2's resource variables.

    The linear model (Adam from tf.compat.v1.train) agrees to float
    round-off. The tiny BERT runs run_pretraining's model_fn with
    create_optimizer and no dropout; its masked LM loss is normalized and
    its gradients clipped per replica before averaging, so the curves agree
    to a tolerance (about 1e-3 seen) rather than exactly.
    """
    root, outputs = worker_runs
    assert "over 2 replica(s)" in outputs["two"]
    for model in ("linear", "bert"):  # "packed": test_packed_rows_under_mirrored_...
        single = np.load(root / "one" / f"{model}.npz")
        mirrored = np.load(root / "two" / f"{model}.npz")
        assert int(mirrored["replicas"]) == 2 and int(single["replicas"]) == 1
        assert sorted(mirrored.files) == sorted(single.files)
        assert len(single["losses"]) == (6 if model == "linear" else 5)
        if model == "bert":
            np.testing.assert_allclose(mirrored["losses"], single["losses"], rtol=5e-3)
            continue
        np.testing.assert_allclose(mirrored["losses"], single["losses"], rtol=1e-5)
        for name in single.files:
            if name.startswith("var:"):
                np.testing.assert_allclose(mirrored[name], single[name], rtol=1e-5, atol=1e-7)
    bert = np.load(root / "two" / "bert.npz")
    assert bert["losses"][-1] < bert["losses"][0]
    # Checkpoints keep the plain names, slots included.
    names = {name for name, _ in tf.train.list_variables(str(root / "two" / "bert"))}
    assert "bert/encoder/layer_1/output/LayerNorm/gamma/adam_v" in names
    assert not [name for name in names if "replica" in name]


@pytest.mark.slow
def test_two_workers_on_localhost_end_with_identical_weights(worker_runs):
    root, outputs = worker_runs
    assert "over 2 replica(s)" in outputs["worker0"]
    first = np.load(root / "worker0" / "bert.npz")
    second = np.load(root / "worker1" / "bert.npz")
    assert int(first["step"]) == int(second["step"]) == 4
    variables = [name for name in first.files if name.startswith("var:")]
    assert len(variables) > 20
    for name in variables:
        np.testing.assert_array_equal(first[name], second[name])
    initial = np.load(root / "worker0" / "bert_initial.npz")
    kernel = "var:bert/pooler/dense/kernel"
    assert not np.array_equal(initial[kernel], first[kernel])
    # Only the chief writes checkpoints.
    assert engine.newest_checkpoint(str(root / "worker0" / "bert"))
    assert engine.newest_checkpoint(str(root / "worker1" / "bert")) is None


# --------------------------------------------------------------------------
# A multi-worker job that loses a worker: run_pretraining.py on two workers.

TINY_BERT = helpers.tiny_bert_config(
    30522, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=128
)
LOSS_TRAIN_STEPS = 24
LOSS_SAVE_STEPS = 4


def _start_pretraining_workers(tmp_path, ports, run):
    """Starts both workers of a run_pretraining.py job; returns their processes and logs."""
    config_file = tmp_path / "bert_config.json"
    config_file.write_text(json.dumps(TINY_BERT))
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    command = [
        os.path.join(helpers.REPO, "run_pretraining.py"),
        f"--bert_config_file={config_file}",
        f"--input_file={os.path.join(helpers.GOLDEN, 'pretraining', 'default.tfrecord')}",
        f"--output_dir={tmp_path / 'model'}",
        "--do_train",
        "--distribution_strategy=multi_worker",
        "--train_batch_size=4",
        f"--num_train_steps={LOSS_TRAIN_STEPS}",
        "--num_warmup_steps=2",
        f"--save_checkpoints_steps={LOSS_SAVE_STEPS}",
    ]
    processes, logs = [], []
    for index in range(2):
        env = {
            "TF_CONFIG": json.dumps(
                {"cluster": cluster, "task": {"type": "worker", "index": index}}
            )
        }
        log = tmp_path / f"run{run}_worker{index}.log"
        with open(log, "w") as out:
            processes.append(
                helpers.start_python(*command, env=env, stdout=out, stderr=subprocess.STDOUT)
            )
        logs.append(log)
    return processes, logs


def _wait_for(condition, processes, timeout=180):
    deadline = time.time() + timeout
    while not condition():
        assert all(p.poll() is None for p in processes), "a worker ended before the kill"
        assert time.time() < deadline, "timed out waiting for the workers"
        time.sleep(0.02)


def _kill_after_checkpoint(tmp_path, ports, run, killed, after_step=0):
    """Starts both workers, kills worker `killed` once a checkpoint newer than after_step
    appears, and checks the survivor's exit. Returns (checkpoint, logs)."""
    model_dir = str(tmp_path / "model")
    processes, logs = _start_pretraining_workers(tmp_path, ports, run)
    survivor = 1 - killed

    def newer_checkpoint():
        newest = engine.newest_checkpoint(model_dir)
        return newest is not None and engine.checkpoint_step(newest) > after_step

    try:
        _wait_for(newer_checkpoint, processes)
        processes[killed].kill()
        processes[survivor].wait(timeout=helpers.SUBPROCESS_TIMEOUT)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    output = logs[survivor].read_text()
    newest = engine.newest_checkpoint(model_dir)
    assert after_step < engine.checkpoint_step(newest) < LOSS_TRAIN_STEPS
    expected = (
        f"ERROR: lost worker {killed} (127.0.0.1:{ports[killed]}) of 2: the newest "
        f"checkpoint is {newest}; starting every worker again with the same command "
        "resumes from it"
    )
    done = subprocess.CompletedProcess("worker", processes[survivor].returncode, stderr=output)
    assert helpers.error_line(done) == expected, output[-3000:]
    assert [line for line in output.splitlines() if line.startswith("ERROR:")] == [expected]
    return newest, logs


@pytest.mark.slow
def test_a_lost_worker_ends_the_others_with_one_line_and_a_restart_resumes(tmp_path):
    """Kills worker 1 once a checkpoint is written, then (after a restart) the chief once
    a newer one is; the survivor ends each time, and the same command resumes."""
    ports = [_free_port(), _free_port()]
    first, _ = _kill_after_checkpoint(tmp_path, ports, run=1, killed=1)
    first_step = engine.checkpoint_step(first)
    second, logs = _kill_after_checkpoint(tmp_path, ports, run=2, killed=0, after_step=first_step)
    for log in logs:
        text = log.read_text()
        assert f"Restoring parameters from {first}" in text
        assert f"Training from step {first_step} to {LOSS_TRAIN_STEPS}" in text

    processes, logs = _start_pretraining_workers(tmp_path, ports, run=3)
    try:
        for process, log in zip(processes, logs):
            assert process.wait(timeout=240) == 0, log.read_text()[-3000:]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    second_step = engine.checkpoint_step(second)
    for log in logs:
        text = log.read_text()
        assert f"Restoring parameters from {second}" in text
        assert f"Training from step {second_step} to {LOSS_TRAIN_STEPS}" in text
        assert f"Training done at step {LOSS_TRAIN_STEPS}" in text
    newest = engine.newest_checkpoint(str(tmp_path / "model"))
    assert engine.checkpoint_step(newest) == LOSS_TRAIN_STEPS


@pytest.mark.slow
def test_peer_watch_ends_a_worker_stuck_waiting_on_a_lost_peer(tmp_path):
    """A worker whose training thread never returns (a collective op waiting on a dead
    peer) is ended by the watch once the peer stops accepting connections."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    script = tmp_path / "stuck_worker.py"
    script.write_text(
        "import sys, time\n"
        f"sys.path.insert(0, {helpers.REPO!r})\n"
        "from bert_lib.engine import distribution\n"
        f"watch = distribution.PeerWatch({{1: '127.0.0.1:{port}'}}, {str(tmp_path)!r}, 2)\n"
        "watch.start()\n"
        "print('watching', flush=True)\n"
        "time.sleep(600)\n"
    )
    process = helpers.start_python(
        str(script), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline() == "watching\n"
        # The watch's first probe connects and gets what a worker's server sends first,
        # an HTTP/2 SETTINGS frame: it has seen the peer answer.
        listener.settimeout(helpers.SUBPROCESS_TIMEOUT)
        connection = listener.accept()[0]
        connection.sendall(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))
        connection.close()
        assert process.poll() is None
        listener.close()
        _, stderr = process.communicate(timeout=helpers.SUBPROCESS_TIMEOUT)
    finally:
        listener.close()
        if process.poll() is None:
            process.kill()
    done = subprocess.CompletedProcess(script, process.returncode, stderr=stderr)
    assert helpers.error_line(done) == (
        f"ERROR: lost worker 1 (127.0.0.1:{port}) of 2: there is no checkpoint yet; "
        "starting every worker again with the same command starts over"
    )
    assert [line for line in stderr.splitlines() if line.startswith("ERROR")] == [
        helpers.error_line(done)
    ]


def test_sessions_optimize_the_graph_once_unless_the_user_asks_otherwise():
    from tensorflow.core.protobuf import rewriter_config_pb2

    from bert_lib.engine import config as engine_config
    from bert_lib.engine import distribution

    rounds = rewriter_config_pb2.RewriterConfig
    config = engine.RunConfig(model_dir="unused")
    proto = distribution.Distribution(config).session_config
    assert proto.allow_soft_placement
    assert proto.graph_options.rewrite_options.meta_optimizer_iterations == rounds.ONE
    user = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=1)
    user.graph_options.rewrite_options.meta_optimizer_iterations = rounds.TWO
    proto = distribution.Distribution(
        engine.RunConfig(model_dir="unused", session_config=user)
    ).session_config
    assert proto.graph_options.rewrite_options.meta_optimizer_iterations == rounds.TWO
    assert proto.inter_op_parallelism_threads == 1
    # Evaluation and prediction open their sessions with the same settings, but for
    # the memory optimizer (test_inference_sessions.py).
    default = distribution.Distribution(config).session_config
    assert engine_config.session_config() == default


@pytest.mark.slow
def test_one_round_of_graph_optimization_trains_bit_for_bit_as_two(tmp_path):
    import speed_helpers
    from tensorflow.core.protobuf import rewriter_config_pb2

    two_rounds = tf.compat.v1.ConfigProto()
    two_rounds.graph_options.rewrite_options.meta_optimizer_iterations = (
        rewriter_config_pb2.RewriterConfig.TWO
    )
    speed_helpers.train(tmp_path / "one", steps=5)
    speed_helpers.train(tmp_path / "two", steps=5, session_config=two_rounds)
    one = helpers.checkpoint_values(engine.newest_checkpoint(str(tmp_path / "one")))
    two = helpers.checkpoint_values(engine.newest_checkpoint(str(tmp_path / "two")))
    assert sorted(one) == sorted(two)
    for name in one:
        np.testing.assert_array_equal(one[name], two[name], err_msg=name)
