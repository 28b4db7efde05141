"""--precision=bf16 / fp16: numerics near float32, float32 checkpoints, loss scaling.

A tiny BERT classifier (tests/support/speed_helpers.py) is trained through the
engine; float32 is the reference every mixed-precision run is compared with.
The loss-scaling tests build optimization.create_training_step's train op
directly on a two-weight model so an overflow can be injected at a chosen
step.
"""

import math

import mirrored
import numpy as np
import numpy_reference as npr
import pytest
import speed_helpers
import tensorflow as tf
from helpers import checkpoint_values, run_checks

import modeling
import optimization
from bert_lib import engine

STEPS = 6
LEARNING_RATE = 3e-3
# How far a mixed-precision run may end from the float32 run, relative to how
# far float32 training moved the weights (norm over all weights). bfloat16
# keeps 8 bits of mantissa, float16 11; measured here: about 0.03 and 0.006.
WEIGHT_TOLERANCE = {"bf16": 0.15, "fp16": 0.05}
LOSS_TOLERANCE = 5e-3


def _weights(model_dir):
    values = checkpoint_values(engine.newest_checkpoint(str(model_dir)))
    return {
        k: v
        for k, v in values.items()
        if "adam_" not in k and k not in ("global_step", "loss_scale", "loss_scale_good_steps")
    }


def _flat(weights):
    return np.concatenate([weights[k].ravel() for k in sorted(weights)])


@pytest.fixture(scope="module")
def fp32_runs(tmp_path_factory):
    """(initial weights, model_dir after STEPS float32 steps)."""
    initial_dir = tmp_path_factory.mktemp("initial")
    speed_helpers.train(initial_dir, 1, learning_rate=0.0)
    model_dir = tmp_path_factory.mktemp("fp32")
    speed_helpers.train(model_dir, STEPS, learning_rate=LEARNING_RATE)
    return _weights(initial_dir), model_dir


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.slow
def test_training_stays_close_to_fp32(fp32_runs, tmp_path, precision):
    initial, fp32_dir = fp32_runs
    speed_helpers.train(tmp_path, STEPS, learning_rate=LEARNING_RATE, precision=precision)
    start, reference, ours = _flat(initial), _flat(_weights(fp32_dir)), _flat(_weights(tmp_path))
    moved = np.linalg.norm(reference - start)
    assert moved > 0.1
    difference = np.linalg.norm(ours - reference) / moved
    assert difference < WEIGHT_TOLERANCE[precision]
    assert difference > 1e-5  # the flag did change the arithmetic

    # The checkpoint evaluates in float32 and in its own precision alike.
    reference_loss = speed_helpers.eval_loss(fp32_dir)
    assert abs(speed_helpers.eval_loss(tmp_path) - reference_loss) < LOSS_TOLERANCE
    mixed = speed_helpers.eval_loss(tmp_path, precision=precision)
    assert abs(mixed - reference_loss) < LOSS_TOLERANCE

    # Same variables, names, shapes and dtypes as the float32 checkpoint, plus
    # (float16 only) the loss scale and its good-step count, which a resumed
    # run continues from and code without loss scaling ignores.
    ours = checkpoint_values(engine.newest_checkpoint(str(tmp_path)))
    theirs = checkpoint_values(engine.newest_checkpoint(str(fp32_dir)))
    loss_scale = {"loss_scale", "loss_scale_good_steps"} if precision == "fp16" else set()
    assert sorted(ours) == sorted(set(theirs) | loss_scale)
    for name, value in theirs.items():
        assert ours[name].dtype == value.dtype, name
        assert ours[name].shape == value.shape, name
    assert ours["global_step"] == STEPS
    if precision == "fp16":
        assert ours["loss_scale"].dtype == np.float32
        assert ours["loss_scale_good_steps"] == STEPS  # no overflow in these steps


@pytest.mark.slow
def test_fp32_checkpoint_resumes_in_bf16_and_back(tmp_path):
    speed_helpers.train(tmp_path, 2, learning_rate=LEARNING_RATE)
    speed_helpers.train(tmp_path, 4, learning_rate=LEARNING_RATE, precision="bf16")
    speed_helpers.train(tmp_path, 5, learning_rate=LEARNING_RATE, precision="fp16")
    speed_helpers.train(tmp_path, 6, learning_rate=LEARNING_RATE)
    assert engine.checkpoint_step(engine.newest_checkpoint(str(tmp_path))) == 6


