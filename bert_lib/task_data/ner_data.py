"""CoNLL files for token classification, without flags: reading, windows, records, scores.

What run_ner.py does to its data lives here, apart from the script, so
that a notebook or another script can read CoNLL files, cut sentences into
windows, write and score tags the same way without defining the script's
flags; every setting is an argument. In order:

- InputExample (a sentence) and InputFeatures (one window of it);
- read_conll (columns, the tag column, -DOCSTART-), the tag schemes
  (IOB1, IOB2, IOBES) and the checks of tags against them and a label set
  (the tag set itself, from --labels, labels.txt or the training tags, is
  label_set.py's);
- get_entities and conll_scores: entities decoded and counted as conlleval
  does;
- sentence_windows and owning_windows: long sentences as overlapping
  windows, each word predicted in one of them; convert_examples_to_features
  and the TFRecord writer;
- word_predictions (window outputs back onto words) and
  format_predictions (test_predictions.txt).
"""

import os

import numpy as np
import tensorflow as tf
from absl import logging

import tokenization

from ..plumbing import startup_checks
from ..plumbing.errors import UsageError
from ..plumbing.progress import Progress
from . import dynamic_padding, features

OUTSIDE = "O"
SCHEME_PREFIXES = {"IOB1": "BI", "IOB2": "BI", "IOBES": "BIES"}
DOCSTART = "-DOCSTART-"


class InputExample:
    """One sentence: its words, their tags (None for unlabelled test data) and lines."""

    def __init__(self, guid, words, labels=None, line_numbers=None):
        """Holds one sentence.

        Args:
          guid: unique id of the sentence (used in logs only).
          words: the words, as in the file's first column.
          labels: one tag per word, or None when the file has no tags.
          line_numbers: the 1-based file line of each word, to write
            predictions back next to it.
        """
        self.guid = guid
        self.words = words
        self.labels = labels
        self.line_numbers = line_numbers

    def __repr__(self):
        return f"InputExample(guid={self.guid!r}, words={self.words!r}, labels={self.labels!r})"


class InputFeatures:
    """One window of a sentence, padded to max_seq_length.

    label_mask is 1 on the positions scored in this window (the first piece
    of each word the window owns) and 0 elsewhere; word_ids gives, for those
    positions, the index of the word in its sentence (-1 elsewhere), and
    example_index the sentence. Padding windows have label_mask all 0.
    """

    def __init__(
        self, input_ids, input_mask, segment_ids, label_ids, label_mask, example_index, word_ids
    ):
        self.input_ids = input_ids
        self.input_mask = input_mask
        self.segment_ids = segment_ids
        self.label_ids = label_ids
        self.label_mask = label_mask
        self.example_index = example_index
        self.word_ids = word_ids


# ---------------------------------------------------------------------------
# CoNLL files.


def read_conll(path, tag_column=-1, with_tags=True):
    """Reads a CoNLL file into one InputExample per sentence.

    Every word line must have as many whitespace-separated columns as the
    file's first word line; -DOCSTART- lines and blank lines end a sentence.
    With `with_tags` the tag is read from `tag_column` (which may not be the
    word column 0); without, labels are None. A missing file, a line with
    the wrong number of columns or a file without words is a ValueError
    naming the file (and line).
    """
    if not tf.io.gfile.exists(path):
        raise UsageError(f"{path}: no such file")
    lines = startup_checks.read_text(path).splitlines()
    examples = []
    words, tags, numbers = [], [], []
    num_columns = None

    def end_sentence():
        if words:
            examples.append(
                InputExample(
                    f"{os.path.basename(path)}-{len(examples)}",
                    list(words),
                    list(tags) if with_tags else None,
                    list(numbers),
                )
            )
        words.clear()
        tags.clear()
        numbers.clear()

    for line_number, line in enumerate(lines, start=1):
        columns = tokenization.convert_to_unicode(line).split()
        if not columns or columns[0] == DOCSTART:
            end_sentence()
            continue
        if num_columns is None:
            num_columns = len(columns)
            if with_tags:
                _check_tag_column(path, line_number, num_columns, tag_column)
        if len(columns) != num_columns:
            raise UsageError(
                f"{path}, line {line_number}: {len(columns)} columns where the file's first "
                f"word line has {num_columns}"
            )
        words.append(columns[0])
        numbers.append(line_number)
        if with_tags:
            tags.append(columns[tag_column])
    end_sentence()
    if not examples:
        raise UsageError(f"{path}: no sentences (the file holds no word lines)")
    return examples


