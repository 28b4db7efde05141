"""Runs a script as `python full_disk.py SCRIPT ARGS...` on a disk that fills up.

Every file atomic_write opens accepts LIMIT bytes (env FULL_DISK_BYTES,
default 100) and then fails as a full disk does, with OSError ENOSPC; the
bytes before that really are written, so a half-written temporary file
exists when the error comes.
"""

import errno
import os
import runpy
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, REPO)

from bert_lib.plumbing import atomic_write  # noqa: E402

LIMIT = int(os.environ.get("FULL_DISK_BYTES", "100"))


class _FillingFile:
    def __init__(self, handle):
        self.handle, self.written = handle, 0

    def write(self, data):
        room = LIMIT - self.written
        if len(data) > room:
            self.handle.write(data[:room])
            self.written = LIMIT
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.written += len(data)
        return self.handle.write(data)

    def close(self):
        self.handle.close()


_real_open = atomic_write._open
atomic_write._open = lambda path, mode: _FillingFile(_real_open(path, mode))

script = os.path.join(REPO, sys.argv[1])
sys.argv = [script, *sys.argv[2:]]
runpy.run_path(script, run_name="__main__")
