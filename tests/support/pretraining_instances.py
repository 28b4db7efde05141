"""Short random pre-training instances and their records, for the tests of packing.

Laid out as create_pretraining_data.py writes them ([CLS] A [SEP] B [SEP],
masked positions inside the instance, weights 1 then 0), written through
tf.train.Example, not through this project's record writer; at 128 tokens
most rows of them pack two or three.
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
