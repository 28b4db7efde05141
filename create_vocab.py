"""Learns a WordPiece vocabulary (vocab.txt) from raw text files.

The result plugs straight into `tokenization.FullTokenizer` (and so into
create_pretraining_data.py and the fine-tuning scripts): words are found
by the same `BasicTokenizer`, and the file has one token per line.

Layout of the file, top to bottom:

1. Special tokens. Without unused slots: [PAD] [UNK] [CLS] [SEP] [MASK].
   `--num_unused=N` adds [unused0] ... [unused{N-1}] the way Google's
   released vocabularies place them: [PAD], up to 99 of them, then [UNK]
   [CLS] [SEP] [MASK], then the rest. With N >= 99 the special ids are
   Google's (0, 100, 101, 102, 103).
2. Every character of the corpus, twice: as a word start ("e") and as a
   continuation ("##e"), most frequent first. With these, every word of at
   most --max_input_chars_per_word characters tokenizes without [UNK], on
   this corpus and on any text made of the same characters.
3. Learned pieces, in the order they were learned, up to --vocab_size.

The pieces are learned by byte-pair-encoding-style merging over the words
counted by BasicTokenizer: each distinct word starts as its characters
(first plain, the rest "##"-prefixed), and the adjacent pair of pieces with
the highest total word frequency is merged into a new piece, again and
again. Ties go to the lexicographically smallest pair, so the output is
deterministic. Frequent words therefore end up whole (a word in the
vocabulary is always one token under WordPiece's greedy longest match),
and rarer words split into frequent stems and "##" endings. Merging stops
at --vocab_size or when no pair occurs --min_frequency times.

    python create_vocab.py --input_file=corpus/*.txt --output_file=vocab.txt \\
        --vocab_size=8000
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections
import heapq
import os
import time

from absl import flags, logging

import tokenization
from bert_lib import script_flags
from bert_lib.plumbing import atomic_write, errors, fileio, startup_checks
from bert_lib.plumbing.errors import UsageError
from bert_lib.plumbing.progress import Progress

FLAGS = flags.FLAGS

script_flags.define_flags("input_file", "output_file", "do_lower_case", module=__name__)
script_flags.define_integer(
    "vocab_size",
    30522,
    "Number of lines of the vocabulary, special tokens included (default: the size of "
    "BERT-Base's English vocabularies). Fewer if the corpus has nothing left to merge.",
    script_flags.POSITIVE,
    module=__name__,
)
script_flags.define_integer(
    "num_unused",
    0,
    "Number of [unusedN] placeholder tokens, placed as in Google's vocabularies.",
    script_flags.NON_NEGATIVE,
    module=__name__,
)
script_flags.define_integer(
    "min_frequency",
    2,
    "A pair of pieces must occur this often to be merged into a new piece.",
    script_flags.POSITIVE,
    module=__name__,
)
script_flags.define_integer(
    "max_input_chars_per_word",
    200,
    "Words longer than this are ignored (WordPiece turns them into [UNK] anyway).",
    script_flags.POSITIVE,
    module=__name__,
)

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# Google's vocabularies put this many [unused] tokens between [PAD] and [UNK].
_UNUSED_BEFORE_UNK = 99


def special_tokens(num_unused):
    """The leading tokens of the vocabulary for `num_unused` [unused] slots."""
    unused = [f"[unused{i}]" for i in range(num_unused)]
    head = unused[:_UNUSED_BEFORE_UNK]
    tail = unused[_UNUSED_BEFORE_UNK:]
    return ["[PAD]", *head, "[UNK]", "[CLS]", "[SEP]", "[MASK]", *tail]


def count_words(input_files, do_lower_case=True, max_input_chars_per_word=200):
    """Counts the words BasicTokenizer finds in `input_files` (UTF-8 text).

    Returns a Counter word -> occurrences; longer words are left out.
    """
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    counts = collections.Counter()
    total_bytes = sum(fileio.file_size(p) for p in input_files)
    progress = Progress("Counting words", total_bytes / 1e6, "MB")
    done_bytes = 0
    for path in input_files:
        for line_number, raw in fileio.numbered_lines(path):
            done_bytes += len(raw) + 1
            counts.update(basic.tokenize(startup_checks.decode_line(raw, path, line_number)))
            progress.update(done_bytes / 1e6, extra=f", {len(counts):,} distinct")
    for word in [w for w in counts if len(w) > max_input_chars_per_word]:
        del counts[word]
    return counts


def _merged(left, right):
    """The piece made of `left` followed by the continuation piece `right`."""
    return left + right[2:]


class _PairMerger:
    """Byte-pair-style merging of adjacent pieces, weighted by word counts.

    Pair counts are kept up to date incrementally: merging a pair touches
    only the words that hold it. A heap yields the most frequent pair; stale
    heap entries are re-pushed with their current count when they surface.
    """

    def __init__(self, word_counts):
        self.words = []
        self.counts = []
        self.pair_counts = collections.defaultdict(int)
        self.where = collections.defaultdict(set)
        for word, count in sorted(word_counts.items()):
            pieces = [word[0]] + ["##" + c for c in word[1:]]
            index = len(self.words)
            self.words.append(pieces)
            self.counts.append(count)
            for pair in zip(pieces, pieces[1:]):
                self.pair_counts[pair] += count
                self.where[pair].add(index)
        self.heap = [(-count, pair) for pair, count in self.pair_counts.items()]
        heapq.heapify(self.heap)

    def best_pair(self, min_frequency):
        """The most frequent pair (smallest on ties), or None below `min_frequency`."""
        heap = self.heap
        while heap:
            negative, pair = heap[0]
            current = self.pair_counts.get(pair, 0)
            if current == -negative:
                return pair if current >= min_frequency else None
            heapq.heappop(heap)
            if current > 0:
                heapq.heappush(heap, (-current, pair))
        return None

    def merge(self, pair):
        """Replaces every occurrence of `pair` by its merged piece; returns that piece."""
        left, right = pair
        new_piece = _merged(left, right)
        pair_counts, where = self.pair_counts, self.where
        changed = set()
        for index in sorted(where.pop(pair, ())):
            pieces = self.words[index]
            count = self.counts[index]
            for old in zip(pieces, pieces[1:]):
                pair_counts[old] -= count
                changed.add(old)
            merged = []
            i = 0
            while i < len(pieces):
                if i + 1 < len(pieces) and pieces[i] == left and pieces[i + 1] == right:
                    merged.append(new_piece)
                    i += 2
                else:
                    merged.append(pieces[i])
                    i += 1
            self.words[index] = merged
            old_pairs = set(zip(pieces, pieces[1:]))
            new_pairs = set(zip(merged, merged[1:]))
            for gone in old_pairs - new_pairs:
                if gone != pair:
                    where[gone].discard(index)
            for new in zip(merged, merged[1:]):
                pair_counts[new] += count
                where[new].add(index)
                changed.add(new)
        for key in changed:
            count = pair_counts.get(key, 0)
            if count <= 0:
                pair_counts.pop(key, None)
                where.pop(key, None)
            else:
                heapq.heappush(self.heap, (-count, key))
        pair_counts.pop(pair, None)
        return new_piece


def learn_vocab(word_counts, vocab_size, num_unused=0, min_frequency=2):
    """Returns the vocabulary (list of tokens) for `word_counts`.

    Raises UsageError if `vocab_size` cannot hold the special tokens and
    the characters of the corpus.
    """
    vocab = special_tokens(num_unused)
    char_counts = collections.Counter()
    for word, count in word_counts.items():
        for char in word:
            char_counts[char] += count
    chars = sorted(char_counts, key=lambda c: (-char_counts[c], c))
    needed = len(vocab) + 2 * len(chars)
    if vocab_size < needed:
        raise UsageError(
            f"--vocab_size={vocab_size} is too small: the special tokens and the "
            f"{len(chars)} characters of the corpus (each also as a ## piece) need {needed}"
        )
    vocab += chars
    vocab += ["##" + c for c in chars]
    known = set(vocab)
    merger = _PairMerger(word_counts)
    target = vocab_size - len(vocab)
    learned = 0
    progress = Progress("Learning pieces", target, "pieces")
    while learned < target:
        pair = merger.best_pair(min_frequency)
        if pair is None:
            break
        piece = merger.merge(pair)
        if piece not in known:
            known.add(piece)
            vocab.append(piece)
            learned += 1
        progress.update(learned)
    if learned < target:
        logging.info(
            "No pair occurs %d times any more: the vocabulary has %d tokens, not %d",
            min_frequency,
            len(vocab),
            vocab_size,
        )
    return vocab


def write_vocab(vocab, output_file):
    """Writes one token a line; the file appears under its name only when complete."""
    text = "".join(token + "\n" for token in vocab)
    atomic_write.write_text(output_file, text, flag="--output_file")


# The flags this script reads, read once by settings_from_flags.
Settings = collections.namedtuple(
    "Settings",
    "input_file output_file vocab_size num_unused min_frequency max_input_chars_per_word "
    "do_lower_case",
)


def settings_from_flags():
    return Settings(**{name: FLAGS[name].value for name in Settings._fields})


def _check_flags(settings):
    for name in ("input_file", "output_file"):
        if not getattr(settings, name):
            raise UsageError(f"--{name} is required")
    if settings.num_unused < 0:
        raise UsageError(f"--num_unused={settings.num_unused} must not be negative")
    minimum = len(special_tokens(settings.num_unused))
    if settings.vocab_size < minimum:
        raise UsageError(
            f"--vocab_size={settings.vocab_size} is too small: the special tokens alone need "
            f"{minimum}"
        )
    if settings.min_frequency < 1:
        raise UsageError(f"--min_frequency={settings.min_frequency} must be at least 1")
    if settings.max_input_chars_per_word < 1:
        raise UsageError(
            f"--max_input_chars_per_word={settings.max_input_chars_per_word} must be at least 1"
        )


def _check_output(path, input_files):
    """The vocabulary goes in an existing, writable directory, over none of the corpus."""
    directory = os.path.dirname(path) or "."
    if not fileio.isdir(directory):
        raise UsageError(f"--output_file: no such directory: {directory}")
    startup_checks.check_output_file(path)
    startup_checks.check_outputs_are_not_inputs(
        [("--output_file", path)], [("--input_file", f) for f in input_files]
    )


def run(settings):
    """Builds the vocabulary the settings ask for; raises UsageError on bad input."""
    _check_flags(settings)
    input_files = startup_checks.expand_input_files(settings.input_file)
    _check_output(settings.output_file, input_files)
    start = time.monotonic()
    counts = count_words(input_files, settings.do_lower_case, settings.max_input_chars_per_word)
    if not counts:
        raise UsageError(f"--input_file: no words in {settings.input_file}")
    logging.info(
        "Counted %d words, %d distinct, in %.1fs",
        sum(counts.values()),
        len(counts),
        time.monotonic() - start,
    )
    start = time.monotonic()
    vocab = learn_vocab(counts, settings.vocab_size, settings.num_unused, settings.min_frequency)
    logging.info("Built %d tokens in %.1fs", len(vocab), time.monotonic() - start)
    write_vocab(vocab, settings.output_file)
    logging.info("Wrote %s", settings.output_file)


def main(_):
    errors.call(run, settings_from_flags())


if __name__ == "__main__":
    script_flags.run_main(main)
