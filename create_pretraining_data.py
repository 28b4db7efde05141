"""Creates the masked-LM / next-sentence TFRecords that BERT pre-trains on.

Input: text files with one sentence per line and a blank line between
documents. Output: tf.train.Examples with input_ids, input_mask,
segment_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights and
next_sentence_labels, dealt round-robin over the output files.

For the same files, vocabulary, flags and seed the Examples are exactly the
2018 script's, in the same order and files: one `random.Random(random_seed)`
is drawn from in the order the original script draws it. What differs is
cost:

- TensorFlow, seconds of CPU and hundreds of MB to import, is not loaded
  for local files: the TFRecord framing is written directly
  (bert_lib/plumbing/tfrecord_format.py), byte for byte what tf.io.TFRecordWriter writes.
  Paths with a scheme (gs://, ...) go through tf.io.gfile.
- Tokenization has no randomness, so it runs in `--num_workers` forked
  processes over chunks of lines, in order, memoised per word, and the
  documents are kept as tuples of token ids rather than lists of strings.
- Instance creation stays sequential. Every random decision depends on the
  tokens only through sentence lengths (and "##" pieces for whole word
  masking), so a planner makes the draws from lengths alone, tracking
  truncation by offsets, and the token lists are assembled from its plans.
  Shuffles and randints call `getrandbits` directly - the algorithm
  `random.Random` uses, checked against it at start-up (with a fall-back to
  the library methods should a Python version ever differ).
- Each instance is serialized as soon as it is made, by a small encoder
  (bert_lib/plumbing/tfrecord_format.py) whose bytes equal
  `tf.train.Example.SerializeToString(deterministic=True)`
  (features sorted by name; protobuf's default map order changes from one
  process to the next, so the original's files differ in byte order
  between runs while parsing to the same Examples). Only these bytes are
  held until the final shuffle, a fraction of the original's lists of
  strings.

    python create_pretraining_data.py --input_file=corpus/*.txt \\
        --output_file=out.tfrecord --vocab_file=vocab.txt
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import array
import collections
import contextlib
import itertools
import multiprocessing
import os
import random
import re
import time
import warnings

from absl import flags, logging

import tokenization
from bert_lib import script_flags
from bert_lib.model import checks
from bert_lib.plumbing import errors, fileio, startup_checks, tfrecord_format
from bert_lib.plumbing.errors import UsageError
from bert_lib.plumbing.progress import Progress

FLAGS = flags.FLAGS

script_flags.define_flags(
    "input_file",
    "output_file",
    "vocab_file",
    "do_lower_case",
    "max_seq_length",
    "max_predictions_per_seq",
)
flags.DEFINE_bool(
    "do_whole_word_mask",
    False,
    "Whether to mask all the WordPiece pieces of a word together (whole word masking).",
)
script_flags.define_integer(
    "random_seed", 12345, "Random seed for data generation.", script_flags.ANY_NUMBER
)
script_flags.define_integer(
    "dupe_factor",
    10,
    "Number of times to duplicate the input data (with different masks).",
    script_flags.POSITIVE,
)
script_flags.define_float(
    "masked_lm_prob",
    0.15,
    "Masked LM probability.",
    script_flags.Valid("in (0, 1]", lambda value: 0 < value <= 1),
)
script_flags.define_float(
    "short_seq_prob",
    0.1,
    "Probability of creating sequences which are shorter than the maximum length.",
    script_flags.FRACTION,
)
script_flags.define_integer(
    "num_workers",
    None,
    "Processes that tokenize the input in parallel (default: all CPU cores). "
    "The output does not depend on it.",
    script_flags.POSITIVE,
)

_CLS, _SEP, _MASK, _UNK = "[CLS]", "[SEP]", "[MASK]", "[UNK]"
# Lines handed to a tokenizer worker at a time, and bytes read at a time.
_LINES_PER_CHUNK = 2000
_BYTES_PER_READ = 1 << 22
# Features in the order the original inserts (and logs) them.
_FEATURE_NAMES = tfrecord_format.PRETRAINING_FEATURE_NAMES


class InputError(UsageError):
    """Bad user input: reported as one line naming the flag or file, no traceback."""


class Recipe(
    collections.namedtuple(
        "Recipe",
        [
            "max_seq_length",
            "dupe_factor",
            "short_seq_prob",
            "masked_lm_prob",
            "max_predictions_per_seq",
            "do_whole_word_mask",
        ],
    )
):
    """The recipe that decide which instances are made (the flags of the same names)."""

    @classmethod
    def from_flags(cls):
        return cls(
            FLAGS.max_seq_length,
            FLAGS.dupe_factor,
            FLAGS.short_seq_prob,
            FLAGS.masked_lm_prob,
            FLAGS.max_predictions_per_seq,
            FLAGS.do_whole_word_mask,
        )


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
# Calling getrandbits directly skips two or three Python frames per draw.


def _fast_draws(getrandbits):
    """(randint, shuffle) drawing exactly as random.Random's, from its getrandbits."""

    def randint(a, b):
        n = b - a + 1
        k = n.bit_length()
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return a + r

    def shuffle(x):
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

    return randint, shuffle


