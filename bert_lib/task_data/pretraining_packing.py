"""Pre-training instances packed into full rows, each computed as if it were alone.

A pre-training record holds one instance padded to max_seq_length. On text
of short documents most of a row is padding (38% at 128 tokens and 75% at
512 on one corpus of docstrings), and every layer computes it. Packing puts
several instances into each row instead, without cross-contamination:

- each instance's tokens keep their ids and segment ids, their positions
  restart at 0 (position_ids) and they attend only to their own instance
  (instance_ids, 1, 2, ... in a row, 0 for padding: a block-diagonal mask);
- its masked-LM positions point into the row, into the row's
  max_predictions_per_row slots (weights 0 on the unused ones);
- its next-sentence label goes to one of the row's max_instances_per_row
  slots, with its [CLS] position (cls_positions) and a weight of 1
  (next_sentence_weights; 0 on the unused slots).

A row's features have fixed lengths (max_seq_length, max_predictions_per_row,
max_instances_per_row), so the model's graph compiles once (XLA, TPU).
modeling.BertModel takes position_ids, instance_ids and cls_positions; a
loss that sums masked-LM weights and averages next-sentence losses over
next_sentence_weights then averages exactly what the unpacked run averages.

The packing happens in the input pipeline, on the records
create_pretraining_data.py writes (this project's, the original's and
Google's are the same records), so records made before need not be made
again, and in TensorFlow ops only, so the pipeline's position can be
saved with a checkpoint and restored. Instances are packed a window of
PACKING_WINDOW at a time, first-fit decreasing: the window's instances
longest first, each into the first row it fits (tokens, instances and
masked positions), else into a new row. On that corpus of docstrings a
window of 256 left 3% padding at 128 tokens (40% unpacked) where a window
of 64 in input order left 10%; larger windows gained under 1% more.

    python -m bert_lib.task_data.pretraining_packing '/tmp/tf_examples.tfrecord*'

prints a record set's padding share, unpacked and packed.
"""

import argparse
import sys

import tensorflow as tf

from ..plumbing import errors
from ..plumbing.errors import UsageError
from . import features as features_lib
from . import pretraining_records

PACKING_WINDOW = 256
DEFAULT_MAX_INSTANCES_PER_ROW = 8


def max_predictions_per_row(max_predictions_per_seq, max_instances_per_row):
    """Masked-LM slots in a packed row: an instance's share, plus half a slot per instance.

    create_pretraining_data.py masks round(masked_lm_prob * length) tokens of
    an instance (at least 1, at most max_predictions_per_seq), so instances
    filling a row hold at most masked_lm_prob * max_seq_length + 1/2 per
    instance; with the original's max_predictions_per_seq (20 at 128, 80 at
    512, at least 0.15 * max_seq_length) these slots always suffice. Records
    masked more densely pack fewer instances to a row, never wrongly: an
    instance whose masked positions do not fit starts a new row.
    """
    return max_predictions_per_seq + max_instances_per_row // 2


def packed_row_features(max_seq_length, max_predictions_per_row, max_instances_per_row):
    """{feature name: (length, dtype)} of a packed row."""
    return {
        "input_ids": (max_seq_length, tf.int32),
        "input_mask": (max_seq_length, tf.int32),
        "segment_ids": (max_seq_length, tf.int32),
        "position_ids": (max_seq_length, tf.int32),
        "instance_ids": (max_seq_length, tf.int32),
        "masked_lm_positions": (max_predictions_per_row, tf.int32),
        "masked_lm_ids": (max_predictions_per_row, tf.int32),
        "masked_lm_weights": (max_predictions_per_row, tf.float32),
        "next_sentence_labels": (max_instances_per_row, tf.int32),
        "next_sentence_weights": (max_instances_per_row, tf.float32),
        "cls_positions": (max_instances_per_row, tf.int32),
    }


