"""The shared record helpers: feature building, atomic writes, decoding, truncation."""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_lib.task_data import features, text_pairs


def test_make_example_keeps_every_feature_and_value():
    example = features.make_example(
        [
            ("input_ids", features.create_int_feature([3, 1, 2])),
            ("weights", features.create_float_feature([1.0, 0.5])),
        ]
    )
    # A protobuf map keeps no insertion order, so only names and values are pinned.
    assert sorted(example.features.feature.keys()) == ["input_ids", "weights"]
    assert list(example.features.feature["input_ids"].int64_list.value) == [3, 1, 2]
    assert list(example.features.feature["weights"].float_list.value) == [1.0, 0.5]


def test_atomic_writers_rename_on_success_and_leave_nothing_on_error(tmp_path):
    good = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    with features.atomic_record_writers(good) as writers:
        for i, writer in enumerate(writers):
            writer.write(f"record-{i}".encode())
    assert sorted(os.listdir(tmp_path)) == ["a.tfrecord", "b.tfrecord"]
    assert [r.numpy() for r in tf.data.TFRecordDataset(good[1])] == [b"record-1"]

    bad = str(tmp_path / "c.tfrecord")
    with pytest.raises(RuntimeError):
        with features.atomic_record_writers([bad]) as writers:
            writers[0].write(b"partial")
            raise RuntimeError("boom")
    assert sorted(os.listdir(tmp_path)) == ["a.tfrecord", "b.tfrecord"]


def test_decode_record_casts_int64_to_int32():
    example = features.make_example(
        [
            ("ids", features.create_int_feature([7, 8])),
            ("w", features.create_float_feature([0.25])),
        ]
    )
    parsed = features.decode_record(
        example.SerializeToString(),
        {
            "ids": tf.io.FixedLenFeature([2], tf.int64),
            "w": tf.io.FixedLenFeature([1], tf.float32),
        },
    )
    assert parsed["ids"].dtype == tf.int32
    np.testing.assert_array_equal(parsed["ids"].numpy(), [7, 8])
    np.testing.assert_allclose(parsed["w"].numpy(), [0.25])


@pytest.mark.parametrize(
    "len_a,len_b,max_length,expected",
    [
        (5, 5, 6, (3, 3)),  # tie trims b first, then alternates
        (8, 2, 6, (4, 2)),  # only the longer side shrinks
        (2, 9, 6, (2, 4)),
        (3, 2, 10, (3, 2)),  # already fits: untouched
        (4, 3, 6, (3, 3)),
    ],
)
def test_truncate_seq_pair_trims_the_longer_side_from_the_end(len_a, len_b, max_length, expected):
    a = list(range(len_a))
    b = list(range(100, 100 + len_b))
    text_pairs.truncate_seq_pair(a, b, max_length)
    assert (len(a), len(b)) == expected
    assert a == list(range(expected[0]))
    assert b == list(range(100, 100 + expected[1]))


class _IdsByLetter:
    """A stand-in tokenizer: [CLS]=101, [SEP]=102, any other token its length."""

    def convert_tokens_to_ids(self, tokens):
        return [{"[CLS]": 101, "[SEP]": 102}.get(t, len(t)) for t in tokens]


def test_pack_pair_lays_out_a_pair_with_segments_and_padding():
    tokens, ids, mask, segments = text_pairs.pack_pair(
        _IdsByLetter(), ["aa", "bbb"], ["c", "dddd", "ee"], max_seq_length=10
    )
    assert tokens == ["[CLS]", "aa", "bbb", "[SEP]", "c", "dddd", "ee", "[SEP]"]
    assert ids == [101, 2, 3, 102, 1, 4, 2, 102, 0, 0]
    assert mask == [1, 1, 1, 1, 1, 1, 1, 1, 0, 0]
    assert segments == [0, 0, 0, 0, 1, 1, 1, 1, 0, 0]


def test_pack_pair_truncates_a_pair_to_three_less_and_a_single_to_two_less():
    a, b = ["a1", "a2", "a3", "a4"], ["b1", "b2", "b3"]
    tokens, ids, mask, segments = text_pairs.pack_pair(_IdsByLetter(), a, b, max_seq_length=7)
    # 7 - 3 = 4 pieces: a loses two from its end (longer), then the tie trims b.
    assert tokens == ["[CLS]", "a1", "a2", "[SEP]", "b1", "b2", "[SEP]"]
    assert mask == [1] * 7 and segments == [0, 0, 0, 0, 1, 1, 1]

    tokens, ids, mask, segments = text_pairs.pack_pair(
        _IdsByLetter(), ["x", "y", "z", "w"], None, max_seq_length=4
    )
    assert tokens == ["[CLS]", "x", "y", "[SEP]"]
    assert ids == [101, 1, 1, 102] and segments == [0, 0, 0, 0]


def test_pack_pair_treats_an_empty_second_text_as_none():
    tokens, _, _, segments = text_pairs.pack_pair(_IdsByLetter(), ["a"], [], max_seq_length=5)
    assert tokens == ["[CLS]", "a", "[SEP]"]
    assert segments == [0, 0, 0, 0, 0]
