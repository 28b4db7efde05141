"""The input pipelines of evaluation, prediction and training are traced as written.

tf.data traces every function given to Dataset.map; unless told not to, it
first rewrites the function's Python with AutoGraph (parsing its source,
transforming the syntax tree, compiling it again), which took most of the
time of building an eval or predict pipeline and changes nothing in these
functions: they hold no Python control flow over tensors. The tests count
AutoGraph's rewrites while the pipelines are built (none), and check that
the graphs are those AutoGraph gives.
"""

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.python.autograph.impl import api as autograph_api

from bert_lib.task_data import dynamic_padding, features

SEQ = 16
NAME_TO_FEATURES = {
    "input_ids": tf.io.FixedLenFeature([SEQ], tf.int64),
    "input_mask": tf.io.FixedLenFeature([SEQ], tf.int64),
    "segment_ids": tf.io.FixedLenFeature([SEQ], tf.int64),
    "label_ids": tf.io.FixedLenFeature([], tf.int64),
}


def _write_records(path, lengths):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i, length in enumerate(lengths):
            mask = [1] * length + [0] * (SEQ - length)
            values = {
                "input_ids": [i + 1] * length + [0] * (SEQ - length),
                "input_mask": mask,
                "segment_ids": [0] * SEQ,
                "label_ids": [i % 2],
            }
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={k: features.create_int_feature(v) for k, v in values.items()}
                )
            )
            writer.write(example.SerializeToString())


class _Rewrites:
    """Counts AutoGraph's source rewrites while active."""

    def __init__(self, monkeypatch):
        self.count = 0
        transform = autograph_api._TRANSPILER.transform

        def counting(*args, **kwargs):
            self.count += 1
            return transform(*args, **kwargs)

        monkeypatch.setattr(autograph_api._TRANSPILER, "transform", counting)


def _graph_of(input_fn):
    graph = tf.Graph()
    with graph.as_default():
        dataset = input_fn({"batch_size": 4})
    return graph, dataset


@pytest.mark.parametrize("is_training", [False, True])
def test_record_pipelines_are_traced_without_autograph_rewrites(
    tmp_path, monkeypatch, is_training
):
    path = tmp_path / "records.tf_record"
    _write_records(path, [3, 16, 7, 1, 12, 5, 9, 2, 16, 4])
    padding = dynamic_padding.settings(
        is_training, cut_in_training=is_training, step_micro_batches=4 if is_training else 0
    )
    input_fn = features.record_input_fn_builder(
        str(path), NAME_TO_FEATURES, is_training, False, padding
    )
    rewrites = _Rewrites(monkeypatch)
    _graph_of(input_fn)
    assert rewrites.count == 0


def test_eval_pipeline_gives_what_the_autograph_rewritten_one_gave(tmp_path, monkeypatch):
    path = tmp_path / "records.tf_record"
    lengths = [3, 16, 7, 1, 12, 5, 9, 2, 16, 4]
    _write_records(path, lengths)
    padding = dynamic_padding.settings(False)
    input_fn = features.record_input_fn_builder(str(path), NAME_TO_FEATURES, False, False, padding)
    batches = []
    for converted in (False, True):
        if converted:
            # As before: each mapped function goes through AutoGraph.
            monkeypatch.setattr(tf.autograph.experimental, "do_not_convert", lambda func: func)
            rewrites = _Rewrites(monkeypatch)
        graph, dataset = _graph_of(input_fn)
        if converted:
            assert rewrites.count > 0
        with graph.as_default():
            next_batch = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        with tf.compat.v1.Session(graph=graph) as session:
            runs = []
            while True:
                try:
                    runs.append(session.run(next_batch))
                except tf.errors.OutOfRangeError:
                    break
        batches.append(runs)
    plain, rewritten = batches
    assert len(plain) == len(rewritten) == 3
    for a, b in zip(plain, rewritten):
        assert sorted(a) == sorted(b)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])
    # Sorted by length within the window, each batch cut to its bucketed longest.
    order = [int(i) for batch in plain for i in batch[dynamic_padding.INDEX_KEY]]
    assert sorted(order) == list(range(len(lengths)))
    assert [lengths[i] for i in order[:8]] == sorted(lengths[:8])