def _fast_draws_match_library():
    """Whether _fast_draws reproduces this Python's random.Random exactly."""
    for seed in (0, 1, 12345):
        ours, theirs = random.Random(seed), random.Random(seed)
        randint, shuffle = _fast_draws(ours.getrandbits)
        for n in (1, 2, 3, 7, 64, 65, 200):
            a, b = list(range(n)), list(range(n))
            shuffle(a)
            theirs.shuffle(b)
            if a != b or randint(3, n + 2) != theirs.randint(3, n + 2):
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
            self.randint, self.shuffle = _fast_draws(rng.getrandbits)
        else:
            self.randint = rng.randint
            self.shuffle = rng.shuffle


# ---------------------------------------------------------------------------
# Instance creation, on token ids (main path) or token strings (public API).


class _InstancePlanner:
    """Makes every random decision of the recipe, knowing only sentence lengths.

    The draws depend on the tokens only through sentence lengths and, for
    whole word masking, through which tokens are "##" pieces. So the planner
    works on `doc_lengths[d]` (the token count of each sentence of document
    d) and, when `doc_kinds` is given, `doc_kinds[d]` (per sentence, bytes
    with 1 for a "##" piece, 2 for a [CLS] or [SEP] token, 0 otherwise).
    Without `doc_kinds`, documents must hold no [CLS] or [SEP] (true of
    tokenized text) and whole word masking must be off.

    Each instance becomes a plan, handed to `emit(plan)`:
    (d, c0, a_end, a0, a1, db, s0, s1, b0, b1, is_random_next, positions, changes):
    segment A is sentences c0:a_end of document d, cut to [a0:a1]; segment B
    is sentences s0:s1 of document db, cut to [b0:b1]; `positions` are the
    sorted masked positions in [CLS] A [SEP] B [SEP] and `changes` the
    (position, new token) pairs ([MASK] or a random vocabulary item).
    """

    def __init__(
        self,
        doc_lengths,
        doc_kinds,
        num_documents,
        recipe,
        vocab_items,
        mask_item,
        rng,
    ):
        if recipe.do_whole_word_mask and doc_kinds is None:
            raise ValueError("whole word masking needs the kinds of the tokens")
        self.doc_lengths = doc_lengths
        self.doc_kinds = doc_kinds
        self.num_documents = num_documents
        self.max_num_tokens = recipe.max_seq_length - 3
        self.short_seq_prob = recipe.short_seq_prob
        self.masked_lm_prob = recipe.masked_lm_prob
        self.max_predictions_per_seq = recipe.max_predictions_per_seq
        self.do_whole_word_mask = recipe.do_whole_word_mask
        self.vocab_items = vocab_items
        self.mask_item = mask_item
        self.draws = _Draws(rng)

    def plan_document(self, d, emit):
        """Plans the instances of document `d`; returns how many."""
        doc_lengths = self.doc_lengths
        lengths = doc_lengths[d]
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
        n = len(lengths)
        while i < n:
            length += lengths[i]
            if i == n - 1 or length >= target:
                size = i + 1 - chunk_start
                a_end = chunk_start + (randint(1, size - 1) if size >= 2 else 1)
                len_a = sum(lengths[chunk_start:a_end])
                if size == 1 or rand() < 0.5:
                    is_random_next = True
                    target_b = target - len_a
                    for _ in range(10):
                        db = randint(0, self.num_documents - 1)
                        if db != d:
                            break
                    other = doc_lengths[db]
                    s0 = s1 = randint(0, len(other) - 1)
                    len_b = 0
                    while s1 < len(other):
                        len_b += other[s1]
                        s1 += 1
                        if len_b >= target_b:
                            break
                    # The sentences not used for A go back to the document.
                    i = a_end - 1
                else:
                    is_random_next = False
                    db, s0, s1 = d, a_end, i + 1
                    len_b = length - len_a
                a0, a1, b0, b1 = self._truncation(len_a, len_b)
                kinds = None
                if self.doc_kinds is not None:
                    kinds = b"".join(
                        (
                            b"\x02",
                            b"".join(self.doc_kinds[d][chunk_start:a_end])[a0:a1],
                            b"\x02",
                            b"".join(self.doc_kinds[db][s0:s1])[b0:b1],
                            b"\x02",
                        )
                    )
                positions, changes = self.plan_masks(a1 - a0, b1 - b0, kinds)
                emit(
                    (d, chunk_start, a_end, a0, a1, db, s0, s1, b0, b1)
                    + (is_random_next, positions, changes)
                )
                count += 1
                chunk_start = i + 1
                length = 0
            i += 1
        return count

    def _truncation(self, len_a, len_b):
        """(a0, a1, b0, b1): the spans kept after trimming the longer side at random."""
        a0, a1, b0, b1 = 0, len_a, 0, len_b
        rand = self.draws.random
        max_num_tokens = self.max_num_tokens
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

    def plan_masks(self, num_a, num_b, kinds=None):
        """(sorted masked positions, [(position, new token)]) for one sequence.

        The sequence is [CLS] + num_a tokens + [SEP] + num_b tokens + [SEP]
        unless `kinds` (one byte per token, see the class) describes it.
        """
        if kinds is None:
            length = num_a + num_b + 3
            candidates = list(range(1, num_a + 1))
            candidates += range(num_a + 2, num_a + num_b + 2)
        else:
            length = len(kinds)
            whole_words = self.do_whole_word_mask
            candidates = []
            for i, kind in enumerate(kinds):
                if kind == 2:
                    continue
                if kind == 1 and whole_words and candidates:
                    candidates[-1].append(i)
                else:
                    candidates.append([i])
        draws = self.draws
        draws.shuffle(candidates)
        num_to_predict = min(
            self.max_predictions_per_seq, max(1, int(round(length * self.masked_lm_prob)))
        )
        if kinds is None:
            chosen = candidates[:num_to_predict]
        else:
            chosen = []
            for group in candidates:
                if len(chosen) >= num_to_predict:
                    break
                # Groups partition the positions, so none can overlap a chosen one.
                if len(chosen) + len(group) > num_to_predict:
                    continue
                chosen += group
        rand = draws.random
        mask_item = self.mask_item
        changes = []
        append = changes.append
        for i in chosen:
            if rand() < 0.8:
                append((i, mask_item))
            elif rand() >= 0.5:
                vocab_items = self.vocab_items
                append((i, vocab_items[draws.randint(0, len(vocab_items) - 1)]))
        chosen.sort()
        return chosen, changes


