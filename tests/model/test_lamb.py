"""optimization.LAMBOptimizer against a numpy LAMB written from the paper's algorithm.

You et al. (2019), "Large Batch Optimization for Deep Learning: Training BERT
in 76 minutes", Algorithm 2, with BERT's exclusions: LayerNorm and bias
variables get neither weight decay nor the trust ratio. Graph checks are
plain `check_*` functions so that subprocesses can run them with ref
variables and under MirroredStrategy, as test_optimization.py does for AdamW.
"""

import os
import re

import mirrored
import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from helpers import (
    GOLDEN,
    assert_close,
    run_checks,
    run_script,
    tiny_bert_config,
    variable_named,
    write_bert_config,
)

import optimization

# BERT-like names: a kernel, a bias, a LayerNorm, an embedding table, an
# output bias, and a kernel that starts at zero (its trust ratio is 1 until
# it moves).
EXCLUDE = ["LayerNorm", "layer_norm", "bias"]
TINY = tiny_bert_config(
    30522, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=128
)

INITIAL = {
    "bert/encoder/layer_0/output/dense/kernel": [[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]],
    "bert/encoder/layer_0/output/dense/bias": [0.3, -0.2],
    "bert/encoder/layer_0/output/LayerNorm/gamma": [1.0, 0.8],
    "bert/embeddings/word_embeddings": [[0.1, 0.2], [-0.3, 0.4], [0.5, -0.6], [0.7, 0.8]],
    "cls/predictions/output_bias": [0.05, -0.05, 0.5, 1.0],
    "cls/predictions/transform/dense/kernel": [[0.0, 0.0], [0.0, 0.0]],
}
INITIAL = {name: np.array(value, np.float32) for name, value in INITIAL.items()}
ADAPTED = {
    "bert/encoder/layer_0/output/dense/kernel",
    "bert/embeddings/word_embeddings",
    "cls/predictions/transform/dense/kernel",
}


def make_variables():
    return {
        name: tf.compat.v1.get_variable(
            name, initializer=tf.compat.v1.constant_initializer(value), shape=value.shape
        )
        for name, value in INITIAL.items()
    }


def slot_variables():
    return {n: (variable_named(n + "/adam_m"), variable_named(n + "/adam_v")) for n in INITIAL}


def quadratic_loss(variables, targets, scale=2.0):
    """sum 0.5 * scale * (w - target)^2 over all variables; gradient scale * (w - target)."""
    return tf.add_n(
        [tf.reduce_sum(0.5 * scale * tf.square(v - targets[n])) for n, v in variables.items()]
    )


def np_quadratic_grads(params, targets, scale=2.0):
    return {n: scale * (params[n] - targets[n]) for n in params}


def np_train_step(reference, targets, step, schedule, scale=2.0):
    """One create_optimizer step in numpy: gradient, clip to norm 1, LAMB at t = step + 1."""
    grads = np_quadratic_grads(reference.params, targets, scale)
    clipped = dict(zip(grads, npr.clip_by_global_norm(list(grads.values()))))
    reference.step(clipped, npr.learning_rate(step, *schedule), t=step + 1)


def check_params_and_slots(sess, variables, slots, reference, what):
    params, slot_values = sess.run([variables, slots])
    for name in INITIAL:
        assert_close(params[name], reference.params[name], f"{name} {what}")
        assert_close(slot_values[name][0], reference.m[name], f"{name}/adam_m {what}")
        assert_close(slot_values[name][1], reference.v[name], f"{name}/adam_v {what}")


# ---------------------------------------------------------------------------
# Graph-building checks, shared by pytest and the subprocesses


def check_apply_gradients_matches_numpy(weight_decay_rate=0.1, steps=5):
    """Random gradients, one step per global step: params and slots follow numpy."""
    rng = np.random.RandomState(4)
    graph = tf.Graph()
    with graph.as_default():
        variables = make_variables()
        feeds = {n: tf.compat.v1.placeholder(tf.float32, v.shape) for n, v in INITIAL.items()}
        global_step = tf.compat.v1.train.get_or_create_global_step()
        optimizer = optimization.LAMBOptimizer(
            learning_rate=tf.constant(0.01),
            weight_decay_rate=weight_decay_rate,
            exclude_from_weight_decay=EXCLUDE,
        )
        apply_op = optimizer.apply_gradients(
            [(feeds[n], variables[n]) for n in INITIAL], global_step=global_step
        )
        increment = global_step.assign_add(1)
        slots = slot_variables()
        reference = npr.Lamb(INITIAL, weight_decay_rate, EXCLUDE)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for step in range(steps):
                grads = {n: rng.randn(*v.shape).astype(np.float32) for n, v in INITIAL.items()}
                sess.run(apply_op, {feeds[n]: g for n, g in grads.items()})
                assert sess.run(global_step) == step  # LAMB reads the step, never moves it.
                sess.run(increment)
                reference.step(grads, 0.01, t=step + 1)
                check_params_and_slots(sess, variables, slots, reference, f"step {step}")