def _tiny_model_graph(dtype):
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(0)
        ids = tf.constant(speed_helpers.make_data(4)["input_ids"])
        model = modeling.BertModel(speed_helpers.CONFIG, False, ids, compute_dtype=dtype)
    return graph, model


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16])
def test_graph_computes_layers_in_low_precision_with_fp32_statistics(dtype):
    graph, model = _tiny_model_graph(dtype)
    ops = graph.get_operations()
    matmul_types = {op.get_attr("T") for op in ops if op.type in ("MatMul", "BatchMatMulV2")}
    # Embedding lookups (one-hot token types) stay float32; the layers use dtype.
    assert dtype in matmul_types
    assert {op.get_attr("T") for op in ops if op.type == "Softmax"} == {tf.float32}
    assert {op.get_attr("T") for op in ops if op.type == "Mean"} == {tf.float32}
    for tensor in model.get_all_encoder_layers() + [
        model.get_pooled_output(),
        model.get_sequence_output(),
        model.get_embedding_output(),
    ]:
        assert tensor.dtype == tf.float32
    assert all(v.dtype.base_dtype == tf.float32 for v in graph.get_collection("variables"))


def test_default_graph_is_unchanged_by_the_feature():
    """compute_dtype=None / float32 builds exactly the ops of a plain build."""
    plain, _ = _tiny_model_graph(None)
    with_fp32, _ = _tiny_model_graph(tf.float32)
    assert [op.type for op in plain.get_operations()] == [
        op.type for op in with_fp32.get_operations()
    ]
    low = (tf.bfloat16, tf.float16)
    for op in plain.get_operations():
        for attr in ("T", "DstT", "dtype"):
            if attr in op.node_def.attr:
                assert op.get_attr(attr) not in low, op.name


def test_bf16_forward_close_to_fp32():
    """Same weights, bf16 compute: outputs agree with float32 to bf16 accuracy."""
    outputs = {}
    for dtype in (None, tf.bfloat16):
        graph, model = _tiny_model_graph(dtype)
        with graph.as_default():
            init = tf.compat.v1.global_variables_initializer()
        with tf.compat.v1.Session(graph=graph) as session:
            # Same seeds per op in both graphs -> same initial weights.
            session.run(init)
            outputs[dtype] = session.run(model.get_sequence_output())
    reference = outputs[None]
    assert np.abs(reference).max() > 0.5
    np.testing.assert_allclose(outputs[tf.bfloat16], reference, atol=0.06, rtol=0.05)
    assert not np.array_equal(outputs[tf.bfloat16], reference)


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16])
def test_bias_gradient_is_the_float32_sum_over_every_row(dtype):
    """A dense layer's bias gradient sums 4,096 rows (a full-length batch of 32 x 128)
    in float32. TensorFlow's own BiasAdd gradient summed bfloat16 rows in bfloat16,
    which stops growing at 256 times a term: here it gave a tenth of the sum."""
    rows, width, units = 4096, 16, 8
    rng = np.random.default_rng(0)
    row_gradients = (0.01 + 0.001 * rng.standard_normal([rows, units])).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(rng.standard_normal([rows, width]).astype(np.float32))
        output = modeling.dense(tf.cast(x, dtype), units)
        loss = tf.reduce_sum(tf.cast(output, tf.float32) * row_gradients)
        bias = [v for v in tf.compat.v1.trainable_variables() if v.op.name.endswith("bias")]
        (gradient,) = tf.gradients(loss, bias)
        init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        got = session.run(gradient)
    # The row gradients are rounded to 16 bits, summed in float32, and the sum
    # rounded to 16 bits once (8 bits of mantissa for bfloat16, 11 for float16).
    rounded = tf.cast(tf.cast(row_gradients, dtype), tf.float32).numpy().astype(np.float64)
    mantissa_bits = {tf.bfloat16: 8, tf.float16: 11}[dtype]
    np.testing.assert_allclose(got, rounded.sum(axis=0), rtol=2.0**-mantissa_bits)


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16])
def test_attention_dropout_keeps_the_probabilities_expectation(dtype):
    """Attention dropout is drawn and scaled in float32, so dropped-out probabilities
    still sum to 1 on average. Drawn in bfloat16 the uniform numbers took 128 values
    and the scale 1/0.9 rounded to 1.109375: 0.3% of every probability was lost."""
    batch, heads, length, size = 8, 4, 128, 8
    rng = np.random.default_rng(1)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(3)
        query, key = (
            tf.cast(tf.constant(rng.standard_normal([batch, heads, length, size])), dtype)
            for _ in range(2)
        )
        value = tf.ones([batch, heads, length, size], dtype)
        # With all-ones values, each output is the sum of one row of probabilities.
        context = modeling._scaled_dot_product_attention(query, key, value, None, size, 0.1)
        row_sums = tf.cast(context[..., 0], tf.float64)
    with tf.compat.v1.Session(graph=graph) as session:
        sums = np.concatenate([session.run(row_sums).ravel() for _ in range(4)])
    standard_error = sums.std() / np.sqrt(sums.size)
    assert standard_error < 5e-4
    assert abs(sums.mean() - 1.0) < 3 * standard_error


