"""Faults landing on runs at work: damaged checkpoints, kills mid-write, two jobs, lost ports.

A fault that a kill mid-write makes lands at the moment the run writes one
of its own files (tests/support/fault_worker.py: an audit hook on the
file's open, or the start of a checkpoint save while a file exists); the
damage a power loss leaves at resume (a data or index file cut short, an
empty or cut `checkpoint` file) is made on the files directly. Each run is
then compared with an uninterrupted run of the same model and input: the
same final step and weights, the same evaluations.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import helpers
import linear_model
import numpy as np
import preemption_worker as worker
import pytest
import tensorflow as tf

from bert_lib import engine
from bert_lib.engine import evaluation, input_position
from bert_lib.plumbing import atomic_write, checkpoint_files, directory_lock, errors, eval_results

FAULT_WORKER = os.path.join(helpers.SUPPORT, "fault_worker.py")


def _estimator(model_dir, **config):
    run_config = engine.RunConfig(
        model_dir=str(model_dir), save_checkpoints_steps=4, log_step_count_steps=1, **config
    )
    return engine.Estimator(
        worker.linear_model_fn, run_config, train_batch_size=8, eval_batch_size=8
    )


def _train(model_dir, steps, **config):
    _estimator(model_dir, **config).train(worker.linear_input_fn, steps)
    return helpers.checkpoint_values(engine.newest_checkpoint(str(model_dir)))


def _assert_same_weights(ours, reference):
    assert sorted(ours) == sorted(reference)
    for name, value in reference.items():
        np.testing.assert_allclose(ours[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


def _cut(path, keep):
    """Cuts a file to `keep` bytes (a fraction when below 1), as a power loss leaves it."""
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(int(size * keep) if keep < 1 else keep)


# ---------------------------------------------------------------------------
# A. A damaged checkpoint or `checkpoint` file at resume


def _damage_data(model_dir):
    _cut(model_dir / "model.ckpt-8.data-00000-of-00001", 0.5)


def _damage_index(model_dir):
    _cut(model_dir / "model.ckpt-8.index", 0.5)


def _empty_state(model_dir):
    (model_dir / "checkpoint").write_text("")


def _cut_state(model_dir):
    (model_dir / "checkpoint").write_text('model_checkpoint_path: "model.ckpt-8')


@pytest.mark.parametrize(
    "damage, resumed_from, warning",
    [
        (_damage_data, 4, "model.ckpt-8.data-00000-of-00001 is cut short (12 of 24 bytes)"),
        (_damage_index, 4, "model.ckpt-8.index is damaged"),
        (_empty_state, 8, "names no checkpoint (empty or cut short)"),
        (_cut_state, 8, "line 1 is not a checkpoint state"),
    ],
)
def test_a_damaged_checkpoint_at_resume_is_named_and_the_newest_whole_one_used(
    tmp_path, caplog, damage, resumed_from, warning
):
    model_dir = tmp_path / "model"
    _train(model_dir, 8)
    damage(model_dir)
    with caplog.at_level("INFO", logger="absl"):
        ours = _train(model_dir, 12)
    assert warning in caplog.text
    assert f"Restoring parameters from {model_dir}/model.ckpt-{resumed_from}" in caplog.text
    assert f"Training from step {resumed_from} to 12" in caplog.text
    _assert_same_weights(ours, _train(tmp_path / "reference", 12))
    # The state file names whole checkpoints again.
    names = checkpoint_files.parse_state((model_dir / "checkpoint").read_text(), "checkpoint")
    assert names[-1] == "model.ckpt-12"
    assert all(checkpoint_files.damage(str(model_dir / name)) is None for name in names)


def test_a_directory_of_damaged_checkpoints_only_is_refused_naming_them(tmp_path):
    model_dir = tmp_path / "model"
    _estimator(model_dir, keep_checkpoint_max=1).train(worker.linear_input_fn, 8)
    _cut(model_dir / "model.ckpt-8.data-00000-of-00001", 0.5)
    (model_dir / "checkpoint").write_text("")
    for run in (
        lambda: _train(model_dir, 12),
        lambda: _estimator(model_dir).evaluate(worker.linear_input_fn, steps=1),
    ):
        with pytest.raises(errors.UsageError) as info:
            run()
        assert str(info.value).startswith(
            f"no whole checkpoint in {model_dir}: {model_dir}/model.ckpt-8.data-00000-of-00001 "
            "is cut short (12 of 24 bytes)"
        )
    # Nothing was trained from step 0 over it.
    assert sorted(os.listdir(model_dir)).count("model.ckpt-8.index") == 1
    assert not [name for name in os.listdir(model_dir) if name.startswith("model.ckpt-4")]


def test_checkpoint_index_reader_finds_each_cut_and_agrees_with_tensorflow(tmp_path):
    """damage() reads the index itself; TensorFlow's own reader is the reference for the
    whole checkpoint, and each cut is one TensorFlow cannot read the tensors of."""
    import tensorflow as tf

    values = {f"v{i}": np.arange(i * 50, dtype=np.float32).reshape(-1, 5) for i in range(1, 9)}
    values["text"] = np.array([b"abc", b"de"])
    prefix = helpers.write_checkpoint(tmp_path / "model.ckpt", values, global_step=3)
    assert checkpoint_files.damage(prefix) is None
    reader = tf.train.load_checkpoint(prefix)
    for name, value in values.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value)
    data = f"{prefix}.data-00000-of-00001"
    for path, keep in ((data, 0.99), (data, 0), (f"{prefix}.index", 0.9), (f"{prefix}.index", 3)):
        original = open(path, "rb").read()
        _cut(path, keep)
        assert checkpoint_files.damage(prefix).startswith(path), (path, keep)

        def read_all():
            reader = tf.train.load_checkpoint(prefix)
            for name in values:
                reader.get_tensor(name)

        with pytest.raises(Exception):  # noqa: B017 (whatever TensorFlow raises)
            read_all()
        with open(path, "wb") as f:
            f.write(original)
    os.remove(data)
    assert checkpoint_files.damage(prefix) == f"{data} is missing"


def test_an_init_checkpoint_cut_short_is_named_at_start(tmp_path):
    """--init_checkpoint is read whole at start too (its shapes are checked there)."""
    from bert_lib.plumbing import checkpoint_shapes

    values = {"bert/w": np.ones([40, 5], np.float32), "bert/b": np.zeros([5], np.float32)}
    prefix = helpers.write_checkpoint(tmp_path / "bert_model.ckpt", values)
    assert checkpoint_shapes.read_shapes(prefix, "--init_checkpoint") == {
        "bert/w": [40, 5],
        "bert/b": [5],
    }
    _cut(f"{prefix}.data-00000-of-00001", 0.5)
    with pytest.raises(errors.UsageError) as info:
        checkpoint_shapes.read_shapes(prefix, "--init_checkpoint")
    assert str(info.value) == (
        f"--init_checkpoint: cannot read {prefix} (damaged): {prefix}.data-00000-of-00001 is cut "
        "short (410 of 820 bytes)"
    )


# ---------------------------------------------------------------------------
# Smaller things at resume


def test_a_damaged_input_position_is_named_as_damaged(tmp_path, caplog):
    model_dir = tmp_path / "model"
    _train(model_dir, 8)
    _cut(model_dir / "model.ckpt-8.input", 0.5)
    with caplog.at_level("WARNING"):
        _train(model_dir, 12)
    assert f"{model_dir}/model.ckpt-8.input is damaged" in caplog.text
    assert "pipeline differs" not in caplog.text


def _write_records(path, x, y):
    """The linear model's examples as tf.train.Examples in a TFRecord file."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for features, label in zip(x, y):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "x": tf.train.Feature(float_list=tf.train.FloatList(value=features)),
                        "y": tf.train.Feature(float_list=tf.train.FloatList(value=label)),
                    }
                )
            )
            writer.write(example.SerializeToString())


