"""Not computing padding: batches cut to their longest real sequence, examples grouped by length.

Records are written padded to max_seq_length, but a position whose
input_mask is 0 changes nothing at the real positions (its attention weight
is exactly 0 in float32), so a batch can be cut to the longest real sequence
in it. The cut length is rounded up to a multiple of --length_bucket, so
that XLA compiles a handful of shapes rather than one per length. Sorting
the examples of a window by length before batching makes the batches of
similar lengths, and so shorter; the order is put back on the output side
by in_input_order. Padding positions kept inside a cut batch give the same
values as in a full-length batch; only positions cut away are missing, and
the writers read real positions only.

In training the same cut is opt-in (--dynamic_padding), and each example
gets its number in the training input (INDEX_KEY), by which dropout keys
its masks (modeling.DropoutKeys): an example draws the same masks in a
batch of any length or size, though other masks than tf.nn.dropout draws
in a full-length run. --group_by_length keeps each training
step's examples, the random batch the step takes without it, and computes
them as micro-batches of like length: the step's examples are sorted by
length and cut into step_pieces micro-batches, each cut to its own
longest, whose gradients the step accumulates into its one update (the
engine's gradient accumulation). The update is the one of the whole batch
to float32 round-off, dropout included, with the padding of a sorted batch. Grouping whole
batches by length instead (windows of batches sorted by length, even with
each class sorted on its own) gave batches that are not random samples,
and on small data that trained worse models in float32 and bf16 alike
(BENCHMARKS.md, "Grouping by length").
"""

import collections
import heapq

import tensorflow as tf

from ..plumbing.errors import UsageError

# The feature that carries an example's position in the input: for in_input_order, and in
# training the key of its dropout masks.
INDEX_KEY = "example_index"

# The [batch, seq] features of the classifier, SQuAD and feature extraction, cut by trim_batch.
SEQUENCE_KEYS = ("input_ids", "input_mask", "segment_ids")

# --length_bucket's default under XLA, which compiles a program for each batch length.
XLA_LENGTH_BUCKET = 16
# Evaluation and prediction sort windows of this many batches by length.
PREDICT_WINDOW_BATCHES = 64
# --group_by_length computes the examples of a training step as up to this many micro-batches.
GROUP_PIECES = 4


# How an input_fn batches: length_bucket 0 computes full length; window_batches
# > 0 sorts windows of that many batches by length (in training: the
# micro-batches of one step).
Settings = collections.namedtuple("Settings", ["length_bucket", "window_batches"])
OFF = Settings(0, 0)


def check_settings(length_bucket, cut_in_training, group_by_length, use_tpu):
    """Raises UsageError on padding settings (flags) that cannot work together."""
    if length_bucket < 0:
        raise UsageError(f"--length_bucket={length_bucket}: must be 0 or positive")
    if cut_in_training and length_bucket == 0:
        raise UsageError("--dynamic_padding needs --length_bucket > 0")
    if group_by_length and not cut_in_training:
        raise UsageError("--group_by_length needs --dynamic_padding")
    if cut_in_training and use_tpu:
        raise UsageError("--dynamic_padding: TPUs need static shapes; leave it off with --use_tpu")


def step_pieces(batch_size):
    """How many micro-batches --group_by_length computes a training batch of `batch_size`
    examples (per replica and accumulation step) as: the largest divisor of it up to
    GROUP_PIECES, so that the pieces are of one size and average exactly."""
    return max(d for d in range(1, GROUP_PIECES + 1) if batch_size % d == 0)


def settings(
    is_training,
    length_bucket=XLA_LENGTH_BUCKET,
    cut_in_training=False,
    step_micro_batches=0,
    use_tpu=False,
    window_batches=None,
):
    """The Settings of an input_fn: OFF on TPUs (static shapes), with length_bucket 0,
    and in training unless `cut_in_training` (--dynamic_padding).

    `step_micro_batches` > 0 (--group_by_length) sorts the examples of each
    training step, made of that many micro-batches, by length before they are
    cut into micro-batches. `window_batches` is the sorting window of
    evaluation and prediction (default PREDICT_WINDOW_BATCHES; keep it small
    where each output is large).
    """
    if use_tpu or length_bucket == 0:
        return OFF
    if is_training:
        if not cut_in_training:
            return OFF
        return Settings(length_bucket, step_micro_batches)
    if window_batches is None:
        window_batches = PREDICT_WINDOW_BATCHES
    return Settings(length_bucket, window_batches)


