"""Checks of paths and text files every script makes before any work, each with one message.

A mistake in flags or files is caught here, as a UsageError naming the
flag and file, instead of minutes later deep in a graph. No TensorFlow is
imported (except for a path with a scheme), so the data-preparation
scripts use these too: output locations (makeable, writable, not a
file), outputs that would overwrite an input, checkpoint files named for
their checkpoint, input files and their text. The checks of what BERT's
model is made of (its config, vocabulary and checkpoints) are
bert_lib/bert_runs/checks.py's: this module knows nothing of BERT, so that the
engine can use it.
"""

import codecs
import os
import re
import tempfile

from absl import logging

from . import atomic_write, fileio
from .errors import UsageError


def _nearest_existing(path):
    """`path`, or its nearest ancestor that exists."""
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def _can_write_in(directory):
    """Whether files can be made in `directory`: its mode allows it and a probe succeeds.

    The probe (a directory made and removed at once) catches what the mode
    does not tell: a read-only file system, a virtual one (/proc), root.
    """
    if not os.access(directory, os.W_OK | os.X_OK):
        return False
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-check-", dir=directory))
    except OSError:
        return False
    return True


def check_output_location(path, flag, as_directory=True):
    """`path` (a directory with `as_directory`, else a file) can be made or written.

    It need not exist yet: the nearest ancestor that does must be a
    directory this process can write in. Remote paths (gs://...) are left
    to their file system.
    """
    if not path or fileio.is_remote(path):
        return
    full = os.path.abspath(path)
    existing = _nearest_existing(full)
    if existing == full:
        if as_directory and not os.path.isdir(full):
            raise UsageError(f"{flag}: {path} is a file, not a directory")
        if not as_directory and os.path.isdir(full):
            raise UsageError(f"{flag}: {path} is a directory")
        directory = full if as_directory else os.path.dirname(full)
    elif not os.path.isdir(existing):
        raise UsageError(f"{flag}: {existing} is a file, not a directory (in {path})")
    else:
        directory = existing
    if not _can_write_in(directory):
        where = "" if directory in (full, os.path.dirname(full)) else f" (to make {path})"
        raise UsageError(
            f"{flag}: cannot write in {directory}{where}: permission denied or read-only"
        )


def check_output_dir(path, flag="--output_dir"):
    """An output directory need not exist yet, but must be one (or be makeable) and writable."""
    check_output_location(path, flag)


def check_new_output_dir(path, flag):
    """An output directory that must not exist yet (a SavedModel's), but can be made."""
    if path and fileio.exists(path):
        raise UsageError(f"{flag}={path} already exists; choose a new directory")
    check_output_location(path, flag)


def check_output_file(path, flag="--output_file"):
    """An output file's directory must be makeable and writable, and the path not a directory."""
    if not path:
        raise UsageError(f"{flag} is required")
    check_output_location(path, flag, as_directory=False)


def _file_identity(path):
    """What makes two paths the same file: (device, inode) when it exists, else the real path."""
    try:
        status = os.stat(path)
        return (status.st_dev, status.st_ino)
    except OSError:
        return os.path.realpath(path)


def check_outputs_are_not_inputs(outputs, inputs):
    """Refuses a run that would write over one of its own input files.

    `outputs` and `inputs` are (name, path) pairs; a name says where the
    path comes from ("--output_file", "--output_dir's test_results.tsv").
    Paths are compared as files (links and relative forms resolved);
    remote paths as written.
    """
    known = {}
    for name, path in inputs:
        if path:
            key = path if fileio.is_remote(path) else _file_identity(path)
            known.setdefault(key, (name, path))
    for name, path in outputs:
        if not path:
            continue
        key = path if fileio.is_remote(path) else _file_identity(path)
        if key in known:
            input_name, input_path = known[key]
            raise UsageError(
                f"{name}={path} is also the input {input_name}={input_path}: the run would "
                "overwrite it; write the output elsewhere"
            )


def checkpoint_files(prefix):
    """The files of a local checkpoint `prefix` (.index, .data-*, .meta) that exist."""
    if not prefix or fileio.is_remote(prefix):
        return []
    directory = os.path.dirname(prefix) or "."
    base = os.path.basename(prefix)
    if not os.path.isdir(directory):
        return []
    pattern = re.compile(re.escape(base) + r"\.(index|meta|data-\d+-of-\d+)$")
    return [os.path.join(directory, name) for name in os.listdir(directory) if pattern.match(name)]


# A checkpoint file's name, named where its prefix was meant: model.ckpt-300.index.
_CHECKPOINT_FILE = re.compile(r"^(.+)\.(index|meta|data-\d{5}-of-\d{5})$")


def checkpoint_prefix(path, flag="--init_checkpoint"):
    """The checkpoint prefix `path` names: a file of a checkpoint stands for its prefix.

    `model.ckpt-300.index` (or .data-00000-of-00001, .meta) names the
    checkpoint model.ckpt-300 when that checkpoint's index exists; the
    change is logged. Anything else is returned as it is.
    """
    if not path:
        return path
    match = _CHECKPOINT_FILE.match(path)
    if match is None or not fileio.exists(match.group(1) + ".index"):
        return path
    prefix = match.group(1)
    logging.info(
        "%s=%s is a file of the checkpoint %s: reading that checkpoint", flag, path, prefix
    )
    return prefix


def check_input_file(path, flag):
    """`path` must be an existing file (not a directory)."""
    if not path or not fileio.exists(path):
        raise UsageError(f"{flag}: no such file: {path}")
    if fileio.isdir(path):
        raise UsageError(f"{flag}: {path} is a directory")


def expand_input_files(patterns, flag="--input_file"):
    """The files a comma-separated list of paths and globs names, in tf.io.gfile order.

    Each entry must match at least one file and no directory. What a glob
    matches of a write in progress, or of one a killed process left
    (atomic_write.is_temporary: staging directories, temporary names), is
    never input: it is left out, and the log names it.
    """
    files = []
    for pattern in patterns.split(","):
        if not pattern:
            raise UsageError(f"{flag}: empty entry in {patterns!r}")
        matches = fileio.glob(pattern)
        is_glob = any(c in pattern for c in "*?[")
        temporary = [path for path in matches if is_glob and atomic_write.is_temporary(path)]
        for path in temporary:
            logging.warning(
                "%s: %s matches %s, the temporary file of an unfinished write (one in "
                "progress, or one a killed process left): not input, left out",
                flag,
                pattern,
                path,
            )
        matches = [path for path in matches if path not in temporary]
        if not matches:
            if temporary:
                raise UsageError(
                    f"{flag}: no file matches {pattern} but the temporary file of an "
                    f"unfinished write, {temporary[0]}"
                )
            if is_glob:
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