def _records_input_fn(path):
    """The examples of a TFRecord file in order, repeated (no shuffle: a run that starts
    its input over reads exactly what a fresh run would)."""
    spec = {
        "x": tf.io.FixedLenFeature([linear_model.NUM_FEATURES], tf.float32),
        "y": tf.io.FixedLenFeature([1], tf.float32),
    }

    def input_fn(params):
        dataset = tf.data.TFRecordDataset(str(path)).repeat()
        dataset = dataset.map(lambda record: tf.io.parse_single_example(record, spec))
        dataset = dataset.map(lambda example: ({"x": example["x"]}, example["y"]))
        return dataset.batch(params["batch_size"], drop_remainder=True)

    return input_fn


def test_records_replaced_before_a_resume_start_the_input_over_named(tmp_path, caplog):
    """The record file a stopped run read is replaced under its name (other examples, as
    many bytes): the resume names it in a WARNING and reads the new file from its first
    record, as a run without a saved position does; not at the saved offset, and, seeded,
    not after a skip of the batches trained on (counted in the other file's batches)."""
    records = tmp_path / "train.tfrecord"
    x, y = linear_model.data()
    new_x, new_y = x[::-1].copy(), y[::-1].copy()
    input_fn = _records_input_fn(records)
    _write_records(records, x, y)
    ours, reference = tmp_path / "ours", tmp_path / "reference"
    _estimator(ours, tf_random_seed=5).train(input_fn, 8)
    _estimator(reference).train(input_fn, 8)
    assert os.path.getsize(ours / "model.ckpt-8.input") > 0
    os.remove(reference / "model.ckpt-8.input")  # a run without a saved position
    size = os.path.getsize(records)
    _write_records(records, new_x, new_y)
    assert os.path.getsize(records) == size

    with caplog.at_level("WARNING"):
        _estimator(ours, tf_random_seed=5).train(input_fn, 16)
    assert (
        f"The input's data changed since {ours}/model.ckpt-8.input was saved: {records} has "
        "changed (as many bytes, other content)"
    ) in caplog.text
    _estimator(reference).train(input_fn, 16)
    _assert_same_weights(
        helpers.checkpoint_values(engine.newest_checkpoint(str(ours))),
        helpers.checkpoint_values(engine.newest_checkpoint(str(reference))),
    )
    # The same records again: the position is restored, as before.
    caplog.clear()
    with caplog.at_level("INFO", logger="absl"):
        _estimator(ours, tf_random_seed=5).train(input_fn, 20)
    assert f"Input position restored from {ours}/model.ckpt-16.input" in caplog.text
    assert "data changed" not in caplog.text