class _InstanceAssembler:
    """Turns plans (see _InstancePlanner) into token sequences."""

    def __init__(self, documents, cls, sep):
        self.documents = documents
        self.cls = cls
        self.sep = sep

    def assemble(self, plan):
        """(tokens, num_a, num_b, positions, labels, is_random_next) of one plan.

        `tokens` is [CLS] A [SEP] B [SEP] after masking; `labels` are the
        original tokens at `positions`.
        """
        d, c0, a_end, a0, a1, db, s0, s1, b0, b1, is_random_next, positions, changes = plan
        documents = self.documents
        chain = itertools.chain.from_iterable
        doc = documents[d]
        tokens_a = doc[c0] if a_end - c0 == 1 else list(chain(doc[c0:a_end]))
        doc = documents[db]
        tokens_b = doc[s0] if s1 - s0 == 1 else list(chain(doc[s0:s1]))
        tokens = [self.cls]
        tokens += tokens_a[a0:a1]
        tokens.append(self.sep)
        tokens += tokens_b[b0:b1]
        tokens.append(self.sep)
        labels = list(map(tokens.__getitem__, positions))
        for i, item in changes:
            tokens[i] = item
        return tokens, a1 - a0, b1 - b0, positions, labels, is_random_next


class _LazyPerDocument:
    """doc -> f(doc), computed on first use: the public helpers see one document at a time."""

    def __init__(self, documents, compute):
        self.documents = documents
        self.compute = compute
        self.cache = {}

    def __getitem__(self, d):
        value = self.cache.get(d)
        if value is None:
            value = self.cache[d] = self.compute(self.documents[d])
        return value


