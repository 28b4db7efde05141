"""SQuAD data without flags: reading, windowing, n-best answers and the official scores.

run_squad.py is the script that fine-tunes and predicts; this module holds
everything it does to SQuAD data that needs no model and no flags, so a
notebook or another script can read a SQuAD (or plain question) file, cut
it into the model's windows, turn logits back into answer text and score
it by the official v1.1 / v2.0 rules. Every setting comes in as an argument;
run_squad.py reads its flags and passes them down. The outputs are the
original script's, byte for byte (predictions.json, nbest_predictions.json,
null_odds.json).
"""

import collections
import contextlib
import json
import math
import re
import string

import tensorflow as tf
from absl import logging

import tokenization

from ..plumbing import atomic_write, startup_checks
from ..plumbing.errors import UsageError
from ..plumbing.progress import Progress
from .features import atomic_record_writers, create_int_feature, make_example

# Characters that separate words in a SQuAD context (the narrow no-break space
# U+202F shows up in the data and must split words like a space does).
_SQUAD_WHITESPACE = frozenset([" ", "\t", "\r", "\n", "\u202f"])

# Features whose index is below this are logged in full while converting.
_NUM_LOGGED_EXAMPLES = 20


class SquadExample:
    """One question about one paragraph.

    `doc_tokens` are the paragraph's whitespace-separated words;
    `start_position` / `end_position` index them (inclusive). Questions
    without an answer (SQuAD 2.0) have positions -1 and `is_impossible`.
    """

    def __init__(
        self,
        qas_id,
        question_text,
        doc_tokens,
        orig_answer_text=None,
        start_position=None,
        end_position=None,
        is_impossible=False,
    ):
        self.qas_id = qas_id
        self.question_text = question_text
        self.doc_tokens = doc_tokens
        self.orig_answer_text = orig_answer_text
        self.start_position = start_position
        self.end_position = end_position
        self.is_impossible = is_impossible

    def __str__(self):
        return self.__repr__()

    def __repr__(self):
        parts = [
            f"qas_id: {tokenization.printable_text(self.qas_id)}",
            f"question_text: {tokenization.printable_text(self.question_text)}",
            "doc_tokens: [{}]".format(" ".join(self.doc_tokens)),
        ]
        # As before, positions are shown only when the start is a true value.
        if self.start_position:
            parts.append(f"start_position: {self.start_position}")
            parts.append(f"end_position: {self.end_position}")
            parts.append(f"is_impossible: {self.is_impossible!r}")
        return ", ".join(parts)


class InputFeatures:
    """One window of one example, ready for the model.

    `token_to_orig_map` and `token_is_max_context` are keyed by position in
    `tokens` and cover only the document part of the window.
    """

    def __init__(
        self,
        unique_id,
        example_index,
        doc_span_index,
        tokens,
        token_to_orig_map,
        token_is_max_context,
        input_ids,
        input_mask,
        segment_ids,
        start_position=None,
        end_position=None,
        is_impossible=None,
    ):
        self.unique_id = unique_id
        self.example_index = example_index
        self.doc_span_index = doc_span_index
        self.tokens = tokens
        self.token_to_orig_map = token_to_orig_map
        self.token_is_max_context = token_is_max_context
        self.input_ids = input_ids
        self.input_mask = input_mask
        self.segment_ids = segment_ids
        self.start_position = start_position
        self.end_position = end_position
        self.is_impossible = is_impossible


# ---------------------------------------------------------------------------
# Reading SQuAD files (and plain question files)


def load_squad_json(input_file):
    """Returns the parsed SQuAD file; bad JSON is a UsageError naming the file."""
    try:
        text = startup_checks.read_text(input_file)
    except tf.errors.OpError as err:
        raise UsageError(f"{input_file}: cannot read the SQuAD file ({err.message})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(
            f"{input_file}: not a valid SQuAD JSON file ({err.msg} at line {err.lineno} "
            f"column {err.colno})"
        ) from None


_JSON_KIND = {dict: "object", list: "list", str: "string", int: "number"}


def _require(container, key, input_file, where, kind=None):
    """Returns container[key], or raises a UsageError naming the file and the key."""
    if not isinstance(container, dict):
        raise UsageError(f"{input_file}: {where} should be a JSON object")
    if key not in container:
        raise UsageError(f"{input_file}: missing key '{key}' in {where}")
    value = container[key]
    if kind is not None and not isinstance(value, kind):
        raise UsageError(f"{input_file}: '{key}' in {where} should be a JSON {_JSON_KIND[kind]}")
    return value


def _squad_paragraphs(input_data, input_file):
    """Yields (where, context, qas) for every paragraph, checking the layout."""
    data = _require(input_data, "data", input_file, "the top level", list)
    for i, entry in enumerate(data):
        paragraphs = _require(entry, "paragraphs", input_file, f"data[{i}]", list)
        for j, paragraph in enumerate(paragraphs):
            where = f"data[{i}].paragraphs[{j}]"
            context = _require(paragraph, "context", input_file, where, str)
            qas = _require(paragraph, "qas", input_file, where, list)
            yield where, context, qas