def real_lengths(input_mask):
    """[batch] int32: one past the last position whose input_mask is 1 (0 if none)."""
    mask = tf.cast(tf.not_equal(input_mask, 0), tf.int32)
    positions = tf.range(1, tf.shape(mask)[-1] + 1, dtype=tf.int32)
    return tf.reduce_max(mask * positions, axis=-1)


def trim_batch(batch, length_bucket, keys):
    """Cuts the features named by `keys` ([batch, seq]) to the batch's bucketed real length.

    The length is the longest real sequence (from input_mask), rounded up to a
    multiple of `length_bucket`, at least one bucket and at most seq.
    """
    seq_length = tf.shape(batch["input_mask"])[1]
    longest = tf.reduce_max(real_lengths(batch["input_mask"]))
    rounded = tf.maximum((longest + length_bucket - 1) // length_bucket, 1) * length_bucket
    length = tf.minimum(rounded, seq_length)
    trimmed = dict(batch)
    for key in keys:
        trimmed[key] = batch[key][:, :length]
    return trimmed


def _sort_window(window, batch_size):
    lengths = real_lengths(window["input_mask"])
    count = tf.shape(lengths)[0]
    whole = count - count % batch_size
    order = tf.concat([tf.argsort(lengths[:whole], stable=True), tf.range(whole, count)], 0)
    return {key: tf.gather(value, order) for key, value in window.items()}


def sort_by_length(dataset, window_size, batch_size=1):
    """Reorders an unbatched dataset of feature dicts so each run of `window_size`
    examples comes shortest first (ties keep their order).

    Examples past the last whole batch of `batch_size` keep their place at the
    end, so batching the result gives the same partial last batch as batching
    the input. Evaluation's "loss" is the mean of the batch losses: with every
    other batch whole, that mean is the original's whatever the sorting did.
    """
    sort = tf.autograph.experimental.do_not_convert(
        lambda window: _sort_window(window, batch_size)
    )
    return dataset.batch(window_size).map(sort).unbatch()


def with_index(dataset):
    """Adds INDEX_KEY (int64, 0, 1, ...) to each example of an unbatched dataset of dicts."""
    return dataset.enumerate().map(
        tf.autograph.experimental.do_not_convert(
            lambda index, example: {**example, INDEX_KEY: index}
        )
    )


def batch(dataset, batch_size, drop_remainder, settings, is_training, keys=SEQUENCE_KEYS):
    """Batches a parsed, unbatched dataset of feature dicts, without padding work.

    With settings.length_bucket 0 this is dataset.batch(batch_size,
    drop_remainder). Otherwise each batch's `keys` ([batch, seq] features)
    are cut by trim_batch, and training examples get INDEX_KEY, their number
    in the input (the key of their dropout masks). With settings.window_batches
    > 0 each window of that many batches is sorted by real length before
    batching: in evaluation and prediction the examples get INDEX_KEY first,
    for in_input_order; in training a window is the examples of one
    optimizer step, the batches its micro-batches (--group_by_length), so the
    step takes the examples it would take unsorted.
    """
    length_bucket, window_batches = settings
    if not length_bucket:
        return dataset.batch(batch_size, drop_remainder=drop_remainder)
    if is_training:
        dataset = with_index(dataset)
    if window_batches:
        window_size = window_batches * batch_size
        if is_training:
            dataset = sort_by_length(dataset, window_size)
        else:
            dataset = sort_by_length(with_index(dataset), window_size, batch_size)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return dataset.map(
        tf.autograph.experimental.do_not_convert(lambda b: trim_batch(b, length_bucket, keys))
    )


def pass_index(features, predictions):
    """Adds the example index to a model_fn's predictions when the input carries it."""
    if INDEX_KEY in features:
        predictions = dict(predictions)
        predictions[INDEX_KEY] = features[INDEX_KEY]
    return predictions


def in_input_order(predictions, key=INDEX_KEY, start=0):
    """Yields the per-example prediction dicts sorted by their `key`, as they arrive.

    The keys are meant to be consecutive integers from `start`; a prediction
    is held only until those before it have come, so memory stays within a
    sorting window (whatever is left at the end follows in key order). Dicts
    without `key` pass through in the order they came.
    """
    pending = []
    expected = start
    for count, prediction in enumerate(predictions):
        if key not in prediction:
            yield prediction
            continue
        index = int(prediction[key])
        heapq.heappush(pending, (index, count, prediction))
        while pending and pending[0][0] <= expected:
            index, _, ready = heapq.heappop(pending)
            expected = index + 1
            yield ready
    while pending:
        yield heapq.heappop(pending)[2]