def _first_fit(lengths, masked, max_seq_length, max_predictions, max_instances):
    """First-fit decreasing of one window: (row, token offset, instance slot, masked-LM
    offset) of each instance [n] each, and the number of rows."""
    n = tf.shape(lengths)[0]
    order = tf.argsort(lengths, direction="DESCENDING", stable=True)
    zeros = tf.zeros([n], tf.int32)

    def place(j, rows_used, row_len, row_count, row_masked, row, offset, slot, masked_offset):
        i = order[j]
        fits = (
            (row_len + lengths[i] <= max_seq_length)
            & (row_count < max_instances)
            & (row_masked + masked[i] <= max_predictions)
            & (tf.range(n) < rows_used)
        )
        r = tf.where(
            tf.reduce_any(fits),
            tf.argmax(tf.cast(fits, tf.int32), output_type=tf.int32),
            rows_used,
        )
        at_i, at_r = [[i]], [[r]]
        row = tf.tensor_scatter_nd_update(row, at_i, [r])
        offset = tf.tensor_scatter_nd_update(offset, at_i, [row_len[r]])
        slot = tf.tensor_scatter_nd_update(slot, at_i, [row_count[r]])
        masked_offset = tf.tensor_scatter_nd_update(masked_offset, at_i, [row_masked[r]])
        return (
            j + 1,
            tf.maximum(rows_used, r + 1),
            tf.tensor_scatter_nd_add(row_len, at_r, [lengths[i]]),
            tf.tensor_scatter_nd_add(row_count, at_r, [1]),
            tf.tensor_scatter_nd_add(row_masked, at_r, [masked[i]]),
            row,
            offset,
            slot,
            masked_offset,
        )

    loop = tf.while_loop(
        lambda j, *unused: j < n,
        place,
        (0, 0, zeros, zeros, zeros, zeros, zeros, zeros, zeros),
        parallel_iterations=1,
    )
    rows_used, row, offset, slot, masked_offset = loop[1], *loop[5:]
    return row, offset, slot, masked_offset, rows_used


def pack_window(window, max_seq_length, max_predictions_per_row, max_instances_per_row):
    """Packs a window of decoded records ({name: [n, length]}) into rows ({name: [rows,
    length]}, packed_row_features), every instance in exactly one row.

    An instance's tokens are those input_mask keeps (a prefix, as every writer
    pads at the end), its masked positions those of weight above 0.
    """
    input_mask = window["input_mask"]
    lengths = tf.reduce_sum(input_mask, axis=1)
    is_masked = tf.cast(window["masked_lm_weights"] > 0, tf.int32)
    masked = tf.reduce_sum(is_masked, axis=1)
    row, offset, slot, masked_offset, rows = _first_fit(
        lengths, masked, max_seq_length, max_predictions_per_row, max_instances_per_row
    )

    def scatter(indices, updates, length):
        return tf.scatter_nd(indices, updates, tf.stack([rows, length]))

    # Tokens: instance i's token t goes to (row[i], offset[i] + t).
    token = tf.cast(tf.where(input_mask > 0), tf.int32)
    instance, position = token[:, 0], token[:, 1]
    at = tf.stack([tf.gather(row, instance), tf.gather(offset, instance) + position], axis=1)
    packed = {
        "input_ids": scatter(at, tf.gather_nd(window["input_ids"], token), max_seq_length),
        "input_mask": scatter(at, tf.ones_like(position), max_seq_length),
        "segment_ids": scatter(at, tf.gather_nd(window["segment_ids"], token), max_seq_length),
        "position_ids": scatter(at, position, max_seq_length),
        "instance_ids": scatter(at, tf.gather(slot, instance) + 1, max_seq_length),
    }
    # Masked positions: the k-th of instance i goes to slot masked_offset[i] + k.
    prediction = tf.cast(tf.where(is_masked > 0), tf.int32)
    instance = prediction[:, 0]
    rank = tf.gather_nd(tf.cumsum(is_masked, axis=1), prediction) - 1
    at = tf.stack([tf.gather(row, instance), tf.gather(masked_offset, instance) + rank], axis=1)
    positions = tf.gather_nd(window["masked_lm_positions"], prediction)
    packed["masked_lm_positions"] = scatter(
        at, positions + tf.gather(offset, instance), max_predictions_per_row
    )
    for name in ("masked_lm_ids", "masked_lm_weights"):
        packed[name] = scatter(at, tf.gather_nd(window[name], prediction), max_predictions_per_row)
    # Next sentence: instance i's label, weight and [CLS] in slot slot[i] of row[i].
    at = tf.stack([row, slot], axis=1)
    labels = window["next_sentence_labels"][:, 0]
    packed["next_sentence_labels"] = scatter(at, labels, max_instances_per_row)
    packed["next_sentence_weights"] = scatter(
        at, tf.ones_like(lengths, tf.float32), max_instances_per_row
    )
    packed["cls_positions"] = scatter(at, offset, max_instances_per_row)
    return packed


def pack(dataset, max_seq_length, max_predictions_per_row, max_instances_per_row):
    """The packed rows of a dataset of decoded records, packed PACKING_WINDOW at a time.

    Deterministic (the same records in the same order give the same rows,
    unless the pipeline's options allow any order) and made of TensorFlow
    ops only, so an iterator over it can be saved. Windows are packed in
    parallel, so that the input keeps up with a fast accelerator.
    """

    def pack_one(window):
        return pack_window(window, max_seq_length, max_predictions_per_row, max_instances_per_row)

    windows = dataset.batch(PACKING_WINDOW)
    return windows.map(pack_one, num_parallel_calls=tf.data.AUTOTUNE).unbatch()


