"""Measures FullTokenizer throughput against a plain implementation of the algorithm.

Each input line is tokenized into word pieces (as create_pretraining_data
does) by tests/support/reference_tokenizer.py, a character-by-character
implementation without memoisation, and by tokenization.FullTokenizer; the
outputs must be identical on every line. Speed is MB (10^6 bytes of UTF-8
input) per second of this process's CPU time, which stays meaningful on a
machine shared with other jobs; the best of --repeats passes counts.
"Cold" passes use a new FullTokenizer each time (empty memo), "warm" passes
reuse one that has seen the text. Vocabulary loading is not timed.

    .venv/bin/python benchmarks/tokenizer_speed.py --input_file=corpus.txt \\
        --vocab_file=vocab.txt --do_lower_case=True --repeats=3
"""

import gc
import glob
import os
import sys
import time

from absl import app, flags

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)
sys.path.insert(0, os.path.join(_REPO, "tests", "support"))

import reference_tokenizer  # noqa: E402

import tokenization  # noqa: E402

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Comma-separated text files (or globs) to tokenize.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocabulary, one token per line.")
flags.DEFINE_bool("do_lower_case", True, "Lower-case and strip accents (uncased models).")
flags.DEFINE_integer("repeats", 3, "Timed passes per tokenizer; the best one counts.")


def _fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def _read_lines(patterns):
    """All lines of all matching files, as (path, line number, text) triples."""
    lines = []
    for pattern in patterns.split(","):
        paths = sorted(glob.glob(pattern.strip()))
        if not paths:
            _fail(f"--input_file: no file matches {pattern!r}")
        for path in paths:
            with open(path, "rb") as f:
                for number, raw in enumerate(f, start=1):
                    try:
                        lines.append((path, number, raw.decode("utf-8")))
                    except UnicodeDecodeError:
                        _fail(f"{path}:{number}: not valid UTF-8")
    return lines


def _timed(tokenize, texts):
    """(CPU seconds, outputs) of tokenizing each text, with garbage collection kept out."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        outputs = [tokenize(text) for text in texts]
        return time.process_time() - start, outputs
    finally:
        gc.enable()


def _check(lines, expected, got, what):
    for (path, number, _), want, have in zip(lines, expected, got):
        if want != have:
            _fail(f"{path}:{number}: {what} output differs from the reference: {want} vs {have}")


def main(argv):
    del argv
    if not FLAGS.input_file or not FLAGS.vocab_file:
        _fail("--input_file and --vocab_file are required")
    if FLAGS.repeats < 1:
        _fail(f"--repeats must be at least 1, got {FLAGS.repeats}")
    if not os.path.isfile(FLAGS.vocab_file):
        _fail(f"--vocab_file: no such file {FLAGS.vocab_file!r}")
    lines = _read_lines(FLAGS.input_file)
    texts = [text for _, _, text in lines]
    megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
    if megabytes == 0:
        _fail("--input_file: the input is empty")
    lower = FLAGS.do_lower_case
    ref_vocab = reference_tokenizer.load_vocab(FLAGS.vocab_file)
    print(f"input: {len(texts)} lines, {megabytes:.2f} MB, do_lower_case={lower}", flush=True)

    def reference(text):
        return reference_tokenizer.full_tokenize(text, ref_vocab, lower)

    ref_best, cold_best, warm_best = float("inf"), float("inf"), float("inf")
    expected = None
    for attempt in range(1, FLAGS.repeats + 1):
        seconds, got = _timed(reference, texts)
        ref_best = min(ref_best, seconds)
        expected = expected or got
        del got

        tokenizer = tokenization.FullTokenizer(FLAGS.vocab_file, do_lower_case=lower)
        seconds, got = _timed(tokenizer.tokenize, texts)
        cold_best = min(cold_best, seconds)
        _check(lines, expected, got, "cold")
        del got

        seconds, got = _timed(tokenizer.tokenize, texts)
        warm_best = min(warm_best, seconds)
        _check(lines, expected, got, "warm")
        del got
        print(f"pass {attempt}/{FLAGS.repeats} done", flush=True)

    ref_rate = megabytes / ref_best
    cold_rate = megabytes / cold_best
    warm_rate = megabytes / warm_best
    print("output: identical to the reference on every line, every pass")
    print(f"reference:        {ref_rate:8.2f} MB/s")
    print(f"ours (cold memo): {cold_rate:8.2f} MB/s  ({cold_rate / ref_rate:.1f}x)")
    print(f"ours (warm memo): {warm_rate:8.2f} MB/s  ({warm_rate / ref_rate:.1f}x)")


if __name__ == "__main__":
    app.run(main)