def split_context(paragraph_text):
    """Splits a context on SQuAD whitespace.

    Returns (doc_tokens, char_to_word_offset): the words, and for every
    character the index of the word it belongs to (whitespace belongs to the
    word before it, -1 before the first word).
    """
    doc_tokens = []
    char_to_word_offset = []
    prev_is_whitespace = True
    for char in paragraph_text:
        if char in _SQUAD_WHITESPACE:
            prev_is_whitespace = True
        else:
            if prev_is_whitespace:
                doc_tokens.append(char)
            else:
                doc_tokens[-1] += char
            prev_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def read_squad_examples(input_file, is_training, version_2_with_negative):
    """Reads a SQuAD json file (or a plain question file) into a list of SquadExample.

    For training, every answerable question needs exactly one answer (with
    `version_2_with_negative`, every question an "is_impossible" key); an
    answer whose text cannot be found in the words its character offsets
    cover is logged and the question skipped, unless most of them are, or
    more than MAX_MISSED_SHARE and at least MANY_MISSED (the offsets are
    wrong then). Questions
    to predict need ids of their own. A malformed file raises UsageError
    naming the file and the missing key (or the question id).
    """
    records = read_simple_questions(input_file)
    if records is not None:
        if is_training:
            raise UsageError(
                f"{input_file}: a plain list of questions has no answers to train on; "
                "training needs SQuAD's layout"
            )
        examples = [
            _simple_example(record, where, str(i), input_file)
            for i, (where, record) in enumerate(records)
        ]
        _check_unique_ids(examples, [where for where, _ in records], input_file)
        return examples
    input_data = load_squad_json(input_file)

    examples, wheres, misses = [], [], []
    for paragraph_where, paragraph_text, qas in _squad_paragraphs(input_data, input_file):
        doc_tokens, char_to_word_offset = split_context(paragraph_text)
        for k, qa in enumerate(qas):
            where = f"{paragraph_where}.qas[{k}]"
            example = _read_question(
                qa,
                where,
                doc_tokens,
                char_to_word_offset,
                input_file,
                is_training,
                version_2_with_negative,
            )
            if isinstance(example, _Miss):
                misses.append(example)
            else:
                examples.append(example)
                wheres.append(where)
    if is_training:
        _check_answer_offsets(misses, examples, input_file)
    else:
        _check_unique_ids(examples, wheres, input_file)
    return examples


# A training question whose answer text is not at its answer_start: its id,
# the text there and the answer's.
_Miss = collections.namedtuple("_Miss", "qas_id actual_text answer_text")

# Training answers not at their answer_start: most of them, or more than
# this share and at least this many, make a file whose offsets are wrong
# (bytes counted instead of characters, another version of the contexts),
# not the odd unicode the original skips an answer for (a few in SQuAD).
MAX_MISSED_SHARE, MANY_MISSED = 0.1, 10


def _check_answer_offsets(misses, examples, input_file):
    """Refuses training data whose answers are mostly not where answer_start says."""
    answerable = len(misses) + sum(1 for e in examples if not e.is_impossible)
    if not misses:
        return
    first = misses[0]
    detail = (
        f"question id {first.qas_id}: {first.actual_text!r} at its answer_start, not "
        f"{first.answer_text!r}"
    )
    missed = len(misses)
    if 2 * missed > answerable or (
        missed >= MANY_MISSED and missed > MAX_MISSED_SHARE * answerable
    ):
        raise UsageError(
            f"{input_file}: the answer text is not at answer_start for {len(misses)} of "
            f"{answerable} answerable questions (first: {detail}); answer_start must count "
            "characters of the context as given"
        )
    logging.warning(
        "%s: %d of %d answers are not at their answer_start and are skipped (first: %s)",
        input_file,
        len(misses),
        answerable,
        detail,
    )


def _check_unique_ids(examples, wheres, input_file):
    """Each question to predict needs its own id: predictions.json and the scores key
    answers by id, so a repeated id would keep one of the answers."""
    first = {}
    for example, where in zip(examples, wheres):
        qas_id = example.qas_id
        if qas_id in first:
            raise UsageError(
                f"{input_file}: question id {qas_id!r} is used twice ({first[qas_id]} and "
                f"{where}); predictions.json keys answers by id, so each question needs its own"
            )
        first[qas_id] = where


def read_simple_questions(input_file):
    """The (where, record) pairs of a plain question file, or None for a SQuAD file.

    Plain files are .jsonl (one {"context", "question"[, "id"]} object a
    line) or JSON holding a list of such objects, or one object with a
    "question" key. Anything else is read as SQuAD's nesting.
    """
    if input_file.endswith(".jsonl"):
        records = []
        for line_number, line in enumerate(startup_checks.text_lines(input_file), start=1):
            if not line.strip():
                continue
            try:
                records.append((f"line {line_number}", json.loads(line)))
            except json.JSONDecodeError as err:
                raise UsageError(
                    f"{input_file}: line {line_number} is not JSON ({err.msg})"
                ) from None
        return records
    input_data = load_squad_json(input_file)
    if isinstance(input_data, list):
        return [(f"item {i}", record) for i, record in enumerate(input_data)]
    if isinstance(input_data, dict) and "data" not in input_data and "question" in input_data:
        return [("the top level", input_data)]
    return None


