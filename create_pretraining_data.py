"""Creates the masked-LM / next-sentence TFRecords that BERT pre-trains on.

Input: text files with one sentence per line and a blank line between
documents. Output: tf.train.Examples with input_ids, input_mask,
segment_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights and
next_sentence_labels, dealt round-robin over the output files.

For the same files, vocabulary, flags and seed the Examples are exactly the
2018 script's, in the same order and files: one `random.Random(random_seed)`
is drawn from in the order SPEC.md section 6 spells out. What differs is
cost:

- Tokenization has no randomness, so it runs in `--num_workers` forked
  processes over chunks of lines, in order, and the documents are kept as
  tuples of token ids rather than lists of strings.
- Instance creation stays sequential, but works on ids, tracks truncation
  by offsets instead of deleting list heads, and shuffles through
  `getrandbits` directly - the same algorithm `random.Random.shuffle` and
  `randint` use, checked against them at start-up (with a fall-back to the
  library methods should a Python version ever differ).
- Each instance is serialized as soon as it is made, by a small encoder
  whose bytes equal `tf.train.Example.SerializeToString(deterministic=True)`
  (features sorted by name; protobuf's default map order changes from one
  process to the next, so the original's files differ in byte order
  between runs while parsing to the same Examples). Only these bytes are
  held until the final shuffle, a fraction of the original's lists of
  strings.

    python create_pretraining_data.py --input_file=corpus/*.txt \\
        --output_file=out.tfrecord --vocab_file=vocab.txt
"""

import array
import collections
import contextlib
import itertools
import math
import multiprocessing
import os
import random
import re
import struct
import sys
import time
import warnings

import tensorflow as tf
from absl import app, flags, logging

import features
import tokenization

FLAGS = flags.FLAGS

flags.DEFINE_string(
    "input_file", None, "Input raw text file (or comma-separated list of files or globs)."
)
flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool(
    "do_lower_case",
    True,
    "Whether to lower case the input text. True for uncased models, False for cased ones.",
)
flags.DEFINE_bool(
    "do_whole_word_mask",
    False,
    "Whether to mask all the WordPiece pieces of a word together (whole word masking).",
)
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer(
    "max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence."
)
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer(
    "dupe_factor", 10, "Number of times to duplicate the input data (with different masks)."
)
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float(
    "short_seq_prob",
    0.1,
    "Probability of creating sequences which are shorter than the maximum length.",
)
flags.DEFINE_integer(
    "num_workers",
    None,
    "Processes that tokenize the input in parallel (default: all CPU cores). "
    "The output does not depend on it.",
)

_CLS, _SEP, _MASK, _UNK = "[CLS]", "[SEP]", "[MASK]", "[UNK]"
# Seconds between progress lines of long phases.
_LOG_EVERY = 10.0
# Lines handed to a tokenizer worker at a time, and bytes read at a time.
_LINES_PER_CHUNK = 2000
_BYTES_PER_READ = 1 << 22
# Features in the order the original inserts (and logs) them.
_FEATURE_NAMES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)


class InputError(ValueError):
    """Bad user input: reported as one line naming the flag or file, no traceback."""


class TrainingInstance:
    """A single training instance (sentence pair), as token strings."""

    def __init__(self, tokens, segment_ids, masked_lm_positions, masked_lm_labels, is_random_next):
        self.tokens = tokens
        self.segment_ids = segment_ids
        self.is_random_next = is_random_next
        self.masked_lm_positions = masked_lm_positions
        self.masked_lm_labels = masked_lm_labels

    def __str__(self):
        lines = [
            "tokens: " + " ".join(tokenization.printable_text(x) for x in self.tokens),
            "segment_ids: " + " ".join(str(x) for x in self.segment_ids),
            f"is_random_next: {self.is_random_next}",
            "masked_lm_positions: " + " ".join(str(x) for x in self.masked_lm_positions),
            "masked_lm_labels: "
            + " ".join(tokenization.printable_text(x) for x in self.masked_lm_labels),
        ]
        return "\n".join(lines) + "\n\n"

    def __repr__(self):
        return self.__str__()


MaskedLmInstance = collections.namedtuple("MaskedLmInstance", ["index", "label"])