def _string_kinds(tokens):
    return bytes(2 if t in (_CLS, _SEP) else 1 if t.startswith("##") else 0 for t in tokens)


def _string_planner(all_documents, recipe, vocab_words, rng):
    """A planner over documents of token strings."""
    return _InstancePlanner(
        _LazyPerDocument(all_documents, lambda doc: [len(s) for s in doc]),
        _LazyPerDocument(all_documents, lambda doc: [_string_kinds(s) for s in doc]),
        len(all_documents),
        recipe,
        vocab_words,
        _MASK,
        rng,
    )


def create_instances_from_document(
    all_documents,
    document_index,
    max_seq_length,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    vocab_words,
    rng,
    do_whole_word_mask=False,
):
    """Creates `TrainingInstance`s for one document of token-string lists.

    Draws from `rng` exactly as the original does. `do_whole_word_mask` is
    --do_whole_word_mask's value (the original read the flag here; main
    passes it down): False, the flag's default, when not given.
    """
    recipe = Recipe(
        max_seq_length,
        1,
        short_seq_prob,
        masked_lm_prob,
        max_predictions_per_seq,
        do_whole_word_mask,
    )
    planner = _string_planner(all_documents, recipe, vocab_words, rng)
    assembler = _InstanceAssembler(all_documents, _CLS, _SEP)
    instances = []

    def emit(plan):
        instances.append(_training_instance(*assembler.assemble(plan)))

    planner.plan_document(document_index, emit)
    return instances


def _training_instance(tokens, num_a, num_b, positions, labels, is_random_next):
    segment_ids = [0] * (num_a + 2) + [1] * (num_b + 1)
    return TrainingInstance(tokens, segment_ids, positions, labels, is_random_next)


def create_masked_lm_predictions(
    tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng, do_whole_word_mask=False
):
    """Returns (output_tokens, masked_lm_positions, masked_lm_labels) for `tokens`.

    Every token except [CLS] and [SEP] is a candidate (with whole word
    masking, a "##" piece joins the candidate before it); candidates are
    shuffled and taken until min(max_predictions_per_seq,
    max(1, round(len(tokens) * masked_lm_prob))) tokens are chosen; each
    becomes [MASK] (80%), stays (10%) or a random vocabulary word (10%).
    `do_whole_word_mask` is --do_whole_word_mask's value (False when not
    given), as for create_instances_from_document.
    """
    recipe = Recipe(3, 1, 0.0, masked_lm_prob, max_predictions_per_seq, do_whole_word_mask)
    planner = _string_planner([], recipe, vocab_words, rng)
    positions, changes = planner.plan_masks(0, 0, _string_kinds(tokens))
    output_tokens = list(tokens)
    for i, item in changes:
        output_tokens[i] = item
    return output_tokens, positions, [tokens[i] for i in positions]


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