def empty_rows_to_fill(dataset, batch_size):
    """A dataset of rows batched by batch_size, its last batch filled with empty rows
    (every weight 0), so that every batch has one shape and every row is read once."""

    def fill(batch):
        missing = batch_size - tf.shape(batch["input_ids"])[0]
        filled = {}
        for name, value in batch.items():
            value = tf.pad(value, [[0, missing], [0, 0]])
            filled[name] = tf.ensure_shape(value, [batch_size, value.shape[1]])
        return filled

    return dataset.batch(batch_size).map(fill)


def decoded_records(input_files, max_seq_length, max_predictions_per_seq):
    """The records of the files in order, decoded (int64 features as int32)."""
    record = pretraining_records.record_features(max_seq_length, max_predictions_per_seq)
    name_to_features = {
        name: tf.io.FixedLenFeature([length], tf.as_dtype(dtype))
        for name, (length, dtype, _) in record.items()
    }
    return tf.data.TFRecordDataset(input_files).map(
        lambda serialized: features_lib.decode_record(serialized, name_to_features)
    )


def padding_shares(input_files, max_seq_length, max_predictions_per_seq, max_instances_per_row):
    """What packing saves on these records: {"instances", "tokens", "rows", "padding",
    "packed_rows", "packed_padding"}, the padding shares as fractions of the rows' tokens."""
    records = decoded_records(input_files, max_seq_length, max_predictions_per_seq)
    instances = tokens = 0
    for lengths in records.map(lambda r: tf.reduce_sum(r["input_mask"])).batch(4096):
        instances += int(lengths.shape[0])
        tokens += int(tf.reduce_sum(lengths))
    rows = pack(
        records,
        max_seq_length,
        max_predictions_per_row(max_predictions_per_seq, max_instances_per_row),
        max_instances_per_row,
    )
    packed_rows = int(rows.reduce(0, lambda count, unused: count + 1))
    return {
        "instances": instances,
        "tokens": tokens,
        "rows": instances,
        "padding": 1 - tokens / max(1, instances * max_seq_length),
        "packed_rows": packed_rows,
        "packed_padding": 1 - tokens / max(1, packed_rows * max_seq_length),
    }


def _record_lengths(path):
    """(max_seq_length, max_predictions_per_seq) the first record of `path` was padded
    to, or None for a file of no records."""
    for serialized in tf.data.TFRecordDataset(path).take(1):
        feature = tf.train.Example.FromString(serialized.numpy()).features.feature
        lengths = pretraining_records.lengths_of_record(feature)
        return lengths["max_seq_length"], lengths["max_predictions_per_seq"]
    return None


def main(argv):
    """Prints what packing saves on pre-training records: FILES... [--max_instances_per_row=N]."""
    parser = argparse.ArgumentParser(
        prog="python -m bert_lib.task_data.pretraining_packing",
        description="The padding share of pre-training records, unpacked and packed.",
    )
    parser.add_argument("input_file", nargs="+", help="record files or globs")
    parser.add_argument("--max_instances_per_row", type=int, default=DEFAULT_MAX_INSTANCES_PER_ROW)
    args = parser.parse_args(argv)
    if args.max_instances_per_row < 1:
        raise UsageError(
            f"--max_instances_per_row must be positive, got {args.max_instances_per_row}"
        )
    files = []
    for pattern in args.input_file:
        matched = sorted(tf.io.gfile.glob(pattern))
        if not matched:
            raise UsageError(f"{pattern} matches no files")
        files += matched
    lengths = {path: _record_lengths(path) for path in files}
    first = next((path for path in files if lengths[path]), None)
    if first is None:
        raise UsageError(f"{', '.join(args.input_file)}: no records")
    for path in files:
        if lengths[path] not in (None, lengths[first]):
            raise UsageError(
                f"{path} holds records of other lengths than {first} {lengths[first]}: "
                "give one set at a time"
            )
    max_seq_length, max_predictions_per_seq = lengths[first]
    shares = padding_shares(
        files, max_seq_length, max_predictions_per_seq, args.max_instances_per_row
    )
    fewer = shares["rows"] / max(1, shares["packed_rows"])
    print(
        f"{shares['instances']:,} instances of max_seq_length {max_seq_length} in "
        f"{len(files)} file(s), {shares['tokens']:,} tokens\n"
        f"  unpacked: {shares['rows']:,} rows, padding {shares['padding']:.1%}\n"
        f"  --pack_sequences --max_instances_per_row={args.max_instances_per_row}: "
        f"{shares['packed_rows']:,} rows, padding {shares['packed_padding']:.1%} "
        f"({fewer:.2f}x fewer rows)"
    )


if __name__ == "__main__":
    errors.call(main, sys.argv[1:])