# ---------------------------------------------------------------------------
# Random draws. `random.Random` implements randint(a, b) as a + _randbelow(n)
# and shuffle as Fisher-Yates from the end with _randbelow(i + 1), where
# _randbelow(n) takes getrandbits(n.bit_length()) until the value is below n.
# Calling getrandbits directly skips two Python frames per draw.


def _randbelow(getrandbits, n):
    k = n.bit_length()
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


def _fast_shuffle(x, getrandbits):
    top = len(x) - 1
    while top > 0:
        # Every i in [lowest, top] draws the same number of bits, k.
        k = (top + 1).bit_length()
        lowest = (1 << (k - 1)) - 1
        for i in range(top, lowest - 1, -1):
            j = getrandbits(k)
            while j > i:
                j = getrandbits(k)
            x[i], x[j] = x[j], x[i]
        top = lowest - 1


def _fast_draws_match_library():
    """Whether the inlined draws reproduce this Python's random.Random exactly."""
    for seed in (0, 1, 12345):
        ours, theirs = random.Random(seed), random.Random(seed)
        for n in (1, 2, 3, 7, 64, 65, 200):
            a, b = list(range(n)), list(range(n))
            _fast_shuffle(a, ours.getrandbits)
            theirs.shuffle(b)
            if a != b:
                return False
            if 3 + _randbelow(ours.getrandbits, n) != theirs.randint(3, n + 2):
                return False
        if ours.random() != theirs.random():
            return False
    return True


_FAST_DRAWS = _fast_draws_match_library()


class _Draws:
    """The three kinds of draw the recipe makes, bound to one rng."""

    def __init__(self, rng):
        self.random = rng.random
        if _FAST_DRAWS and type(rng) is random.Random:
            getrandbits = rng.getrandbits
            self.randint = lambda a, b: a + _randbelow(getrandbits, b - a + 1)
            self.shuffle = lambda x: _fast_shuffle(x, getrandbits)
        else:
            self.randint = rng.randint
            self.shuffle = rng.shuffle


# ---------------------------------------------------------------------------
# Instance creation, on token ids (main path) or token strings (public API).