def test_training_graph_keeps_dropout_and_residual_sums_in_fp32():
    """In bf16 the hidden states between layers, every dropout and every residual sum
    are float32 (as float32 arithmetic would compute them); the matmuls read the
    hidden states cast to 16 bits."""
    config = modeling.BertConfig.from_dict(speed_helpers.CONFIG.to_dict())
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.1
    graph = tf.Graph()
    with graph.as_default():
        ids = tf.constant(speed_helpers.make_data(4)["input_ids"])
        model = modeling.BertModel(config, True, ids, compute_dtype=tf.bfloat16)
    ops = graph.get_operations()
    assert {op.get_attr("dtype") for op in ops if op.type == "RandomUniform"} == {tf.float32}
    residual_sums = [
        op
        for op in ops
        if op.type == "AddV2" and "/layer_" in op.name and op.name.endswith("output/add")
    ]
    assert len(residual_sums) == 2 * config.num_hidden_layers
    assert {op.get_attr("T") for op in residual_sums} == {tf.float32}
    matmuls = [op for op in ops if op.type == "MatMul" and "/layer_" in op.name]
    assert {op.get_attr("T") for op in matmuls} == {tf.bfloat16}
    assert model.get_sequence_output().dtype == tf.float32


def _seeded_classifier_draws(dtype):
    """(random ops as (type, seed, seed2, dtype), dropout masks, head start) of a seeded
    training graph of run_classifier's model at compute_dtype `dtype`."""
    import run_classifier

    config = modeling.BertConfig.from_dict(speed_helpers.CONFIG.to_dict())
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = 0.1
    data = speed_helpers.make_data(4)
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(1)
        ids = tf.constant(data["input_ids"])
        run_classifier.create_model(
            config,
            True,
            ids,
            tf.ones_like(ids),
            tf.zeros_like(ids),
            tf.constant([0, 1, 0, 1]),
            2,
            False,
            compute_dtype=dtype,
        )
        random_ops = [
            op
            for op in graph.get_operations()
            if op.type.startswith("Random") or op.type == "TruncatedNormal"
        ]
        head = [v for v in tf.compat.v1.global_variables() if v.name == "output_weights:0"][0]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            draws, head_start = session.run([[op.outputs[0] for op in random_ops], head])
    seeds = [
        (op.type, op.get_attr("seed"), op.get_attr("seed2"), op.get_attr("dtype"))
        for op in random_ops
    ]
    return seeds, draws, head_start


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16])
def test_a_seeded_run_draws_the_same_head_and_dropout_at_every_precision(dtype):
    """A seeded float32 run and a 16-bit one differ in their arithmetic alone: the same
    random ops with the same seeds draw the same dropout masks and head start (a
    random op made in one precision only, or drawn in 16 bits, would part them)."""
    seeds32, draws32, head32 = _seeded_classifier_draws(None)
    seeds16, draws16, head16 = _seeded_classifier_draws(dtype)
    # Dropout: three sites a layer, the embeddings' and the head's.
    dropout_sites = [s for s in seeds32 if s[0] == "RandomUniform"]
    assert len(dropout_sites) == 3 * speed_helpers.CONFIG.num_hidden_layers + 2
    assert seeds16 == seeds32
    for a, b in zip(draws32, draws16, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(head32, head16)


# ---------------------------------------------------------------------------
# Dynamic loss scaling


def _loss_scaled_step(growth_interval=3):
    """A two-weight model whose loss is x * sum(w); x fed, so huge x overflows."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [])
        w = tf.compat.v1.get_variable(
            "w", [2], initializer=tf.compat.v1.constant_initializer([0.5, -0.25])
        )
        loss = x * tf.reduce_sum(w * tf.constant([1.0, 2.0]))
        old = optimization.LOSS_SCALE_GROWTH_INTERVAL
        optimization.LOSS_SCALE_GROWTH_INTERVAL = growth_interval
        try:
            options = optimization.TrainingOptions(dynamic_loss_scaling=True)
            step = optimization.create_training_step(loss, 0.1, 100, 0, options=options)
            train_op = step.train_op
        finally:
            optimization.LOSS_SCALE_GROWTH_INTERVAL = old
        variables = {v.op.name: v for v in tf.compat.v1.global_variables()}
        scale = variables["loss_scale"]
        slots = [variables["w/adam_m"], variables["w/adam_v"]]
        step = tf.compat.v1.train.get_global_step()
        init = [
            tf.compat.v1.global_variables_initializer(),
            tf.compat.v1.local_variables_initializer(),
        ]
    session = tf.compat.v1.Session(graph=graph)
    session.run(init)
    names = {"w": w, "m": slots[0], "v": slots[1], "scale": scale, "step": step}

    def run(x_value):
        session.run(train_op, {x: x_value})
        return session.run(names)

    return run, session


def test_loss_scaling_skips_overflow_halves_then_grows():
    run, session = _loss_scaled_step(growth_interval=3)
    lr = lambda step: 0.1 * (1.0 - step / 100.0)  # noqa: E731
    w = np.array([0.5, -0.25], np.float32)
    m = np.zeros(2)
    v = np.zeros(2)
    with session:
        # Gradient [0.1, 0.2]: below the clipping norm, so m and v show its scale.
        state = run(0.1)
        grad = np.array([0.1, 0.2])
        w, m, v = npr.adam_step(w, m, v, grad, lr(0), weight_decay_rate=0.01)
        np.testing.assert_allclose(state["w"], w, rtol=1e-6)
        np.testing.assert_allclose(state["m"], m, rtol=1e-6)
        np.testing.assert_allclose(state["v"], v, rtol=1e-6)
        assert state["scale"] == 2.0**15 and state["step"] == 1

        # 1e36 * 2^15 overflows float32: nothing moves, the scale halves, the step counts.
        state = run(1e36)
        np.testing.assert_allclose(state["w"], w, rtol=1e-6)
        np.testing.assert_allclose(state["m"], m, rtol=1e-6)
        np.testing.assert_allclose(state["v"], v, rtol=1e-6)
        assert state["scale"] == 2.0**14 and state["step"] == 2

        # Training continues from where it was; after 3 good steps the scale doubles.
        for i in range(3):
            state = run(0.1)
            w, m, v = npr.adam_step(w, m, v, grad, lr(2 + i), weight_decay_rate=0.01)
            np.testing.assert_allclose(state["w"], w, rtol=1e-5)
            np.testing.assert_allclose(state["m"], m, rtol=1e-5)
            assert state["scale"] == (2.0**15 if i == 2 else 2.0**14)
        assert np.all(np.isfinite(state["w"]))


def _float16_step_state(micro_batches, replicas=1):
    """One training step of w on 8 examples, loss mean(8 * x * w) computed in float16, its
    batch split over `replicas` (MirroredStrategy; needs that many logical CPUs) and on each
    into `micro_batches` pieces; returns w, the loss scale and the step after it."""
    x_value = np.full(8, 1.0 / 64.0, np.float32)
    graph = tf.Graph()
    with graph.as_default():
        strategy = mirrored.strategy(replicas) if replicas > 1 else tf.distribute.get_strategy()
        with strategy.scope():
            x = tf.compat.v1.placeholder(tf.float32, [replicas, None])
            w = tf.compat.v1.get_variable("w", initializer=tf.constant(0.5))

            def replica_step():
                replica = tf.distribute.get_replica_context().replica_id_in_sync_group
                examples = tf.gather(x, replica)
                product = (
                    tf.cast(examples, tf.float16)
                    * tf.cast(w, tf.float16)
                    * tf.constant(8.0, tf.float16)
                )
                loss = tf.reduce_mean(tf.cast(product, tf.float32))
                options = optimization.TrainingOptions(micro_batches, dynamic_loss_scaling=True)
                step = optimization.create_training_step(loss, 0.1, 100, 0, options=options)
                return [step.train_op] + ([step.accumulate_op] if micro_batches > 1 else [])

            ops = strategy.extended.call_for_each_replica(replica_step)
            train_op = strategy.group(ops[0])
            accumulate_op = strategy.group(ops[1]) if micro_batches > 1 else None
            scale = [v for v in tf.compat.v1.global_variables() if v.op.name == "loss_scale"][0]
            init = [
                tf.compat.v1.global_variables_initializer(),
                tf.compat.v1.local_variables_initializer(),
            ]
    # Feed k: micro-batch k of every replica, one row each.
    feeds = np.split(x_value, micro_batches * replicas)
    feeds = [np.stack(feeds[k::micro_batches]) for k in range(micro_batches)]
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        for feed in feeds[:-1]:
            session.run(accumulate_op, {x: feed})
        session.run(train_op, {x: feeds[-1]})
        return session.run({"w": w, "scale": scale, "step": tf.compat.v1.train.get_global_step()})


def _assert_the_whole_batch_step(state, whole):
    assert whole["scale"] == state["scale"] == 2.0**15
    assert whole["step"] == state["step"] == 1
    assert whole["w"] != 0.5
    np.testing.assert_allclose(state["w"], whole["w"], rtol=1e-7)


def test_float16_micro_batches_backpropagate_at_the_whole_batch_magnitudes():
    """At the starting loss scale (2^15) the whole batch's float16 gradient of the
    product is 2^15 / 8 * 8 = 32768, below float16's largest (65504); a micro-batch of
    2 examples, its loss the mean over its own 2, would give four times that and
    overflow, skipping the step and halving the scale. Scaled for its share of the
    batch, the step of 4 micro-batches is the whole batch's step."""
    _assert_the_whole_batch_step(_float16_step_state(4), _float16_step_state(1))


def check_float16_replicas_backpropagate_at_the_whole_batch_magnitudes():
    """As micro-batches: each of 2 replicas takes the mean over its own 4 examples, twice
    what the whole batch's gradient is (65536, past float16's largest), alone or split
    again into micro-batches of 2 (4 times)."""
    whole = _float16_step_state(1)
    _assert_the_whole_batch_step(_float16_step_state(1, replicas=2), whole)
    _assert_the_whole_batch_step(_float16_step_state(2, replicas=2), whole)


@pytest.mark.slow
def test_float16_replicas_backpropagate_at_the_whole_batch_magnitudes():
    run_checks(
        """
        import test_mixed_precision as t

        t.check_float16_replicas_backpropagate_at_the_whole_batch_magnitudes()
        """,
        replicas=2,
    )


def test_loss_scale_never_drops_below_one():
    run, session = _loss_scaled_step()
    with session:
        for _ in range(17):
            state = run(np.inf)
        assert state["scale"] == 1.0
        np.testing.assert_allclose(state["w"], [0.5, -0.25])


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16])
def test_inference_dense_is_a_plain_bias_add_with_the_same_outputs(dtype):
    """dense(training=False) builds MatMul and BiasAdd alone: no custom gradient's
    IdentityN, which reads the MatMul's output and keeps the CPU remapper from fusing
    the two (float16 without a GPU has none either way: its bias add is float32's,
    after a Cast).
    Its outputs are training's, and x @ W + b to 16-bit rounding."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal([5, 16]).astype(np.float32)
    kernel = rng.standard_normal([16, 8]).astype(np.float32)
    bias = rng.standard_normal([8]).astype(np.float32)
    outputs, identity_ns = {}, {}
    for training in (True, False):
        graph = tf.Graph()
        with graph.as_default():
            output = modeling.dense(
                tf.cast(tf.constant(x), dtype),
                8,
                kernel_initializer=tf.compat.v1.constant_initializer(kernel),
                name="d",
                training=training,
            )
            (bias_variable,) = [v for v in tf.compat.v1.global_variables() if "bias" in v.name]
            init = tf.compat.v1.global_variables_initializer()
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(init)
            bias_variable.load(bias, session)
            outputs[training] = session.run(tf.cast(output, tf.float32))
        identity_ns[training] = [op for op in graph.get_operations() if op.type == "IdentityN"]
    wrapped = dtype == tf.bfloat16 or not modeling._float16_bias_added_in_float32()
    assert bool(identity_ns[True]) == wrapped and not identity_ns[False]
    np.testing.assert_array_equal(outputs[False], outputs[True])
    expected = x.astype(np.float64) @ kernel + bias
    np.testing.assert_allclose(outputs[False], expected, rtol=0.02, atol=0.05)


@pytest.mark.parametrize("training", [True, False])
def test_float16_dense_runs_no_fused_float16_matmul(training):
    """TensorFlow's CPU remapper fuses a float16 MatMul with the BiasAdd that reads it,
    and that fused float16 kernel is slow (a MiniLM training step took 6 minutes, 99%
    of it in those kernels). The graph TensorFlow runs for a float16 dense layer, forward and
    backward, holds its float16 MatMuls unfused; a bfloat16 one still fuses hers."""
    rng = np.random.default_rng(5)
    fused = {}
    for dtype in (tf.float16, tf.bfloat16):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.constant(rng.standard_normal([64, 16]).astype(np.float32))
            hidden = modeling.dense(
                tf.cast(x, dtype), 32, activation=modeling.gelu, name="a", training=training
            )
            output = tf.cast(modeling.dense(hidden, 8, name="b", training=training), tf.float32)
            fetches = [output]
            if training:
                fetches += tf.gradients(tf.reduce_sum(output), tf.compat.v1.trainable_variables())
            init = tf.compat.v1.global_variables_initializer()
        metadata = tf.compat.v1.RunMetadata()
        options = tf.compat.v1.RunOptions(output_partition_graphs=True)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(init)
            session.run(fetches, options=options, run_metadata=metadata)
        nodes = [node for graph_def in metadata.partition_graphs for node in graph_def.node]
        if not any(node.op.startswith("_Mkl") for node in nodes):
            pytest.skip("TensorFlow's oneDNN graph rewrites are off here")
        fused[dtype] = [
            node.op
            for node in nodes
            if "MatMul" in node.op and "fused_ops" in node.attr and node.attr["T"].type == dtype
        ]
    assert not fused[tf.float16]
    if not training:
        assert fused[tf.bfloat16]


@pytest.mark.parametrize("bias_in_float32", [True, False])
def test_float16_dense_on_a_gpu_machine_keeps_its_float16_bias_add(monkeypatch, bias_in_float32):
    """Where a GPU is visible the float16 BiasAdd stays (the bfloat16 path: the bias
    gradient summed in float32); without one the bias is added in float32. Both give
    x @ W + b to float16 rounding, and the same bias gradient to float16 rounding."""
    monkeypatch.setattr(modeling, "_float16_bias_added_in_float32", lambda: bias_in_float32)
    rng = np.random.default_rng(6)
    x = rng.standard_normal([40, 16]).astype(np.float32)
    kernel = rng.standard_normal([16, 8]).astype(np.float32)
    bias = rng.standard_normal([8]).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        output = modeling.dense(
            tf.cast(tf.constant(x), tf.float16),
            8,
            kernel_initializer=tf.compat.v1.constant_initializer(kernel),
            name="d",
        )
        (bias_variable,) = [v for v in tf.compat.v1.global_variables() if "bias" in v.name]
        value = tf.cast(output, tf.float32)
        (gradient,) = tf.gradients(tf.reduce_sum(value), [bias_variable])
        init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        bias_variable.load(bias, session)
        got, got_gradient = session.run([value, gradient])
    bias_adds = [op.get_attr("T") for op in graph.get_operations() if op.type == "BiasAdd"]
    assert bias_adds == [tf.float32 if bias_in_float32 else tf.float16]
    expected = x.astype(np.float64) @ kernel + bias
    np.testing.assert_allclose(got, expected, rtol=2.0**-9, atol=2.0**-7)
    np.testing.assert_allclose(got_gradient, np.full(8, 40.0), rtol=2.0**-11)


def test_bert_model_built_for_inference_has_no_training_wrappers():
    """BertModel(is_training=False) in bfloat16 builds no IdentityN (the bias gradient's
    wrapper); built for training it has one per dense layer of the encoder."""
    identity_ns = {}
    for is_training in (True, False):
        graph = tf.Graph()
        with graph.as_default():
            ids = tf.constant(speed_helpers.make_data(4)["input_ids"])
            modeling.BertModel(speed_helpers.CONFIG, is_training, ids, compute_dtype=tf.bfloat16)
        identity_ns[is_training] = sum(op.type == "IdentityN" for op in graph.get_operations())
    assert identity_ns == {True: 6 * speed_helpers.CONFIG.num_hidden_layers, False: 0}


@pytest.mark.parametrize("dtype", [tf.bfloat16, tf.float16])
@pytest.mark.parametrize("name", ["gelu", "gelu_erf"])
def test_16_bit_inference_gelu_is_the_same_function(dtype, name):
    """A 16-bit graph of inference computes gelu and gelu_erf as tf.nn.gelu's ops (the
    pattern the oneDNN remapper fuses): the same function as the numpy formulas, to
    16-bit rounding; float32 keeps the original's ops."""
    x = np.linspace(-6.0, 6.0, 97).astype(np.float32)
    activation = getattr(modeling, name)
    inference = modeling._fused_inference_activation(activation, dtype)
    assert inference is not activation
    assert modeling._fused_inference_activation(activation, tf.float32) is activation
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        value = inference(tf.cast(tf.constant(x), dtype))
        got = session.run(tf.cast(value, tf.float32))
    x64 = tf.cast(tf.cast(x, dtype), tf.float64).numpy()
    if name == "gelu":
        expected = npr.gelu(x64)
    else:
        expected = np.array([0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x64])
    # 1 + tanh (or erf) cancels on the negative tail: about 0.5 * |x| ulps of 1 there.
    ulp = 2.0 ** -{tf.bfloat16: 7, tf.float16: 10}[dtype]
    np.testing.assert_allclose(got, expected, rtol=2 * ulp, atol=4 * ulp)