def test_an_evaluation_that_loses_a_race_with_rotation_takes_the_newest(tmp_path, monkeypatch):
    """An evaluation job beside a training: between finding model.ckpt-4 and reading it,
    the training saves model.ckpt-8 and rotates model.ckpt-4 away."""
    from bert_lib.engine import estimator as estimator_module

    model_dir = tmp_path / "model"
    _estimator(model_dir, keep_checkpoint_max=1).train(worker.linear_input_fn, 4)
    build = estimator_module.build_eval_graph

    def build_while_training_goes_on(*args):
        if os.path.exists(model_dir / "model.ckpt-4.index"):
            _estimator(model_dir, keep_checkpoint_max=1).train(worker.linear_input_fn, 8)
        return build(*args)

    monkeypatch.setattr(estimator_module, "build_eval_graph", build_while_training_goes_on)
    result = _estimator(model_dir).evaluate(worker.linear_input_fn, steps=1)
    assert not os.path.exists(model_dir / "model.ckpt-4.index")
    assert result["global_step"] == 8


def _dead_pid():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return dead.pid


def test_a_staging_directory_a_killed_export_left_is_removed_by_the_next(tmp_path):
    stale = tmp_path / f".export.tmp-{_dead_pid()}"
    (stale / "variables").mkdir(parents=True)
    with atomic_write.staged_directory(str(tmp_path / "export")) as stage:
        (open(os.path.join(stage, "saved_model.pb"), "w")).close()
    assert sorted(os.listdir(tmp_path)) == ["export"]


