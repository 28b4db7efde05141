"""modeling.py against an independent numpy BERT, a hand-written variable list
and checkpoints written without modeling.py.

The checks that need a graph are plain functions (`check_*`) so that the
same code also runs in a subprocess under tf.compat.v1.disable_v2_behavior()
(ref variables); the pytest process itself keeps TF2 behaviour (resource
variables).
"""

import collections
import json
import math
import re

import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from helpers import run_checks, tiny_bert_config, write_checkpoint

import modeling

# Dropout is non-zero on purpose: with is_training=False the model must ignore it.
TINY_CONFIG = tiny_bert_config(
    99,
    num_attention_heads=4,
    intermediate_size=37,
    hidden_dropout_prob=0.3,
    attention_probs_dropout_prob=0.3,
    max_position_embeddings=16,
    type_vocab_size=3,
)


def tiny_config(**overrides):
    values = dict(TINY_CONFIG)
    values.update(overrides)
    return modeling.BertConfig(**values)


def expected_variables(config):
    """The checkpoint layout of a BertModel, in creation order."""
    h, i = config.hidden_size, config.intermediate_size
    names = [
        ("bert/embeddings/word_embeddings", [config.vocab_size, h]),
        ("bert/embeddings/token_type_embeddings", [config.type_vocab_size, h]),
        ("bert/embeddings/position_embeddings", [config.max_position_embeddings, h]),
        ("bert/embeddings/LayerNorm/beta", [h]),
        ("bert/embeddings/LayerNorm/gamma", [h]),
    ]
    for layer in range(config.num_hidden_layers):
        prefix = f"bert/encoder/layer_{layer}/"
        for part in ("query", "key", "value"):
            names.append((prefix + f"attention/self/{part}/kernel", [h, h]))
            names.append((prefix + f"attention/self/{part}/bias", [h]))
        names += [
            (prefix + "attention/output/dense/kernel", [h, h]),
            (prefix + "attention/output/dense/bias", [h]),
            (prefix + "attention/output/LayerNorm/beta", [h]),
            (prefix + "attention/output/LayerNorm/gamma", [h]),
            (prefix + "intermediate/dense/kernel", [h, i]),
            (prefix + "intermediate/dense/bias", [i]),
            (prefix + "output/dense/kernel", [i, h]),
            (prefix + "output/dense/bias", [h]),
            (prefix + "output/LayerNorm/beta", [h]),
            (prefix + "output/LayerNorm/gamma", [h]),
        ]
    names += [("bert/pooler/dense/kernel", [h, h]), ("bert/pooler/dense/bias", [h])]
    return names


def random_weights(config, seed=0):
    """Random values for every BertModel variable, scaled so all paths matter."""
    rng = np.random.RandomState(seed)
    weights = collections.OrderedDict()
    for name, shape in expected_variables(config):
        if name.endswith("gamma"):
            value = 1.0 + 0.2 * rng.randn(*shape)
        elif name.endswith(("beta", "bias")):
            value = 0.1 * rng.randn(*shape)
        elif name.endswith("embeddings"):
            value = 0.5 * rng.randn(*shape)
        else:
            value = rng.randn(*shape) / np.sqrt(shape[0])
        weights[name] = value.astype(np.float32)
    return weights


