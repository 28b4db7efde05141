"""Pieces every script shares for turning features into TFRecords and back.

The original repeated these in each script; here each lives once:
tf.train.Feature builders, an all-or-nothing TFRecord writer, the record
decoder that casts int64 to int32 (TPUs and XLA want int32) and the
input_fn over fixed-length records of the classifier and SQuAD. How a text
or a pair becomes one sequence of word pieces is text_pairs.py's.
"""

import collections
import contextlib

import tensorflow as tf

from ..plumbing import atomic_write
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
    cut_keys=dynamic_padding.SEQUENCE_KEYS,
):
    """Returns an input_fn(params) reading fixed-length records in batches of params["batch_size"].

    Training repeats the records forever and shuffles them (buffer 100);
    eval and predict read them once, in order (parallel decoding keeps the
    order). Integer features come out as int32 (decode_record). `padding`
    (dynamic_padding.Settings) cuts the `cut_keys` features of each batch
    and sorts by length where it says (dynamic_padding.batch).
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
        )

    return input_fn