class _InstanceFactory:
    """Makes the instances of one document at a time, drawing from one rng.

    Tokens may be ids or strings: `cls`, `sep`, `mask` are the special tokens
    in the same form, `vocab_items` the vocabulary in file order (what a
    random replacement is drawn from) and `is_piece[token]` is true for a
    "##" continuation piece. Each instance goes to
    `emit(tokens, num_a, num_b, positions, labels, is_random_next)`, where
    `tokens` is [CLS] a [SEP] b [SEP] after masking and `labels` are the
    original tokens at the sorted `positions`.
    """

    def __init__(
        self,
        documents,
        max_seq_length,
        short_seq_prob,
        masked_lm_prob,
        max_predictions_per_seq,
        do_whole_word_mask,
        vocab_items,
        specials,
        is_piece,
        rng,
        specials_by_value=False,
    ):
        self.documents = documents
        self.max_num_tokens = max_seq_length - 3
        self.short_seq_prob = short_seq_prob
        self.masked_lm_prob = masked_lm_prob
        self.max_predictions_per_seq = max_predictions_per_seq
        self.do_whole_word_mask = do_whole_word_mask
        self.vocab_items = vocab_items
        self.cls, self.sep, self.mask = specials
        self.is_piece = is_piece
        self.draws = _Draws(rng)
        # Text never tokenizes to [CLS] or [SEP], so on the main path they sit
        # only where they were put; arbitrary caller tokens are checked by value.
        self.specials_by_value = specials_by_value

    def from_document(self, d, emit):
        """Creates the instances of document `d`; returns how many."""
        documents = self.documents
        document = documents[d]
        num_docs = len(documents)
        draws = self.draws
        rand, randint = draws.random, draws.randint
        max_num_tokens = self.max_num_tokens
        target = max_num_tokens
        if rand() < self.short_seq_prob:
            target = randint(2, max_num_tokens)

        count = 0
        chunk_start = 0
        length = 0
        i = 0
        n = len(document)
        while i < n:
            length += len(document[i])
            if i == n - 1 or length >= target:
                chunk = document[chunk_start : i + 1]
                a_end = randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                tokens_a = []
                for sentence in chunk[:a_end]:
                    tokens_a += sentence
                tokens_b = []
                if len(chunk) == 1 or rand() < 0.5:
                    is_random_next = True
                    target_b = target - len(tokens_a)
                    for _ in range(10):
                        r = randint(0, num_docs - 1)
                        if r != d:
                            break
                    other = documents[r]
                    for j in range(randint(0, len(other) - 1), len(other)):
                        tokens_b += other[j]
                        if len(tokens_b) >= target_b:
                            break
                    i -= len(chunk) - a_end
                else:
                    is_random_next = False
                    for sentence in chunk[a_end:]:
                        tokens_b += sentence
                a0, a1, b0, b1 = self._truncated_pair(tokens_a, tokens_b, max_num_tokens)
                tokens = [self.cls]
                tokens += tokens_a[a0:a1]
                tokens.append(self.sep)
                tokens += tokens_b[b0:b1]
                tokens.append(self.sep)
                num_a = a1 - a0
                num_b = b1 - b0
                positions, labels = self._mask(tokens, num_a, num_b)
                emit(tokens, num_a, num_b, positions, labels, is_random_next)
                count += 1
                chunk_start = i + 1
                length = 0
            i += 1
        return count

    def _truncated_pair(self, tokens_a, tokens_b, max_num_tokens):
        """(a0, a1, b0, b1): the kept spans a[a0:a1], b[b0:b1] after random trimming."""
        a0, a1, b0, b1 = 0, len(tokens_a), 0, len(tokens_b)
        rand = self.draws.random
        while (a1 - a0) + (b1 - b0) > max_num_tokens:
            if a1 - a0 > b1 - b0:
                if rand() < 0.5:
                    a0 += 1
                else:
                    a1 -= 1
            elif rand() < 0.5:
                b0 += 1
            else:
                b1 -= 1
        return a0, a1, b0, b1

    def _candidates(self, tokens, num_a, num_b):
        """Index lists that may be masked, one per token (or per word)."""
        if self.specials_by_value:
            specials = (self.cls, self.sep)
            indexes = [i for i, t in enumerate(tokens) if t not in specials]
        else:
            indexes = list(range(1, num_a + 1))
            indexes += range(num_a + 2, num_a + num_b + 2)
        if not self.do_whole_word_mask:
            return indexes
        is_piece = self.is_piece
        groups = []
        for i in indexes:
            if groups and is_piece[tokens[i]]:
                groups[-1].append(i)
            else:
                groups.append([i])
        return groups

    def _mask(self, tokens, num_a, num_b):
        """Masks `tokens` in place; returns the sorted positions and their labels."""
        candidates = self._candidates(tokens, num_a, num_b)
        draws = self.draws
        draws.shuffle(candidates)
        num_to_predict = min(
            self.max_predictions_per_seq,
            max(1, int(round(len(tokens) * self.masked_lm_prob))),
        )
        if self.do_whole_word_mask:
            chosen = []
            for group in candidates:
                if len(chosen) >= num_to_predict:
                    break
                # Groups partition the indexes, so none can overlap a chosen one.
                if len(chosen) + len(group) > num_to_predict:
                    continue
                chosen += group
        else:
            chosen = candidates[:num_to_predict]
        positions = sorted(chosen)
        labels = [tokens[i] for i in positions]
        rand = draws.random
        for i in chosen:
            if rand() < 0.8:
                tokens[i] = self.mask
            elif rand() >= 0.5:
                tokens[i] = self.vocab_items[draws.randint(0, len(self.vocab_items) - 1)]
        return positions, labels


def _is_piece_table():
    """A token -> bool lookup for "##" pieces that works for any string."""

    class _Table(dict):
        def __missing__(self, token):
            value = self[token] = token.startswith("##")
            return value

    return _Table()


def _resolve_whole_word_mask(do_whole_word_mask):
    if do_whole_word_mask is not None:
        return do_whole_word_mask
    return FLAGS.do_whole_word_mask if FLAGS.is_parsed() else False


