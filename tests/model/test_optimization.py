"""optimization.py against a numpy implementation of the original AdamW rules.

Graph checks are plain `check_*` functions so the same code runs in a
subprocess under tf.compat.v1.disable_v2_behavior() (ref variables) and, with
two logical CPUs, under MirroredStrategy; pytest itself uses resource
variables.
"""

import mirrored
import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from helpers import assert_close, run_checks, variable_named

import optimization

EXCLUDE = ["LayerNorm", "layer_norm", "bias"]


# Variables named like BERT's, so the default exclusions apply to some.
INITIAL = {
    "bert/encoder/layer_0/output/dense/kernel": [[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]],
    "bert/encoder/layer_0/output/dense/bias": [0.3, -0.2],
    "bert/encoder/layer_0/output/LayerNorm/gamma": [1.0, 0.8],
    "bert/embeddings/word_embeddings": [[0.1, 0.2], [-0.3, 0.4], [0.5, -0.6], [0.7, 0.8]],
    "cls/predictions/output_bias": [0.05, -0.05, 0.5, 1.0],
}
INITIAL = {name: np.array(value, np.float32) for name, value in INITIAL.items()}


def make_variables():
    return {
        name: tf.compat.v1.get_variable(
            name, initializer=tf.compat.v1.constant_initializer(value), shape=value.shape
        )
        for name, value in INITIAL.items()
    }


def quadratic_loss_and_grads(variables, targets, scales):
    """loss = sum 0.5 * scale * (w - target)^2, and its numpy gradient function."""
    loss = tf.add_n(
        [
            tf.reduce_sum(0.5 * scales[name] * tf.square(var - targets[name]))
            for name, var in variables.items()
        ]
    )

    def np_grads(params):
        return {name: scales[name] * (params[name] - targets[name]) for name in params}

    return loss, np_grads


# ---------------------------------------------------------------------------
# Graph-building checks, shared by pytest and the subprocesses


def check_apply_gradients_matches_numpy(learning_rate_as_tensor=False, steps=5):
    """Fed random gradients; params and both slots follow numpy at every step."""
    rng = np.random.RandomState(0)
    graph = tf.Graph()
    with graph.as_default():
        variables = make_variables()
        placeholders = {
            n: tf.compat.v1.placeholder(tf.float32, v.shape) for n, v in INITIAL.items()
        }
        global_step = tf.compat.v1.train.get_or_create_global_step()
        lr = tf.constant(0.01) if learning_rate_as_tensor else 0.01
        optimizer = optimization.AdamWeightDecayOptimizer(
            learning_rate=lr, weight_decay_rate=0.1, exclude_from_weight_decay=EXCLUDE
        )
        train_op = optimizer.apply_gradients(
            [(placeholders[n], variables[n]) for n in INITIAL], global_step=global_step
        )
        slots = {
            n: (
                variable_named(n + "/adam_m"),
                variable_named(n + "/adam_v"),
            )
            for n in INITIAL
        }
        reference = npr.AdamWeightDecay(INITIAL, 0.1, EXCLUDE)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for step in range(steps):
                grads = {n: rng.randn(*v.shape).astype(np.float32) for n, v in INITIAL.items()}
                sess.run(train_op, {placeholders[n]: g for n, g in grads.items()})
                reference.step(grads, 0.01)
                params, slot_values = sess.run([variables, slots])
                for name in INITIAL:
                    assert_close(params[name], reference.params[name], f"{name} step {step}")
                    assert_close(slot_values[name][0], reference.m[name], f"{name}/adam_m")
                    assert_close(slot_values[name][1], reference.v[name], f"{name}/adam_v")
            # The optimizer itself never moves global_step.
            assert sess.run(global_step) == 0


