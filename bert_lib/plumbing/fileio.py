"""File-system calls that load TensorFlow only for paths with a scheme (gs://, ...).

Local files are read with plain Python, so scripts that never touch a
remote path (create_pretraining_data.py, create_vocab.py) never pay for
importing TensorFlow; remote paths go through tf.io.gfile.
"""

import glob as _glob_module
import os
import sys


def tf_gfile():
    """tf.io.gfile, imported on first use."""
    import tensorflow as tf

    return tf.io.gfile


def is_remote(path):
    """Whether `path` has a scheme (gs://, hdfs://, ...) that only tf.io.gfile reads."""
    return "://" in path


def exists(path):
    return tf_gfile().exists(path) if is_remote(path) else os.path.exists(path)


def isdir(path):
    return tf_gfile().isdir(path) if is_remote(path) else os.path.isdir(path)


def file_size(path):
    return tf_gfile().stat(path).length if is_remote(path) else os.path.getsize(path)


def open_binary(path):
    """Opens `path` for reading bytes."""
    return tf_gfile().GFile(path, "rb") if is_remote(path) else open(path, "rb")


def makedirs(path):
    if is_remote(path):
        tf_gfile().makedirs(path)
    else:
        os.makedirs(path, exist_ok=True)


def glob(pattern):
    """The files `pattern` matches, in the order tf.io.gfile.glob gives them.

    TensorFlow lists a directory in its on-disk order and matches hidden
    files too; so does glob.glob(include_hidden=True) for a pattern with *
    and ? in its last component only. Anything else goes to TensorFlow.
    """
    if not any(c in pattern for c in "*?["):
        if is_remote(pattern):
            return tf_gfile().glob(pattern)
        return [pattern] if os.path.exists(pattern) else []
    directory, name = os.path.split(pattern)
    if (
        is_remote(pattern)
        or sys.version_info < (3, 11)
        or any(c in directory for c in "*?[")
        or "[" in name
        or "\\" in pattern
    ):
        return tf_gfile().glob(pattern)
    matches = _glob_module.glob(pattern, include_hidden=True)
    # TensorFlow names matches in the current directory "./name".
    return matches if directory else [os.path.join(".", m) for m in matches]


def numbered_lines(path, bytes_per_read=1 << 22):
    """Yields (line number from 1, raw bytes) of a file; lines end at b"\\n" only.

    A lone b"\\r" is no line break, as in tf.io.gfile's reading.
    """
    with open_binary(path) as reader:
        number = 0
        rest = b""
        while True:
            block = reader.read(bytes_per_read)
            if not block:
                break
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            for line in lines:
                number += 1
                yield number, line
        if rest:
            yield number + 1, rest