def test_only_what_dead_processes_of_this_host_left_is_removed(tmp_path):
    """Staging directories are named for their host and process: one of a process that
    still runs (here: this test's parent), or of another host sharing the directory, is
    a write in progress and stays; an older version's temporary name is removed only
    beside an output being written again."""
    host = atomic_write._host()
    dead = _dead_pid()
    stale = [f".tmp-{host}-{dead}-0", f"a.txt.tmp-{dead}"]
    kept = [
        f".tmp-{host}-{os.getppid()}-3",
        f".tmp-otherhost-{dead}-0",
        f"b.txt.tmp-{dead}",
        "c.tmp-notes.txt",
    ]
    for name in stale + kept:
        if name.startswith("."):
            (tmp_path / name).mkdir()
            (tmp_path / name / "a.txt").write_text("half")
        else:
            (tmp_path / name).write_text("half")
    atomic_write.write_text(str(tmp_path / "a.txt"), "whole\n")
    assert sorted(os.listdir(tmp_path)) == sorted(["a.txt", *kept])
    assert all(atomic_write.is_temporary(str(tmp_path / name)) for name in stale + kept[:3])
    assert not atomic_write.is_temporary(str(tmp_path / "c.tmp-notes.txt"))


@pytest.mark.slow
def test_a_kill_mid_save_leaves_nothing_the_next_training_keeps(tmp_path):
    """SIGKILL as step 4's `checkpoint` file is put in place leaves TensorFlow's temporary
    file of it (as a kill while the data or index is written leaves a .tempstate file,
    made here by hand, and one while the input position is written a staging directory):
    the same command resumes and removes them."""
    model_dir = tmp_path / "model"
    status, stderr = _run_fault_worker(
        model_dir, "train", r"KILL:call:rename_v2:^checkpoint\.tmp[0-9a-f]{32}$"
    )
    assert status == -signal.SIGKILL, stderr[-3000:]
    leftovers = [name for name in os.listdir(model_dir) if name.startswith("checkpoint.tmp")]
    assert leftovers
    (model_dir / "model.ckpt-8.data-00000-of-00001.tempstate1234567890").write_bytes(b"x")
    (model_dir / f".tmp-{atomic_write._host()}-{_dead_pid()}-0").mkdir()
    status, stderr = _run_fault_worker(model_dir, "train")
    assert status == 0, stderr[-3000:]
    assert [name for name in os.listdir(model_dir) if atomic_write.is_temporary(name)] == []
    _assert_same_weights(
        helpers.checkpoint_values(engine.newest_checkpoint(str(model_dir))),
        _train(tmp_path / "reference", 16),
    )


def test_a_failed_save_names_the_checkpoint_not_a_temporary_file(tmp_path, monkeypatch):
    """What TensorFlow reports for a full disk names the index's temporary file."""
    import tensorflow as tf

    model_dir = tmp_path / "model"
    _train(model_dir, 4)

    def full_disk(self, session, prefix, global_step, **kwargs):
        raise tf.errors.ResourceExhaustedError(
            None,
            None,
            f"{prefix}-{global_step}.index.tempstate1234567; No space left on device",
        )

    monkeypatch.setattr(tf.compat.v1.train.Saver, "save", full_disk)
    with pytest.raises(errors.RunError) as info:
        _train(model_dir, 8)
    assert str(info.value) == (
        f"cannot save checkpoint {model_dir}/model.ckpt-8: ResourceExhaustedError: "
        "its temporary file; No space left on device"
    )


# ---------------------------------------------------------------------------
# Processes: kills, signals and removals landing mid-write


