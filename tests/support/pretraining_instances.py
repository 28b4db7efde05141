"""Short random pre-training instances and their records, for the tests of packing.

Laid out as create_pretraining_data.py writes them ([CLS] A [SEP] B [SEP],
masked positions inside the instance, weights 1 then 0), written through
tf.train.Example, not through this project's record writer; at 128 tokens
most rows of them pack two or three. as_tuples and unpacked read an instance
back, from its record and from a packed row, in numpy.
"""

import numpy as np
import tensorflow as tf


def random_instances(count, seed=0, seq=128, predictions=20):
    """[{feature: numpy array}] of `count` random pre-training instances of 6 to 90 tokens,
    padded to seq and predictions."""
    rng = np.random.default_rng(seed)
    instances = []
    for _ in range(count):
        length = int(rng.integers(6, 91))
        ids = rng.integers(1000, 30000, size=length)
        first = int(rng.integers(1, length - 3))
        ids[0], ids[first + 1], ids[-1] = 101, 102, 102
        segments = np.r_[np.zeros(first + 2, int), np.ones(length - first - 2, int)]
        masked = min(predictions, max(1, round(0.15 * length)))
        positions = np.sort(rng.choice(np.arange(1, length - 1), masked, replace=False))

        def padded(values, size):
            return np.pad(np.asarray(values), (0, size - len(values)))

        instances.append(
            {
                "input_ids": padded(ids, seq),
                "input_mask": padded(np.ones(length, int), seq),
                "segment_ids": padded(segments, seq),
                "masked_lm_positions": padded(positions, predictions),
                "masked_lm_ids": padded(rng.integers(1000, 30000, size=masked), predictions),
                "masked_lm_weights": padded(np.ones(masked, np.float32), predictions),
                "next_sentence_labels": np.array([rng.integers(0, 2)]),
            }
        )
    return instances


def write_records(path, instances):
    """Writes the instances as tf.train.Examples; returns the path."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for instance in instances:
            feature = {}
            for name, values in instance.items():
                if values.dtype.kind == "f":
                    feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
                else:
                    feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
            example = tf.train.Example(features=tf.train.Features(feature=feature))
            writer.write(example.SerializeToString())
    return str(path)


def as_tuples(instance):
    """An instance without its padding: (ids, segments, masked positions, masked ids,
    next-sentence label)."""
    length = int(instance["input_mask"].sum())
    kept = instance["masked_lm_weights"] > 0
    return (
        tuple(instance["input_ids"][:length]),
        tuple(instance["segment_ids"][:length]),
        tuple(instance["masked_lm_positions"][kept]),
        tuple(instance["masked_lm_ids"][kept]),
        int(instance["next_sentence_labels"][0]),
    )


def unpacked(row, slot):
    """Instance `slot` of a packed row ({feature: numpy array}), read back from the row's
    features, as as_tuples gives it; asserts its tokens are contiguous from its [CLS], its
    positions restart at 0 and its mask covers it."""
    start = row["cls_positions"][slot]
    tokens = np.flatnonzero(row["instance_ids"] == slot + 1)
    length = len(tokens)
    assert (tokens == np.arange(start, start + length)).all()
    assert (row["position_ids"][tokens] == np.arange(length)).all()
    assert (row["input_mask"][tokens] == 1).all()
    positions = row["masked_lm_positions"]
    kept = (row["masked_lm_weights"] > 0) & (positions >= start) & (positions < start + length)
    return (
        tuple(row["input_ids"][tokens]),
        tuple(row["segment_ids"][tokens]),
        tuple(positions[kept] - start),
        tuple(row["masked_lm_ids"][kept]),
        int(row["next_sentence_labels"][slot]),
    )


def row_instances(row):
    """The instances of a packed row, in slot order, as as_tuples gives them."""
    slots = np.flatnonzero(row["next_sentence_weights"])
    assert (slots == np.arange(len(slots))).all()
    return [unpacked(row, slot) for slot in slots]
