"""modeling.DropoutKeys: dropout masks keyed by example, against a numpy hash and BertModel.

An example must draw the same masks in any batch it is computed in (another
size, another cut length, at [CLS] only), so that sorted micro-batches make
the update of the unsorted batch with dropout on; and the masks must still
be dropout's: each value kept with probability 1 - rate, independently.
"""

import zlib

import numpy as np
import tensorflow as tf
from helpers import tiny_bert_config

import modeling

RATE = 0.1


def _hash32(values):
    """The documented 32-bit hash, in numpy uint32 (wrapping) arithmetic."""
    values = np.asarray(values, dtype=np.uint32)
    values = values ^ (values >> np.uint32(16))
    values = values * np.uint32(0x7FEB352D)
    values = values ^ (values >> np.uint32(15))
    values = values * np.uint32(0x846CA68B)
    return values ^ (values >> np.uint32(16))


def numpy_mask(seed, scope_and_site, example_keys, row_sizes, width, rate):
    """The keep mask [batch, *row_sizes, width] from the hash's definition."""
    with np.errstate(over="ignore"):
        mixed_seed = int(_hash32(int(_hash32(seed & 0xFFFFFFFF)) ^ (seed >> 32)))
        site = int(_hash32(zlib.crc32(scope_and_site.encode()) ^ mixed_seed))
        per_example = _hash32(np.asarray(example_keys, np.uint32) ^ np.uint32(site))
        rows = np.arange(row_sizes[-1], dtype=np.int64)
        if len(row_sizes) == 2:
            rows = np.arange(row_sizes[0])[:, None] * 65536 + rows[None, :]
        rows = rows.astype(np.uint32) * np.uint32(0x9E3779B9)
        per_example = per_example.reshape([-1] + [1] * len(row_sizes))
        per_row = _hash32(per_example + rows[None])
        values = _hash32(per_row[..., None] + np.arange(width, dtype=np.uint32))
    return values >= np.uint32(round(rate * 2**32))


def keyed_dropout(keys, seed, values, site="dropout"):
    """DropoutKeys(keys, seed).dropout(values) in a graph of its own, as numpy."""
    graph = tf.Graph()
    with graph.as_default():
        dropout_keys = modeling.DropoutKeys(tf.constant(keys, tf.int64), seed=seed)
        output = dropout_keys.dropout(tf.constant(values, tf.float32), RATE, site)
        with tf.compat.v1.Session(graph=graph) as session:
            return session.run(output)


def test_the_mask_is_the_hash_of_seed_site_example_and_coordinates():
    keys = [0, 7, 2**31 + 5]
    ones = np.ones([3, 5, 11], np.float32)
    seed = 2**40 + 12345
    kept = keyed_dropout(keys, seed, ones) != 0
    np.testing.assert_array_equal(kept, numpy_mask(seed, "/dropout", keys, [5], 11, RATE))
    probs = np.ones([3, 2, 4, 6], np.float32)
    kept = keyed_dropout(keys, seed, probs, site="probs") != 0
    np.testing.assert_array_equal(kept, numpy_mask(seed, "/probs", keys, [2, 4], 6, RATE))


def test_kept_values_are_scaled_and_the_gradient_passes_them_only():
    graph = tf.Graph()
    with graph.as_default():
        values = tf.constant(np.linspace(-2, 2, 2 * 6 * 8).reshape(2, 6, 8), tf.float32)
        keys = modeling.DropoutKeys(tf.constant([3, 4]), seed=1)
        output = keys.dropout(values, RATE, "dropout")
        (gradient,) = tf.gradients(tf.reduce_sum(output * 3.0), [values])
        with tf.compat.v1.Session(graph=graph) as session:
            values, output, gradient = session.run([values, output, gradient])
    kept = numpy_mask(1, "/dropout", [3, 4], [6], 8, RATE)
    np.testing.assert_allclose(output, np.where(kept, values / (1 - RATE), 0.0), rtol=1e-6)
    np.testing.assert_allclose(gradient, np.where(kept, 3.0 / (1 - RATE), 0.0), rtol=1e-6)