def check_create_optimizer_matches_numpy(use_tpu=False):
    """The whole train op: schedule, clipping, AdamW, step increment."""
    init_lr, num_train_steps, num_warmup_steps = 0.1, 6, 2
    # Starts with a global gradient norm of about 2.8 (clipped) and ends
    # below 1 (not clipped).
    targets = {n: v - np.float32(0.3) for n, v in INITIAL.items()}
    scales = {n: np.float32(2.0) for n in INITIAL}
    graph = tf.Graph()
    with graph.as_default():
        variables = make_variables()
        loss, np_grads = quadratic_loss_and_grads(variables, targets, scales)
        train_op = optimization.create_optimizer(
            loss, init_lr, num_train_steps, num_warmup_steps, use_tpu
        )
        global_step = tf.compat.v1.train.get_global_step()
        reference = npr.AdamWeightDecay(INITIAL, optimization.WEIGHT_DECAY_RATE, EXCLUDE)
        clipped_norms = []
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for step in range(num_train_steps + 2):
                grads = np_grads(reference.params)
                raw_norm = np.sqrt(sum(np.sum(g**2) for g in grads.values()))
                clipped_norms.append(raw_norm > 1.0)
                clipped = dict(zip(grads, npr.clip_by_global_norm(list(grads.values()))))
                lr = npr.learning_rate(step, init_lr, num_train_steps, num_warmup_steps)
                reference.step(clipped, lr)
                sess.run(train_op)
                assert sess.run(global_step) == step + 1
                params = sess.run(variables)
                for name in INITIAL:
                    assert_close(params[name], reference.params[name], f"{name} step {step}")
    # The test exercised both sides of the clip.
    assert any(clipped_norms) and not all(clipped_norms)


def check_slots(nested_scope="outer"):
    graph = tf.Graph()
    with graph.as_default():
        variables = make_variables()
        unused = tf.compat.v1.get_variable("unused/kernel", [2])
        loss = tf.add_n([tf.reduce_sum(tf.square(v)) for v in variables.values()])
        with tf.compat.v1.variable_scope(nested_scope):
            optimization.create_optimizer(loss, 0.1, 10, 1, False)
        by_name = {v.op.name: v for v in tf.compat.v1.global_variables()}
        trainable = {v.op.name for v in tf.compat.v1.trainable_variables()}
        expected_slots = {n + suffix for n in INITIAL for suffix in ("/adam_m", "/adam_v")}
        # The global step is named by the caller's variable scope, as in TF.
        step_names = {n for n in by_name if n.endswith("global_step")}
        assert set(by_name) == set(INITIAL) | {"unused/kernel"} | expected_slots | step_names
        assert trainable == set(INITIAL) | {"unused/kernel"}
        assert len(step_names) == 1
        global_step = by_name[step_names.pop()]
        assert global_step.dtype.base_dtype == tf.int64 and global_step.shape.as_list() == []
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for name in expected_slots:
                slot = by_name[name]
                assert slot.dtype.base_dtype == tf.float32
                value = sess.run(slot)
                assert value.shape == INITIAL[name.rsplit("/", 1)[0]].shape
                assert not value.any()
            assert unused is by_name["unused/kernel"]


def check_apply_inside_cond():
    """Slots are created outside the cond, so an engine may apply conditionally
    (gradient accumulation, skipping non-finite steps)."""
    graph = tf.Graph()
    with graph.as_default():
        w = tf.compat.v1.get_variable("w", initializer=tf.constant([1.0, -2.0]))
        global_step = tf.compat.v1.train.get_or_create_global_step()
        grads = tf.gradients(tf.reduce_sum(w * w), [w])
        optimizer = optimization.create_bert_optimizer(0.1)
        apply_now = tf.compat.v1.placeholder(tf.bool, [])

        def apply():
            with tf.control_dependencies(
                [optimization.apply_clipped_gradients(optimizer, grads, [w], global_step)]
            ):
                return tf.constant(True)

        step = tf.compat.v1.cond(apply_now, apply, lambda: tf.constant(False))
        reference = npr.AdamWeightDecay({"w": np.array([1.0, -2.0])}, 0.01, EXCLUDE)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(step, {apply_now: False})
            np.testing.assert_array_equal(sess.run(w), [1.0, -2.0])
            sess.run(step, {apply_now: True})
            grad = npr.clip_by_global_norm([2.0 * reference.params["w"]])[0]
            reference.step({"w": grad}, 0.1)
            assert_close(sess.run(w), reference.params["w"], "w")
            assert sess.run(global_step) == 1


