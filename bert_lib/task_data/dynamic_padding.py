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

In training the same cut is opt-in (--dynamic_padding: dropout masks then
differ from a full-length run), and --group_by_length sorts each shuffle
window by length before batching, then shuffles the batches. Sorting alone
makes each batch a slice of one length, and wherever length goes with the
label that is a slice of mostly one label; runs grouped that way in
windows of 50 batches ended below full-length accuracy (BENCHMARKS.md,
"Real-text flags"). So where examples carry one class id each, a window is sorted by each
example's rank of length within its own class (stratified_order): every batch
then holds the window's mix of labels, each at the same quantile of its class's
lengths, which keeps almost all of the padding saved. The windows are short
(GROUP_WINDOW_BATCHES): past a few batches a longer window cuts hardly any
more padding, as lengths are rounded up to --length_bucket anyway, but makes
the batches more alike.
"""

import collections
import heapq

import tensorflow as tf

from ..plumbing.errors import UsageError

# The feature that carries an example's position in the input, for in_input_order.
INDEX_KEY = "example_index"

# The [batch, seq] features of the classifier, SQuAD and feature extraction, cut by trim_batch.
SEQUENCE_KEYS = ("input_ids", "input_mask", "segment_ids")

# --length_bucket's default under XLA, which compiles a program for each batch length.
XLA_LENGTH_BUCKET = 16
# Evaluation and prediction sort windows of this many batches by length.
PREDICT_WINDOW_BATCHES = 64
# Training shuffles, then sorts, windows of this many batches.
GROUP_WINDOW_BATCHES = 16


# How an input_fn batches: length_bucket 0 computes full length; window_batches
# > 0 sorts windows of that many batches by length.
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


def settings(
    is_training,
    length_bucket=XLA_LENGTH_BUCKET,
    cut_in_training=False,
    group_by_length=False,
    use_tpu=False,
    window_batches=None,
):
    """The Settings of an input_fn: OFF on TPUs (static shapes), with length_bucket 0,
    and in training unless `cut_in_training` (--dynamic_padding).

    `window_batches` is the sorting window of evaluation and prediction
    (default PREDICT_WINDOW_BATCHES; keep it small where each output is
    large); training sorts windows of GROUP_WINDOW_BATCHES batches with
    `group_by_length`.
    """
    if use_tpu or length_bucket == 0:
        return OFF
    if is_training:
        if not cut_in_training:
            return OFF
        return Settings(length_bucket, GROUP_WINDOW_BATCHES if group_by_length else 0)
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


def stratified_order(lengths, labels):
    """[n] int32: an order of a window that sorts each class by length and interleaves them.

    Each example's key is its length rank within its own class, as a
    fraction of the class's size ((rank + 0.5) / count); sorting by the key
    (ties by class id) lays the classes side by side, so any run of
    consecutive examples holds the window's share of each class, and its
    examples sit at the same quantile of their classes' lengths. `labels`
    are class ids in [0, n).
    """
    by_length = tf.argsort(lengths, stable=True)
    by_class = tf.gather(by_length, tf.argsort(tf.gather(labels, by_length), stable=True))
    sorted_labels = tf.gather(labels, by_class)
    counts = tf.math.bincount(sorted_labels, minlength=1)
    starts = tf.cumsum(counts, exclusive=True)
    position = tf.range(tf.size(labels, out_type=tf.int32), dtype=tf.int32)
    rank = position - tf.gather(starts, sorted_labels)
    key = (tf.cast(rank, tf.float64) + 0.5) / tf.cast(tf.gather(counts, sorted_labels), tf.float64)
    return tf.gather(by_class, tf.argsort(key, stable=True))


def _group_window(window, label_key):
    labels = window.get(label_key) if label_key else None
    if labels is None or labels.shape.rank != 1 or not labels.dtype.is_integer:
        return _sort_window(window, 1)  # by length alone
    order = stratified_order(real_lengths(window["input_mask"]), tf.cast(labels, tf.int32))
    return {key: tf.gather(value, order) for key, value in window.items()}


def group_by_length(dataset, window_size, label_key=None):
    """Reorders an unbatched training dataset so each window of `window_size` examples
    comes in length order: by length, or, when each example's `label_key` is one
    class id, by stratified_order (every run of examples keeps the window's mix
    of classes)."""
    group = tf.autograph.experimental.do_not_convert(lambda w: _group_window(w, label_key))
    return dataset.batch(window_size).map(group).unbatch()


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


def batch(
    dataset,
    batch_size,
    drop_remainder,
    settings,
    is_training,
    keys=SEQUENCE_KEYS,
    label_key=None,
):
    """Batches a parsed, unbatched dataset of feature dicts, without padding work.

    With settings.length_bucket 0 this is dataset.batch(batch_size,
    drop_remainder). Otherwise each batch's `keys` ([batch, seq] features)
    are cut by trim_batch. With settings.window_batches > 0 each window of
    that many batches is sorted by real length before batching: in
    evaluation and prediction the examples get INDEX_KEY first, for
    in_input_order; in training the examples are shuffled in a buffer of a
    window before the sorting, each window is ordered by group_by_length
    (stratified by class when `label_key` names one class id per example),
    and the batches are shuffled in a buffer of window_batches after it.
    """
    length_bucket, window_batches = settings
    if not length_bucket:
        return dataset.batch(batch_size, drop_remainder=drop_remainder)
    window_size = window_batches * batch_size
    if window_batches:
        if is_training:
            dataset = dataset.shuffle(window_size)
            dataset = group_by_length(dataset, window_size, label_key)
        else:
            dataset = sort_by_length(with_index(dataset), window_size, batch_size)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    dataset = dataset.map(
        tf.autograph.experimental.do_not_convert(lambda b: trim_batch(b, length_bucket, keys))
    )
    if window_batches and is_training:
        dataset = dataset.shuffle(window_batches)
    return dataset


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
