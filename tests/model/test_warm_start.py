"""model_fns.warm_start_from_checkpoint: the init_checkpoint step every script shares."""

import numpy as np
import tensorflow as tf
from absl import logging
from helpers import write_checkpoint

from bert_lib.bert_runs import model_fns


def _build(init_checkpoint, use_tpu=False):
    a = tf.compat.v1.get_variable("bert/a", initializer=np.zeros(3, np.float32))
    b = tf.compat.v1.get_variable("head/b", initializer=np.full(2, 7.0, np.float32))
    scaffold_fn = model_fns.warm_start_from_checkpoint(init_checkpoint, use_tpu=use_tpu)
    return a, b, scaffold_fn


def test_loads_the_variables_the_checkpoint_has_and_logs_which(tmp_path, monkeypatch):
    checkpoint = str(tmp_path / "model.ckpt")
    write_checkpoint(checkpoint, {"bert/a": np.array([1.0, 2.0, 3.0], np.float32)})
    logged = []
    monkeypatch.setattr(logging, "info", lambda fmt, *args: logged.append(fmt % args))
    with tf.Graph().as_default():
        a, b, scaffold_fn = _build(checkpoint)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            got_a, got_b = session.run([a, b])
    assert scaffold_fn is None
    np.testing.assert_array_equal(got_a, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(got_b, [7.0, 7.0])  # not in the checkpoint: its initializer
    assert "  name = bert/a:0, shape = (3,), *INIT_FROM_CKPT*" in logged
    assert "  name = head/b:0, shape = (2,)" in logged


def test_without_a_checkpoint_only_logs(monkeypatch):
    logged = []
    monkeypatch.setattr(logging, "info", lambda fmt, *args: logged.append(fmt % args))
    with tf.Graph().as_default():
        _, _, scaffold_fn = _build(None)
    assert scaffold_fn is None
    assert "  name = bert/a:0, shape = (3,)" in logged


def test_on_tpu_loading_waits_for_the_scaffold(tmp_path):
    checkpoint = str(tmp_path / "model.ckpt")
    write_checkpoint(checkpoint, {"bert/a": np.array([4.0, 5.0, 6.0], np.float32)})
    with tf.Graph().as_default():
        a, _, scaffold_fn = _build(checkpoint, use_tpu=True)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            before = session.run(a)
        scaffold = scaffold_fn()
        assert isinstance(scaffold, tf.compat.v1.train.Scaffold)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            after = session.run(a)
    np.testing.assert_array_equal(before, [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(after, [4.0, 5.0, 6.0])