def create_int_feature(values):
    """The original's helper: an int64 tf.train.Feature of `values`.

    Records are written here without TensorFlow (tfrecord_format); this is
    for code that imports the helper, and imports TensorFlow when called.
    """
    from bert_lib.task_data import features

    return features.create_int_feature(values)


def create_float_feature(values):
    """The original's helper: a float tf.train.Feature of `values` (see create_int_feature)."""
    from bert_lib.task_data import features

    return features.create_float_feature(values)


def _log_example(record, inv_vocab):
    """Logs one serialized Example the way the original logs its first 20."""
    feature = tfrecord_format.example_values(record)
    num_tokens = sum(feature["input_mask"])
    tokens = [inv_vocab[i] for i in feature["input_ids"][:num_tokens]]
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in tokens))
    for name in _FEATURE_NAMES:
        logging.info("%s: %s", name, " ".join(str(x) for x in feature[name]))


def write_instance_to_example_files(
    instances, tokenizer, max_seq_length, max_predictions_per_seq, output_files
):
    """Writes `TrainingInstance`s round-robin to `output_files`; logs the first 20.

    Files appear under their names only once complete.
    """
    vocab = tokenizer.vocab
    encoder = tfrecord_format.PretrainingExampleEncoder(
        len(vocab), max_seq_length, max_predictions_per_seq
    )
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
    """Writes serialized Examples round-robin to `output_files`; logs the first 20.

    The files appear under their names only once all are complete; local
    files are written with no TensorFlow.
    """
    for record in records[:20]:
        _log_example(record, inv_vocab)
    progress = Progress("Writing", len(records), "instances")
    tfrecord_format.write_tfrecords(records, output_files, progress, flag="--output_file")
    progress.update(len(records), force=True)
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

    def lines(self, raw_lines, pack=False):
        """Tokenizes raw lines: per line None (blank: a document break) or a tuple of ids.

        Returns (result, index of the first line that is not UTF-8, or -1).
        With `pack` the result is two byte strings, all ids and the per-line
        counts (-1 for blank), cheap to send between processes; `unpack`
        turns either form into the list.
        """
        results = []
        bad_line = -1
        for index, raw in enumerate(raw_lines):
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError:
                bad_line = index
                break
            results.append(self.ids(line) if line else None)
        if not pack:
            return results, bad_line
        counts = array.array("i", [-1 if ids is None else len(ids) for ids in results])
        flat = array.array(self.typecode, itertools.chain.from_iterable(filter(None, results)))
        return (flat.tobytes(), counts.tobytes()), bad_line

    def unpack(self, result):
        """The per-line list of a `lines` result, packed or not.

        Packed ids come back as the vocabulary's own int objects, so every
        sentence shares them (8 bytes per token).
        """
        if isinstance(result, list):
            return result
        flat_bytes, counts_bytes = result
        flat = tuple(map(self.canonical.__getitem__, array.array(self.typecode, flat_bytes)))
        out = []
        position = 0
        for count in array.array("i", counts_bytes):
            if count < 0:
                out.append(None)
            else:
                out.append(flat[position : position + count])
                position += count
        return out


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
        with fileio.open_binary(path) as reader:
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
    total_bytes = sum(fileio.file_size(p) for p in input_files)
    progress = Progress("Reading input", total_bytes / 1e6, "MB")
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
                for ids in line_tokenizer.unpack(tokenized):
                    if ids is None:
                        current = []
                        documents.append(current)
                    elif ids:
                        current.append(ids)
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
    pool = None
    try:
        with warnings.catch_warnings(), errors.sigterm_held_for_forks():
            # Workers only run pure-Python tokenization, never TensorFlow, so
            # forking is safe even if TensorFlow (remote paths) has started threads.
            warnings.simplefilter("ignore", DeprecationWarning)
            pool = multiprocessing.get_context("fork").Pool(num_workers)

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
        if pool is not None:
            pool.terminate()
            pool.join()


def _vocab_items(tokenizer):
    """Vocabulary ids in file order of the distinct tokens (the original's vocab_words)."""
    vocab = tokenizer.vocab
    return [vocab[w] for w in vocab.keys()]


