"""The pre-training record: its features and its tf.train.Example bytes.

create_pretraining_data.py writes these records and run_pretraining.py
reads them; what a record holds is said here once (FEATURE_NAMES and
record_features). Every record of a file has the same lengths, padded to
max_seq_length and max_predictions_per_seq, so the records themselves say
what the reader must repeat: lengths_of_record reads them back.
"""

import struct

from ..plumbing import tfrecord_format

# The pre-training features, in the order the original inserts (and logs) them.
FEATURE_NAMES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)


def record_features(max_seq_length, max_predictions_per_seq):
    """{feature name: (values per record, "int64" or "float32", the flag setting that
    length)} of the pre-training record, in FEATURE_NAMES order."""
    return {
        "input_ids": (max_seq_length, "int64", "--max_seq_length"),
        "input_mask": (max_seq_length, "int64", "--max_seq_length"),
        "segment_ids": (max_seq_length, "int64", "--max_seq_length"),
        "masked_lm_positions": (max_predictions_per_seq, "int64", "--max_predictions_per_seq"),
        "masked_lm_ids": (max_predictions_per_seq, "int64", "--max_predictions_per_seq"),
        "masked_lm_weights": (max_predictions_per_seq, "float32", "--max_predictions_per_seq"),
        "next_sentence_labels": (1, "int64", "the format"),
    }


def lengths_of_record(feature):
    """{"max_seq_length": n, "max_predictions_per_seq": m} of a parsed record (a
    tf.train.Example's feature map), as create_pretraining_data.py padded it; a length
    the record lacks is left out."""
    lengths = {}
    for flag, name in (
        ("max_seq_length", "input_ids"),
        ("max_predictions_per_seq", "masked_lm_positions"),
    ):
        if name in feature:
            values = feature[name]
            lengths[flag] = len(values.int64_list.value) + len(values.float_list.value)
    return lengths


# ---------------------------------------------------------------------------
# tf.train.Example bytes


class PretrainingExampleEncoder:
    """Serializes pre-training instances given as token ids.

    The bytes are those of `tf.train.Example.SerializeToString(deterministic=
    True)`: Example.features (field 1) holds one map entry (field 1) per
    feature in name order, each entry a key (field 1) and a Feature (field 2)
    whose int64_list (field 3) or float_list (field 2) packs its values
    into field 1. The framing bytes depend only on the lengths of the packed
    values, so they are built once per length and cached; 0/1 features
    (input_mask, segment_ids) always pack to max_seq_length bytes.
    """

    def __init__(self, vocab_size, max_seq_length, max_predictions_per_seq):
        self.max_seq_length = max_seq_length
        self.max_predictions = max_predictions_per_seq
        # Varints of every id, position and field length that can occur.
        longest_record = 8 * max_seq_length + 12 * max_predictions_per_seq + 256
        self.varints = [tfrecord_format.varint(i) for i in range(max(vocab_size, longest_record))]
        self.zeros = [bytes(k) for k in range(max(max_seq_length, max_predictions_per_seq) + 1)]
        self.ones = [b"\x01" * k for k in range(max_seq_length + 1)]
        self.prefixes = {name: {} for name in FEATURE_NAMES}
        self.mask_prefix = self._prefix("input_mask", b"\x1a", max_seq_length)
        self.segment_prefix = self._prefix("segment_ids", b"\x1a", max_seq_length)
        one, zero = struct.pack("<f", 1.0), struct.pack("<f", 0.0)
        self.weight_entries = [
            self._entry(
                "masked_lm_weights",
                b"\x12",
                one * k + zero * (max_predictions_per_seq - k),
            )
            for k in range(max_predictions_per_seq + 1)
        ]
        self.label_entries = [
            self._entry("next_sentence_labels", b"\x1a", bytes([label])) for label in (0, 1)
        ]

    def _prefix(self, name, kind_tag, packed_length):
        """The bytes of a feature map entry that come before its packed values."""
        cache = self.prefixes[name]
        prefix = cache.get(packed_length)
        if prefix is None:
            v = tfrecord_format.varint
            value_list = 1 + len(v(packed_length)) + packed_length
            feature = 1 + len(v(value_list)) + value_list
            key = b"\x0a" + v(len(name)) + name.encode()
            entry = len(key) + 1 + len(v(feature)) + feature
            prefix = cache[packed_length] = b"".join(
                (
                    b"\x0a" + v(entry),
                    key,
                    b"\x12" + v(feature),
                    kind_tag + v(value_list),
                    b"\x0a" + v(packed_length),
                )
            )
        return prefix

    def _entry(self, name, kind_tag, packed):
        return self._prefix(name, kind_tag, len(packed)) + packed

    def encode(self, input_ids, num_a, num_b, positions, label_ids, is_random_next):
        """The serialized Example of [CLS] a [SEP] b [SEP] (ids, after masking)."""
        length = len(input_ids)
        pad = self.max_seq_length - length
        pad_p = self.max_predictions - len(positions)
        if pad < 0 or pad_p < 0:
            raise ValueError(f"instance of {length} tokens, {len(positions)} predictions")
        varint = self.varints.__getitem__
        prefixes = self.prefixes
        zeros = self.zeros
        ids = b"".join(map(varint, input_ids)) + zeros[pad]
        prefix = prefixes["input_ids"].get(len(ids)) or self._prefix(
            "input_ids", b"\x1a", len(ids)
        )
        labels = b"".join(map(varint, label_ids)) + zeros[pad_p]
        label_prefix = prefixes["masked_lm_ids"].get(len(labels)) or self._prefix(
            "masked_lm_ids", b"\x1a", len(labels)
        )
        where = b"".join(map(varint, positions)) + zeros[pad_p]
        where_prefix = prefixes["masked_lm_positions"].get(len(where)) or self._prefix(
            "masked_lm_positions", b"\x1a", len(where)
        )
        ones = self.ones
        body = b"".join(
            (
                prefix,
                ids,
                self.mask_prefix,
                ones[length],
                zeros[pad],
                label_prefix,
                labels,
                where_prefix,
                where,
                self.weight_entries[len(positions)],
                self.label_entries[1 if is_random_next else 0],
                self.segment_prefix,
                zeros[num_a + 2],
                ones[num_b + 1],
                zeros[pad],
            )
        )
        return b"\x0a" + self.varints[len(body)] + body