def create_instances_from_document(
    all_documents,
    document_index,
    max_seq_length,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    vocab_words,
    rng,
    do_whole_word_mask=None,
):
    """Creates `TrainingInstance`s for one document of token-string lists.

    Draws from `rng` exactly as the original does. `do_whole_word_mask`
    defaults to the flag of that name (False if flags are not parsed).
    """
    factory = _InstanceFactory(
        all_documents,
        max_seq_length,
        short_seq_prob,
        masked_lm_prob,
        max_predictions_per_seq,
        _resolve_whole_word_mask(do_whole_word_mask),
        vocab_words,
        (_CLS, _SEP, _MASK),
        _is_piece_table(),
        rng,
        specials_by_value=True,
    )
    instances = []

    def emit(tokens, num_a, num_b, positions, labels, is_random_next):
        segment_ids = [0] * (num_a + 2) + [1] * (num_b + 1)
        instances.append(TrainingInstance(tokens, segment_ids, positions, labels, is_random_next))

    factory.from_document(document_index, emit)
    return instances


def create_masked_lm_predictions(
    tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng, do_whole_word_mask=None
):
    """Returns (output_tokens, masked_lm_positions, masked_lm_labels) for `tokens`.

    Every token except [CLS] and [SEP] is a candidate (with whole word
    masking, a "##" piece joins the candidate before it); candidates are
    shuffled and taken until min(max_predictions_per_seq,
    max(1, round(len(tokens) * masked_lm_prob))) tokens are chosen; each
    becomes [MASK] (80%), stays (10%) or a random vocabulary word (10%).
    """
    factory = _InstanceFactory(
        [],
        3,
        0.0,
        masked_lm_prob,
        max_predictions_per_seq,
        _resolve_whole_word_mask(do_whole_word_mask),
        vocab_words,
        (_CLS, _SEP, _MASK),
        _is_piece_table(),
        rng,
        specials_by_value=True,
    )
    output_tokens = list(tokens)
    positions, labels = factory._mask(output_tokens, 0, 0)
    return output_tokens, positions, labels


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Trims the longer list, from the front or back at random, until both fit.

    Lists are changed in place; one rng.random() per removed token, as in
    the original.
    """
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


# ---------------------------------------------------------------------------
# Serialization.


def _varint(value):
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class _ExampleEncoder:
    """Serializes pre-training instances given as token ids.

    The bytes are those of `tf.train.Example.SerializeToString(deterministic=
    True)`: Example.features (field 1) holds one map entry (field 1) per
    feature in name order, each entry a key (field 1) and a Feature (field 2)
    whose int64_list (field 3) or float_list (field 2) packs its values
    into field 1. Everything but the token ids, labels and positions repeats
    from one instance to the next, so those parts are built once and cached.
    """

    def __init__(self, vocab_size, max_seq_length, max_predictions_per_seq):
        self.max_seq_length = max_seq_length
        self.max_predictions = max_predictions_per_seq
        # Varints of every id, position and field length that can occur.
        longest_record = 8 * max_seq_length + 12 * max_predictions_per_seq + 256
        self.varints = [_varint(i) for i in range(max(vocab_size, longest_record))]
        self.zeros = [bytes(k) for k in range(max(max_seq_length, max_predictions_per_seq) + 1)]
        self.prefixes = {name: {} for name in _FEATURE_NAMES}
        self.mask_entries = {}
        self.segment_entries = {}
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
            v = _varint
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

    def _ints(self, name, values, pad):
        varints = self.varints
        packed = b"".join([varints[v] for v in values]) + self.zeros[pad]
        return self._prefix(name, b"\x1a", len(packed)) + packed

    def encode(self, input_ids, num_a, num_b, positions, label_ids, is_random_next):
        """The serialized Example of [CLS] a [SEP] b [SEP] (ids, after masking)."""
        length = len(input_ids)
        pad = self.max_seq_length - length
        pad_p = self.max_predictions - len(positions)
        if pad < 0 or pad_p < 0:
            raise ValueError(f"instance of {length} tokens, {len(positions)} predictions")
        mask = self.mask_entries.get(length)
        if mask is None:
            mask = self.mask_entries[length] = self._entry(
                "input_mask", b"\x1a", b"\x01" * length + bytes(pad)
            )
        segments = self.segment_entries.get((num_a, length))
        if segments is None:
            segments = self.segment_entries[(num_a, length)] = self._entry(
                "segment_ids", b"\x1a", bytes(num_a + 2) + b"\x01" * (num_b + 1) + bytes(pad)
            )
        body = b"".join(
            (
                self._ints("input_ids", input_ids, pad),
                mask,
                self._ints("masked_lm_ids", label_ids, pad_p),
                self._ints("masked_lm_positions", positions, pad_p),
                self.weight_entries[len(positions)],
                self.label_entries[1 if is_random_next else 0],
                segments,
            )
        )
        return b"\x0a" + self.varints[len(body)] + body


def _log_example(record, inv_vocab):
    """Logs one serialized Example the way the original logs its first 20."""
    example = tf.train.Example.FromString(record)
    feature = example.features.feature
    num_tokens = sum(feature["input_mask"].int64_list.value)
    tokens = [inv_vocab[i] for i in feature["input_ids"].int64_list.value[:num_tokens]]
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in tokens))
    for name in _FEATURE_NAMES:
        values = feature[name].int64_list.value or feature[name].float_list.value
        logging.info("%s: %s", name, " ".join(str(x) for x in values))


class _Progress:
    """Logs done/total, rate and time left at most every _LOG_EVERY seconds."""

    def __init__(self, what, total, unit):
        self.what, self.total, self.unit = what, total, unit
        self.start = self.last = time.monotonic()

    def update(self, done, extra="", force=False):
        now = time.monotonic()
        if not force and now - self.last < _LOG_EVERY:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        left = (self.total - done) / rate if rate > 0 else math.inf
        logging.info(
            "%s: %s/%s %s (%.0f/s)%s, %.0fs elapsed, ~%.0fs left",
            self.what,
            _human(done),
            _human(self.total),
            self.unit,
            rate,
            extra,
            elapsed,
            left,
        )


def _human(n):
    return f"{n:,}" if isinstance(n, int) else f"{n:,.1f}"


def write_instance_to_example_files(
    instances, tokenizer, max_seq_length, max_predictions_per_seq, output_files
):
    """Writes `TrainingInstance`s round-robin to `output_files`; logs the first 20.

    Files appear under their names only once complete.
    """
    vocab = tokenizer.vocab
    encoder = _ExampleEncoder(len(vocab), max_seq_length, max_predictions_per_seq)
    records = []
    for instance in instances:
        num_a = instance.segment_ids.count(0) - 2
        ids = [vocab[t] for t in instance.tokens]
        records.append(
            encoder.encode(
                ids,
                num_a,
                len(ids) - num_a - 3,
                list(instance.masked_lm_positions),
                [vocab[t] for t in instance.masked_lm_labels],
                instance.is_random_next,
            )
        )
    _write_records(records, tokenizer.inv_vocab, output_files)


def _write_records(records, inv_vocab, output_files):
    progress = _Progress("Writing", len(records), "instances")
    with features.atomic_record_writers(output_files) as writers:
        num_writers = len(writers)
        for index, record in enumerate(records):
            writers[index % num_writers].write(record)
            if index < 20:
                _log_example(record, inv_vocab)
            if index & 1023 == 0:
                progress.update(index)
    logging.info("Wrote %d total instances", len(records))


# ---------------------------------------------------------------------------
# Reading and tokenizing.

# ASCII characters that tokenization deletes (\t, \n, \r become spaces).
_ASCII_CONTROL_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# Bound on the word -> ids memo of one process; a full memo is emptied.
_WORD_MEMO_LIMIT = 1 << 18


class _LineTokenizer:
    """Turns raw lines into token ids, remembering the ids of each word.

    Tokenization treats every whitespace-separated word on its own once a
    line has been cleaned, and cleaning changes nothing in an ASCII line
    without control characters. Such lines are split here and each distinct
    word is tokenized once; any other line goes through the tokenizer whole.
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.vocab = tokenizer.vocab
        self.memo = {}
        self.typecode = "H" if max(self.vocab.values(), default=0) < 1 << 16 else "I"
        self.canonical = [None] * (max(self.vocab.values(), default=-1) + 1)
        for index in self.vocab.values():
            self.canonical[index] = index

    def ids(self, line):
        """The token ids of one stripped, non-empty line, as a tuple."""
        vocab = self.vocab
        if not line.isascii() or _ASCII_CONTROL_RE.search(line) is not None:
            return tuple([vocab[piece] for piece in self.tokenizer.tokenize(line)])
        words = line.split()
        found = list(map(self.memo.get, words))
        if None in found:
            for k, word in enumerate(words):
                if found[k] is None:
                    found[k] = self._word_ids(word)
        return tuple(itertools.chain.from_iterable(found))

    def _word_ids(self, word):
        memo = self.memo
        if len(memo) >= _WORD_MEMO_LIMIT:
            memo.clear()
        vocab = self.vocab
        ids = memo[word] = tuple([vocab[piece] for piece in self.tokenizer.tokenize(word)])
        return ids

    def unpack(self, ids):
        """A sentence as a tuple of the vocabulary's own int objects (shared, compact)."""
        if isinstance(ids, bytes):
            return tuple(map(self.canonical.__getitem__, array.array(self.typecode, ids)))
        return ids

    def lines(self, raw_lines, pack=False):
        """Per raw line: None for a blank line (a document break), else its ids.

        With `pack` the ids come as array bytes (cheap to send between
        processes). Returns (results, index of the first line that is not
        UTF-8, or -1).
        """
        results = []
        for index, raw in enumerate(raw_lines):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                return results, index
            if not line:
                results.append(None)
            elif pack:
                results.append(array.array(self.typecode, self.ids(line)).tobytes())

            else:
                results.append(self.ids(line))
        return results, -1