def random_inputs(config, batch_size=3, seq_length=8, seed=1):
    """ids, a padding mask with different lengths per row, and token types."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(0, config.vocab_size, size=(batch_size, seq_length)).astype(np.int32)
    lengths = [seq_length, seq_length - 3, 2][:batch_size]
    mask = np.zeros((batch_size, seq_length), np.int32)
    types = np.zeros((batch_size, seq_length), np.int32)
    for row, length in enumerate(lengths):
        mask[row, :length] = 1
        ids[row, length:] = 0
        types[row, length // 2 : length] = 1 + row % (config.type_vocab_size - 1)
    return ids, mask, types


# ---------------------------------------------------------------------------
# Graph-building checks, shared by pytest and the ref-variable subprocess.


def model_outputs(model):
    return {
        "embedding_output": model.get_embedding_output(),
        "all_encoder_layers": model.get_all_encoder_layers(),
        "sequence_output": model.get_sequence_output(),
        "pooled_output": model.get_pooled_output(),
    }


def run_model(
    config,
    checkpoint,
    ids,
    mask=None,
    types=None,
    use_one_hot_embeddings=False,
    is_training=False,
    dynamic_shapes=False,
    runs=1,
    pooled_output_only=False,
):
    """Builds BertModel, restores `checkpoint` into it, returns `runs` output dicts."""
    graph = tf.Graph()
    with graph.as_default():
        feeds = {}

        def make_input(value):
            if value is None:
                return None
            if not dynamic_shapes:
                return tf.constant(value)
            placeholder = tf.compat.v1.placeholder(tf.int32, [None, None])
            feeds[placeholder] = value
            return placeholder

        model = modeling.BertModel(
            config=config,
            is_training=is_training,
            input_ids=make_input(ids),
            input_mask=make_input(mask),
            token_type_ids=make_input(types),
            use_one_hot_embeddings=use_one_hot_embeddings,
            pooled_output_only=pooled_output_only,
        )
        tvars = tf.compat.v1.trainable_variables()
        assignment_map, _ = modeling.get_assignment_map_from_checkpoint(tvars, checkpoint)
        tf.compat.v1.train.init_from_checkpoint(checkpoint, assignment_map)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return [sess.run(model_outputs(model), feed_dict=feeds) for _ in range(runs)]


def assert_outputs_close(actual, expected, atol=1e-5):
    for key in ("embedding_output", "sequence_output", "pooled_output"):
        np.testing.assert_allclose(actual[key], expected[key], rtol=1e-5, atol=atol, err_msg=key)
    assert len(actual["all_encoder_layers"]) == len(expected["all_encoder_layers"])
    for index, (a, e) in enumerate(
        zip(actual["all_encoder_layers"], expected["all_encoder_layers"])
    ):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=atol, err_msg=f"layer {index}")


def check_forward_matches_numpy(
    checkpoint,
    use_mask,
    use_types,
    use_one_hot_embeddings,
    dynamic_shapes=False,
    pooled_output_only=False,
):
    config = tiny_config()
    weights = random_weights(config)
    ids, mask, types = random_inputs(config)
    mask = mask if use_mask else None
    types = types if use_types else None
    (actual,) = run_model(
        config,
        checkpoint,
        ids,
        mask,
        types,
        use_one_hot_embeddings=use_one_hot_embeddings,
        dynamic_shapes=dynamic_shapes,
        pooled_output_only=pooled_output_only,
    )
    expected = npr.bert(weights, config, ids, mask, types)
    if pooled_output_only:
        # The last layer exists at the first position only; every other output is whole.
        expected["sequence_output"] = expected["sequence_output"][:, :1]
        expected["all_encoder_layers"][-1] = expected["all_encoder_layers"][-1][:, :1]
        assert actual["sequence_output"].shape == (ids.shape[0], 1, config.hidden_size)
    assert_outputs_close(actual, expected)


def check_variables_match_section_2():
    config = tiny_config()
    graph = tf.Graph()
    with graph.as_default():
        modeling.BertModel(config, True, tf.zeros([2, 5], tf.int32))
        trainable = [(v.op.name, v.shape.as_list()) for v in tf.compat.v1.trainable_variables()]
        everything = [v.op.name for v in tf.compat.v1.global_variables()]
    assert trainable == expected_variables(config)
    assert everything == [name for name, _ in trainable]


def check_checkpoint_restores_exactly(checkpoint):
    """Every model variable gets its checkpoint value bit for bit; extras are ignored."""
    config = tiny_config()
    weights = random_weights(config)
    graph = tf.Graph()
    with graph.as_default():
        modeling.BertModel(config, False, tf.zeros([2, 5], tf.int32))
        # A graph variable the checkpoint does not have stays out of the map.
        tf.compat.v1.get_variable("output_weights", [2, config.hidden_size])
        tvars = tf.compat.v1.trainable_variables()
        assignment_map, initialized = modeling.get_assignment_map_from_checkpoint(
            tvars, checkpoint
        )

        # Checkpoint order (sorted), each name mapped to itself.
        assert list(assignment_map.items()) == [(n, n) for n in sorted(weights)]
        assert isinstance(assignment_map, collections.OrderedDict)
        expected_initialized = {n: 1 for n in weights}
        expected_initialized.update({n + ":0": 1 for n in weights})
        assert initialized == expected_initialized

        tf.compat.v1.train.init_from_checkpoint(checkpoint, assignment_map)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            values = sess.run({v.op.name: v for v in tvars if v.op.name in weights})
    assert sorted(values) == sorted(weights)
    for name, value in weights.items():
        assert np.array_equal(values[name], value), name


def unreachable_ops(graph, outputs, created):
    """Ops in `created` that no output depends on (through inputs or control edges)."""
    seen = set()
    stack = [getattr(x, "op", x) for x in tf.nest.flatten(outputs)]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return [op.name for op in graph.get_operations() if op in created and op not in seen]


def _variable_bookkeeping(op, variable_names):
    """Ops a resource variable builds for itself in graph mode and nothing uses."""
    scope = op.name.rsplit("/", 2)[0]
    return scope in variable_names and op.type in ("VarIsInitializedOp", "ReadVariableOp")


def check_no_dead_ops(dynamic_shapes, pooled_output_only=False):
    config = tiny_config(num_hidden_layers=2)
    graph = tf.Graph()
    with graph.as_default():
        if dynamic_shapes:
            ids = tf.compat.v1.placeholder(tf.int32, [None, None])
        else:
            ids = tf.constant(random_inputs(config)[0])
        mask = tf.ones_like(ids)
        before = set(graph.get_operations())
        model = modeling.BertModel(
            config, True, ids, input_mask=mask, pooled_output_only=pooled_output_only
        )
        init_op = tf.compat.v1.global_variables_initializer()
        created = set(graph.get_operations()) - before
        variable_names = {v.op.name for v in tf.compat.v1.global_variables()}
        dead = [
            name
            for name in unreachable_ops(graph, [init_op, model_outputs(model)], created)
            if not _variable_bookkeeping(graph.get_operation_by_name(name), variable_names)
        ]
    assert len(created) > 100
    assert dead == []


# ---------------------------------------------------------------------------
# pytest: resource variables (TF2 behaviour, graph built in a tf.Graph)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """Random weights for the tiny config plus variables a BertModel does not have."""
    weights = random_weights(tiny_config())
    weights["cls/predictions/output_bias"] = np.arange(99, dtype=np.float32)
    weights["bert/embeddings/word_embeddings/adam_m"] = np.ones([99, 32], np.float32)
    return write_checkpoint(tmp_path_factory.mktemp("ckpt") / "model.ckpt", weights)


@pytest.mark.parametrize(
    "use_mask, use_types, one_hot",
    [
        (True, True, False),
        (True, True, True),
        (False, False, False),
        (False, True, True),
        (True, False, False),
    ],
)
def test_forward_pass_matches_numpy(checkpoint, use_mask, use_types, one_hot):
    check_forward_matches_numpy(checkpoint, use_mask, use_types, one_hot)


def test_forward_pass_with_dynamic_batch_and_length_matches_numpy(checkpoint):
    check_forward_matches_numpy(checkpoint, True, True, False, dynamic_shapes=True)


def test_model_variables_are_resource_variables_in_tf2_graphs():
    with tf.Graph().as_default():
        modeling.BertModel(tiny_config(), False, tf.zeros([1, 4], tf.int32))
        kinds = {type(v).__name__ for v in tf.compat.v1.global_variables()}
    assert kinds == {"ResourceVariable"}


def test_variable_names_and_shapes_are_the_checkpoint_layout():
    check_variables_match_section_2()


def test_scope_argument_renames_the_root_scope():
    with tf.Graph().as_default():
        modeling.BertModel(tiny_config(), False, tf.zeros([1, 4], tf.int32), scope="encoder2")
        names = [v.op.name for v in tf.compat.v1.global_variables()]
    assert names[0] == "encoder2/embeddings/word_embeddings"
    assert all(name.startswith("encoder2/") for name in names)


def test_checkpoint_restores_every_variable_exactly(checkpoint):
    check_checkpoint_restores_exactly(checkpoint)


def test_checkpoint_shape_mismatch_names_variable_and_both_shapes(tmp_path):
    config = tiny_config()
    weights = random_weights(config)
    weights["bert/pooler/dense/bias"] = np.zeros([31], np.float32)
    bad_checkpoint = write_checkpoint(tmp_path / "model.ckpt", weights)
    with tf.Graph().as_default():
        modeling.BertModel(config, False, tf.zeros([1, 4], tf.int32))
        tvars = tf.compat.v1.trainable_variables()
        with pytest.raises(ValueError) as error:
            modeling.get_assignment_map_from_checkpoint(tvars, bad_checkpoint)
    message = str(error.value)
    assert "bert/pooler/dense/bias" in message
    assert "[32]" in message and "[31]" in message
    assert "\n" not in message


def test_no_dead_ops_with_static_shapes():
    check_no_dead_ops(dynamic_shapes=False)


def test_no_dead_ops_with_dynamic_shapes():
    check_no_dead_ops(dynamic_shapes=True)


def test_no_dead_ops_when_only_the_pooled_output_is_built():
    check_no_dead_ops(dynamic_shapes=True, pooled_output_only=True)


@pytest.mark.parametrize("dynamic_shapes", [False, True])
def test_pooled_output_only_matches_numpy_at_the_first_position(checkpoint, dynamic_shapes):
    check_forward_matches_numpy(checkpoint, True, True, False, dynamic_shapes, True)


def test_pooled_output_only_computes_the_last_layer_at_one_position_per_sequence():
    config = tiny_config(num_hidden_layers=2)
    with tf.Graph().as_default() as graph:
        ids = tf.zeros([3, 7], tf.int32)
        modeling.BertModel(config, False, ids, pooled_output_only=True)
        widths = {
            op.name: op.outputs[0].shape.as_list()
            for op in graph.get_operations()
            if op.type == "BiasAdd"
        }
    last, first = "bert/encoder/layer_1/", "bert/encoder/layer_0/"
    assert widths[last + "attention/self/key/BiasAdd"] == [21, config.hidden_size]
    assert widths[last + "attention/self/query/BiasAdd"] == [3, config.hidden_size]
    assert widths[last + "intermediate/dense/BiasAdd"] == [3, config.intermediate_size]
    assert widths[first + "intermediate/dense/BiasAdd"] == [21, config.intermediate_size]


def pooled_output_gradients(config, checkpoint, ids, mask, types, pooled_output_only):
    """{variable name: gradient} of a fixed weighting of the pooled output, in training."""
    weighting = np.random.RandomState(5).randn(ids.shape[0], config.hidden_size)
    with tf.Graph().as_default() as graph:
        model = modeling.BertModel(
            config,
            True,
            tf.constant(ids),
            tf.constant(mask),
            tf.constant(types),
            pooled_output_only=pooled_output_only,
        )
        loss = tf.reduce_sum(model.get_pooled_output() * weighting.astype(np.float32))
        tvars = tf.compat.v1.trainable_variables()
        tf.compat.v1.train.init_from_checkpoint(
            checkpoint, modeling.get_assignment_map_from_checkpoint(tvars, checkpoint)[0]
        )
        grads = tf.gradients(loss, tvars)
        assert all(g is not None for g in grads)
        named = {v.op.name: tf.convert_to_tensor(g) for v, g in zip(tvars, grads)}
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return sess.run(named)


def test_pooled_output_only_in_training_gives_the_whole_models_gradients(checkpoint):
    # Training a classifier at [CLS] only must train the same model: every
    # variable, the last layer's keys and values too, gets the gradient the
    # whole model gives (dropout off, so that both draw nothing).
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    ids, mask, types = random_inputs(config)
    whole = pooled_output_gradients(config, checkpoint, ids, mask, types, False)
    first_only = pooled_output_gradients(config, checkpoint, ids, mask, types, True)
    assert sorted(first_only) == sorted(whole)
    for name, expected in whole.items():
        assert np.abs(expected).max() > 0, name
        np.testing.assert_allclose(first_only[name], expected, rtol=1e-4, atol=1e-6, err_msg=name)


def test_is_training_false_forces_dropout_off_and_leaves_config_alone(checkpoint):
    config = tiny_config()
    ids, mask, types = random_inputs(config)
    first, second = run_model(config, checkpoint, ids, mask, types, is_training=False, runs=2)
    assert_outputs_close(first, second, atol=0)
    assert config.hidden_dropout_prob == 0.3
    assert config.attention_probs_dropout_prob == 0.3


def test_is_training_true_applies_dropout(checkpoint):
    config = tiny_config()
    weights = random_weights(config)
    ids, mask, types = random_inputs(config)
    first, second = run_model(config, checkpoint, ids, mask, types, is_training=True, runs=2)
    assert not np.allclose(first["pooled_output"], second["pooled_output"])
    # Dropout zeroes elements of the embedding output and scales the rest by 1/(1-p).
    expected = npr.bert(weights, config, ids, mask, types)["embedding_output"]
    kept = first["embedding_output"] != 0
    assert 0.5 < kept.mean() < 0.9
    np.testing.assert_allclose(first["embedding_output"][kept], expected[kept] / 0.7, rtol=1e-4)


def test_is_training_true_without_dropout_matches_numpy(checkpoint):
    config = tiny_config(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    ids, mask, types = random_inputs(config)
    (actual,) = run_model(config, checkpoint, ids, mask, types, is_training=True)
    assert_outputs_close(actual, npr.bert(random_weights(tiny_config()), config, ids, mask, types))


@pytest.mark.slow
def test_ref_variables_under_disable_v2_behavior(checkpoint):
    """The same checks with ref variables; disable_v2_behavior is process-wide."""
    run_checks(
        f"""
        import test_modeling as t
        import modeling

        with tf.Graph().as_default():
            modeling.BertModel(t.tiny_config(), False, tf.zeros([1, 4], tf.int32))
            kinds = {{type(v).__name__ for v in tf.compat.v1.global_variables()}}
        assert kinds == {{"RefVariable"}}, kinds
        t.check_variables_match_section_2()
        t.check_checkpoint_restores_exactly({checkpoint!r})
        t.check_forward_matches_numpy({checkpoint!r}, True, True, False)
        t.check_forward_matches_numpy({checkpoint!r}, False, True, True, dynamic_shapes=True)
        t.check_no_dead_ops(dynamic_shapes=False)
        t.check_no_dead_ops(dynamic_shapes=True)
        """,
        ref_variables=True,
    )


# ---------------------------------------------------------------------------
# Errors the model raises while the graph is built


def test_hidden_size_not_divisible_by_heads_is_a_value_error():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"hidden size \(30\).*attention heads \(4\)"):
            modeling.BertModel(tiny_config(hidden_size=30), False, tf.zeros([1, 4], tf.int32))


def test_sequence_longer_than_position_table_is_a_value_error():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"\(17\).*max_position_embeddings \(16\)"):
            modeling.BertModel(tiny_config(), False, tf.zeros([1, 17], tf.int32))


def test_dynamic_sequence_longer_than_position_table_fails_when_run():
    graph = tf.Graph()
    with graph.as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [None, None])
        model = modeling.BertModel(tiny_config(), False, ids)
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(model.get_pooled_output(), {ids: np.zeros([1, 16], np.int32)})
            with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings"):
                sess.run(model.get_pooled_output(), {ids: np.zeros([1, 17], np.int32)})


def test_input_ids_must_be_rank_2():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="actual rank `3`"):
            modeling.BertModel(tiny_config(), False, tf.zeros([1, 4, 1], tf.int32))


def test_embedding_postprocessor_needs_token_type_ids_when_asked():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="token_type_ids"):
            modeling.embedding_postprocessor(tf.zeros([1, 4, 8]), use_token_type=True)


def test_attention_layer_rank_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="rank of `from_tensor` must match"):
            modeling.attention_layer(tf.zeros([2, 3, 8]), tf.zeros([6, 8]))
        with pytest.raises(ValueError, match="must all be specified"):
            modeling.attention_layer(tf.zeros([6, 8]), tf.zeros([6, 8]), batch_size=2)


def test_transformer_input_width_must_equal_hidden_size():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"\(24\) != hidden size \(32\)"):
            modeling.transformer_model(tf.zeros([1, 4, 24]), hidden_size=32, num_attention_heads=4)


# ---------------------------------------------------------------------------
# Building blocks against numpy


def run_graph(build):
    """Builds tensors with build() in a fresh graph, initializes, returns their values."""
    graph = tf.Graph()
    with graph.as_default():
        fetches = build()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            return sess.run(fetches)


def test_transformer_last_layer_at_the_first_token_is_the_full_stack_at_position_0():
    inputs = np.random.RandomState(3).normal(size=[2, 5, 32]).astype(np.float32)
    mask = np.ones([2, 5, 5], np.float32)
    mask[1, :, 3:] = 0.0

    def build():
        def stack(**kwargs):
            with tf.compat.v1.variable_scope("encoder", reuse=tf.compat.v1.AUTO_REUSE):
                return modeling.transformer_model(
                    tf.constant(inputs),
                    tf.constant(mask),
                    hidden_size=32,
                    num_hidden_layers=2,
                    num_attention_heads=4,
                    intermediate_size=64,
                    hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0,
                    **kwargs,
                )

        return (
            stack(),
            stack(last_layer_first_token_only=True),
            stack(last_layer_first_token_only=True, do_return_all_layers=True),
        )

    full, first_only, all_layers = run_graph(build)
    assert first_only.shape == (2, 1, 32)
    np.testing.assert_allclose(first_only, full[:, :1], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(all_layers[-1], first_only)
    assert all_layers[0].shape == (2, 5, 32)


def test_gelu_is_the_tanh_approximation():
    x = np.array([-6.0, -2.5, -1.0, -0.1, 0.0, 0.3, 1.0, 2.0, 7.5], np.float32)
    actual = run_graph(lambda: modeling.gelu(tf.constant(x)))
    np.testing.assert_allclose(actual, npr.gelu(x.astype(np.float64)), rtol=1e-6, atol=1e-7)
    # Hand value: 0.5 * (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.841192
    assert abs(actual[6] - 0.841192) < 1e-6


def test_gelu_erf_is_the_exact_form():
    x = np.array([-6.0, -2.5, -1.0, -0.1, 0.0, 0.3, 1.0, 2.0, 7.5], np.float32)
    actual = run_graph(lambda: modeling.gelu_erf(tf.constant(x)))
    expected = [0.5 * v * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.astype(float)]
    # 1 + erf cancels in float32 on the negative tail: absolute 5e-7 there.
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=5e-7)
    # Hand value: Phi(1) = 0.841345, against 0.841192 for the tanh form.
    assert abs(actual[6] - 0.841345) < 1e-6


@pytest.mark.parametrize(
    "name, expected",
    [
        ("gelu", modeling.gelu),
        ("GeLU", modeling.gelu),
        ("gelu_erf", modeling.gelu_erf),
        ("GELU_ERF", modeling.gelu_erf),
        ("relu", tf.nn.relu),
        ("RELU", tf.nn.relu),
        ("tanh", tf.tanh),
        ("linear", None),
        ("Linear", None),
        ("", None),
        (None, None),
    ],
)
def test_get_activation_maps_names(name, expected):
    assert modeling.get_activation(name) is expected


def test_get_activation_passes_callables_and_rejects_unknown_names():
    assert modeling.get_activation(tf.sigmoid) is tf.sigmoid
    with pytest.raises(ValueError, match="Unsupported activation: swish"):
        modeling.get_activation("swish")


def test_layer_norm_matches_numpy_and_names_its_variables():
    x = np.random.RandomState(3).randn(4, 6).astype(np.float32) * 5 + 2

    def build():
        first = modeling.layer_norm(tf.constant(x))
        second = modeling.layer_norm(tf.constant(x), name="custom")
        third = modeling.layer_norm(tf.constant(x))
        names = [v.op.name for v in tf.compat.v1.global_variables()]
        return first, second, third, tf.constant(names)

    first, _, _, names = run_graph(build)
    assert [n.decode() for n in names] == [
        "LayerNorm/beta",
        "LayerNorm/gamma",
        "custom/beta",
        "custom/gamma",
        "LayerNorm_1/beta",
        "LayerNorm_1/gamma",
    ]
    np.testing.assert_allclose(first, npr.layer_norm(x, 0.0, 1.0), atol=1e-5)


def test_layer_norm_is_bit_identical_to_moments_and_batch_normalization():
    """The original's LayerNorm was tf.nn.moments + tf.nn.batch_normalization."""
    x = np.random.RandomState(5).randn(6, 32).astype(np.float32) * 3 - 1
    beta = np.random.RandomState(6).randn(32).astype(np.float32)
    gamma = np.random.RandomState(7).randn(32).astype(np.float32)

    def build():
        ours = modeling.layer_norm(tf.constant(x))
        mean, variance = tf.nn.moments(tf.constant(x), axes=[1], keepdims=True)
        theirs = tf.nn.batch_normalization(tf.constant(x), mean, variance, beta, gamma, 1e-12)
        return ours, theirs

    graph = tf.Graph()
    with graph.as_default():
        ours, theirs = build()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for v, value in zip(tf.compat.v1.global_variables(), (beta, gamma)):
                sess.run(v.assign(value))
            ours, theirs = sess.run([ours, theirs])
    np.testing.assert_array_equal(ours, theirs)