def test_an_example_draws_the_same_masks_in_any_batch_and_cut_length():
    seed = 99
    ones = np.ones([3, 9, 16], np.float32)
    whole = keyed_dropout([10, 11, 12], seed, ones)
    # Example 11, first, in a batch of two cut to 4 positions.
    cut = keyed_dropout([11, 30], seed, ones[:2, :4])
    np.testing.assert_array_equal(cut[0], whole[1, :4])
    # The [batch * seq, width] matrices of the encoder layers: rows are positions.
    matrix = keyed_dropout([10, 11, 12], seed, ones.reshape(27, 16))
    np.testing.assert_array_equal(matrix.reshape(3, 9, 16), whole)
    # [CLS] only: a [batch, width] matrix is position 0.
    first = keyed_dropout([12, 10], seed, ones[:2, 0])
    np.testing.assert_array_equal(first, whole[[2, 0], 0])
    # Attention probabilities [batch, heads, from, to]: cut and [CLS]-only rows.
    probs = np.ones([3, 2, 9, 9], np.float32)
    whole = keyed_dropout([10, 11, 12], seed, probs, site="probs")
    cut = keyed_dropout([12], seed, probs[:1, :, :5, :5], site="probs")
    np.testing.assert_array_equal(cut[0], whole[2, :, :5, :5])
    cls_row = keyed_dropout([11], seed, probs[:1, :, :1, :], site="probs")
    np.testing.assert_array_equal(cls_row[0], whole[1, :, :1, :])


def test_masks_are_independent_draws_at_the_rate():
    ones = np.ones([64, 128, 96], np.float32)
    kept = keyed_dropout(np.arange(64), 5, ones) != 0
    n = kept.size
    sigma = np.sqrt(RATE * (1 - RATE) / n)
    assert abs(kept.mean() - (1 - RATE)) < 5 * sigma
    # No feature, position or example is favoured: each slice's keep rate is
    # within 5 standard deviations of its own size's binomial spread.
    for axis in range(3):
        rates = kept.mean(axis=tuple(a for a in range(3) if a != axis))
        per_slice = n / kept.shape[axis]
        assert np.abs(rates - (1 - RATE)).max() < 5 * np.sqrt(RATE * (1 - RATE) / per_slice)
    # Another seed, site or example key: masks agree as independent ones do (0.82).
    others = [
        keyed_dropout(np.arange(64), 6, ones) != 0,
        keyed_dropout(np.arange(64), 5, ones, site="other") != 0,
        keyed_dropout(np.arange(64) + 64, 5, ones) != 0,
    ]
    expected = (1 - RATE) ** 2 + RATE**2
    for other in others:
        assert abs((kept == other).mean() - expected) < 0.005
    # Neighbouring values are not alike: a kept value's neighbour is kept at the rate.
    pairs = kept[:, :, 1:][kept[:, :, :-1]]
    assert abs(pairs.mean() - (1 - RATE)) < 0.005


def _pooled_and_first_layer(config, ids, mask, keys, pooled_output_only=False):
    """BertModel in training (dropout on, keyed), from fixed weights: pooled output and
    the first layer's output."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(17)
        model = modeling.BertModel(
            config,
            is_training=True,
            input_ids=tf.constant(ids),
            input_mask=tf.constant(mask),
            pooled_output_only=pooled_output_only,
            dropout_keys=modeling.DropoutKeys(tf.constant(keys, tf.int64)),
        )
        outputs = [model.get_pooled_output(), model.get_all_encoder_layers()[0]]
        with tf.compat.v1.Session(graph=graph) as session:
            for variable in tf.compat.v1.global_variables():
                name = variable.op.name
                rng = np.random.RandomState(zlib.crc32(name.encode()))
                value = rng.normal(0, 0.2, variable.shape.as_list())
                if name.endswith("gamma"):
                    value += 1.0
                variable.load(value.astype(np.float32), session)
            return session.run(outputs)


def test_bert_model_gives_an_example_the_same_training_output_in_any_batch():
    """With dropout on, an example's outputs depend on its key, not on the batch:
    example 7 alone, cut to its own 5 positions, computes as it does beside a longer
    one in a batch of 8 positions, and at [CLS] only."""
    config = modeling.BertConfig(
        **tiny_bert_config(
            40, hidden_dropout_prob=0.3, attention_probs_dropout_prob=0.3, num_hidden_layers=2
        )
    )
    rng = np.random.RandomState(0)
    ids = rng.randint(1, 40, size=[2, 8]).astype(np.int32)
    mask = np.array([[1] * 8, [1] * 5 + [0] * 3], np.int32)
    pooled, layer = _pooled_and_first_layer(config, ids, mask, [3, 7])
    alone_pooled, alone_layer = _pooled_and_first_layer(config, ids[1:, :5], mask[1:, :5], [7])
    np.testing.assert_allclose(alone_pooled[0], pooled[1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(alone_layer[0], layer[1, :5], rtol=1e-5, atol=1e-6)
    cls_pooled, _ = _pooled_and_first_layer(config, ids, mask, [3, 7], pooled_output_only=True)
    np.testing.assert_allclose(cls_pooled, pooled, rtol=1e-5, atol=1e-6)
    # Dropout did act: another key gives other outputs.
    other_pooled, _ = _pooled_and_first_layer(config, ids[1:, :5], mask[1:, :5], [8])
    assert not np.allclose(other_pooled[0], pooled[1], atol=1e-3)