def check_create_optimizer_matches_numpy():
    """The whole train op with optimizer="lamb": schedule, clipping, LAMB, step increment."""
    schedule = (0.05, 6, 2)  # init_lr, num_train_steps, num_warmup_steps
    targets = {n: v - np.float32(0.3) for n, v in INITIAL.items()}
    graph = tf.Graph()
    with graph.as_default():
        variables = make_variables()
        train_op = optimization.create_optimizer(
            quadratic_loss(variables, targets), *schedule, False, optimizer="lamb"
        )
        global_step = tf.compat.v1.train.get_global_step()
        slots = slot_variables()
        reference = npr.Lamb(INITIAL, optimization.WEIGHT_DECAY_RATE, EXCLUDE)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for step in range(schedule[1] + 1):
                np_train_step(reference, targets, step, schedule)
                sess.run(train_op)
                assert sess.run(global_step) == step + 1
                check_params_and_slots(sess, variables, slots, reference, f"step {step}")


def check_mirrored_strategy(steps=3):
    """Two replicas with different targets: the averaged LAMB update on both copies."""
    schedule = (0.05, 5, 1)
    replica_targets = [
        {n: np.full(v.shape, 0.5, np.float32) for n, v in INITIAL.items()},
        {n: np.full(v.shape, -1.5, np.float32) for n, v in INITIAL.items()},
    ]
    graph = tf.Graph()
    with graph.as_default():
        strategy = mirrored.strategy()
        with strategy.scope():
            variables = make_variables()
            targets_of_this_replica = mirrored.by_replica(replica_targets)

            def replica_step():
                loss = quadratic_loss(variables, targets_of_this_replica())
                return optimization.create_optimizer(loss, *schedule, False, optimizer="lamb")

            train_op = strategy.group(strategy.extended.call_for_each_replica(replica_step))
            slots = {
                n: [v for v in tf.compat.v1.global_variables() if v.op.name == n + "/adam_v"][0]
                for n in INITIAL
            }
        reference = npr.Lamb(INITIAL, optimization.WEIGHT_DECAY_RATE, EXCLUDE)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for step in range(steps):
                per_replica = []
                for targets in replica_targets:
                    grads = np_quadratic_grads(reference.params, targets)
                    per_replica.append(npr.clip_by_global_norm(list(grads.values())))
                mean_grads = {n: (a + b) / 2 for n, a, b in zip(INITIAL, *per_replica)}
                reference.step(mean_grads, npr.learning_rate(step, *schedule), t=step + 1)
                sess.run(train_op)
                for name, var in variables.items():
                    copies = mirrored.copies(strategy, var)
                    assert len(copies) == 2
                    for copy in copies:
                        assert_close(sess.run(copy), reference.params[name], f"{name} {step}")
                    for copy in mirrored.copies(strategy, slots[name]):
                        assert_close(sess.run(copy), reference.v[name], f"{name}/adam_v {step}")


# ---------------------------------------------------------------------------
# pytest: resource variables


@pytest.mark.parametrize("weight_decay_rate", [0.1, 0.0])
def test_apply_gradients_matches_numpy_over_several_steps(weight_decay_rate):
    """With a decay rate of 0 the trust ratio still applies to the adapted variables."""
    check_apply_gradients_matches_numpy(weight_decay_rate)


def test_create_optimizer_lamb_matches_numpy_with_warmup_decay_and_clipping():
    check_create_optimizer_matches_numpy()


def test_first_step_moves_adapted_variables_by_learning_rate_times_their_norm():
    """Hand-derived: at t=1 Adam's step is g / (|g| + eps) whatever g's size.

    The trust ratio then makes ||step|| = lr * ||w|| for adapted variables
    with a nonzero norm; LayerNorm and bias variables move by about lr per
    element; a zero variable (trust ratio 1) by lr per element too.
    """
    rng = np.random.RandomState(7)
    # Gradients of very different sizes, none near epsilon.
    grads = {
        n: rng.choice([-1.0, 1.0], v.shape) * rng.uniform(0.5, 2.0, v.shape) * 10 ** (-2 + i)
        for i, (n, v) in enumerate(INITIAL.items())
    }
    lr = 0.02
    graph = tf.Graph()
    with graph.as_default():
        variables = make_variables()
        global_step = tf.compat.v1.train.get_or_create_global_step()
        optimizer = optimization.LAMBOptimizer(lr, exclude_from_weight_decay=EXCLUDE)
        train_op = optimizer.apply_gradients(
            [(tf.constant(grads[n], tf.float32), variables[n]) for n in INITIAL], global_step
        )
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(train_op)
            params = sess.run(variables)
    for name, value in params.items():
        moved = INITIAL[name] - value
        if name in ADAPTED and INITIAL[name].any():
            norm = np.linalg.norm(moved)
            assert norm == pytest.approx(lr * np.linalg.norm(INITIAL[name]), rel=1e-4), name
        else:
            np.testing.assert_allclose(moved, lr * np.sign(grads[name]), rtol=1e-3, err_msg=name)