def test_dense_matches_numpy_for_rank_2_and_3():
    x = np.random.RandomState(4).randn(2, 3, 5).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        out3 = modeling.dense(
            tf.constant(x),
            4,
            activation=tf.tanh,
            kernel_initializer=tf.compat.v1.constant_initializer(0.1),
            name="proj",
        )
        out2 = modeling.dense(tf.constant(x[0]), 4)
        variables = tf.compat.v1.global_variables()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            before = sess.run(out3)
            sess.run(variables[1].assign(tf.ones([4])))
            after, out2 = sess.run([out3, out2])
    assert [v.op.name for v in variables] == [
        "proj/kernel",
        "proj/bias",
        "dense/kernel",
        "dense/bias",
    ]
    assert after.shape == (2, 3, 4) and out2.shape == (3, 4)
    row_sums = x.sum(-1, keepdims=True) * 0.1
    np.testing.assert_allclose(before, np.tanh(row_sums) * np.ones(4), atol=1e-6)
    np.testing.assert_allclose(after, np.tanh(row_sums + 1.0) * np.ones(4), atol=1e-6)


def test_attention_mask_copies_the_to_mask_along_from_positions():
    to_mask = np.array([[1, 1, 0], [1, 0, 0]], np.int32)
    mask = run_graph(
        lambda: modeling.create_attention_mask_from_input_mask(
            tf.zeros([2, 4, 7]), tf.constant(to_mask)
        )
    )
    assert mask.dtype == np.float32 and mask.shape == (2, 4, 3)
    for b in range(2):
        for i in range(4):
            np.testing.assert_array_equal(mask[b, i], to_mask[b])