# The line tokenizer of the current run, inherited by forked worker processes.
_worker_line_tokenizer = None


def _tokenize_in_worker(raw_lines):
    return _worker_line_tokenizer.lines(raw_lines, pack=True)


def _line_chunks(input_files):
    """Yields (path, number of its first line, raw lines) in order.

    Lines end at b"\\n" only, as tf.io.gfile reads them (a lone \\r is no
    line break).
    """
    for path in input_files:
        with tf.io.gfile.GFile(path, "rb") as reader:
            line_number = 1
            rest = b""
            while True:
                block = reader.read(_BYTES_PER_READ)
                if not block:
                    break
                lines = (rest + block).split(b"\n")
                rest = lines.pop()
                for start in range(0, len(lines), _LINES_PER_CHUNK):
                    chunk = lines[start : start + _LINES_PER_CHUNK]
                    yield path, line_number, chunk
                    line_number += len(chunk)
            if rest:
                yield path, line_number, [rest]


def _read_documents(input_files, tokenizer, num_workers):
    """Documents as lists of sentences, each a tuple of token ids; empty ones dropped.

    A blank line starts a new document; documents run on across file ends,
    as in the original.
    """
    global _worker_line_tokenizer
    line_tokenizer = _LineTokenizer(tokenizer)
    total_bytes = sum(tf.io.gfile.stat(p).length for p in input_files)
    progress = _Progress("Reading input", total_bytes / 1e6, "MB")
    documents = [[]]
    num_lines = 0
    done_bytes = 0
    _worker_line_tokenizer = line_tokenizer
    try:
        with _chunk_results(_line_chunks(input_files), line_tokenizer, num_workers) as results:
            for (path, first_line, lines), (tokenized, bad_line) in results:
                if bad_line >= 0:
                    raise InputError(
                        f"--input_file: {path}: line {first_line + bad_line} is not UTF-8 text"
                    )
                num_lines += len(lines)
                done_bytes += sum(map(len, lines)) + len(lines)
                current = documents[-1]
                for ids in tokenized:
                    if ids is None:
                        current = []
                        documents.append(current)
                    elif ids:
                        current.append(line_tokenizer.unpack(ids))
                progress.update(done_bytes / 1e6, extra=f", {len(documents):,} documents")
    finally:
        _worker_line_tokenizer = None
    documents = [doc for doc in documents if doc]
    logging.info(
        "Read %d lines into %d documents, %d sentences, %d tokens",
        num_lines,
        len(documents),
        sum(len(doc) for doc in documents),
        sum(len(s) for doc in documents for s in doc),
    )
    return documents


