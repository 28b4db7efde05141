"""The files a tf.data pipeline reads: which they are, whether they are still what they were,
and which of them a read error is about.

A saved input position (input_position.py) is a place in particular files:
so many records into this shard, a shuffle buffer filled from them. If a
file is replaced under its name between a stop and the resume (a shard
made again, a train.tsv edited and its records written anew), restoring
the position would put the reader at an offset of another file: a
"corrupted record" some steps later, or, worse, training on in silence.
So each position is saved with the identity of the files it was read
from (identities: name, size, a SHA-256 of the first and last 64 KiB), and
a resumed run whose files are not those starts its input afresh, saying
which file changed (difference).

Which files: the pipeline names them itself, as string constants in its
graph (the file names an input_fn gave TFRecordDataset, a list of shards
sliced and interleaved, a pattern given to Dataset.list_files); those
that name existing files (or, holding a * or ?, match some) are the
pipeline's files (pipeline_files). The engine knows no more of the input
than the input_fn builds, as tf.estimator knew no more.

tf.data reports a damaged record as "corrupted record at <offset>" and a
vanished file by a message of its own, naming no file, or not saying what
happened: read_error names the file, the record and what happened
(removed, changed, damaged) in one line.
"""

import contextlib
import hashlib
import re

import tensorflow as tf
from absl import logging

from ..plumbing import tfrecord_format
from ..plumbing.errors import UsageError
from .config import InputReadError

# How much of each end of a file its identity reads.
_BLOCK = 1 << 16
# Strings of a pipeline longer than this, or with a line break, are no path.
_LONGEST_PATH = 4096


def pipeline_graph(variant):
    """(the GraphDef holding the dataset `variant`, the names of the nodes that make it)."""
    graph_def = variant.graph.as_graph_def()
    by_name = {node.name: node for node in graph_def.node}
    wanted, stack = set(), [variant.op.name]
    while stack:
        name = stack.pop()
        if name not in wanted:
            wanted.add(name)
            stack.extend(source.lstrip("^").split(":")[0] for source in by_name[name].input)
    return graph_def, wanted


def _string_constants(graph_def, wanted):
    """The strings of the string constants among the nodes `wanted` and in the bodies of
    the graph's functions (a map or interleave function's)."""
    nodes = [node for node in graph_def.node if node.name in wanted]
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    strings = []
    for node in nodes:
        if node.op != "Const" or node.attr["dtype"].type != tf.string.as_datatype_enum:
            continue
        values = tf.make_ndarray(node.attr["value"].tensor).reshape(-1)
        strings.extend(v.decode("utf-8", "replace") for v in values if isinstance(v, bytes))
    return strings


def pipeline_files(dataset):
    """The files the pipeline making `dataset` reads, in the order its graph names them."""
    graph_def, wanted = pipeline_graph(tf.data.experimental.to_variant(dataset))
    files = []
    for text in _string_constants(graph_def, wanted):
        if not text or len(text) > _LONGEST_PATH or "\n" in text or "\0" in text:
            continue
        if ("*" in text or "?" in text) and ("/" in text or "." in text):
            candidates = tf.io.gfile.glob(text)  # a pattern (Dataset.list_files)
        else:
            candidates = [text]
        for path in candidates:
            if path not in files and tf.io.gfile.exists(path) and not tf.io.gfile.isdir(path):
                files.append(path)
    return files


def _identity(path):
    """[path, size, SHA-256 of its first and last _BLOCK bytes], or [path, None, None]
    when it cannot be read."""
    try:
        size = tf.io.gfile.stat(path).length
        digest = hashlib.sha256()
        with tf.io.gfile.GFile(path, "rb") as f:
            digest.update(f.read(_BLOCK))
            if size > _BLOCK:
                f.seek(max(size - _BLOCK, _BLOCK))
                digest.update(f.read(_BLOCK))
    except (tf.errors.OpError, OSError):
        return [path, None, None]
    return [path, size, digest.hexdigest()]


def identities(paths):
    """The identity of each file: [path, size, digest of its ends] (see the module doc)."""
    return [_identity(path) for path in paths]


def difference(saved, current):
    """What differs between two lists of identities, in words naming the first file that
    differs (and how many more do); None when they are the same files."""
    now = {path: (size, digest) for path, size, digest in current}
    found = []
    for path, size, digest in saved:
        if path not in now or now[path][0] is None:
            found.append(f"{path} is gone")
        elif now[path][0] != size:
            found.append(f"{path} has changed ({size} bytes then, {now[path][0]} now)")
        elif now[path][1] != digest:
            found.append(f"{path} has changed (as many bytes, other content)")
    then = {path for path, _, _ in saved}
    found.extend(f"{path} is new" for path, _, _ in current if path not in then)
    if not found:
        return None
    more = len(found) - 1
    return found[0] + (f" (and {more} more file{'s' if more > 1 else ''})" if more else "")


# What tf.data says of a record file that is not there, and of a damaged record.
_NOT_FOUND = re.compile(r"^(.+); No such file or directory$", re.MULTILINE)
_CORRUPTED = re.compile(r"corrupted record at (\d+)")


def read_error(error, paths, at_start=None):
    """The InputReadError naming the file a tf.data read `error` (DataLossError,
    NotFoundError) is about, with what happened to it; None when no file of the pipeline
    explains it.

    paths: the pipeline's files (pipeline_files, as the run began); at_start:
    their identities when the run began reading them, or None. A file gone,
    or changed since, is named as such; else the damaged record of a
    TFRecord file is found by reading the files again.
    """
    message = str(getattr(error, "message", "") or error)
    missing = _NOT_FOUND.search(message)
    if missing and not tf.io.gfile.exists(missing.group(1)):
        return InputReadError(
            f"{missing.group(1)} was removed while this run read it (it was there when the "
            "input was listed): put it back, or run again without it"
        )
    for path in paths:
        if not tf.io.gfile.exists(path):
            return InputReadError(
                f"{path} was removed while this run read it (it was there when the input was "
                "listed): put it back, or run again without it"
            )
    if at_start:
        changed = difference(at_start, identities([path for path, _, _ in at_start]))
        if changed:
            return InputReadError(
                f"{changed} since this run began reading it: another process wrote it while "
                "it was read; run again once it is whole"
            )
    corrupted = _CORRUPTED.search(message)
    if isinstance(error, tf.errors.DataLossError) and corrupted:
        return _damaged_record(paths, int(corrupted.group(1)))
    return None


def _damaged_record(paths, offset):
    """The InputReadError naming the damaged record tf.data found at `offset` of one of the
    TFRecord files `paths` (files shorter than that are not read), or None."""
    found = []
    for path in paths:
        try:
            if tf.io.gfile.stat(path).length <= offset:
                continue
            for _ in tfrecord_format.read_records(path):
                pass
        except tfrecord_format.DamagedRecord as e:
            found.append(e)
            if e.offset == offset:
                break
        except (OSError, tf.errors.OpError, UsageError) as e:
            logging.warning("Could not read %s again: %s", path, e)
    # The record at that offset, else the first damaged one.
    found.sort(key=lambda e: e.offset != offset)
    return InputReadError(str(found[0])) if found else None


@contextlib.contextmanager
def naming_read_errors(paths, at_start=None):
    """Turns a tf.data read error in the block into the InputReadError naming its file
    (read_error), when one of `paths`, or the file the error names, explains it."""
    try:
        yield
    except (tf.errors.DataLossError, tf.errors.NotFoundError) as e:
        named = read_error(e, paths or [], at_start)
        if named is None:
            raise
        raise named from None
