"""SIGTERM and Ctrl-C stop training with the step saved; the same command resumes it.

Real signals go to real training processes (tests/support/preemption_worker.py,
which signals itself at a planned step; run_pretraining.py and a prediction
get an external SIGTERM). Each resumed run is compared with an
uninterrupted run of the same model, input and seed, trained here
in-process: the same final step, the same weights to float32 round-off, the
same loss scale in float16. The last resume of a chain runs here too (the
same code a process would run), to keep the tests short.

The linear runs are unseeded and shuffle their input: a resumed run reads
the right examples only if the input position saved beside each checkpoint
is restored (without it, the input would start over). The multi-worker
runs are seeded and resume through the seeded skip of consumed batches.
"""

import json
import os
import signal
import socket
import subprocess
import time

import helpers
import numpy as np
import preemption_worker as worker
import pytest
import tensorflow as tf

import optimization
from bert_lib import engine
from bert_lib.engine import input_position, signals
from bert_lib.plumbing import errors

WORKER = os.path.join(helpers.SUPPORT, "preemption_worker.py")
SIGTERM_STATUS = 128 + signal.SIGTERM
SIGINT_STATUS = 128 + signal.SIGINT


def _run_worker(model_dir, model, plan="", env=None):
    """Runs preemption_worker.py to its end; returns (exit status, stderr lines)."""
    process = helpers.start_python(
        WORKER,
        str(model_dir),
        model,
        plan,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _, stderr = process.communicate(timeout=helpers.SUBPROCESS_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, stderr.splitlines()


def _stopped_lines(stderr):
    """The STOPPED lines of a stopped run, checking it printed no traceback or ERROR."""
    text = "\n".join(stderr)
    assert "Traceback" not in text, text[-3000:]
    assert not [line for line in stderr if line.startswith("ERROR")], text[-3000:]
    return [line for line in stderr if line.startswith("STOPPED:")]


def _newest_step(model_dir):
    return engine.checkpoint_step(engine.newest_checkpoint(str(model_dir)))


def _values(model_dir):
    return helpers.checkpoint_values(engine.newest_checkpoint(str(model_dir)))


def _train_here(model_dir, model, tf_random_seed=None):
    """Trains MODEL to its last step in this process (resuming from what model_dir holds);
    returns the final checkpoint's values."""
    plan = worker.SignalPlan("")
    estimator = worker.estimator(str(model_dir), model, plan, tf_random_seed)
    if model == "bert_fp16":
        estimator.train(worker.bert_input_fn, worker.BERT_STEPS)
    else:
        estimator.train(worker.linear_input_fn, worker.LINEAR_STEPS)
    return _values(model_dir)


def _assert_same_weights(ours, reference):
    assert sorted(ours) == sorted(reference)
    for name, value in reference.items():
        np.testing.assert_allclose(ours[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.slow
def test_signals_at_four_points_each_save_and_resume_as_an_uninterrupted_run(tmp_path, caplog):
    """SIGTERM mid-step, SIGTERM right after a periodic save, one Ctrl-C, two Ctrl-Cs;
    after each the same command resumes, and the run ends as one that never stopped."""
    model_dir = tmp_path / "model"
    resume = "the same command resumes from it"

    # SIGTERM while the step from 6 to 7 runs: that step finishes and is saved.
    status, stderr = _run_worker(model_dir, "linear", "TERM@6")
    assert status == SIGTERM_STATUS
    assert _stopped_lines(stderr) == [
        f"STOPPED: SIGTERM at step 7: saved {model_dir}/model.ckpt-7; {resume}"
    ]
    assert _newest_step(model_dir) == 7

    # SIGTERM just after step 8, which a periodic checkpoint falls due at: that
    # checkpoint is the one kept; nothing is saved twice.
    status, stderr = _run_worker(model_dir, "linear", "TERM@8+")
    assert status == SIGTERM_STATUS
    assert _stopped_lines(stderr) == [
        f"STOPPED: SIGTERM at step 8: saved {model_dir}/model.ckpt-8; {resume}"
    ]
    assert _newest_step(model_dir) == 8

    # One Ctrl-C in the step from 9 to 10.
    status, stderr = _run_worker(model_dir, "linear", "INT@9")
    assert status == SIGINT_STATUS
    assert _stopped_lines(stderr) == [
        f"STOPPED: SIGINT at step 10: saved {model_dir}/model.ckpt-10; {resume}"
    ]

    # Two Ctrl-Cs in the step from 13 to 14: the process ends at once, unsaved,
    # after step 12's periodic checkpoint.
    status, stderr = _run_worker(model_dir, "linear", "INT,INT@13")
    assert status == SIGINT_STATUS
    assert _stopped_lines(stderr) == [
        "STOPPED: a second SIGINT: stopped at once, without saving; the newest checkpoint "
        f"is {model_dir}/model.ckpt-12; {resume}"
    ]
    assert _newest_step(model_dir) == 12

    # The rest in this process (what a process would run), then the reference.
    # absl's logger has its own level (WARNING once any test parsed flags).
    with caplog.at_level("INFO", logger="absl"):
        ours = _train_here(model_dir, "linear")
    assert f"Input position restored from {model_dir}/model.ckpt-12.input" in caplog.text
    assert ours["global_step"] == worker.LINEAR_STEPS
    reference = _train_here(tmp_path / "reference", "linear")
    _assert_same_weights(ours, reference)
    # The checkpoint holds the original's names only; the input position is a
    # file of its own beside it, for the kept checkpoints only.
    assert sorted(reference) == ["b", "global_step", "w"]
    inputs = sorted(name for name in os.listdir(model_dir) if name.endswith(".input"))
    checkpoints = sorted(
        name[: -len(".index")] for name in os.listdir(model_dir) if name.endswith(".index")
    )
    assert inputs == [f"{name}.input" for name in checkpoints]


@pytest.mark.slow
def test_float16_resume_keeps_the_loss_scale_and_its_good_step_count(tmp_path, monkeypatch):
    monkeypatch.setattr(
        optimization, "LOSS_SCALE_GROWTH_INTERVAL", worker.LOSS_SCALE_GROWTH_INTERVAL
    )
    reference = _train_here(tmp_path / "reference", "bert_fp16")
    # The scale moved (grew every 3 good steps; halved on overflows) in ways a
    # run restarting it at 2^15 with no good steps counted would not repeat.
    assert reference["loss_scale"] != optimization.INITIAL_LOSS_SCALE

    model_dir = tmp_path / "model"
    status, stderr = _run_worker(model_dir, "bert_fp16", "TERM@4")
    assert status == SIGTERM_STATUS
    assert len(_stopped_lines(stderr)) == 1
    stopped = _values(model_dir)
    assert stopped["global_step"] == 5
    assert (stopped["loss_scale"], stopped["loss_scale_good_steps"]) != (2.0**15, 0)

    ours = _train_here(model_dir, "bert_fp16")
    assert ours["global_step"] == worker.BERT_STEPS
    assert ours["loss_scale"] == reference["loss_scale"]
    assert ours["loss_scale_good_steps"] == reference["loss_scale_good_steps"]
    _assert_same_weights(ours, reference)

    # What the original code restores with: a plain Saver over the variables
    # of the float32 graph, which has no loss scale; the extra names are ignored.
    with tf.Graph().as_default():
        model_fn = worker.speed_helpers.model_fn_builder(1e-3)
        features = {k: tf.constant(v[:8]) for k, v in worker.speed_helpers.make_data().items()}
        model_fn(features, None, engine.ModeKeys.TRAIN, {})
        names = {v.op.name for v in tf.compat.v1.global_variables()}
        assert names == set(ours) - {"loss_scale", "loss_scale_good_steps"}
        kernel = helpers.variable_named("output_weights")
        with tf.compat.v1.Session() as session:
            tf.compat.v1.train.Saver().restore(session, engine.newest_checkpoint(str(model_dir)))
            np.testing.assert_array_equal(session.run(kernel), ours["output_weights"])


@pytest.mark.slow
def test_a_changed_input_pipeline_is_not_restored_and_says_so(tmp_path, caplog):
    """A resumed run whose input_fn now builds another pipeline (here: another batch
    size) starts that pipeline afresh, as a run without a saved position would."""
    plan = worker.SignalPlan("")
    worker.estimator(str(tmp_path), "linear", plan).train(worker.linear_input_fn, 4)
    assert os.path.exists(tmp_path / "model.ckpt-4.input")
    config = engine.RunConfig(model_dir=str(tmp_path), save_checkpoints_steps=4)
    estimator = engine.Estimator(worker.linear_model_fn, config, train_batch_size=4)
    with caplog.at_level("WARNING"):
        estimator.train(worker.linear_input_fn, 6)
    assert "the input position is not restored" in caplog.text
    assert _newest_step(tmp_path) == 6


@pytest.mark.slow
def test_a_signal_to_one_worker_stops_both_at_one_step_and_a_restart_resumes(tmp_path):
    ports = [_free_port(), _free_port()]
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    model_dir = tmp_path / "model"

    def start_workers(plans):
        processes = []
        for index, plan in enumerate(plans):
            config = {"cluster": cluster, "task": {"type": "worker", "index": index}}
            processes.append(
                helpers.start_python(
                    WORKER,
                    str(model_dir),
                    "linear",
                    plan,
                    env={"TF_CONFIG": json.dumps(config)},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        try:
            outputs = [p.communicate(timeout=helpers.SUBPROCESS_TIMEOUT)[1] for p in processes]
        finally:
            for process in processes:
                if process.poll() is None:
                    process.kill()
        return [p.returncode for p in processes], [out.splitlines() for out in outputs]

    # Worker 1 alone gets SIGTERM in the step from 5 to 6; the workers learn of
    # it together through the next step's sum of their flags, and stop after it.
    statuses, stderrs = start_workers(["", "TERM@5"])
    assert statuses == [SIGTERM_STATUS, SIGTERM_STATUS], "\n".join(stderrs[0][-30:])
    again = "starting every worker again with the same command resumes from it"
    assert _stopped_lines(stderrs[0]) == [
        f"STOPPED: SIGTERM at step 7: saved {model_dir}/model.ckpt-7; {again}"
    ]
    assert _stopped_lines(stderrs[1]) == [
        f"STOPPED: SIGTERM at step 7: worker 0 saves {model_dir}/model.ckpt-7; {again}"
    ]
    assert _newest_step(model_dir) == 7

    statuses, stderrs = start_workers(["", ""])
    assert statuses == [0, 0], "\n".join(stderrs[0][-30:] + stderrs[1][-30:])
    assert _newest_step(model_dir) == worker.LINEAR_STEPS
    # Sharded over two workers, each global batch holds the examples the one
    # device's batch holds.
    reference = _train_here(tmp_path / "reference", "linear", tf_random_seed=worker.SEED)
    _assert_same_weights(_values(model_dir), reference)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_sigterm_during_prediction_leaves_no_output_and_one_line(tmp_path):
    output = tmp_path / "predictions.txt"
    process = helpers.start_python(
        WORKER,
        str(tmp_path / "model"),
        "predict",
        str(output),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + 300
        # The output is written in a staging directory beside it.
        while not [p for p in tmp_path.glob(".tmp-*/predictions.txt") if p.stat().st_size]:
            assert process.poll() is None, process.stderr.read()[-3000:]
            assert time.time() < deadline, "no prediction was written"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == SIGTERM_STATUS
    assert _stopped_lines(stderr.splitlines()) == [
        "STOPPED: SIGTERM: stopped before the end, with no output left half-written; the "
        "same command runs it again (training resumes from its newest checkpoint)"
    ]
    assert os.listdir(tmp_path) == []


def test_errors_call_turns_a_stop_into_one_line_and_its_status(capsys):
    def stopped():
        raise engine.TrainingStopped(signal.SIGTERM, "SIGTERM at step 3: saved x")

    with pytest.raises(SystemExit) as info:
        errors.call(stopped)
    assert info.value.code == SIGTERM_STATUS
    assert capsys.readouterr().err == "STOPPED: SIGTERM at step 3: saved x\n"

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(SystemExit) as info:
        errors.call(interrupted)
    assert info.value.code == SIGINT_STATUS
    assert capsys.readouterr().err.startswith("STOPPED: SIGINT: stopped before the end")


def _sleep_once_started(started):
    started.set()
    time.sleep(60)


def test_a_forked_worker_ends_quietly_on_sigterm_while_its_parent_would_stop(capfd):
    """create_pretraining_data's pool workers are forked inside errors.call, whose
    SIGTERM handler they inherit; a pool ends its workers with SIGTERM, which must
    end them as it ends any process (no Stopped traceback from each worker)."""
    import multiprocessing

    fork = multiprocessing.get_context("fork")

    def exit_with_sigterm_default():
        os._exit(0 if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL else 3)

    with errors._sigterm_raises():
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        # The default is back from the fork on, so it acts even on a child stuck
        # in C code, where a Python handler would never run.
        checker = fork.Process(target=exit_with_sigterm_default)
        checker.start()
        checker.join(30)
        started = fork.Event()
        child = fork.Process(target=_sleep_once_started, args=(started,))
        child.start()
        assert started.wait(30)
        os.kill(child.pid, signal.SIGTERM)
        child.join(30)
    assert checker.exitcode == 0
    assert child.exitcode == -signal.SIGTERM
    assert "Traceback" not in capfd.readouterr().err


def test_a_worker_terminated_as_it_is_forked_ends(capfd):
    """A pool terminated right after it started sends SIGTERM to workers that may not have
    reset the parent's handler yet: forked under errors.sigterm_held_for_forks, each
    starts with SIGTERM blocked and unblocks it once the default is back, so the signal
    ends it whenever it arrives (the pool's join would otherwise wait for it forever;
    without the hold most of such children lived on)."""
    import multiprocessing

    fork = multiprocessing.get_context("fork")

    def exit_with_sigterm_default_and_unblocked():
        blocked = signal.SIGTERM in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        default = signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
        os._exit(0 if default and not blocked else 3)

    with errors._sigterm_raises():
        with errors.sigterm_held_for_forks():
            checker = fork.Process(target=exit_with_sigterm_default_and_unblocked)
            checker.start()
            children = [fork.Process(target=time.sleep, args=(60,)) for _ in range(10)]
            for child in children:
                child.start()
                os.kill(child.pid, signal.SIGTERM)  # before or after its reset
        assert signal.SIGTERM not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    checker.join(30)
    for child in children:
        child.join(30)
    assert checker.exitcode == 0
    assert [child.exitcode for child in children] == [-signal.SIGTERM] * 10
    assert "Traceback" not in capfd.readouterr().err


def test_input_position_fingerprint_ignores_generated_names_only():
    def fingerprint(batch_size, files):
        with tf.Graph().as_default():
            dataset = tf.data.TFRecordDataset(files).map(tf.strings.length)
            dataset = dataset.shuffle(10).batch(batch_size)
            variant = tf.data.experimental.to_variant(dataset)
            return input_position.pipeline_fingerprint(variant)

    first = fingerprint(4, ["a"])
    assert fingerprint(4, ["a"]) == first  # another graph: other generated names
    assert fingerprint(8, ["a"]) != first
    assert fingerprint(4, ["a", "b"]) != first


def _start_pretraining(tmp_path, log):
    """run_pretraining.py on a tiny BERT, far more steps than the test lets it run."""
    config = helpers.write_bert_config(
        tmp_path / "bert_config.json", 30522, max_position_embeddings=128
    )
    with open(log, "w") as out:
        return helpers.start_python(
            os.path.join(helpers.REPO, "run_pretraining.py"),
            f"--bert_config_file={config}",
            f"--input_file={os.path.join(helpers.GOLDEN, 'pretraining', 'default.tfrecord')}",
            f"--output_dir={tmp_path / 'model'}",
            "--do_train",
            "--train_batch_size=4",
            "--num_train_steps=100000",
            "--save_checkpoints_steps=100000",
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _sigterm_once_training(process, log, after):
    """Sends SIGTERM once the log shows `after` and then a training step's progress line;
    returns the exit status and the log."""

    def stepped():
        text = log.read_text()
        return after in text and "Training: " in text[text.index(after) :]

    try:
        deadline = time.time() + helpers.SUBPROCESS_TIMEOUT
        while not stepped():
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.time() < deadline, "training did not start"
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, log.read_text()


@pytest.mark.slow
def test_run_pretraining_saves_on_sigterm_and_the_same_command_resumes(tmp_path):
    """A script as users run it: an external SIGTERM mid-training, then the same command."""
    model_dir = tmp_path / "model"
    status, text = _sigterm_once_training(
        _start_pretraining(tmp_path, tmp_path / "first.log"),
        tmp_path / "first.log",
        "Training from step 0",
    )
    assert status == SIGTERM_STATUS, text[-3000:]
    (line,) = _stopped_lines(text.splitlines())
    step = _newest_step(model_dir)
    assert step > 0
    assert line == (
        f"STOPPED: SIGTERM at step {step}: saved {model_dir}/model.ckpt-{step}; "
        "the same command resumes from it"
    )
    assert os.path.exists(f"{model_dir}/model.ckpt-{step}.input")

    status, text = _sigterm_once_training(
        _start_pretraining(tmp_path, tmp_path / "second.log"),
        tmp_path / "second.log",
        f"Training from step {step} to 100000",
    )
    assert status == SIGTERM_STATUS, text[-3000:]
    assert f"Input position restored from {model_dir}/model.ckpt-{step}.input" in text
    assert _newest_step(model_dir) > step


def _linear_estimator(model_dir):
    config = engine.RunConfig(model_dir=str(model_dir), save_checkpoints_steps=4)
    return engine.Estimator(worker.linear_model_fn, config, train_batch_size=8, eval_batch_size=8)


def test_an_evaluation_during_training_gives_way_to_a_stop_signal(tmp_path):
    estimator = _linear_estimator(tmp_path)
    with signals.StopSignals(str(tmp_path)) as stop_signals:
        stop_signals.received = signal.SIGTERM
        with pytest.raises(signals.Interrupted):
            estimator.evaluate(worker.linear_input_fn, steps=3)
    # Outside training, nothing polls for signals.
    assert estimator.evaluate(worker.linear_input_fn, steps=3)["global_step"] == 0


@pytest.mark.slow
def test_a_stop_during_an_every_n_steps_evaluation_saves_that_step_and_stops(tmp_path):
    """What evaluating while training does at step 4 when a signal comes meanwhile: the
    evaluation gives way, step 4 (saved before it) is where training stops."""
    estimator = _linear_estimator(tmp_path)
    evaluated = []

    def save_then_evaluate(step_context):
        step_context.save_checkpoint()
        # As the signal thread records it, in the StopSignals of the training running.
        signals._ACTIVE[-1].received = signal.SIGTERM
        evaluated.append(estimator.evaluate(worker.linear_input_fn, steps=3))

    with pytest.raises(engine.TrainingStopped) as info:
        estimator.train(
            worker.linear_input_fn, 12, hooks=[engine.EveryNSteps(4, save_then_evaluate)]
        )
    assert evaluated == []
    assert info.value.exit_status == SIGTERM_STATUS
    assert str(info.value) == (
        f"SIGTERM at step 4: saved {tmp_path}/model.ckpt-4; the same command resumes from it"
    )
    assert _newest_step(tmp_path) == 4