def check_mirrored_strategy(steps=4):
    """Two replicas with different data: one averaged update, copies identical.

    Needs two logical CPU devices configured before TensorFlow starts.
    """
    init_lr, num_train_steps, num_warmup_steps = 0.1, 5, 1
    replica_targets = [
        {n: np.full(v.shape, 0.5, np.float32) for n, v in INITIAL.items()},
        {n: np.full(v.shape, -1.5, np.float32) for n, v in INITIAL.items()},
    ]
    scales = {n: np.float32(2.0) for n in INITIAL}
    graph = tf.Graph()
    with graph.as_default():
        strategy = mirrored.strategy()
        with strategy.scope():
            variables = make_variables()
            targets_of_this_replica = mirrored.by_replica(replica_targets)

            def replica_step():
                loss, _ = quadratic_loss_and_grads(variables, targets_of_this_replica(), scales)
                return optimization.create_optimizer(
                    loss, init_lr, num_train_steps, num_warmup_steps, use_tpu=False
                )

            train_op = strategy.group(strategy.extended.call_for_each_replica(replica_step))
            global_step = tf.compat.v1.train.get_global_step()
            slots = {
                n: [
                    v
                    for v in tf.compat.v1.global_variables()
                    if v.op.name in (n + "/adam_m", n + "/adam_v")
                ]
                for n in INITIAL
            }
        assert all(len(pair) == 2 for pair in slots.values())

        reference = npr.AdamWeightDecay(INITIAL, optimization.WEIGHT_DECAY_RATE, EXCLUDE)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for step in range(steps):
                per_replica = []
                for targets in replica_targets:
                    grads = {n: scales[n] * (reference.params[n] - targets[n]) for n in INITIAL}
                    per_replica.append(npr.clip_by_global_norm(list(grads.values())))
                mean_grads = {
                    n: (a + b) / 2.0 for n, a, b in zip(INITIAL, per_replica[0], per_replica[1])
                }
                lr = npr.learning_rate(step, init_lr, num_train_steps, num_warmup_steps)
                reference.step(mean_grads, lr)
                sess.run(train_op)
                steps_seen = [sess.run(c) for c in mirrored.copies(strategy, global_step)]
                assert steps_seen == [step + 1, step + 1], steps_seen
                for name, var in variables.items():
                    copies = mirrored.copies(strategy, var)
                    assert len(copies) == 2
                    for copy in copies:
                        assert_close(sess.run(copy), reference.params[name], f"{name} step {step}")
                    m_copies = mirrored.copies(strategy, slots[name][0])
                    for copy in m_copies:
                        assert_close(sess.run(copy), reference.m[name], f"{name}/adam_m")


def check_mirrored_cross_replica_apply(steps=2):
    """Per-replica gradients handed to apply_gradients outside the replica fn."""
    graph = tf.Graph()
    with graph.as_default():
        strategy = mirrored.strategy()
        with strategy.scope():
            w = tf.compat.v1.get_variable("w", initializer=tf.constant([0.1, -0.2, -0.1]))

            def replica_grads():
                replica = tf.distribute.get_replica_context().replica_id_in_sync_group
                target = tf.cast(replica, tf.float32)
                return tf.gradients(tf.reduce_sum(tf.square(w - target)), [w])

            grads = strategy.extended.call_for_each_replica(replica_grads)
            optimizer = optimization.create_bert_optimizer(0.1)
            train_op = optimizer.apply_gradients(zip(grads, [w]))
        reference = npr.AdamWeightDecay({"w": np.array([0.1, -0.2, -0.1])}, 0.01, EXCLUDE)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for step in range(steps):
                params = reference.params["w"]
                mean_grad = (2.0 * (params - 0.0) + 2.0 * (params - 1.0)) / 2.0
                reference.step({"w": mean_grad}, 0.1)
                sess.run(train_op)
                for copy in mirrored.copies(strategy, w):
                    assert_close(sess.run(copy), reference.params["w"], f"w step {step}")


# ---------------------------------------------------------------------------
# pytest: resource variables


@pytest.mark.parametrize("learning_rate_as_tensor", [False, True])
def test_apply_gradients_matches_numpy_over_several_steps(learning_rate_as_tensor):
    check_apply_gradients_matches_numpy(learning_rate_as_tensor)


@pytest.mark.parametrize("use_tpu", [False, True])
def test_create_optimizer_matches_numpy_with_warmup_decay_and_clipping(use_tpu):
    check_create_optimizer_matches_numpy(use_tpu)


def test_slots_are_named_after_their_variables_whatever_the_scope():
    check_slots()


def test_apply_gradients_works_inside_a_cond():
    check_apply_inside_cond()