def _check_tag_column(path, line_number, num_columns, tag_column):
    index = tag_column if tag_column >= 0 else num_columns + tag_column
    if not 0 < index < num_columns:
        raise UsageError(
            f"{path}, line {line_number}: --tag_column={tag_column} does not name a tag "
            f"column of a line with {num_columns} columns (column 0 is the word)"
        )


def check_tag(tag, scheme):
    """Raises ValueError unless `tag` is O or <prefix>-<TYPE> with a prefix of `scheme`."""
    prefix, _, entity_type = tag.partition("-")
    if tag != OUTSIDE and not (len(prefix) == 1 and prefix in SCHEME_PREFIXES[scheme]):
        allowed = ", ".join(f"{p}-" for p in SCHEME_PREFIXES[scheme])
        raise UsageError(f"tag {tag!r} is not O or {allowed}<TYPE> (--tag_scheme={scheme})")
    if tag != OUTSIDE and not entity_type:
        raise UsageError(f"tag {tag!r} has no entity type after its prefix")


def check_example_tags(examples, path, scheme, label_list=None):
    """Checks every tag against the scheme and, if given, the label set.

    A bad tag is a ValueError naming the file and line.
    """
    known = set(label_list) if label_list is not None else None
    for example in examples:
        for tag, line_number in zip(example.labels, example.line_numbers):
            try:
                check_tag(tag, scheme)
            except ValueError as e:
                raise UsageError(f"{path}, line {line_number}: {e}") from None
            if known is not None and tag not in known:
                raise UsageError(
                    f"{path}, line {line_number}: tag {tag!r} is not in the label set "
                    f"({', '.join(label_list)})"
                )


# ---------------------------------------------------------------------------
# Entity scoring, as conlleval.


def _split_tag(tag):
    """('O', '') for O, else (prefix, type) of 'B-PER'."""
    if tag == OUTSIDE:
        return OUTSIDE, ""
    prefix, _, entity_type = tag.partition("-")
    return prefix, entity_type


def _starts(prev_prefix, prefix, prev_type, entity_type):
    if prefix in ("B", "S"):
        return True
    if prefix in ("I", "E") and prev_prefix in ("O", "E", "S"):
        return True  # conlleval's rule: an I- (or E-) after O or after a closed entity
    return prefix != OUTSIDE and prev_type != entity_type


def _ends(prev_prefix, prefix, prev_type, entity_type):
    if prev_prefix in ("E", "S"):
        return True
    if prev_prefix in ("B", "I") and prefix in ("B", "S", OUTSIDE):
        return True
    return prev_prefix != OUTSIDE and prev_type != entity_type


def get_entities(tags):
    """The entities of one sentence's tags as (type, start, end) spans, end exclusive.

    Decoded by conlleval's rules, which read IOB1, IOB2 and IOBES alike: B-
    and S- always start an entity, and so does an I- or E- after O, after an
    E- / S-, or after a tag of another type; an entity ends before O, B-,
    S-, a change of type, after E- or S-, and at the end of the sentence.
    """
    entities = []
    start = None
    prev_prefix, prev_type = OUTSIDE, ""
    for i, tag in enumerate(list(tags) + [OUTSIDE]):
        prefix, entity_type = _split_tag(tag)
        if start is not None and _ends(prev_prefix, prefix, prev_type, entity_type):
            entities.append((prev_type, start, i))
            start = None
        if _starts(prev_prefix, prefix, prev_type, entity_type):
            start = i
        prev_prefix, prev_type = prefix, entity_type
    return entities


def _f1(correct, guessed, gold):
    precision = correct / guessed if guessed else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def conll_scores(gold_sentences, predicted_sentences, entity_types=()):
    """Entity-level precision, recall and F1 and token accuracy, as conlleval counts.

    An entity counts as correct when a predicted one has the same type,
    start and end as a gold one. Returns fractions (0-1) under the keys
    eval_precision, eval_recall, eval_f1, eval_f1_<TYPE> (for every type in
    `entity_types` and every type seen) and eval_token_accuracy (words whose
    whole tag is right); a ratio with a zero denominator is 0.
    """
    counts = {}  # type -> [correct, guessed, gold]
    for entity_type in entity_types:
        counts.setdefault(entity_type, [0, 0, 0])
    right_words = total_words = 0
    for gold_tags, predicted_tags in zip(gold_sentences, predicted_sentences):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(f"{len(gold_tags)} gold tags but {len(predicted_tags)} predicted")
        gold = set(get_entities(gold_tags))
        guessed = set(get_entities(predicted_tags))
        for entity_type, *_ in gold:
            counts.setdefault(entity_type, [0, 0, 0])[2] += 1
        for entity_type, *_ in guessed:
            counts.setdefault(entity_type, [0, 0, 0])[1] += 1
        for entity_type, *_ in gold & guessed:
            counts[entity_type][0] += 1
        right_words += sum(g == p for g, p in zip(gold_tags, predicted_tags))
        total_words += len(gold_tags)
    totals = [sum(c[i] for c in counts.values()) for i in range(3)]
    precision, recall, f1 = _f1(*totals)
    result = {
        "eval_precision": precision,
        "eval_recall": recall,
        "eval_f1": f1,
        "eval_token_accuracy": right_words / total_words if total_words else 0.0,
    }
    for entity_type, (correct, guessed, gold) in counts.items():
        result[f"eval_f1_{entity_type}"] = _f1(correct, guessed, gold)[2]
    return result