def _id_kinds(tokenizer):
    """Per vocabulary id: 2 for [CLS] and [SEP], 1 for a "##" piece, else 0."""
    vocab = tokenizer.vocab
    kinds = bytearray(max(vocab.values()) + 1)
    for token, index in vocab.items():
        kinds[index] = 2 if token in (_CLS, _SEP) else 1 if token.startswith("##") else 0
    return bytes(kinds)


def _id_plans(documents, tokenizer, recipe, rng, emit):
    """Plans every instance of the (already shuffled) id documents, as the original draws.

    Returns how many instances there are.
    """
    wwm = recipe.do_whole_word_mask
    doc_lengths = [[len(sentence) for sentence in doc] for doc in documents]
    doc_kinds = None
    if wwm:
        table = _id_kinds(tokenizer)
        doc_kinds = [[bytes(map(table.__getitem__, s)) for s in doc] for doc in documents]
    planner = _InstancePlanner(
        doc_lengths,
        doc_kinds,
        len(documents),
        recipe,
        _vocab_items(tokenizer),
        tokenizer.vocab[_MASK],
        rng,
    )
    total = recipe.dupe_factor * len(documents)
    progress = Progress("Creating instances", total, "documents")
    done = count = 0
    for _ in range(recipe.dupe_factor):
        for d in range(len(documents)):
            count += planner.plan_document(d, emit)
            done += 1
            if done & 255 == 0:
                progress.update(done, extra=f", {count:,} instances")
    logging.info("Created %d instances from %d documents", count, len(documents))
    return count


def _records_in_process(documents, tokenizer, recipe, rng, encoder):
    assemble = _InstanceAssembler(documents, *_specials(tokenizer)[:2]).assemble
    encode = encoder.encode
    records = []

    def emit(plan):
        records.append(encode(*assemble(plan)))

    _id_plans(documents, tokenizer, recipe, rng, emit)
    return records


def _specials(tokenizer):
    vocab = tokenizer.vocab
    return vocab[_CLS], vocab[_SEP], vocab[_MASK]


def _create_records(documents, tokenizer, recipe, rng, encoder):
    """The serialized Examples of the recipe, in their final (shuffled) order.

    Each record is serialized as soon as it is
    planned; only the bytes are kept until the final shuffle.
    """
    draws = _Draws(rng)
    draws.shuffle(documents)
    records = _records_in_process(documents, tokenizer, recipe, rng, encoder)
    draws.shuffle(records)
    return records


def create_training_instances(
    input_files,
    tokenizer,
    max_seq_length,
    dupe_factor,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    rng,
    do_whole_word_mask=False,
    num_workers=1,
):
    """Creates `TrainingInstance`s from raw text files, in the original's order.

    `do_whole_word_mask` is --do_whole_word_mask's value (False when not
    given, as for create_instances_from_document); `num_workers` processes
    tokenize in parallel.
    """
    documents = _read_documents(input_files, tokenizer, num_workers)
    recipe = Recipe(
        max_seq_length,
        dupe_factor,
        short_seq_prob,
        masked_lm_prob,
        max_predictions_per_seq,
        do_whole_word_mask,
    )
    draws = _Draws(rng)
    draws.shuffle(documents)
    cls, sep, _ = _specials(tokenizer)
    assemble = _InstanceAssembler(documents, cls, sep).assemble
    inv_vocab = tokenizer.inv_vocab
    instances = []

    def emit(plan):
        ids, num_a, num_b, positions, label_ids, is_random_next = assemble(plan)
        tokens = [inv_vocab[i] for i in ids]
        labels = [inv_vocab[i] for i in label_ids]
        instances.append(
            _training_instance(tokens, num_a, num_b, positions, labels, is_random_next)
        )

    _id_plans(documents, tokenizer, recipe, rng, emit)
    draws.shuffle(instances)
    return instances


# ---------------------------------------------------------------------------
# Command line.


# The flags this script reads, read once by settings_from_flags: the files,
# the tokenizer's casing, the seed, the worker count and the Recipe.
Settings = collections.namedtuple(
    "Settings", "input_file output_file vocab_file do_lower_case random_seed num_workers recipe"
)