def _simple_example(record, where, position, input_file):
    """The SquadExample of one plain {"context", "question"[, "id"]} record.

    Without an "id" the question is named by its position: "0", "1", ...
    """
    context = _require(record, "context", input_file, where, str)
    question = _require(record, "question", input_file, where, str)
    qas_id = str(record["id"]) if "id" in record else position
    doc_tokens, _ = split_context(context)
    return SquadExample(qas_id=qas_id, question_text=question, doc_tokens=doc_tokens)


def _read_question(
    qa, where, doc_tokens, char_to_word_offset, input_file, is_training, version_2_with_negative
):
    """Returns the SquadExample of one question, or a _Miss when its answer is not at
    its answer_start."""
    qas_id = _require(qa, "id", input_file, where)
    question_text = _require(qa, "question", input_file, where, str)
    if not is_training:
        return SquadExample(qas_id=qas_id, question_text=question_text, doc_tokens=doc_tokens)

    is_impossible = False
    if version_2_with_negative:
        is_impossible = _require(qa, "is_impossible", input_file, where)
    elif qa.get("is_impossible") is True:
        raise UsageError(
            f"{input_file}: question id {qas_id} is_impossible (SQuAD 2.0 data); train on it "
            "with --version_2_with_negative"
        )
    answers = _require(qa, "answers", input_file, where, list)
    if len(answers) != 1 and not is_impossible:
        raise UsageError(
            f"{input_file}: question id {qas_id} has {len(answers)} answers; for "
            "training, each question should have exactly 1 answer"
        )
    if is_impossible:
        return SquadExample(
            qas_id=qas_id,
            question_text=question_text,
            doc_tokens=doc_tokens,
            orig_answer_text="",
            start_position=-1,
            end_position=-1,
            is_impossible=True,
        )

    answer_where = f"{where}.answers[0] (question id {qas_id})"
    orig_answer_text = _require(answers[0], "text", input_file, answer_where, str)
    answer_offset = _require(answers[0], "answer_start", input_file, answer_where, int)
    answer_end = answer_offset + len(orig_answer_text) - 1
    if not 0 <= answer_offset < len(char_to_word_offset) or answer_end >= len(char_to_word_offset):
        raise UsageError(
            f"{input_file}: question id {qas_id}: answer_start {answer_offset} with an "
            f"answer of {len(orig_answer_text)} characters does not fit the context of "
            f"{len(char_to_word_offset)} characters"
        )
    start_position = char_to_word_offset[answer_offset]
    end_position = char_to_word_offset[answer_end]
    # Keep only answers whose text really is in the words its offsets cover; a
    # miss usually means odd unicode, and the question is dropped from training.
    actual_text = " ".join(doc_tokens[start_position : end_position + 1])
    cleaned_answer_text = " ".join(tokenization.whitespace_tokenize(orig_answer_text))
    if actual_text.find(cleaned_answer_text) == -1:
        logging.warning("Could not find answer: '%s' vs. '%s'", actual_text, cleaned_answer_text)
        return _Miss(qas_id, actual_text, cleaned_answer_text)
    return SquadExample(
        qas_id=qas_id,
        question_text=question_text,
        doc_tokens=doc_tokens,
        orig_answer_text=orig_answer_text,
        start_position=start_position,
        end_position=end_position,
        is_impossible=False,
    )


# ---------------------------------------------------------------------------
# Windows: conversion to features, and their TFRecord writer

# A window of the document: its first word piece and how many it holds.
DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


def _doc_spans(num_doc_tokens, max_tokens_for_doc, doc_stride):
    """Cuts a document into windows of at most max_tokens_for_doc tokens.

    Each window starts min(length, doc_stride) after the previous one; the
    last one ends at the end of the document.
    """
    doc_spans = []
    start_offset = 0
    while start_offset < num_doc_tokens:
        length = min(num_doc_tokens - start_offset, max_tokens_for_doc)
        doc_spans.append(DocSpan(start=start_offset, length=length))
        if start_offset + length == num_doc_tokens:
            break
        start_offset += min(length, doc_stride)
    return doc_spans