def test_weight_decay_skips_excluded_names_only():
    """With zero gradients Adam moves nothing; only decay changes the weights."""
    graph = tf.Graph()
    with graph.as_default():
        variables = make_variables()
        optimizer = optimization.create_bert_optimizer(learning_rate=0.5)
        train_op = optimizer.apply_gradients([(tf.zeros_like(v), v) for v in variables.values()])
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(train_op)
            params = sess.run(variables)
    decayed = {"bert/encoder/layer_0/output/dense/kernel", "bert/embeddings/word_embeddings"}
    for name, value in params.items():
        if name in decayed:
            assert_close(value, INITIAL[name] * (1.0 - 0.5 * 0.01), name)
        else:
            np.testing.assert_array_equal(value, INITIAL[name], err_msg=name)


def test_training_step_carries_the_learning_rate_each_update_uses():
    """create_training_step's learning_rate (what a training loop logs) is the schedule's
    rate of the step about to run."""
    init_lr, total, warmup = 0.1, 10, 4
    graph = tf.Graph()
    with graph.as_default():
        w = tf.compat.v1.get_variable("w", [], initializer=tf.compat.v1.zeros_initializer())
        step = optimization.create_training_step(w, init_lr, total, warmup)
        assert step.accumulate_op is None and step.optional_in_checkpoint == ()
        global_step = tf.compat.v1.train.get_global_step()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for value in range(6):
                rate, before = sess.run([step.learning_rate, global_step])
                assert_close(rate, npr.learning_rate(before, init_lr, total, warmup), value)
                sess.run(step.train_op)
                assert sess.run(global_step) == before + 1


def test_exclude_patterns_are_regular_expressions_searched_anywhere():
    optimizer = optimization.AdamWeightDecayOptimizer(
        0.1, weight_decay_rate=0.01, exclude_from_weight_decay=["^cls/", r"gamma$"]
    )
    assert not optimizer._do_use_weight_decay("cls/predictions/output_bias:0")
    assert not optimizer._do_use_weight_decay("bert/LayerNorm/gamma")
    assert optimizer._do_use_weight_decay("bert/cls/gamma_x")
    no_decay = optimization.AdamWeightDecayOptimizer(0.1, exclude_from_weight_decay=None)
    assert not no_decay._do_use_weight_decay("bert/pooler/dense/kernel")


def test_learning_rate_schedule_at_warmup_middle_and_end():
    init_lr, total, warmup = 2e-4, 100, 10
    steps = [0, 1, 5, 9, 10, 11, 50, 99, 100, 101, 250]
    graph = tf.Graph()
    with graph.as_default():
        step = tf.compat.v1.placeholder(tf.int64, [])
        with_warmup = optimization.create_learning_rate(init_lr, total, warmup, step)
        without_warmup = optimization.create_learning_rate(init_lr, total, 0, step)
        with tf.compat.v1.Session(graph=graph) as sess:
            for value in steps:
                got = sess.run([with_warmup, without_warmup], {step: value})
                assert_close(
                    got[0],
                    npr.learning_rate(value, init_lr, total, warmup),
                    f"{value}",
                )
                assert_close(got[1], npr.learning_rate(value, init_lr, total, 0), f"{value}")
    # Hand-computed points: mid-warmup, the peak, half-way, the end.
    assert npr.learning_rate(5, init_lr, total, warmup) == pytest.approx(1e-4)
    assert npr.learning_rate(10, init_lr, total, warmup) == pytest.approx(1.8e-4)
    assert npr.learning_rate(50, init_lr, total, warmup) == pytest.approx(1e-4)
    assert npr.learning_rate(100, init_lr, total, warmup) == 0.0


def test_learning_rate_rejects_bad_step_counts():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="num_train_steps must be positive, got 0"):
            optimization.create_learning_rate(1e-4, 0, 0)
        with pytest.raises(ValueError, match="num_warmup_steps must not be negative, got -1"):
            optimization.create_learning_rate(1e-4, 10, -1)


