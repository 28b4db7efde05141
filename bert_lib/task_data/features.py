"""Pieces every script shares for turning examples into TFRecords and back.

The original repeated these in each script; here each lives once:
tf.train.Feature builders, an all-or-nothing TFRecord writer, the record
decoder that casts int64 to int32 (TPUs and XLA want int32), the input_fn
over fixed-length records of the classifier and SQuAD, and the pair
truncation used by the classifier and feature extractor.
"""

import collections
import contextlib
import re

import tensorflow as tf

from ..plumbing import atomic_write
from ..plumbing.errors import UsageError
from . import dynamic_padding


def create_int_feature(values):
    """Returns an int64 tf.train.Feature holding `values`."""
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def create_float_feature(values):
    """Returns a float tf.train.Feature holding `values`."""
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def make_example(named_features):
    """Builds a tf.train.Example from (name, tf.train.Feature) pairs."""
    ordered = collections.OrderedDict(named_features)
    return tf.train.Example(features=tf.train.Features(feature=ordered))


@contextlib.contextmanager
def atomic_record_writers(output_files, flag=None):
    """Yields one TFRecordWriter per path; the files appear only on success.

    Records go to temporary names that are renamed into place when the
    block exits normally (atomic_write.atomic_paths), so an error or
    interrupt leaves no half-written file; a failed write (a full disk)
    is one UsageError naming the output file.
    """
    with atomic_write.atomic_paths(output_files, flag) as temp_files:
        writers = []
        try:
            for temp, final in zip(temp_files, output_files):
                writers.append(atomic_write.GuardedWriter(tf.io.TFRecordWriter(temp), final, flag))
            yield writers
        except BaseException:
            for writer in writers:
                with contextlib.suppress(Exception):
                    writer.close()
            raise
        for writer in writers:
            writer.close()


def decode_record(record, name_to_features):
    """Parses one serialized tf.train.Example, casting int64 features to int32."""
    example = tf.io.parse_single_example(record, name_to_features)
    for name in list(example.keys()):
        tensor = example[name]
        if tensor.dtype == tf.int64:
            example[name] = tf.cast(tensor, tf.int32)
    return example


def record_input_fn_builder(
    input_file,
    name_to_features,
    is_training,
    drop_remainder,
    padding=None,
    label_key=None,
    cut_keys=dynamic_padding.SEQUENCE_KEYS,
):
    """Returns an input_fn(params) reading fixed-length records in batches of params["batch_size"].

    Training repeats the records forever and shuffles them (buffer 100);
    eval and predict read them once, in order (parallel decoding keeps the
    order). Integer features come out as int32 (decode_record). `padding`
    (dynamic_padding.Settings) cuts the `cut_keys` features of each batch
    and groups by length, by class within a window when `label_key` names
    one class id per example (dynamic_padding.batch).
    """

    def input_fn(params):
        dataset = tf.data.TFRecordDataset(input_file)
        if is_training:
            dataset = dataset.repeat()
            dataset = dataset.shuffle(buffer_size=100)
        dataset = dataset.map(
            tf.autograph.experimental.do_not_convert(
                lambda record: decode_record(record, name_to_features)
            ),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        if padding is None:
            return dataset.batch(params["batch_size"], drop_remainder=drop_remainder)
        return dynamic_padding.batch(
            dataset,
            params["batch_size"],
            drop_remainder,
            padding,
            is_training,
            keys=cut_keys,
            label_key=label_key,
        )

    return input_fn


# [CLS] a [SEP] b [SEP]: the fewest positions a sentence pair fits in.
PAIR_MINIMUM_LENGTH = 5


def check_room_for_pairs(examples, max_seq_length, source):
    """Refuses a max_seq_length too short for the sentence pairs among `examples` (both
    texts would be cut to nothing); `source` names where they come from."""
    if max_seq_length < PAIR_MINIMUM_LENGTH and any(e.text_b for e in examples):
        raise UsageError(
            f"--max_seq_length={max_seq_length}: must be at least {PAIR_MINIMUM_LENGTH} for "
            f"the sentence pairs of {source} ([CLS] a [SEP] b [SEP])"
        )


def window_stride(stride, max_seq_length):
    """How many word pieces apart the windows of a long text start: `stride`
    (--window_stride), else half of what a window holds (max_seq_length less [CLS]
    and [SEP]), at least 1. A stride beyond a window is a UsageError: the windows
    would skip words."""
    max_pieces = max_seq_length - 2
    resolved = stride or max(1, max_pieces // 2)
    if not 1 <= resolved <= max_pieces:
        raise UsageError(
            f"--window_stride={stride} must be between 1 and max_seq_length - 2 "
            f"= {max_pieces}, or windows would skip words"
        )
    return resolved


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Pops tokens off the end of the longer list until both fit max_length.

    Trimming one token at a time from the longer side (from `tokens_b` on a
    tie) keeps more of the shorter text, which usually carries as much
    meaning per token as the longer one. Lists are changed in place.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


def pack_pair(tokenizer, tokens_a, tokens_b, max_seq_length):
    """Packs "[CLS] a [SEP]" or "[CLS] a [SEP] b [SEP]" into padded model inputs.

    A pair is first cut to max_seq_length - 3 pieces with truncate_seq_pair
    (changing `tokens_a` and `tokens_b` in place), a single text to
    max_seq_length - 2. Returns (tokens, input_ids, input_mask, segment_ids):
    the tokens unpadded; the three id lists padded with 0 to max_seq_length,
    the mask 1 on real tokens, segment ids 0 through the first [SEP] and 1
    after it.
    """
    if tokens_b:
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    else:
        tokens_a = tokens_a[: max_seq_length - 2]

    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + ["[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)

    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    padding = [0] * (max_seq_length - len(input_ids))
    input_mask = [1] * len(input_ids) + padding
    return tokens, input_ids + padding, input_mask, segment_ids + padding


_PAIR_PATTERN = re.compile(r"^(.*) \|\|\| (.*)$")


def split_text_pair(line):
    """Splits one plain-text input line into (text_a, text_b) at its last " ||| ".

    The line is stripped first; without the separator text_b is None. The
    feature extractor and the classifier's --predict_text_file read the same
    one-example-a-line files this way.
    """
    match = _PAIR_PATTERN.match(line.strip())
    if match is None:
        return line.strip(), None
    return match.group(1), match.group(2)