def convert_examples_to_features(
    examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training, output_fn
):
    """Turns examples into InputFeatures, one per document window.

    Each window is "[CLS] query [SEP] doc-window [SEP]", padded to
    max_seq_length. For training, answers outside the window and impossible
    questions point at position 0 ([CLS]). `output_fn` is called with each
    feature in order; unique ids count up from 1000000000.
    """
    unique_id = 1000000000
    num_examples = len(examples) if hasattr(examples, "__len__") else None
    progress = Progress("Converting", num_examples, "examples")
    for example_index, example in enumerate(examples):
        progress.update(example_index)
        query_tokens = tokenizer.tokenize(example.question_text)
        if len(query_tokens) > max_query_length:
            query_tokens = query_tokens[0:max_query_length]
        document = _document_pieces(example, tokenizer, is_training)

        # Room left for the document after [CLS], the query and two [SEP]s.
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        doc_spans = _doc_spans(len(document.pieces), max_tokens_for_doc, doc_stride)

        for doc_span_index, doc_span in enumerate(doc_spans):
            tokens, segment_ids, token_to_orig_map, token_is_max_context = _window_tokens(
                query_tokens, document, doc_spans, doc_span_index
            )
            input_ids = tokenizer.convert_tokens_to_ids(tokens)
            # 1 marks real tokens, which are the only ones attended to.
            input_mask = [1] * len(input_ids)
            padding = max_seq_length - len(input_ids)
            input_ids += [0] * padding
            input_mask += [0] * padding
            segment_ids += [0] * padding

            start_position = None
            end_position = None
            if is_training:
                start_position, end_position = _window_answer(
                    example, document, doc_span, len(query_tokens)
                )
            feature = InputFeatures(
                unique_id=unique_id,
                example_index=example_index,
                doc_span_index=doc_span_index,
                tokens=tokens,
                token_to_orig_map=token_to_orig_map,
                token_is_max_context=token_is_max_context,
                input_ids=input_ids,
                input_mask=input_mask,
                segment_ids=segment_ids,
                start_position=start_position,
                end_position=end_position,
                is_impossible=example.is_impossible,
            )
            if example_index < _NUM_LOGGED_EXAMPLES:
                _log_feature(feature, is_training)
            output_fn(feature)
            unique_id += 1


# One example's document in word pieces: `pieces`, the index of the word each
# piece comes from (`piece_to_word`), and for training the answer's inclusive
# (start, end) piece span (`answer`, (-1, -1) for an impossible question).
_Document = collections.namedtuple("Document", ["pieces", "piece_to_word", "answer"])


def _document_pieces(example, tokenizer, is_training):
    """Word-piece tokenizes an example's document and, for training, locates its answer."""
    piece_to_word = []
    word_to_first_piece = []
    pieces = []
    for i, token in enumerate(example.doc_tokens):
        word_to_first_piece.append(len(pieces))
        for sub_token in tokenizer.tokenize(token):
            piece_to_word.append(i)
            pieces.append(sub_token)
    if not is_training:
        return _Document(pieces, piece_to_word, None)
    if example.is_impossible:
        return _Document(pieces, piece_to_word, (-1, -1))
    tok_start_position = word_to_first_piece[example.start_position]
    if example.end_position < len(example.doc_tokens) - 1:
        tok_end_position = word_to_first_piece[example.end_position + 1] - 1
    else:
        tok_end_position = len(pieces) - 1
    answer = improve_answer_span(
        pieces, tok_start_position, tok_end_position, tokenizer, example.orig_answer_text
    )
    return _Document(pieces, piece_to_word, answer)


def _window_tokens(query_tokens, document, doc_spans, doc_span_index):
    """The unpadded tokens and segment ids of one window, and its two maps.

    token_to_orig_map gives the word index of each document position of the
    window, token_is_max_context whether this window is that piece's best.
    """
    doc_span = doc_spans[doc_span_index]
    tokens = ["[CLS]"] + query_tokens + ["[SEP]"]
    segment_ids = [0] * len(tokens)
    token_to_orig_map = {}
    token_is_max_context = {}
    for i in range(doc_span.length):
        split_token_index = doc_span.start + i
        token_to_orig_map[len(tokens)] = document.piece_to_word[split_token_index]
        token_is_max_context[len(tokens)] = check_is_max_context(
            doc_spans, doc_span_index, split_token_index
        )
        tokens.append(document.pieces[split_token_index])
        segment_ids.append(1)
    tokens.append("[SEP]")
    segment_ids.append(1)
    return tokens, segment_ids, token_to_orig_map, token_is_max_context


def _window_answer(example, document, doc_span, num_query_tokens):
    """The training (start, end) positions of the answer in one window's tokens.

    An impossible question, or an answer not wholly inside the window,
    points at [CLS] (0, 0): there is nothing in the window to point at.
    """
    if example.is_impossible:
        return 0, 0
    tok_start_position, tok_end_position = document.answer
    doc_start = doc_span.start
    doc_end = doc_span.start + doc_span.length - 1
    if tok_start_position >= doc_start and tok_end_position <= doc_end:
        doc_offset = num_query_tokens + 2
        return (
            tok_start_position - doc_start + doc_offset,
            tok_end_position - doc_start + doc_offset,
        )
    return 0, 0