def test_slots_are_adams_and_checkpoints_load_across_optimizers(tmp_path):
    """Same variables as AdamW; an AdamW checkpoint resumes under LAMB at t = step + 1."""
    schedule = (0.05, 10, 0)
    targets = {n: np.full(v.shape, 0.25, np.float32) for n, v in INITIAL.items()}

    def build(optimizer):
        variables = make_variables()
        train_op = optimization.create_optimizer(
            quadratic_loss(variables, targets), *schedule, False, optimizer=optimizer
        )
        names = {v.op.name for v in tf.compat.v1.global_variables()}
        return variables, train_op, names

    prefix = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        variables, train_op, adamw_names = build("adamw")
        slots = slot_variables()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for _ in range(2):
                sess.run(train_op)
            saved_params, saved_slots = sess.run([variables, slots])
            tf.compat.v1.train.Saver().save(sess, prefix, global_step=2)

    with tf.Graph().as_default():
        variables, train_op, lamb_names = build("lamb")
        slots = slot_variables()
        expected = set(INITIAL) | {n + s for n in INITIAL for s in ("/adam_m", "/adam_v")}
        assert lamb_names == adamw_names == expected | {"global_step"}
        with tf.compat.v1.Session() as sess:
            tf.compat.v1.train.Saver().restore(sess, prefix + "-2")
            reference = npr.Lamb(saved_params, optimization.WEIGHT_DECAY_RATE, EXCLUDE)
            for name, (m, v) in saved_slots.items():
                reference.m[name], reference.v[name] = m.astype(np.float64), v.astype(np.float64)
            for step in (2, 3):
                np_train_step(reference, targets, step, schedule)
                sess.run(train_op)
                check_params_and_slots(sess, variables, slots, reference, f"step {step}")


def test_gradient_accumulation_applies_the_average_of_the_micro_batches():
    """Two micro-batches, one LAMB step on their mean gradient; the step count is 1."""
    schedule = (0.05, 10, 0)
    rng = np.random.RandomState(2)
    micro_targets = [
        {n: rng.randn(*v.shape).astype(np.float32) for n, v in INITIAL.items()} for _ in range(2)
    ]
    graph = tf.Graph()
    with graph.as_default():
        variables = make_variables()
        feeds = {n: tf.compat.v1.placeholder(tf.float32, v.shape) for n, v in INITIAL.items()}
        train_op, _, accumulate_op, _ = optimization.create_training_step(
            quadratic_loss(variables, feeds),
            *schedule,
            optimizer="lamb",
            options=optimization.TrainingOptions(num_accumulation_steps=2),
        )
        global_step = tf.compat.v1.train.get_global_step()
        slots = slot_variables()
        reference = npr.Lamb(INITIAL, optimization.WEIGHT_DECAY_RATE, EXCLUDE)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(tf.compat.v1.local_variables_initializer())
            for step in range(3):
                first, second = micro_targets if step % 2 == 0 else micro_targets[::-1]
                sess.run(accumulate_op, {feeds[n]: t for n, t in first.items()})
                sess.run(train_op, {feeds[n]: t for n, t in second.items()})
                mean_targets = {n: (first[n] + second[n]) / 2 for n in INITIAL}
                np_train_step(reference, mean_targets, step, schedule)
                assert sess.run(global_step) == step + 1
                check_params_and_slots(sess, variables, slots, reference, f"step {step}")


def test_loss_scaling_skips_an_overflowing_step_and_bias_correction_counts_it():
    """Under dynamic loss scaling an Inf gradient changes nothing but the step count.

    The next step's bias correction uses t = global_step + 1, skipped step included.
    """
    schedule = (0.05, 10, 0)
    targets = {n: np.full(v.shape, -0.5, np.float32) for n, v in INITIAL.items()}
    kernel = "bert/encoder/layer_0/output/dense/kernel"
    graph = tf.Graph()
    with graph.as_default():
        variables = make_variables()
        poison = tf.compat.v1.placeholder(tf.float32, [])
        loss = quadratic_loss(variables, targets) + poison * tf.reduce_sum(variables[kernel])
        train_op = optimization.create_training_step(
            loss,
            *schedule,
            optimizer="lamb",
            options=optimization.TrainingOptions(dynamic_loss_scaling=True),
        ).train_op
        slots = slot_variables()
        reference = npr.Lamb(INITIAL, optimization.WEIGHT_DECAY_RATE, EXCLUDE)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(tf.compat.v1.local_variables_initializer())
            for step in range(4):
                overflow = step == 1
                sess.run(train_op, {poison: np.inf if overflow else 0.0})
                if not overflow:
                    np_train_step(reference, targets, step, schedule)
                check_params_and_slots(sess, variables, slots, reference, f"step {step}")


