"""The pre-training corpus read and tokenized: documents of sentences of token ids.

Input: text files with one sentence per line and a blank line between
documents; documents run on across file ends, as in the original. Lines end
at b"\\n" only, as tf.io.gfile reads them. Tokenization has no randomness,
so it runs in `num_workers` forked processes over chunks of lines, in
order, memoised per word, and the documents are kept as tuples of token ids
rather than lists of strings. A line that is not UTF-8 is a UsageError
naming the file and the line.
"""

import array
import collections
import contextlib
import itertools
import multiprocessing
import re
import warnings

from absl import logging

from ..plumbing import errors, fileio
from ..plumbing.errors import UsageError
from ..plumbing.progress import Progress

# Lines handed to a tokenizer worker at a time, and bytes read at a time.
_LINES_PER_CHUNK = 2000
_BYTES_PER_READ = 1 << 22
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


def read_documents(input_files, tokenizer, num_workers):
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
                    raise UsageError(
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
