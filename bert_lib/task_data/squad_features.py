"""SQuAD examples cut into the model's windows, and the windows' TFRecord writer.

A question and its paragraph become one InputFeatures per window of the
paragraph's word pieces ("[CLS] query [SEP] window [SEP]"), each with the
map back to the paragraph's words that squad_answers.py needs to turn
logits into answer text.
"""

import collections
import contextlib

import tensorflow as tf
from absl import logging

import tokenization

from ..plumbing.progress import Progress
from . import dynamic_padding, features
from .features import atomic_record_writers, create_int_feature, make_example

# Features whose index is below this are logged in full while converting.
_NUM_LOGGED_EXAMPLES = 20


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


def input_fn_builder(
    input_file, seq_length, is_training, drop_remainder, padding=dynamic_padding.OFF
):
    """Returns an input_fn reading FeatureWriter records in batches of params["batch_size"].

    Training repeats the records forever and shuffles them (buffer 100).
    `padding` (dynamic_padding.Settings) cuts and groups the batches; the
    predictions carry unique_ids, so their order does not matter.
    """
    name_to_features = {
        "unique_ids": tf.io.FixedLenFeature([], tf.int64),
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
    }
    if is_training:
        name_to_features["start_positions"] = tf.io.FixedLenFeature([], tf.int64)
        name_to_features["end_positions"] = tf.io.FixedLenFeature([], tf.int64)
    return features.record_input_fn_builder(
        input_file, name_to_features, is_training, drop_remainder, padding
    )