def _log_feature(feature, is_training):
    """Logs one converted window the way the original does, for eyeballing."""
    logging.info("*** Example ***")
    logging.info("unique_id: %s", feature.unique_id)
    logging.info("example_index: %s", feature.example_index)
    logging.info("doc_span_index: %s", feature.doc_span_index)
    logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in feature.tokens))
    logging.info(
        "token_to_orig_map: %s", " ".join(f"{k}:{v}" for k, v in feature.token_to_orig_map.items())
    )
    logging.info(
        "token_is_max_context: %s",
        " ".join(f"{k}:{v}" for k, v in feature.token_is_max_context.items()),
    )
    logging.info("input_ids: %s", " ".join(str(x) for x in feature.input_ids))
    logging.info("input_mask: %s", " ".join(str(x) for x in feature.input_mask))
    logging.info("segment_ids: %s", " ".join(str(x) for x in feature.segment_ids))
    if is_training and feature.is_impossible:
        logging.info("impossible example")
    if is_training and not feature.is_impossible:
        answer_text = " ".join(feature.tokens[feature.start_position : feature.end_position + 1])
        logging.info("start_position: %d", feature.start_position)
        logging.info("end_position: %d", feature.end_position)
        logging.info("answer: %s", tokenization.printable_text(answer_text))


def improve_answer_span(doc_tokens, input_start, input_end, tokenizer, orig_answer_text):
    """Returns the tightest (start, end) word-piece span spelling the answer.

    Character offsets only locate whole words, e.g. "(1895-1943)." for the
    answer "1895"; after WordPiece tokenization the pieces "( 1895 - 1943 ) ."
    let the span shrink to "1895". The first (left-most start, then longest)
    sub-span whose pieces equal the tokenized answer wins; when none does,
    e.g. "Japan" annotated inside "Japanese", the input span is kept.
    """
    tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            text_span = " ".join(doc_tokens[new_start : new_end + 1])
            if text_span == tok_answer_text:
                return new_start, new_end
    return input_start, input_end


def check_is_max_context(doc_spans, cur_span_index, position):
    """Whether window `cur_span_index` gives token `position` its best context.

    With overlapping windows a token is seen several times; its score counts
    only in the window where min(left context, right context) + 0.01 *
    window length is largest (the first such window on a tie).
    """
    best_score = None
    best_span_index = None
    for span_index, doc_span in enumerate(doc_spans):
        end = doc_span.start + doc_span.length - 1
        if position < doc_span.start or position > end:
            continue
        num_left_context = position - doc_span.start
        num_right_context = end - position
        score = min(num_left_context, num_right_context) + 0.01 * doc_span.length
        if best_score is None or score > best_score:
            best_score = score
            best_span_index = span_index
    return cur_span_index == best_span_index


class FeatureWriter:
    """Writes InputFeatures as tf.train.Examples to a TFRecord file.

    The file appears under `filename` only when close() is called (records
    go to a temporary name first); used as a context manager, an exception
    discards it instead.
    """

    def __init__(self, filename, is_training):
        self.filename = filename
        self.is_training = is_training
        self.num_features = 0
        self._stack = contextlib.ExitStack()
        (self._writer,) = self._stack.enter_context(atomic_record_writers([filename]))

    def process_feature(self, feature):
        """Appends one InputFeatures record."""
        self.num_features += 1
        named = [
            ("unique_ids", create_int_feature([feature.unique_id])),
            ("input_ids", create_int_feature(feature.input_ids)),
            ("input_mask", create_int_feature(feature.input_mask)),
            ("segment_ids", create_int_feature(feature.segment_ids)),
        ]
        if self.is_training:
            named += [
                ("start_positions", create_int_feature([feature.start_position])),
                ("end_positions", create_int_feature([feature.end_position])),
                ("is_impossible", create_int_feature([1 if feature.is_impossible else 0])),
            ]
        self._writer.write(make_example(named).SerializeToString())

    def close(self):
        """Finishes the file and moves it to `filename`."""
        self._stack.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return self._stack.__exit__(exc_type, exc, tb)


# ---------------------------------------------------------------------------
# n-best answers and predictions.json

RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])

_PrelimPrediction = collections.namedtuple(
    "PrelimPrediction", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"]
)

_NbestPrediction = collections.namedtuple("NbestPrediction", ["text", "start_logit", "end_logit"])


def _write_json_atomically(path, obj):
    """Writes json.dumps(obj, indent=4) + newline to `path`, all-or-nothing."""
    atomic_write.write_text(path, json.dumps(obj, indent=4) + "\n")