def test_bf16_dense_gelu_fuses_into_one_matmul_kernel():
    """A bfloat16 dense layer with gelu, built for inference on constant weights (as a
    bf16 export is), runs as one oneDNN MatMul with BiasAdd and GELU fused."""
    rng = np.random.default_rng(2)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 16])
        kernel = tf.constant(rng.standard_normal([16, 8]).astype(np.float32))
        bias = tf.constant(rng.standard_normal([8]).astype(np.float32))
        hidden = tf.nn.bias_add(
            tf.matmul(tf.cast(x, tf.bfloat16), tf.cast(kernel, tf.bfloat16)),
            tf.cast(bias, tf.bfloat16),
        )
        gelu = modeling._fused_inference_activation(modeling.gelu, tf.bfloat16)
        output = tf.cast(gelu(hidden), tf.float32) * 2.0
    metadata = tf.compat.v1.RunMetadata()
    options = tf.compat.v1.RunOptions(output_partition_graphs=True)
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(output, {x: np.ones([2, 16])}, options=options, run_metadata=metadata)
    nodes = [node for graph_def in metadata.partition_graphs for node in graph_def.node]
    if not any(node.op.startswith("_Mkl") for node in nodes):
        pytest.skip("TensorFlow's oneDNN graph rewrites are off here")
    fused = [
        [op.decode() for op in node.attr["fused_ops"].list.s]
        for node in nodes
        if "fused_ops" in node.attr
    ]
    assert fused == [["BiasAdd", "GeluApproximate"]]
    assert not any(node.op == "Tanh" for node in nodes)