def test_embedding_lookup_gather_and_one_hot_agree_and_concat_multiple_ids():
    ids = np.array([[[1, 2], [3, 4]]], np.int32)  # [1, 2, 2]

    def build():
        with tf.compat.v1.variable_scope("a"):
            out_a, table = modeling.embedding_lookup(
                tf.constant(ids), vocab_size=5, embedding_size=3
            )
        with tf.compat.v1.variable_scope("b"):
            out_b, _ = modeling.embedding_lookup(
                tf.constant(ids), vocab_size=5, embedding_size=3, use_one_hot_embeddings=True
            )
        return out_a, out_b, table, table.op.name

    graph = tf.Graph()
    with graph.as_default():
        out_a, out_b, table, table_name = build()
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            out_a, out_b, table = sess.run([out_a, out_b, table])
    assert table_name == "a/word_embeddings"
    assert out_a.shape == (1, 2, 6)
    np.testing.assert_array_equal(out_a[0, 1], np.concatenate([table[3], table[4]]))
    assert out_b.shape == (1, 2, 6)


# ---------------------------------------------------------------------------
# Shape helpers


def test_get_shape_list_prefers_static_dimensions():
    graph = tf.Graph()
    with graph.as_default():
        static = modeling.get_shape_list(tf.zeros([2, 3, 4]))
        placeholder = tf.compat.v1.placeholder(tf.float32, [None, 5])
        dynamic = modeling.get_shape_list(placeholder, expected_rank=2)
        with tf.compat.v1.Session(graph=graph) as sess:
            batch = sess.run(dynamic[0], {placeholder: np.zeros([7, 5])})
    assert static == [2, 3, 4]
    assert isinstance(dynamic[0], tf.Tensor) and dynamic[1] == 5
    assert batch == 7