def _nbest_for_example(
    example,
    features,
    unique_id_to_result,
    n_best_size,
    max_answer_length,
    do_lower_case,
    version_2_with_negative,
    verbose_logging,
):
    """Returns (nbest, score_null): the ranked distinct answers of one example.

    score_null is the smallest start+end logit at [CLS] over the example's
    windows (v2 only; 1000000 otherwise).
    """
    prelim_predictions, null = _prelim_predictions(
        features, unique_id_to_result, n_best_size, max_answer_length, version_2_with_negative
    )
    seen_predictions = set()
    nbest = []
    for pred in prelim_predictions:
        if len(nbest) >= n_best_size:
            break
        if pred.start_index > 0:
            feature = features[pred.feature_index]
            tok_tokens = feature.tokens[pred.start_index : pred.end_index + 1]
            orig_doc_start = feature.token_to_orig_map[pred.start_index]
            orig_doc_end = feature.token_to_orig_map[pred.end_index]
            orig_tokens = example.doc_tokens[orig_doc_start : orig_doc_end + 1]
            # Glue "##" continuation pieces back on and normalise spacing.
            tok_text = " ".join(tok_tokens)
            tok_text = tok_text.replace(" ##", "").replace("##", "")
            tok_text = " ".join(tok_text.strip().split())
            orig_text = " ".join(orig_tokens)
            final_text = get_final_text(tok_text, orig_text, do_lower_case, verbose_logging)
            if final_text in seen_predictions:
                continue
        else:
            final_text = ""
        seen_predictions.add(final_text)
        nbest.append(
            _NbestPrediction(
                text=final_text, start_logit=pred.start_logit, end_logit=pred.end_logit
            )
        )

    # SQuAD 2.0: the null answer is always among the candidates.
    if version_2_with_negative and "" not in seen_predictions:
        nbest.append(
            _NbestPrediction(text="", start_logit=null.start_logit, end_logit=null.end_logit)
        )
    # With no valid span at all, a placeholder keeps the output well formed.
    if not nbest:
        nbest.append(_NbestPrediction(text="empty", start_logit=0.0, end_logit=0.0))
    return nbest, null.score


# The null ("no answer") candidate of an example: the smallest [CLS] start+end
# logit over its windows, the window it comes from and its two logits.
_NullScore = collections.namedtuple(
    "NullScore", ["score", "feature_index", "start_logit", "end_logit"]
)


def _prelim_predictions(
    features, unique_id_to_result, n_best_size, max_answer_length, version_2_with_negative
):
    """Returns (candidates, null): an example's answer spans, best first, and its null score.

    Each window proposes every pair of its n_best_size best start and end
    positions that is a valid answer there; with version_2_with_negative
    the null candidate competes too.
    """
    prelim_predictions = []
    null = _NullScore(1000000, 0, 0, 0)  # Larger than any real null score.
    for feature_index, feature in enumerate(features):
        result = unique_id_to_result[feature.unique_id]
        # Only word-piece positions compete for the n best: padding logits
        # depend on how far a batch was padded.
        num_tokens = len(feature.tokens)
        start_indexes = get_best_indexes(result.start_logits, n_best_size)
        end_indexes = get_best_indexes(result.end_logits, n_best_size)
        if version_2_with_negative:
            feature_null_score = result.start_logits[0] + result.end_logits[0]
            if feature_null_score < null.score:
                null = _NullScore(
                    feature_null_score, feature_index, result.start_logits[0], result.end_logits[0]
                )
        for start_index in start_indexes:
            for end_index in end_indexes:
                # Drop spans that leave the document part of the window, start at a
                # token better seen in another window, run backwards or are too long.
                if start_index >= num_tokens or end_index >= num_tokens:
                    continue
                if start_index not in feature.token_to_orig_map:
                    continue
                if end_index not in feature.token_to_orig_map:
                    continue
                if not feature.token_is_max_context.get(start_index, False):
                    continue
                if end_index < start_index:
                    continue
                if end_index - start_index + 1 > max_answer_length:
                    continue
                prelim_predictions.append(
                    _PrelimPrediction(
                        feature_index=feature_index,
                        start_index=start_index,
                        end_index=end_index,
                        start_logit=result.start_logits[start_index],
                        end_logit=result.end_logits[end_index],
                    )
                )

    if version_2_with_negative:
        prelim_predictions.append(
            _PrelimPrediction(
                feature_index=null.feature_index,
                start_index=0,
                end_index=0,
                start_logit=null.start_logit,
                end_logit=null.end_logit,
            )
        )
    # sorted() is stable, so equal scores keep their generation order.
    prelim_predictions = sorted(
        prelim_predictions, key=lambda x: x.start_logit + x.end_logit, reverse=True
    )
    return prelim_predictions, null


