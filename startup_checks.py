"""Checks every script makes before any work, each with one message.

A mistake in flags or files is caught here, as a UsageError naming the
flag and file, instead of minutes later deep in a graph. No TensorFlow is
imported (except for a path with a scheme), so the data-preparation
scripts use these too.
"""

import os

import fileio
import tokenization
from errors import UsageError


def check_seq_length(max_seq_length, bert_config):
    """--max_seq_length must fit the model's position embeddings."""
    if max_seq_length > bert_config.max_position_embeddings:
        raise UsageError(
            f"Cannot use sequence length {max_seq_length} because the BERT model "
            f"was only trained up to sequence length {bert_config.max_position_embeddings}"
        )


def check_output_dir(path, flag="--output_dir"):
    """An output directory may not exist yet, but must not be a file."""
    if path and fileio.exists(path) and not fileio.isdir(path):
        raise UsageError(f"{flag}: {path} is a file, not a directory")


def check_output_file(path, flag="--output_file"):
    """An output file's directory must exist (or be creatable) and the path not be a directory."""
    if not path:
        raise UsageError(f"{flag} is required")
    directory = os.path.dirname(path) or "."
    if fileio.exists(directory) and not fileio.isdir(directory):
        raise UsageError(f"{flag}: {directory} is a file, not a directory")
    if fileio.isdir(path):
        raise UsageError(f"{flag}: {path} is a directory")


def check_input_file(path, flag):
    """`path` must be an existing file (not a directory)."""
    if not path or not fileio.exists(path):
        raise UsageError(f"{flag}: no such file: {path}")
    if fileio.isdir(path):
        raise UsageError(f"{flag}: {path} is a directory")


def expand_input_files(patterns, flag="--input_file"):
    """The files a comma-separated list of paths and globs names, in tf.io.gfile order.

    Each entry must match at least one file and no directory.
    """
    files = []
    for pattern in patterns.split(","):
        if not pattern:
            raise UsageError(f"{flag}: empty entry in {patterns!r}")
        matches = fileio.glob(pattern)
        if not matches:
            if any(c in pattern for c in "*?["):
                raise UsageError(f"{flag}: no file matches {pattern}")
            raise UsageError(f"{flag}: no such file: {pattern}")
        for path in matches:
            if fileio.isdir(path):
                raise UsageError(f"{flag}: {path} is a directory")
        files.extend(matches)
    return files


def load_tokenizer(vocab_file, do_lower_case, flag="--vocab_file"):
    """The FullTokenizer of `vocab_file`: an existing UTF-8 file with every special token."""
    check_input_file(vocab_file, flag)
    try:
        tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    except UnicodeDecodeError as e:
        raise UsageError(f"{flag}: {vocab_file} is not UTF-8 text ({e.reason})") from None
    try:
        tokenization.check_special_tokens(tokenizer.vocab, vocab_file)
    except ValueError as e:
        raise UsageError(str(e).replace("--vocab_file", flag, 1)) from None
    return tokenizer


def decode_line(raw, path, line_number, flag="--input_file"):
    """One line of an input file as text; names the file and line if it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{flag}: {path}: line {line_number} is not UTF-8 text") from None
