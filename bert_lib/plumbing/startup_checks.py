"""Checks of paths and text files every script makes before any work, each with one message.

A mistake in flags or files is caught here, as a UsageError naming the
flag and file, instead of minutes later deep in a graph. No TensorFlow is
imported (except for a path with a scheme), so the data-preparation
scripts use these too. The checks of what BERT's model is made of (its
config, vocabulary and checkpoints) are bert_lib/model/checks.py's: this
module knows nothing of BERT, so that the engine can use it.
"""

import codecs
import os

from . import fileio
from .errors import UsageError


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


def _not_utf8(path, line_number, flag):
    where = f"{flag}: " if flag else ""
    return UsageError(f"{where}{path}: line {line_number} is not UTF-8 text")


def _without_bom(data):
    """A byte-order mark at the start (Excel's "CSV UTF-8" writes one) is not text."""
    return data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else data


def decode_line(raw, path, line_number, flag="--input_file"):
    """One line of an input file as text; names the file and line if it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _not_utf8(path, line_number, flag) from None


def text_lines(path, flag=None):
    """Yields the lines of a UTF-8 text file, each ending in "\n".

    A byte-order mark at the start is dropped; a line that is not UTF-8 (say
    Windows-1252) is a UsageError naming the file and the line.
    """
    for line_number, raw in fileio.numbered_lines(path):
        if line_number == 1:
            raw = _without_bom(raw)
        yield decode_line(raw, path, line_number, flag) + "\n"


def read_text(path, flag=None):
    """A whole UTF-8 text file (a JSON file, say) as a string; names the first line that
    is not UTF-8. A byte-order mark at the start is dropped."""
    with fileio.open_binary(path) as f:
        data = _without_bom(f.read())
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _not_utf8(path, data.count(b"\n", 0, e.start) + 1, flag) from None