def entity_types(label_list):
    """The entity types named by a tag set, sorted."""
    return sorted({_split_tag(label)[1] for label in label_list if label != OUTSIDE})


# ---------------------------------------------------------------------------
# Windows and records.


def sentence_windows(word_starts, num_pieces, max_pieces, stride):
    """The (start, end) piece ranges of the windows covering one sentence.

    Each window holds up to `max_pieces` pieces and starts at a word's first
    piece; the next one starts at the first word beginning at least
    `stride` pieces later (stride <= max_pieces, so no word's first piece
    is skipped). One window when the sentence fits.
    """
    windows = []
    start = 0
    while True:
        end = min(start + max_pieces, num_pieces)
        windows.append((start, end))
        if end >= num_pieces:
            return windows
        later = [s for s in word_starts if s >= start + stride]
        if not later:
            return windows  # the rest belongs to a word already begun
        start = later[0]


def owning_windows(word_starts, windows):
    """For each word, the index of the window it is predicted in.

    Of the windows holding a word's first piece, the one where it has the
    most context: the largest min(pieces left of it, pieces right of it),
    plus a hundredth of the window's length to break ties; the earliest on
    equal scores.
    """
    owners = []
    for piece in word_starts:
        best, best_score = None, None
        for index, (start, end) in enumerate(windows):
            if start <= piece < end:
                score = min(piece - start, end - 1 - piece) + 0.01 * (end - start)
                if best_score is None or score > best_score:
                    best, best_score = index, score
        owners.append(best)
    return owners


def convert_single_example(ex_index, example, label_map, max_seq_length, window_stride, tokenizer):
    """Converts one sentence into the InputFeatures of its windows.

    Layout "[CLS] pieces [SEP]", segment ids 0, zero-padded. A word's label
    goes on its first piece, in the one window that owns the word (see
    owning_windows); a word the tokenizer drops entirely becomes [UNK] so
    it is still predicted. Sentences without labels get label id 0.
    """
    pieces, word_starts = [], []
    for word in example.words:
        word_starts.append(len(pieces))
        pieces.extend(tokenizer.tokenize(word) or ["[UNK]"])
    windows = sentence_windows(word_starts, len(pieces), max_seq_length - 2, window_stride)
    owners = owning_windows(word_starts, windows)

    result = []
    for window_index, (start, end) in enumerate(windows):
        tokens = ["[CLS]"] + pieces[start:end] + ["[SEP]"]
        input_ids = tokenizer.convert_tokens_to_ids(tokens)
        padding = [0] * (max_seq_length - len(input_ids))
        input_mask = [1] * len(input_ids) + padding
        label_ids = [0] * max_seq_length
        label_mask = [0] * max_seq_length
        word_ids = [-1] * max_seq_length
        for word_index, (piece, owner) in enumerate(zip(word_starts, owners)):
            if owner != window_index:
                continue
            position = 1 + piece - start
            label_mask[position] = 1
            word_ids[position] = word_index
            if example.labels is not None:
                label_ids[position] = label_map[example.labels[word_index]]
        feature = InputFeatures(
            input_ids=input_ids + padding,
            input_mask=input_mask,
            segment_ids=[0] * max_seq_length,
            label_ids=label_ids,
            label_mask=label_mask,
            example_index=ex_index,
            word_ids=word_ids,
        )
        if ex_index < 5:
            logging.info("*** Example ***")
            logging.info(
                "guid: %s (window %d of %d)", example.guid, window_index + 1, len(windows)
            )
            logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in tokens))
            logging.info("input_ids: %s", " ".join(map(str, feature.input_ids)))
            logging.info("label_ids: %s", " ".join(map(str, label_ids)))
            logging.info("label_mask: %s", " ".join(map(str, label_mask)))
        result.append(feature)
    return result


