"""One training job per output directory: a lock its holder keeps until it ends, however.

Two trainings in one directory interleave their checkpoints, rotate away
each other's files and die mid-run (or worse, both finish with a model
neither trained). A training therefore takes `DIRECTORY/training.lock`
before it reads or writes a checkpoint there: an OS lock (flock) on that
file, which the kernel releases when the process ends, whether it returns,
raises, is stopped by a signal or killed, so a lock is never left behind by
a dead holder. The file says who holds it (pid and host), for the message
that refuses a second training. It is never deleted (deleting a lock file
others may hold open would let two processes lock two different files).

Only training takes it: evaluating, predicting or exporting from a
directory a training writes into reads whole checkpoints only and needs no
lock. Paths with a scheme (gs://) have no OS lock; there the one-job rule
is the user's to keep, which the log says.
"""

import contextlib
import fcntl
import os
import socket
import time

from absl import logging

from .errors import UsageError
from .fileio import is_remote

LOCK_FILE = "training.lock"

# realpath of a directory -> [file descriptor, how many holders in this process]
_HELD = {}


def holder(directory):
    """Who the lock file says holds (or last held) the lock, as text."""
    try:
        with open(os.path.join(directory, LOCK_FILE), encoding="utf-8") as f:
            text = f.read().strip()
    except OSError:
        text = ""
    return text or "a process that has not yet written its name"


def _take(directory, what):
    path = os.path.join(directory, LOCK_FILE)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise UsageError(
            f"{directory} is in use by another {what}: {holder(directory)} ({path}); one "
            f"{what} per directory: wait for it to end, or use another directory"
        ) from None
    except OSError:
        os.close(descriptor)
        raise
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime())
    os.ftruncate(descriptor, 0)
    os.write(descriptor, f"pid {os.getpid()} on {socket.gethostname()} since {since}\n".encode())
    return descriptor


@contextlib.contextmanager
def held(directory, what="training"):
    """Holds `directory`'s lock while the block runs; UsageError naming the holder if
    another process has it. Taking it again in the same process is allowed (the
    outermost block releases it)."""
    if is_remote(directory):
        logging.info("%s has no lock: keep to one %s in it at a time.", directory, what)
        yield
        return
    key = os.path.realpath(directory)
    if key not in _HELD:
        _HELD[key] = [_take(directory, what), 0]
    _HELD[key][1] += 1
    try:
        yield
    finally:
        _HELD[key][1] -= 1
        if not _HELD[key][1]:
            os.close(_HELD.pop(key)[0])