def settings_from_flags():
    return Settings(
        input_file=FLAGS.input_file,
        output_file=FLAGS.output_file,
        vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case,
        random_seed=FLAGS.random_seed,
        num_workers=FLAGS.num_workers,
        recipe=Recipe.from_flags(),
    )


def _check_flags(settings):
    """Raises InputError for settings the recipe cannot work with."""
    recipe = settings.recipe
    for name in ("input_file", "output_file", "vocab_file"):
        if not getattr(settings, name):
            raise InputError(f"--{name} is required")
    if recipe.max_seq_length < 5:
        raise InputError(
            f"--max_seq_length={recipe.max_seq_length} is too small: [CLS], two [SEP] and "
            "a token from each segment need at least 5"
        )
    if recipe.max_predictions_per_seq < 1:
        raise InputError(
            f"--max_predictions_per_seq={recipe.max_predictions_per_seq} must be at least 1"
        )
    if not 0.0 < recipe.masked_lm_prob <= 1.0:
        raise InputError(f"--masked_lm_prob={recipe.masked_lm_prob} must be in (0, 1]")
    if not 0.0 <= recipe.short_seq_prob <= 1.0:
        raise InputError(f"--short_seq_prob={recipe.short_seq_prob} must be in [0, 1]")
    if recipe.dupe_factor < 1:
        raise InputError(f"--dupe_factor={recipe.dupe_factor} must be at least 1")
    if settings.num_workers is not None and settings.num_workers < 1:
        raise InputError(f"--num_workers={settings.num_workers} must be at least 1")


def _output_files(names, inputs):
    """The files of --output_file: in existing, writable directories, each named once, and
    none of them one of the `inputs` ((flag, path) pairs: the corpus, the vocabulary)."""
    files = names.split(",")
    for path in files:
        if not path:
            raise InputError(f"--output_file: empty entry in {names!r}")
        directory = os.path.dirname(path) or "."
        if not fileio.isdir(directory):
            raise InputError(f"--output_file: no such directory: {directory}")
        startup_checks.check_output_file(path)
    if len(set(files)) != len(files):
        raise InputError(f"--output_file: a file is named twice in {names}")
    startup_checks.check_outputs_are_not_inputs([("--output_file", f) for f in files], inputs)
    return files


def _default_num_workers():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def run(settings):
    """Creates the output files the settings ask for; raises InputError on bad input."""
    _check_flags(settings)
    recipe = settings.recipe
    tokenizer = checks.load_tokenizer(settings.vocab_file, settings.do_lower_case)
    input_files = startup_checks.expand_input_files(settings.input_file)
    inputs = [("--input_file", f) for f in input_files] + [("--vocab_file", settings.vocab_file)]
    output_files = _output_files(settings.output_file, inputs)
    num_workers = settings.num_workers or _default_num_workers()
    logging.info("*** Reading from input files ***")
    for input_file in input_files:
        logging.info("  %s", input_file)
    start = time.monotonic()
    documents = _read_documents(input_files, tokenizer, num_workers)
    if not documents:
        raise InputError(f"--input_file: no text in {settings.input_file} (every line is blank)")
    logging.info("Tokenized in %.1fs with %d worker(s)", time.monotonic() - start, num_workers)

    encoder = tfrecord_format.PretrainingExampleEncoder(
        max(tokenizer.vocab.values()) + 1,
        recipe.max_seq_length,
        recipe.max_predictions_per_seq,
    )
    start = time.monotonic()
    rng = random.Random(settings.random_seed)
    records = _create_records(documents, tokenizer, recipe, rng, encoder)
    del documents
    logging.info("Instances created in %.1fs", time.monotonic() - start)

    logging.info("*** Writing to output files ***")
    for output_file in output_files:
        logging.info("  %s", output_file)
    _write_records(records, tokenizer.inv_vocab, output_files)


def main(_):
    errors.call(run, settings_from_flags())


if __name__ == "__main__":
    script_flags.run_main(main)