def _run_fault_worker(model_dir, mode, trigger="", env=None):
    """Runs fault_worker.py to its end; returns (exit status, stderr)."""
    result = helpers.run_python(FAULT_WORKER, str(model_dir), mode, trigger, env=env)
    return result.returncode, result.stderr


def _history(model_dir):
    with open(os.path.join(model_dir, evaluation.HISTORY_FILE)) as f:
        return [json.loads(line) for line in f]


def _best(model_dir):
    best = os.path.join(model_dir, evaluation.BEST_DIR)
    with open(os.path.join(best, "checkpoint")) as f:
        (name,) = set(checkpoint_files.parse_state(f.read(), "best"))
    with open(os.path.join(best, evaluation.RESULTS_FILE)) as f:
        results = dict(line.strip().split(" = ") for line in f)
    return name, results


@pytest.mark.slow
@pytest.mark.parametrize(
    "trigger",
    [
        # SIGKILL as the last best evaluation (step 16's) is being kept in best/.
        r"KILL:open:best/\.tmp-[^/]+/checkpoint$:4",
        # SIGTERM as step 8, which an evaluation falls due at, is saved: the evaluation
        # gives way to the stop.
        r"TERM:open:model\.ckpt-8\.input$:1",
    ],
)
def test_evaluation_bookkeeping_survives_a_stop_mid_write(tmp_path, trigger):
    """After the fault and a resume, eval_history.jsonl holds each evaluation once, as an
    uninterrupted run's, and best/ holds the best of them with its results."""
    model_dir = tmp_path / "model"
    status, stderr = _run_fault_worker(model_dir, "eval", trigger)
    assert status in (-signal.SIGKILL, 128 + signal.SIGTERM), stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    status, stderr = _run_fault_worker(model_dir, "eval")
    assert status == 0, stderr[-3000:]
    status, stderr = _run_fault_worker(tmp_path / "reference", "eval")
    assert status == 0, stderr[-3000:]

    ours, reference = _history(model_dir), _history(tmp_path / "reference")
    assert [entry["global_step"] for entry in ours] == [4, 8, 12, 16]
    for entry, expected in zip(ours, reference):
        assert entry.keys() == expected.keys()
        np.testing.assert_allclose(entry["loss"], expected["loss"], rtol=1e-6)
    best_step = min(ours, key=lambda entry: entry["loss"])["global_step"]
    name, results = _best(model_dir)
    assert name == f"model.ckpt-{best_step}"
    assert int(results["global_step"]) == best_step
    assert checkpoint_files.damage(os.path.join(model_dir, "best", name)) is None
    assert _best(tmp_path / "reference")[0] == name


@pytest.mark.slow
def test_a_sigterm_during_the_final_save_reports_training_finished(tmp_path):
    model_dir = tmp_path / "model"
    status, stderr = _run_fault_worker(model_dir, "train", r"TERM:open:model\.ckpt-16\.input$:1")
    assert status == 0, stderr[-3000:]
    assert "STOPPED" not in stderr
    assert "SIGTERM came after the last step: training is complete at step 16." in stderr
    assert engine.checkpoint_step(engine.newest_checkpoint(str(model_dir))) == 16


@pytest.mark.slow
def test_the_output_directory_removed_during_a_save_is_one_error_line(tmp_path):
    model_dir = tmp_path / "model"
    # The trigger: step 8's save, its data and index written, records them in the
    # `checkpoint` file.
    result = helpers.run_python(
        FAULT_WORKER,
        str(model_dir),
        "train",
        r"RMDIR:call:update_checkpoint_state_internal:model\.ckpt-8\.index$",
    )
    assert helpers.error_line(result) == (
        f"ERROR: cannot save checkpoint {model_dir}/model.ckpt-8: the directory {model_dir} "
        "no longer exists (was it removed while training ran?)"
    )


# ---------------------------------------------------------------------------
# D. One training job per output directory