@contextlib.contextmanager
def _chunk_results(chunks, line_tokenizer, num_workers):
    """Yields an iterator of (chunk, tokenized chunk) pairs, in input order."""
    if num_workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        yield ((chunk, line_tokenizer.lines(chunk[2])) for chunk in chunks)
        return
    with warnings.catch_warnings():
        # Workers only run pure-Python tokenization, never TensorFlow, so
        # forking while TensorFlow's idle threads exist is safe here.
        warnings.simplefilter("ignore", DeprecationWarning)
        pool = multiprocessing.get_context("fork").Pool(num_workers)
    try:

        def results():
            # A bounded window of chunks in flight keeps memory flat.
            pending = collections.deque()
            for chunk in chunks:
                pending.append((chunk, pool.apply_async(_tokenize_in_worker, (chunk[2],))))
                if len(pending) >= 4 * num_workers:
                    done, result = pending.popleft()
                    yield done, result.get()
            while pending:
                done, result = pending.popleft()
                yield done, result.get()

        yield results()
    finally:
        pool.terminate()
        pool.join()


def _vocab_items(tokenizer):
    """Vocabulary ids in file order of the distinct tokens (the original's vocab_words)."""
    vocab = tokenizer.vocab
    return [vocab[w] for w in vocab.keys()]