def padding_features(max_seq_length):
    """An all-zero window scored nowhere, to fill a TPU's last batch."""
    zeros = [0] * max_seq_length
    return InputFeatures(zeros, zeros, zeros, zeros, zeros, -1, [-1] * max_seq_length)


def convert_examples_to_features(examples, label_list, max_seq_length, window_stride, tokenizer):
    """Converts every sentence into windows (InputFeatures), in order."""
    label_map = {label: i for i, label in enumerate(label_list)}
    progress = Progress("Converting", len(examples), "sentences")
    result = []
    for ex_index, example in enumerate(examples):
        progress.update(ex_index)
        result.extend(
            convert_single_example(
                ex_index, example, label_map, max_seq_length, window_stride, tokenizer
            )
        )
    return result


def file_based_write_features(feature_list, output_file):
    """Writes windows as tf.train.Examples: input_ids, input_mask, segment_ids,
    label_ids, label_mask (int64 [max_seq_length] each). The file appears only complete."""
    with features.atomic_record_writers([output_file]) as (writer,):
        for feature in feature_list:
            tf_example = features.make_example(
                [
                    ("input_ids", features.create_int_feature(feature.input_ids)),
                    ("input_mask", features.create_int_feature(feature.input_mask)),
                    ("segment_ids", features.create_int_feature(feature.segment_ids)),
                    ("label_ids", features.create_int_feature(feature.label_ids)),
                    ("label_mask", features.create_int_feature(feature.label_mask)),
                ]
            )
            writer.write(tf_example.SerializeToString())


# ---------------------------------------------------------------------------
# Predictions back onto words.


def word_predictions(examples, feature_list, outputs, label_list):
    """Each sentence's predicted tags, one per word, from the windows' outputs.

    `outputs` are the probabilities [seq, num_labels] of `feature_list`, in
    order. Every word must be scored in exactly one window; anything else is
    a RuntimeError (a bug, not bad input).
    """
    predicted = [[None] * len(example.words) for example in examples]
    for feature, output in zip(feature_list, outputs):
        if feature.example_index < 0:
            continue
        tags = predicted[feature.example_index]
        ids = np.argmax(np.asarray(output), axis=-1)
        for position, word_index in enumerate(feature.word_ids):
            if word_index < 0:
                continue
            if tags[word_index] is not None:
                raise RuntimeError(f"word {word_index} of {feature.example_index} scored twice")
            tags[word_index] = label_list[int(ids[position])]
    for example, tags in zip(examples, predicted):
        if None in tags:
            raise RuntimeError(f"sentence {example.guid}: a word got no prediction")
    return predicted


def format_predictions(path, examples, predicted):
    """test_predictions.txt text: every line of `path` with a tag column appended.

    Word lines get their predicted tag, -DOCSTART- lines O (so conlleval
    reads the file), blank lines stay blank; the separator is a tab if the
    line holds one, else a space.
    """
    tag_of_line = {}
    for example, tags in zip(examples, predicted):
        tag_of_line.update(zip(example.line_numbers, tags))
    lines = startup_checks.read_text(path).splitlines()
    out = []
    for line_number, line in enumerate(lines, start=1):
        line = line.rstrip()
        if not line.strip():
            out.append("\n")
            continue
        separator = "\t" if "\t" in line else " "
        out.append(f"{line}{separator}{tag_of_line.get(line_number, OUTSIDE)}\n")
    return "".join(out)


# Every feature of a window's record is one value per position.
_RECORD_KEYS = ("input_ids", "input_mask", "segment_ids", "label_ids", "label_mask")


def file_based_input_fn_builder(
    input_file, seq_length, is_training, drop_remainder, padding=dynamic_padding.OFF
):
    """Returns an input_fn(params) reading `input_file` in batches of params["batch_size"].

    Training repeats and shuffles the records (buffer 100); eval and predict
    read them once, in order. Every feature comes out int32 [seq_length],
    or cut to the batch's longest window by `padding` (dynamic_padding.Settings,
    which may also group windows by length; their predictions carry their index).
    """
    name_to_features = {
        name: tf.io.FixedLenFeature([seq_length], tf.int64) for name in _RECORD_KEYS
    }
    return features.record_input_fn_builder(
        input_file, name_to_features, is_training, drop_remainder, padding, cut_keys=_RECORD_KEYS
    )