def write_predictions(
    all_examples,
    all_features,
    all_results,
    n_best_size,
    max_answer_length,
    do_lower_case,
    output_prediction_file,
    output_nbest_file,
    output_null_log_odds_file,
    version_2_with_negative,
    null_score_diff_threshold,
    verbose_logging,
):
    """Writes predictions.json, nbest_predictions.json and (v2) null_odds.json.

    predictions.json maps question id to answer text; for v2 it is "" when
    the null score minus the best non-null score exceeds
    null_score_diff_threshold, and null_odds.json holds that difference.
    Returns (all_predictions, all_nbest_json, scores_diff_json).
    """
    logging.info("Writing predictions to: %s", output_prediction_file)
    logging.info("Writing nbest to: %s", output_nbest_file)

    example_index_to_features = collections.defaultdict(list)
    for feature in all_features:
        example_index_to_features[feature.example_index].append(feature)
    unique_id_to_result = {result.unique_id: result for result in all_results}

    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    scores_diff_json = collections.OrderedDict()

    for example_index, example in enumerate(all_examples):
        nbest, score_null = _nbest_for_example(
            example,
            example_index_to_features[example_index],
            unique_id_to_result,
            n_best_size,
            max_answer_length,
            do_lower_case,
            version_2_with_negative,
            verbose_logging,
        )
        probs = compute_softmax([entry.start_logit + entry.end_logit for entry in nbest])
        best_non_null_entry = next((entry for entry in nbest if entry.text), None)

        nbest_json = []
        for entry, prob in zip(nbest, probs):
            output = collections.OrderedDict()
            output["text"] = entry.text
            output["probability"] = prob
            output["start_logit"] = entry.start_logit
            output["end_logit"] = entry.end_logit
            nbest_json.append(output)

        if not version_2_with_negative:
            all_predictions[example.qas_id] = nbest_json[0]["text"]
        elif best_non_null_entry is None:
            # No span survived the filters: the only candidate is "no answer".
            scores_diff_json[example.qas_id] = score_null
            all_predictions[example.qas_id] = ""
        else:
            score_diff = (
                score_null - best_non_null_entry.start_logit - best_non_null_entry.end_logit
            )
            scores_diff_json[example.qas_id] = score_diff
            if score_diff > null_score_diff_threshold:
                all_predictions[example.qas_id] = ""
            else:
                all_predictions[example.qas_id] = best_non_null_entry.text
        all_nbest_json[example.qas_id] = nbest_json

    _write_json_atomically(output_prediction_file, all_predictions)
    _write_json_atomically(output_nbest_file, all_nbest_json)
    if version_2_with_negative:
        _write_json_atomically(output_null_log_odds_file, scores_diff_json)
    return all_predictions, all_nbest_json, scores_diff_json


def _strip_spaces(text):
    """Returns (text without spaces, map from its char index to the index in `text`)."""
    ns_chars = []
    ns_to_s_map = collections.OrderedDict()
    for i, char in enumerate(text):
        if char == " ":
            continue
        ns_to_s_map[len(ns_chars)] = i
        ns_chars.append(char)
    return "".join(ns_chars), ns_to_s_map


def get_final_text(pred_text, orig_text, do_lower_case, verbose_logging):
    """Projects the normalised predicted text back onto the original words.

    pred_text comes from word pieces (lower-cased, accents stripped,
    punctuation split off); orig_text is the whole original words it lies
    in, e.g. pred "steve smith" in orig "Steve Smith's" gives "Steve Smith".
    orig_text is run through BasicTokenizer; if the two agree character for
    character once spaces are removed, the predicted span is mapped back.
    Whenever that fails, orig_text is returned unchanged (and, with
    `verbose_logging`, the reason logged).
    """
    tokenizer = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    tok_text = " ".join(tokenizer.tokenize(orig_text))

    start_position = tok_text.find(pred_text)
    if start_position == -1:
        if verbose_logging:
            logging.info("Unable to find text: '%s' in '%s'", pred_text, orig_text)
        return orig_text
    end_position = start_position + len(pred_text) - 1

    orig_ns_text, orig_ns_to_s_map = _strip_spaces(orig_text)
    tok_ns_text, tok_ns_to_s_map = _strip_spaces(tok_text)
    if len(orig_ns_text) != len(tok_ns_text):
        if verbose_logging:
            logging.info(
                "Length not equal after stripping spaces: '%s' vs '%s'",
                orig_ns_text,
                tok_ns_text,
            )
        return orig_text

    # Same length without spaces: assume the characters align one to one.
    tok_s_to_ns_map = {tok_index: i for i, tok_index in tok_ns_to_s_map.items()}

    orig_start_position = None
    if start_position in tok_s_to_ns_map:
        ns_start_position = tok_s_to_ns_map[start_position]
        if ns_start_position in orig_ns_to_s_map:
            orig_start_position = orig_ns_to_s_map[ns_start_position]
    if orig_start_position is None:
        if verbose_logging:
            logging.info("Couldn't map start position")
        return orig_text

    orig_end_position = None
    if end_position in tok_s_to_ns_map:
        ns_end_position = tok_s_to_ns_map[end_position]
        if ns_end_position in orig_ns_to_s_map:
            orig_end_position = orig_ns_to_s_map[ns_end_position]
    if orig_end_position is None:
        if verbose_logging:
            logging.info("Couldn't map end position")
        return orig_text

    return orig_text[orig_start_position : orig_end_position + 1]


def get_best_indexes(logits, n_best_size):
    """Returns the indexes of the n_best_size largest logits, best first (stable on ties)."""
    index_and_score = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [index for index, _ in index_and_score[:n_best_size]]


def compute_softmax(scores):
    """Softmax of a list of python floats, computed in float64 (empty in, empty out)."""
    if not scores:
        return []
    max_score = max(scores)
    exp_scores = [math.exp(score - max_score) for score in scores]
    total_sum = 0.0
    for value in exp_scores:
        total_sum += value
    return [value / total_sum for value in exp_scores]