def _piece_flags(tokenizer):
    vocab_size = max(tokenizer.vocab.values()) + 1
    flags_ = bytearray(vocab_size)
    for token, index in tokenizer.vocab.items():
        flags_[index] = token.startswith("##")
    return flags_


def _specials(tokenizer):
    vocab = tokenizer.vocab
    return vocab[_CLS], vocab[_SEP], vocab[_MASK]


def _create_records(
    documents,
    tokenizer,
    max_seq_length,
    dupe_factor,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    do_whole_word_mask,
    rng,
    emit_factory,
):
    """Runs the recipe on id documents; returns what `emit_factory` collected, shuffled."""
    draws = _Draws(rng)
    draws.shuffle(documents)
    factory = _InstanceFactory(
        documents,
        max_seq_length,
        short_seq_prob,
        masked_lm_prob,
        max_predictions_per_seq,
        do_whole_word_mask,
        _vocab_items(tokenizer),
        _specials(tokenizer),
        _piece_flags(tokenizer),
        rng,
    )
    collected, emit = emit_factory()
    total = dupe_factor * len(documents)
    progress = _Progress("Creating instances", total, "documents")
    done = 0
    for _ in range(dupe_factor):
        for d in range(len(documents)):
            factory.from_document(d, emit)
            done += 1
            if done & 255 == 0:
                progress.update(done, extra=f", {len(collected):,} instances")
    logging.info("Created %d instances from %d documents", len(collected), len(documents))
    draws.shuffle(collected)
    return collected


def create_training_instances(
    input_files,
    tokenizer,
    max_seq_length,
    dupe_factor,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    rng,
    do_whole_word_mask=None,
    num_workers=1,
):
    """Creates `TrainingInstance`s from raw text files, in the original's order.

    `do_whole_word_mask` defaults to the flag (False if flags are not
    parsed); `num_workers` processes tokenize in parallel.
    """
    documents = _read_documents(input_files, tokenizer, num_workers)
    inv_vocab = tokenizer.inv_vocab

    def emit_factory():
        instances = []

        def emit(ids, num_a, num_b, positions, label_ids, is_random_next):
            instances.append(
                TrainingInstance(
                    [inv_vocab[i] for i in ids],
                    [0] * (num_a + 2) + [1] * (num_b + 1),
                    positions,
                    [inv_vocab[i] for i in label_ids],
                    is_random_next,
                )
            )

        return instances, emit

    return _create_records(
        documents,
        tokenizer,
        max_seq_length,
        dupe_factor,
        short_seq_prob,
        masked_lm_prob,
        max_predictions_per_seq,
        _resolve_whole_word_mask(do_whole_word_mask),
        rng,
        emit_factory,
    )


# ---------------------------------------------------------------------------
# Command line.


def _check_flags():
    """Raises InputError for flag values the recipe cannot work with."""
    for name in ("input_file", "output_file", "vocab_file"):
        if not getattr(FLAGS, name):
            raise InputError(f"--{name} is required")
    if FLAGS.max_seq_length < 5:
        raise InputError(
            f"--max_seq_length={FLAGS.max_seq_length} is too small: [CLS], two [SEP] and "
            "a token from each segment need at least 5"
        )
    if FLAGS.max_predictions_per_seq < 1:
        raise InputError(
            f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq} must be at least 1"
        )
    if not 0.0 < FLAGS.masked_lm_prob <= 1.0:
        raise InputError(f"--masked_lm_prob={FLAGS.masked_lm_prob} must be in (0, 1]")
    if not 0.0 <= FLAGS.short_seq_prob <= 1.0:
        raise InputError(f"--short_seq_prob={FLAGS.short_seq_prob} must be in [0, 1]")
    if FLAGS.dupe_factor < 1:
        raise InputError(f"--dupe_factor={FLAGS.dupe_factor} must be at least 1")
    if FLAGS.num_workers is not None and FLAGS.num_workers < 1:
        raise InputError(f"--num_workers={FLAGS.num_workers} must be at least 1")