def test_assert_rank_accepts_int_or_list_and_names_the_tensor():
    with tf.Graph().as_default():
        x = tf.zeros([2, 3], name="my_input")
        modeling.assert_rank(x, 2)
        modeling.assert_rank(x, [2, 3])
        with pytest.raises(ValueError, match="my_input:0.*actual rank `2`.*expected rank `3`"):
            modeling.assert_rank(x, 3)
        with pytest.raises(ValueError, match="`other_name`"):
            modeling.get_shape_list(x, expected_rank=[1, 3], name="other_name")


def test_reshape_to_and_from_matrix():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

    def build():
        t = tf.constant(x)
        matrix = modeling.reshape_to_matrix(t)
        same = modeling.reshape_to_matrix(matrix)
        back = modeling.reshape_from_matrix(matrix, modeling.get_shape_list(t))
        unchanged = modeling.reshape_from_matrix(matrix, [6, 4])
        assert same is matrix and unchanged is matrix
        return matrix, back

    matrix, back = run_graph(build)
    np.testing.assert_array_equal(matrix, x.reshape(6, 4))
    np.testing.assert_array_equal(back, x)
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="at least rank 2"):
            modeling.reshape_to_matrix(tf.zeros([3]))


# ---------------------------------------------------------------------------
# BertConfig