@pytest.mark.slow
def test_a_second_training_in_the_same_directory_is_refused_naming_the_first(tmp_path):
    """The same command twice: the second, started while the first saves step 8, is
    refused with one line naming the first; the first ends as it would have alone."""
    model_dir = tmp_path / "model"
    first = helpers.start_python(
        FAULT_WORKER,
        str(model_dir),
        "train",
        r"WAIT:open:model\.ckpt-8\.input$:1",
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.time() + helpers.SUBPROCESS_TIMEOUT
        while not os.path.exists(tmp_path / "waiting"):
            assert first.poll() is None, first.stderr.read()[-3000:]
            assert time.time() < deadline
            time.sleep(0.05)
        second = helpers.run_python(FAULT_WORKER, str(model_dir), "train")
        (tmp_path / "release").touch()
        _, first_stderr = first.communicate(timeout=helpers.SUBPROCESS_TIMEOUT)
    finally:
        if first.poll() is None:
            first.kill()
    assert helpers.error_line(second).startswith(
        f"ERROR: {model_dir} is in use by another training: pid {first.pid} on "
        f"{socket.gethostname()} since "
    )
    assert first.returncode == 0, first_stderr[-3000:]
    _assert_same_weights(
        helpers.checkpoint_values(engine.newest_checkpoint(str(model_dir))),
        _train(tmp_path / "reference", 16),
    )


@pytest.mark.slow
def test_a_lock_whose_holder_was_killed_is_free(tmp_path):
    holder = helpers.start_python(
        "-c",
        "import sys, time\n"
        f"sys.path.insert(0, {helpers.REPO!r})\n"
        "from bert_lib.plumbing import directory_lock\n"
        f"with directory_lock.held({str(tmp_path)!r}):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(600)\n",
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(errors.UsageError, match=f"pid {holder.pid} on "):
            with directory_lock.held(str(tmp_path)):
                pass
    finally:
        holder.kill()
        holder.wait()
    with directory_lock.held(str(tmp_path)):
        with directory_lock.held(str(tmp_path)):  # again in the same process
            pass


# ---------------------------------------------------------------------------
# C. Ports: taken, or held by something that is not a worker


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tf_config(ports, index):
    cluster = {"worker": [f"127.0.0.1:{port}" for port in ports]}
    return json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})