def test_gradients_are_clipped_to_global_norm_one():
    """One step from zero slots: adam_m = (1 - beta_1) * clipped gradient."""
    grads = {n: np.full(v.shape, 2.0, np.float32) for n, v in INITIAL.items()}
    graph = tf.Graph()
    with graph.as_default():
        variables = make_variables()
        global_step = tf.compat.v1.train.get_or_create_global_step()
        optimizer = optimization.create_bert_optimizer(0.1)
        train_op = optimization.apply_clipped_gradients(
            optimizer,
            [tf.constant(grads[n]) for n in INITIAL],
            [variables[n] for n in INITIAL],
            global_step,
        )
        m = {n: variable_named(n + "/adam_m") for n in INITIAL}
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(train_op)
            m_values, step = sess.run([m, global_step])
    clipped = npr.clip_by_global_norm(list(grads.values()))
    norm = np.sqrt(sum(np.sum((0.1 * c) ** 2) for c in clipped))
    assert norm == pytest.approx(0.1)
    for name, c in zip(INITIAL, clipped):
        assert_close(m_values[name], 0.1 * c, name)
    assert step == 1


def test_none_gradients_are_skipped():
    graph = tf.Graph()
    with graph.as_default():
        used = tf.compat.v1.get_variable("used", initializer=tf.constant([1.0, 2.0]))
        unused = tf.compat.v1.get_variable("unused", initializer=tf.constant([3.0]))
        train_op = optimization.create_optimizer(tf.reduce_sum(used**2), 0.1, 10, 0, False)
        names = {v.op.name for v in tf.compat.v1.global_variables()}
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(train_op)
            used_value, unused_value = sess.run([used, unused])
    assert "used/adam_m" in names and "unused/adam_m" not in names
    assert not np.allclose(used_value, [1.0, 2.0])
    np.testing.assert_array_equal(unused_value, [3.0])


def test_sparse_embedding_gradients_update_like_dense_ones():
    """A gather's IndexedSlices gradient (with a repeated id) acts as its dense sum."""
    table = np.arange(8, dtype=np.float32).reshape(4, 2) / 10
    ids = np.array([2, 0, 2])
    graph = tf.Graph()
    with graph.as_default():
        var = tf.compat.v1.get_variable("bert/embeddings/word_embeddings", initializer=table)
        loss = tf.reduce_sum(tf.gather(var, ids) * 3.0)
        optimizer = optimization.AdamWeightDecayOptimizer(0.1, weight_decay_rate=0.01)
        grads = tf.gradients(loss, [var])
        assert isinstance(grads[0], tf.IndexedSlices)
        train_op = optimizer.apply_gradients(zip(grads, [var]))
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(train_op)
            sess.run(train_op)
            value = sess.run(var)
    dense_grad = np.zeros_like(table)
    np.add.at(dense_grad, ids, 3.0)
    reference = npr.AdamWeightDecay({"w": table}, 0.01, None)
    reference.step({"w": dense_grad}, 0.1)
    reference.step({"w": dense_grad}, 0.1)
    assert_close(value, reference.params["w"], "embeddings")


def test_original_convergence_example():
    """A quadratic bowl is reached by plain apply_gradients (lr 0.2, 100 steps)."""
    graph = tf.Graph()
    with graph.as_default():
        w = tf.compat.v1.get_variable("w", initializer=tf.constant([0.1, -0.2, -0.1]))
        x = tf.constant([0.4, 0.2, -0.5])
        loss = tf.reduce_mean(tf.square(x - w))
        grads = tf.gradients(loss, [w])
        optimizer = optimization.AdamWeightDecayOptimizer(learning_rate=0.2)
        train_op = optimizer.apply_gradients(zip(grads, [w]))
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for _ in range(100):
                sess.run(train_op)
            np.testing.assert_allclose(sess.run(w), [0.4, 0.2, -0.5], atol=1e-2)


@pytest.mark.slow
def test_ref_variables_under_disable_v2_behavior():
    run_checks(
        """
        import test_optimization as t

        with tf.Graph().as_default():
            v = tf.compat.v1.get_variable("v", [1])
            assert type(v).__name__ == "RefVariable", type(v)
        t.check_apply_gradients_matches_numpy(learning_rate_as_tensor=True)
        t.check_create_optimizer_matches_numpy()
        t.check_slots()
        t.check_apply_inside_cond()
        """,
        ref_variables=True,
    )


@pytest.mark.slow
def test_mirrored_strategy_averages_replicas_and_keeps_copies_in_sync():
    run_checks(
        """
        import test_optimization as t

        t.check_mirrored_strategy()
        t.check_mirrored_cross_replica_apply()
        """,
        replicas=2,
    )