def test_unknown_optimizer_name_is_rejected():
    with tf.Graph().as_default():
        w = tf.compat.v1.get_variable("w", initializer=tf.constant([1.0]))
        with pytest.raises(ValueError, match="optimizer must be one of adamw, lamb, got 'sgd'"):
            optimization.create_optimizer(tf.reduce_sum(w), 0.1, 10, 0, False, optimizer="sgd")


def test_apply_gradients_needs_a_global_step():
    with tf.Graph().as_default():
        w = tf.compat.v1.get_variable("w", initializer=tf.constant([1.0]))
        optimizer = optimization.LAMBOptimizer(0.1)
        with pytest.raises(ValueError, match="needs a global step"):
            optimizer.apply_gradients([(tf.constant([1.0]), w)])


@pytest.mark.slow
def test_ref_variables_under_disable_v2_behavior():
    run_checks(
        """
        import test_lamb as t

        with tf.Graph().as_default():
            v = tf.compat.v1.get_variable("v", [1])
            assert type(v).__name__ == "RefVariable", type(v)
        t.check_apply_gradients_matches_numpy()
        t.check_create_optimizer_matches_numpy()
        """,
        ref_variables=True,
    )


@pytest.mark.slow
def test_mirrored_strategy_averages_replicas_and_keeps_copies_in_sync():
    run_checks(
        """
        import test_lamb as t

        t.check_mirrored_strategy()
        """,
        replicas=2,
    )


# ---------------------------------------------------------------------------
# run_pretraining.py --optimizer=lamb


@pytest.mark.slow
def test_run_pretraining_with_lamb_steps_each_variable_by_its_trust_ratio(tmp_path):
    """Three LAMB steps of the tiny BERT, batch 4 in two micro-batches, then eval.

    Between the checkpoints of steps 2 and 3, every adapted variable moved by
    exactly lr * ||w|| (the trust ratio's signature; AdamW moves by about
    lr * sqrt(size)), and the checkpoints hold AdamW's variables.
    """
    init_lr, num_train_steps = 1e-2, 3
    config_file = write_bert_config(tmp_path / "bert_config.json", **TINY)
    output_dir = tmp_path / "out"
    done = run_script(
        "run_pretraining.py",
        f"--bert_config_file={config_file}",
        f"--input_file={os.path.join(GOLDEN, 'pretraining', 'default.tfrecord')}",
        f"--output_dir={output_dir}",
        "--do_train",
        "--do_eval",
        "--optimizer=lamb",
        "--train_batch_size=4",
        "--num_accumulation_steps=2",
        "--eval_batch_size=4",
        "--max_eval_steps=2",
        f"--num_train_steps={num_train_steps}",
        "--num_warmup_steps=0",
        f"--learning_rate={init_lr}",
        "--save_checkpoints_steps=1",
        "--tf_random_seed=5",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Optimizer = lamb" in done.stderr
    results = dict(
        line.split(" = ") for line in (output_dir / "eval_results.txt").read_text().splitlines()
    )
    assert int(results["global_step"]) == num_train_steps
    assert np.isfinite(float(results["loss"]))

    before = tf.train.load_checkpoint(str(output_dir / "model.ckpt-2"))
    after = tf.train.load_checkpoint(str(output_dir / "model.ckpt-3"))
    shapes = after.get_variable_to_shape_map()
    weights = {n for n in shapes if n != "global_step" and not n.endswith(("/adam_m", "/adam_v"))}
    assert set(shapes) == (
        weights | {n + s for n in weights for s in ("/adam_m", "/adam_v")} | {"global_step"}
    )
    lr = init_lr * (1 - 2 / num_train_steps)  # the rate of the step from 2 to 3
    ratios = {}
    for name in weights:
        w = before.get_tensor(name).astype(np.float64)
        ratios[name] = np.linalg.norm(after.get_tensor(name) - w) / np.linalg.norm(w)
    adapted = [n for n in weights if not re.search("LayerNorm|bias", n)]
    assert len(adapted) == 3 + 2 * 6 + 1 + 2  # embeddings, kernels per layer, pooler, heads
    for name in adapted:
        assert ratios[name] == pytest.approx(lr, rel=1e-3), name
    # The excluded output bias (ids never seen barely move) takes a plain Adam step.
    assert ratios["cls/predictions/output_bias"] > 2 * lr