@pytest.mark.slow
@pytest.mark.parametrize("held", [0, 1])
def test_a_port_held_by_another_program_is_one_error_line_naming_it(tmp_path, held):
    """Worker 0 alone, with its own port (held=0) or its peer's (held=1) taken by a
    program that listens but is no worker: one ERROR line naming the address, soon."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    ports = [_free_port(), _free_port()]
    ports[held] = listener.getsockname()[1]
    try:
        result = helpers.run_python(
            FAULT_WORKER,
            str(tmp_path / "model"),
            "train",
            env={"TF_CONFIG": _tf_config(ports, 0)},
        )
    finally:
        listener.close()
    line = helpers.error_line(result)
    address = f"127.0.0.1:{ports[held]}"
    if held == 0:
        assert line.startswith(f"ERROR: cannot start worker 0's server at {address} (TF_CONFIG)")
    else:
        assert line.startswith(f"ERROR: worker 1 ({address}) of 2: another program holds")


@pytest.mark.slow
def test_a_peer_where_nothing_listens_ends_the_job_in_one_line_naming_it(tmp_path):
    """Worker 0 alone, its peer's address refusing every connection (no worker ever
    started there): one ERROR line naming the address once the start limit is past,
    not a wait without end. The limit (60 s) is cut to 10 s here; the timeout fails a
    run that waits for ever."""
    ports = [_free_port(), _free_port()]
    started = time.time()
    result = subprocess.run(
        [sys.executable, FAULT_WORKER, str(tmp_path / "model"), "train", ""],
        capture_output=True,
        text=True,
        env=helpers.subprocess_env({"TF_CONFIG": _tf_config(ports, 0), "START_SECONDS": "10"}),
        cwd=helpers.REPO,
        timeout=150,
    )
    line = helpers.error_line(result)
    assert line.startswith(
        f"ERROR: worker 1 (127.0.0.1:{ports[1]}) of 2 did not answer within 10 s"
    )
    assert time.time() - started >= 10


def test_the_input_position_file_format_still_reads_the_first_version(tmp_path):
    state = b"\x08\x15state"
    fingerprint = "ab" * 32
    path = tmp_path / "model.ckpt-3.input"
    path.write_bytes(b"runner input position 1\n" + f"{fingerprint}\n5\n".encode() + state)
    saved = input_position.read_saved(str(tmp_path / "model.ckpt-3"))
    assert (saved.fingerprint, saved.skip, saved.state) == (fingerprint, 5, state)


def test_the_peer_probe_tells_a_worker_from_another_program_and_from_nothing():
    """A worker's server (gRPC) sends an HTTP/2 SETTINGS frame as a connection opens; a
    program that merely listens sends nothing, and a closed port refuses."""
    import threading

    from bert_lib.engine import distribution

    def serve(listener, reply):
        connection = listener.accept()[0]
        connection.sendall(reply)
        connection.close()

    addresses = {}
    listeners = []
    for kind, reply in (("worker", bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])), ("http", b"HTTP/1.1")):
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listeners.append(listener)
        threading.Thread(target=serve, args=(listener, reply), daemon=True).start()
        addresses[kind] = f"127.0.0.1:{listener.getsockname()[1]}"
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # accepts connections (the kernel's backlog), answers nothing
    addresses["listening"] = f"127.0.0.1:{silent.getsockname()[1]}"
    addresses["closed"] = f"127.0.0.1:{_free_port()}"
    try:
        found = {kind: distribution._probe(address) for kind, address in addresses.items()}
    finally:
        for listener in [*listeners, silent]:
            listener.close()
    assert found == {
        "worker": distribution.WORKER,
        "http": distribution.FOREIGN,
        "listening": distribution.FOREIGN,
        "closed": distribution.SILENT,
    }


def _train_and_evaluate(model_dir, steps=16):
    estimator = _estimator(model_dir)

    def evaluate(checkpoint_path, write_summaries):
        return estimator.evaluate(
            worker.linear_input_fn,
            steps=2,
            checkpoint_path=checkpoint_path,
            write_summaries=write_summaries,
        )

    return evaluation.train_and_evaluate(
        estimator,
        worker.linear_input_fn,
        steps,
        evaluate,
        eval_results.write_eval_results,
        evaluation.EvalOptions(4, "loss", None),
    )


def test_best_is_repaired_from_the_history_on_resume(tmp_path):
    """What a kill between the history's line and best/ left before best/ came first:
    the history's best is step 16, best/ still holds step 12. The next run puts step 16
    (with its results) in best/."""
    model_dir = tmp_path / "model"
    _train_and_evaluate(model_dir)
    history = _history(model_dir)
    best = min(history, key=lambda entry: entry["loss"])
    assert best["global_step"] == 16  # the loss falls at every evaluation
    older = evaluation.BestCheckpoint(str(model_dir), eval_results.write_eval_results)
    older.keep(str(model_dir / "model.ckpt-12"), history[2])
    assert _best(model_dir)[0] == "model.ckpt-12"

    _train_and_evaluate(model_dir)
    name, results = _best(model_dir)
    assert name == "model.ckpt-16"
    assert float(results["loss"]) == pytest.approx(best["loss"], rel=1e-6)
    assert sorted(os.listdir(model_dir / "best")) == [
        "checkpoint",
        "eval_results.txt",
        "model.ckpt-16.data-00000-of-00001",
        "model.ckpt-16.index",
        "model.ckpt-16.meta",
    ]
    assert _history(model_dir) == history  # nothing evaluated twice
