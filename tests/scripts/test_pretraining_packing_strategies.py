"""run_pretraining.py --pack_sequences under the engine's strategies: mirrored over two
logical CPUs, and multi-worker with two workers on localhost.

Each run is tests/support/packed_pretraining_worker.py: the script's main,
with a record of the batches its input made on each worker (the stream,
before the engine splits it) and of the batch and loss each replica trained
on at each step. Every run starts from one checkpoint written here, so that
what a replica computes at its first step depends only on its rows. Checked:

- the replicas (and workers) split the packed stream, whole batches of
  whole rows: at step s, replica r trains batch s * replicas + r of the
  stream, so no row, and no instance, is trained twice or skipped; two
  workers make the same stream;
- every row holds instances of the records exactly as they were (read back
  in numpy), and the instances counted in the checkpoint are those of the
  rows trained on every replica;
- each replica's first loss is the loss of its instances unpacked, in one
  batch, on one device (float32, 1e-5), as packing and the per-replica
  loss say it must be;
- the final checkpoint loads: evaluated (one device), its masked LM and
  next-sentence losses are those of every instance unpacked, computed here.
"""

import json
import os
import socket
import subprocess

import helpers
import numpy as np
import pretraining_instances
import pytest
import tensorflow as tf
from pretraining_runs import pretraining_losses, read_eval_results

from bert_lib import engine

SEQ = 128
PREDICTIONS = 20
INSTANCES = 40
MAX_INSTANCES = 3
GLOBAL_BATCH = 4
STEPS = 3
WORKER = os.path.join(helpers.SUPPORT, "packed_pretraining_worker.py")


@pytest.fixture(scope="module")
def instances():
    return pretraining_instances.random_instances(INSTANCES, seed=1)


@pytest.fixture(scope="module")
def files(rp, tiny_config_file, instances, tmp_path_factory):
    """The records, the config and the checkpoint every run starts from."""
    root = tmp_path_factory.mktemp("packed_strategies")
    records = pretraining_instances.write_records(root / "short.tfrecord", instances)
    checkpoint = str(root / "init" / "model.ckpt")
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(11)
        pretraining_losses(
            rp, {n: tf.constant(v) for n, v in _stacked(instances[:2]).items()}, False
        )
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            tf.compat.v1.train.Saver().save(session, checkpoint)
    return {"records": records, "config": tiny_config_file, "checkpoint": checkpoint}


def _stacked(instances):
    """Records' instances as one unpacked batch of int32 and float32 features."""
    return {
        name: np.stack([i[name] for i in instances]).astype(
            np.float32 if name == "masked_lm_weights" else np.int32
        )
        for name in instances[0]
    }


def _unpacked_losses(rp, checkpoint, instances):
    """[(masked LM loss, next-sentence loss)] of each group of records' instances,
    unpacked in one batch on one device, with the weights of `checkpoint`."""
    losses = []
    with tf.Graph().as_default():
        feeds = {
            name: tf.compat.v1.placeholder(value.dtype, [None, *value.shape[1:]], name=name)
            for name, value in _stacked(instances[0]).items()
        }
        outputs = pretraining_losses(rp, feeds, False)
        saver = tf.compat.v1.train.Saver(
            [v for v in tf.compat.v1.global_variables() if not v.op.name.startswith("global")]
        )
        with tf.compat.v1.Session() as session:
            saver.restore(session, checkpoint)
            for group in instances:
                batch = _stacked(group)
                losses.append(session.run(outputs, {feeds[n]: batch[n] for n in feeds}))
    return losses


def _args(files, output_dir, *extra):
    return [
        f"--bert_config_file={files['config']}",
        f"--input_file={files['records']}",
        f"--output_dir={output_dir}",
        f"--init_checkpoint={files['checkpoint']}",
        "--do_train",
        "--pack_sequences",
        f"--max_instances_per_row={MAX_INSTANCES}",
        f"--train_batch_size={GLOBAL_BATCH}",
        f"--num_train_steps={STEPS}",
        "--num_warmup_steps=1",
        "--learning_rate=2e-3",
        "--tf_random_seed=5",
        *extra,
    ]


