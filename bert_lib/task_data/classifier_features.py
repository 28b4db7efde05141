"""Classification examples to model features and TFRecords: [CLS] a [SEP] (b [SEP]),
label ids or multi-hot vectors, and long texts cut into windows."""

import numpy as np
import tensorflow as tf
from absl import logging

import tokenization

from ..plumbing import startup_checks
from ..plumbing.errors import UsageError
from ..plumbing.progress import Progress
from . import dynamic_padding, features, text_pairs
from .classifier_data import InputExample, InputFeatures, PaddingInputExample


def convert_single_example(
    ex_index, example, label_list, max_seq_length, tokenizer, multi_label=False
):
    """Converts one `InputExample` into one `InputFeatures`.

    Layout: [CLS] a [SEP] for singles, [CLS] a [SEP] b [SEP] for pairs (segment
    ids 0 through the first [SEP], then 1), zero-padded to max_seq_length. Pairs
    are cut to max_seq_length - 3 tokens by trimming the longer side, singles to
    max_seq_length - 2. A None label_list means regression: label_id is the
    float value of the label. With `multi_label`, the label is a tuple of names
    and label_id a 0/1 list over label_list. A PaddingInputExample gives
    all-zero features with is_real_example=False. An unknown label is a
    ValueError.
    """
    if isinstance(example, PaddingInputExample):
        return InputFeatures(
            input_ids=[0] * max_seq_length,
            input_mask=[0] * max_seq_length,
            segment_ids=[0] * max_seq_length,
            label_id=_padding_label_id(label_list, multi_label),
            is_real_example=False,
        )

    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = None
    if example.text_b:
        tokens_b = tokenizer.tokenize(example.text_b)

    tokens, input_ids, input_mask, segment_ids = text_pairs.pack_pair(
        tokenizer, tokens_a, tokens_b, max_seq_length
    )

    if label_list is None:
        label_id = float(example.label)
    elif multi_label:
        label_id = multi_hot(example, label_list)
    else:
        label_map = {label: i for i, label in enumerate(label_list)}
        if example.label not in label_map:
            raise UsageError(
                f"Example {example.guid}: label {example.label!r} is not one of "
                f"{', '.join(map(str, label_list))}"
            )
        label_id = label_map[example.label]

    if ex_index < 5:
        logging.info("*** Example ***")
        logging.info("guid: %s", example.guid)
        logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in tokens))
        logging.info("input_ids: %s", " ".join(str(x) for x in input_ids))
        logging.info("input_mask: %s", " ".join(str(x) for x in input_mask))
        logging.info("segment_ids: %s", " ".join(str(x) for x in segment_ids))
        logging.info("label: %s (id = %s)", example.label, label_id)

    return InputFeatures(
        input_ids=input_ids,
        input_mask=input_mask,
        segment_ids=segment_ids,
        label_id=label_id,
        is_real_example=True,
    )


def _padding_label_id(label_list, multi_label):
    if label_list is None:
        return 0.0
    return [0] * len(label_list) if multi_label else 0


def multi_hot(example, label_list):
    """The 0/1 list over label_list of a multi-label example; unknown names are errors."""
    unknown = [name for name in example.label if name not in label_list]
    if unknown:
        raise UsageError(
            f"Example {example.guid}: label {unknown[0]!r} is not one of "
            f"{', '.join(map(str, label_list))}"
        )
    return [int(name in example.label) for name in label_list]


def window_spans(num_tokens, window, stride):
    """(start, length) of the windows covering `num_tokens` tokens.

    Windows hold `window` tokens and start `stride` apart; the last one ends
    at the last token. A text that fits is one window.
    """
    spans = []
    start = 0
    while True:
        length = min(window, num_tokens - start)
        spans.append((start, length))
        if start + length >= num_tokens:
            return spans
        start += min(length, stride)


def convert_example_windows(
    ex_index, example, label_list, max_seq_length, tokenizer, stride, multi_label=False
):
    """Converts one example into one InputFeatures per window of its text.

    A single text longer than max_seq_length - 2 word pieces becomes
    overlapping windows of that many pieces, starting `stride` apart (see
    window_spans), each wrapped in [CLS] ... [SEP] and carrying the example's
    label. Pairs and texts that fit give one InputFeatures, as
    convert_single_example.
    """
    first = convert_single_example(
        ex_index, example, label_list, max_seq_length, tokenizer, multi_label
    )
    if isinstance(example, PaddingInputExample) or example.text_b:
        return [first]
    tokens = tokenizer.tokenize(example.text_a)
    spans = window_spans(len(tokens), max_seq_length - 2, stride)
    # The first window is the text as convert_single_example truncates it.
    result = [first]
    for start, length in spans[1:]:
        _, input_ids, input_mask, segment_ids = text_pairs.pack_pair(
            tokenizer, tokens[start : start + length], None, max_seq_length
        )
        result.append(InputFeatures(input_ids, input_mask, segment_ids, first.label_id, True))
    return result