# ---------------------------------------------------------------------------
# Official SQuAD scoring (the v1.1 and v2.0 evaluation scripts' rules).

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text):
    """Lower-cases, drops punctuation and the articles a/an/the, collapses whitespace."""
    text = text.lower()
    text = "".join(char for char in text if char not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _answer_tokens(text):
    return normalize_answer(text).split() if text else []


def compute_exact(a_gold, a_pred):
    """1 if the normalised texts are equal, else 0."""
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred, version_2=True):
    """Bag-of-tokens F1 between two normalised answers.

    With the v2.0 rule an empty side scores 1 only if both are empty; the
    v1.1 rule scores any pair without a common token 0.
    """
    gold_toks = _answer_tokens(a_gold)
    pred_toks = _answer_tokens(a_pred)
    if version_2 and (not gold_toks or not pred_toks):
        return int(gold_toks == pred_toks)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = num_same / len(pred_toks)
    recall = num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def gold_answers(input_data):
    """Returns {question id: [gold answer texts]} in file order, or None without answers."""
    golds = collections.OrderedDict()
    any_answer = False
    for entry in input_data["data"]:
        for paragraph in entry["paragraphs"]:
            for qa in paragraph["qas"]:
                answers = qa.get("answers")
                if not isinstance(answers, list):
                    return None
                texts = [a.get("text", "") for a in answers if isinstance(a, dict)]
                any_answer = any_answer or bool(texts) or "is_impossible" in qa
                golds[qa["id"]] = texts
    return golds if any_answer else None


def _find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    """The null-odds threshold maximising the score, as the v2.0 script finds it."""
    num_no_ans = sum(1 for qid in qid_to_has_ans if not qid_to_has_ans[qid])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def squad_v1_scores(golds, predictions):
    """Official SQuAD v1.1 metrics: {"exact_match", "f1"} in percent.

    golds maps question id to its gold texts; a question without a
    prediction scores 0 but still counts. Questions without any gold answer
    (SQuAD 2.0 data scored without --version_2_with_negative) are left out,
    with a warning, since the v1.1 rules cannot score them.
    """
    unanswerable = [qid for qid, gold_texts in golds.items() if not gold_texts]
    if unanswerable:
        logging.warning(
            "%d questions have no gold answer and are not scored (SQuAD 2.0 data needs "
            "--version_2_with_negative), e.g. %s",
            len(unanswerable),
            unanswerable[0],
        )
        golds = {qid: texts for qid, texts in golds.items() if texts}
    exact_match = 0.0
    f1 = 0.0
    for qid, gold_texts in golds.items():
        if qid not in predictions:
            logging.warning("Unanswered question %s will receive score 0.", qid)
            continue
        prediction = predictions[qid]
        exact_match += max(
            float(normalize_answer(prediction) == normalize_answer(g)) for g in gold_texts
        )
        f1 += max(compute_f1(g, prediction, version_2=False) for g in gold_texts)
    total = len(golds)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def squad_v2_scores(golds, predictions, na_probs=None):
    """Official SQuAD v2.0 metrics, in percent.

    exact/f1/total over all questions, HasAns_* and NoAns_* over the
    answerable and unanswerable ones, and with `na_probs` (question id ->
    null odds) best_exact, best_exact_thresh, best_f1, best_f1_thresh: the
    scores had the null threshold been set optimally. A question is
    unanswerable when its list of gold answers is empty.
    """
    qid_to_has_ans = {qid: bool(texts) for qid, texts in golds.items()}
    exact_raw = {}
    f1_raw = {}
    for qid, texts in golds.items():
        gold_texts = [t for t in texts if normalize_answer(t)] or [""]
        if qid not in predictions:
            logging.warning("Missing prediction for %s", qid)
            continue
        a_pred = predictions[qid]
        exact_raw[qid] = max(compute_exact(a, a_pred) for a in gold_texts)
        f1_raw[qid] = max(compute_f1(a, a_pred) for a in gold_texts)

    def summary(qids=None):
        if qids is None:
            qids = list(exact_raw)
        total = len(qids)
        return {
            "exact": 100.0 * sum(exact_raw[q] for q in qids) / total,
            "f1": 100.0 * sum(f1_raw[q] for q in qids) / total,
            "total": total,
        }

    result = summary()
    has_ans = [qid for qid, has in qid_to_has_ans.items() if has]
    no_ans = [qid for qid, has in qid_to_has_ans.items() if not has]
    for prefix, qids in (("HasAns", has_ans), ("NoAns", no_ans)):
        if qids:
            for key, value in summary(qids).items():
                result[f"{prefix}_{key}"] = value
    if na_probs is not None:
        best_exact, exact_thresh = _find_best_thresh(
            predictions, exact_raw, na_probs, qid_to_has_ans
        )
        best_f1, f1_thresh = _find_best_thresh(predictions, f1_raw, na_probs, qid_to_has_ans)
        result["best_exact"] = best_exact
        result["best_exact_thresh"] = exact_thresh
        result["best_f1"] = best_f1
        result["best_f1_thresh"] = f1_thresh
    return result