def _start(replicas, log, args, env=None):
    return helpers.start_python(
        WORKER,
        str(replicas),
        str(log),
        *args,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(processes):
    """Each process's output, once all have ended with status 0."""
    try:
        outputs = [p.communicate(timeout=helpers.SUBPROCESS_TIMEOUT)[0] for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    for process, output in zip(processes, outputs):
        assert process.returncode == 0, output[-3000:]
    return outputs


def _trained(log):
    """{replica: {feature or "loss": [steps, ...]}} of a worker's record."""
    trained = {}
    for key in log.files:
        kind, *rest = key.split(":")
        if kind == "trained":
            replica, name = rest
            trained.setdefault(int(replica), {})[name] = log[key]
    return trained


def _stream(log):
    return {key.split(":", 1)[1]: log[key] for key in log.files if key.startswith("stream:")}


def _batch(features, index):
    return {name: value[index] for name, value in features.items()}


def _assert_same_batch(actual, expected, what):
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=f"{what}: {name}")


def _check_rows(rp, files, instances, trained, replicas):
    """What every replica trained, against the records and the first checkpoint: returns the
    number of instances trained over all replicas and steps."""
    by_tuple = {pretraining_instances.as_tuples(i): i for i in instances}
    count, first_step = 0, []
    for replica in range(replicas):
        batches = {name: value for name, value in trained[replica].items() if name != "loss"}
        assert batches["input_ids"].shape == (STEPS, GLOBAL_BATCH // replicas, SEQ)
        for step in range(STEPS):
            step_instances = []
            for row in range(GLOBAL_BATCH // replicas):
                read_back = pretraining_instances.row_instances(_batch(batches, (step, row)))
                assert 1 <= len(read_back) <= MAX_INSTANCES
                step_instances += read_back
            assert all(i in by_tuple for i in step_instances), "an instance not of the records"
            count += len(step_instances)
            if step == 0:
                first_step.append([by_tuple[i] for i in step_instances])
    # Rows hold more than one instance, or nothing was packed.
    assert count > STEPS * GLOBAL_BATCH
    expected = _unpacked_losses(rp, files["checkpoint"], first_step)
    for replica, (mlm, nsp) in enumerate(expected):
        loss = trained[replica]["loss"][0]
        assert loss == pytest.approx(mlm + nsp, rel=1e-5), f"replica {replica}"
    assert expected[0] != pytest.approx(expected[-1], rel=1e-3)  # the replicas' rows differ
    return count


@pytest.mark.slow
def test_packed_pretraining_mirrored_over_two_cpus_splits_rows_once_and_evaluates(
    rp, files, instances, tmp_path
):
    output_dir = tmp_path / "model"
    log = tmp_path / "mirrored.npz"
    args = _args(files, output_dir, "--distribution_strategy=mirrored", "--do_eval")
    done = helpers.run_python(WORKER, "2", str(log), *args)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "over 2 replica(s)" in done.stderr
    with np.load(log) as saved:
        trained, stream = _trained(saved), _stream(saved)
    assert sorted(trained) == [0, 1]
    # Step s: replica r trains batch 2s + r of the one stream the worker makes.
    for step in range(STEPS):
        for replica in (0, 1):
            _assert_same_batch(
                _batch(trained[replica], step),
                _batch(stream, 2 * step + replica),
                f"step {step} replica {replica}",
            )
    count = _check_rows(rp, files, instances, trained, 2)
    checkpoint = engine.newest_checkpoint(str(output_dir))
    assert engine.checkpoint_step(checkpoint) == STEPS
    assert tf.train.load_variable(checkpoint, "examples_trained") == count
    # Evaluation reads the checkpoint and every instance once.
    _, _, result = read_eval_results(output_dir)
    assert result["global_step"] == STEPS and result["instances"] == INSTANCES
    ((mlm, nsp),) = _unpacked_losses(rp, checkpoint, [instances])
    assert result["masked_lm_loss"] == pytest.approx(mlm, rel=1e-5)
    assert result["next_sentence_loss"] == pytest.approx(nsp, rel=1e-5)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_packed_pretraining_on_two_workers_splits_one_stream_of_rows(
    rp, files, instances, tmp_path
):
    output_dir = tmp_path / "model"
    cluster = {"worker": [f"127.0.0.1:{_free_port()}" for _ in range(2)]}
    args = _args(files, output_dir, "--distribution_strategy=multi_worker")
    logs = [tmp_path / f"worker{index}.npz" for index in range(2)]
    processes = []
    for index in range(2):
        task = {"cluster": cluster, "task": {"type": "worker", "index": index}}
        processes.append(_start(1, logs[index], args, env={"TF_CONFIG": json.dumps(task)}))
    outputs = _finish(processes)
    assert "over 2 replica(s)" in outputs[0]
    trained, streams = {}, []
    for index, log in enumerate(logs):
        with np.load(log) as saved:
            replicas = _trained(saved)
            streams.append(_stream(saved))
        assert sorted(replicas) == [index]
        trained.update(replicas)
    # Both workers make the same stream; at step s, worker w trains its batch 2s + w.
    made = min(len(stream["input_ids"]) for stream in streams)
    assert made >= 2 * STEPS
    _assert_same_batch(
        {n: v[:made] for n, v in streams[1].items()},
        {n: v[:made] for n, v in streams[0].items()},
        "the workers' streams",
    )
    for step in range(STEPS):
        for worker in (0, 1):
            _assert_same_batch(
                _batch(trained[worker], step),
                _batch(streams[0], 2 * step + worker),
                f"step {step} worker {worker}",
            )
    count = _check_rows(rp, files, instances, trained, 2)
    # The chief's checkpoint counts the instances of both workers.
    checkpoint = engine.newest_checkpoint(str(output_dir))
    assert engine.checkpoint_step(checkpoint) == STEPS
    assert tf.train.load_variable(checkpoint, "examples_trained") == count