def convert_example(
    ex_index, example, label_list, max_seq_length, tokenizer, multi_label=False, window_stride=None
):
    """The InputFeatures of one example: one per window with `window_stride`, else one."""
    if window_stride:
        return convert_example_windows(
            ex_index, example, label_list, max_seq_length, tokenizer, window_stride, multi_label
        )
    return [
        convert_single_example(
            ex_index, example, label_list, max_seq_length, tokenizer, multi_label
        )
    ]


def convert_examples_with_owners(
    examples, label_list, max_seq_length, tokenizer, multi_label=False, window_stride=None
):
    """(InputFeatures of every example, in order; the example index of each), in memory."""
    feature_list, owners = [], []
    for ex_index, example in enumerate(examples):
        converted = convert_example(
            ex_index, example, label_list, max_seq_length, tokenizer, multi_label, window_stride
        )
        feature_list.extend(converted)
        owners.extend([ex_index] * len(converted))
    return feature_list, owners


def file_based_convert_examples_to_features(
    examples,
    label_list,
    max_seq_length,
    tokenizer,
    output_file,
    multi_label=False,
    window_stride=None,
):
    """Converts `InputExample`s into a TFRecord file of tf.train.Examples.

    Features, in order: input_ids, input_mask, segment_ids, label_ids (int64, or
    float for regression, or a 0/1 list with `multi_label`) and
    is_real_example. The file appears only complete. With `window_stride`,
    long single texts become several records (convert_example_windows).

    Returns the example index of each record, in order.
    """
    owners = []
    progress = Progress("Writing", len(examples), "examples")
    with features.atomic_record_writers([output_file]) as (writer,):
        for ex_index, example in enumerate(examples):
            progress.update(ex_index)
            converted = convert_example(
                ex_index,
                example,
                label_list,
                max_seq_length,
                tokenizer,
                multi_label,
                window_stride,
            )
            owners.extend([ex_index] * len(converted))
            for feature in converted:
                writer.write(_feature_record(feature, label_list).SerializeToString())
    return owners


def _feature_record(feature, label_list):
    """The tf.train.Example of one InputFeatures."""
    if label_list is None:
        label_feature = features.create_float_feature([feature.label_id])
    else:
        label_feature = features.create_int_feature(np.atleast_1d(feature.label_id))
    return features.make_example(
        [
            ("input_ids", features.create_int_feature(feature.input_ids)),
            ("input_mask", features.create_int_feature(feature.input_mask)),
            ("segment_ids", features.create_int_feature(feature.segment_ids)),
            ("label_ids", label_feature),
            ("is_real_example", features.create_int_feature([int(feature.is_real_example)])),
        ]
    )


def file_based_input_fn_builder(
    input_file,
    seq_length,
    is_training,
    drop_remainder,
    is_regression=False,
    num_labels=None,
    padding=dynamic_padding.OFF,
):
    """Returns an input_fn(params) reading `input_file` in batches of params["batch_size"].

    Training repeats the records and shuffles them (buffer 100); eval and
    predict read them once, in order. Integer features come out as int32;
    label_ids is float32 when `is_regression`, and [num_labels] 0/1 values
    when `num_labels` is given (multi-label records). `padding`
    (dynamic_padding.Settings) cuts and sorts the batches (dynamic_padding.batch).
    """
    label_shape = [] if num_labels is None else [num_labels]
    name_to_features = {
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature(label_shape, tf.float32 if is_regression else tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }

    return features.record_input_fn_builder(
        input_file, name_to_features, is_training, drop_remainder, padding
    )


def convert_examples_to_features(examples, label_list, max_seq_length, tokenizer):
    """Converts `InputExample`s into a list of `InputFeatures`."""
    progress = Progress("Converting", len(examples), "examples")
    result = []
    for ex_index, example in enumerate(examples):
        progress.update(ex_index)
        result.append(
            convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer)
        )
    return result


def read_text_examples(path, task):
    """InputExamples of a plain text file: one a line, "a ||| b" for pairs.

    Blank lines are skipped. Labels are placeholders of `task`'s kind
    (classifier_tasks.TaskKind: the first label, no label for multi-label,
    0 for regression); only the texts matter.
    """
    if task.is_regression:
        placeholder = "0"
    else:
        placeholder = () if task.multi_label else task.labels[0]
    examples = []
    for line_number, line in enumerate(startup_checks.text_lines(path), start=1):
        if not line.strip():
            continue
        text_a, text_b = text_pairs.split_text_pair(line)
        examples.append(InputExample(f"text-{line_number}", text_a, text_b, placeholder))
    if not examples:
        raise UsageError(f"--predict_text_file={path}: no text in the file")
    return examples