def test_config_defaults_are_the_original_ones():
    config = modeling.BertConfig(vocab_size=30522)
    assert config.to_dict() == {
        "vocab_size": 30522,
        "hidden_size": 768,
        "num_hidden_layers": 12,
        "num_attention_heads": 12,
        "intermediate_size": 3072,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 512,
        "type_vocab_size": 16,
        "initializer_range": 0.02,
    }


def test_config_json_round_trip_keeps_unknown_keys(tmp_path):
    # The shape of Google's multilingual/chinese bert_config.json.
    released = {
        "attention_probs_dropout_prob": 0.1,
        "directionality": "bidi",
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 768,
        "initializer_range": 0.02,
        "intermediate_size": 3072,
        "max_position_embeddings": 512,
        "num_attention_heads": 12,
        "num_hidden_layers": 12,
        "pooler_fc_size": 768,
        "pooler_num_attention_heads": 12,
        "pooler_num_fc_layers": 3,
        "pooler_size_per_head": 128,
        "pooler_type": "first_token_transform",
        "type_vocab_size": 2,
        "vocab_size": 105879,
    }
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(released, indent=2))
    config = modeling.BertConfig.from_json_file(str(path))
    assert config.directionality == "bidi" and config.pooler_fc_size == 768
    assert config.type_vocab_size == 2
    assert config.to_dict() == released

    text = config.to_json_string()
    assert text.endswith("}\n")
    assert text == json.dumps(released, indent=2, sort_keys=True) + "\n"
    path.write_text(text)
    assert modeling.BertConfig.from_json_file(str(path)).to_dict() == released


def test_config_to_dict_is_a_copy():
    config = modeling.BertConfig.from_dict({"vocab_size": 5, "extra": [1, 2]})
    config.to_dict()["extra"].append(3)
    assert config.extra == [1, 2]


def test_config_from_bad_json_names_the_file_and_line(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text('{\n  "vocab_size": 5,\n  "hidden_size": oops\n}\n')
    with pytest.raises(
        ValueError, match="^" + re.escape(f"{path}:3: not a valid JSON BERT config")
    ):
        modeling.BertConfig.from_json_file(str(path))
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="must be a JSON object, got list"):
        modeling.BertConfig.from_json_file(str(path))