def _input_files(patterns):
    files = []
    for pattern in patterns.split(","):
        if not pattern:
            raise InputError(f"--input_file: empty entry in {patterns!r}")
        matches = tf.io.gfile.glob(pattern)
        if not matches:
            if any(c in pattern for c in "*?["):
                raise InputError(f"--input_file: no file matches {pattern}")
            raise InputError(f"--input_file: no such file: {pattern}")
        for path in matches:
            if tf.io.gfile.isdir(path):
                raise InputError(f"--input_file: {path} is a directory")
        files.extend(matches)
    return files


def _output_files(names):
    files = names.split(",")
    for path in files:
        if not path:
            raise InputError(f"--output_file: empty entry in {names!r}")
        directory = os.path.dirname(path) or "."
        if not tf.io.gfile.isdir(directory):
            raise InputError(f"--output_file: no such directory: {directory}")
        if tf.io.gfile.isdir(path):
            raise InputError(f"--output_file: {path} is a directory")
    if len(set(files)) != len(files):
        raise InputError(f"--output_file: a file is named twice in {names}")
    return files


def _load_tokenizer(vocab_file, do_lower_case):
    if not tf.io.gfile.exists(vocab_file):
        raise InputError(f"--vocab_file: no such file: {vocab_file}")
    if tf.io.gfile.isdir(vocab_file):
        raise InputError(f"--vocab_file: {vocab_file} is a directory")
    try:
        tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    except UnicodeDecodeError as e:
        raise InputError(f"--vocab_file: {vocab_file} is not UTF-8 text ({e.reason})") from None
    missing = [t for t in (_CLS, _SEP, _MASK, _UNK) if t not in tokenizer.vocab]
    if missing:
        raise InputError(f"--vocab_file: {vocab_file} lacks {', '.join(missing)}")
    return tokenizer


def _default_num_workers():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def run():
    """Creates the output files from the flags; raises InputError on bad input."""
    _check_flags()
    tokenizer = _load_tokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)
    input_files = _input_files(FLAGS.input_file)
    output_files = _output_files(FLAGS.output_file)
    num_workers = FLAGS.num_workers or _default_num_workers()

    logging.info("*** Reading from input files ***")
    for input_file in input_files:
        logging.info("  %s", input_file)
    start = time.monotonic()
    documents = _read_documents(input_files, tokenizer, num_workers)
    if not documents:
        raise InputError(f"--input_file: no text in {FLAGS.input_file} (every line is blank)")
    logging.info("Tokenized in %.1fs with %d worker(s)", time.monotonic() - start, num_workers)

    encoder = _ExampleEncoder(
        len(tokenizer.vocab) and max(tokenizer.vocab.values()) + 1,
        FLAGS.max_seq_length,
        FLAGS.max_predictions_per_seq,
    )

    def emit_factory():
        records = []
        encode = encoder.encode
        append = records.append

        def emit(ids, num_a, num_b, positions, label_ids, is_random_next):
            append(encode(ids, num_a, num_b, positions, label_ids, is_random_next))

        return records, emit

    start = time.monotonic()
    records = _create_records(
        documents,
        tokenizer,
        FLAGS.max_seq_length,
        FLAGS.dupe_factor,
        FLAGS.short_seq_prob,
        FLAGS.masked_lm_prob,
        FLAGS.max_predictions_per_seq,
        FLAGS.do_whole_word_mask,
        random.Random(FLAGS.random_seed),
        emit_factory,
    )
    del documents
    logging.info("Instances created in %.1fs", time.monotonic() - start)

    logging.info("*** Writing to output files ***")
    for output_file in output_files:
        logging.info("  %s", output_file)
    _write_records(records, tokenizer.inv_vocab, output_files)


def main(_):
    try:
        run()
    except InputError as e:
        sys.stderr.write(f"{os.path.basename(__file__)}: error: {e}\n")
        sys.exit(2)


if __name__ == "__main__":
    app.run(main)
