"""Output files that appear under their names only once complete, and nothing else.

Each file is written in a staging directory beside it,
"<directory>/.tmp-<host>-<pid>-<n>/<name>", and renamed into place when
the block exits normally; on any error or interrupt the staging directory
is removed, so nothing half-written is ever left under the output's name.
A staging directory is hidden and holds the output's name only inside it,
so no reasonable glob of the outputs ("DIR/*.tfrecord*", "DIR/a*", a
shell's "DIR/*") matches it; what reads a glob as input
(startup_checks.expand_input_files) also leaves out any path is_temporary
names. A process killed mid-write (SIGKILL, a crash) leaves its staging
directory behind: the next write into that directory removes it (and the
"<output>.tmp-<pid>" files of older versions of this code), once no
process of that pid runs on this host. A failed write (a full disk, say)
becomes one UsageError naming the output file. Local paths use plain
Python; paths with a scheme (gs://, ...) go through tf.io.gfile, and only
they import TensorFlow.

    with atomic_write.atomic_files([path], "w", flag="--output_file") as (f,):
        f.write(text)
"""

import contextlib
import itertools
import os
import re
import shutil
import socket

from . import errors
from .fileio import is_remote, tf_gfile

# A staging directory: ".tmp-<host>-<pid>-<n>", n counting this process's stages.
_STAGE = re.compile(r"^\.tmp-(?P<host>.+)-(?P<pid>\d+)-\d+$")
# A temporary file of older versions of this code ("<name>.tmp-<pid>", and an
# export's staging directory ".<name>.tmp-<pid>").
_OLDER_TEMPORARY = re.compile(r"\.tmp-\d+$")
# TensorFlow's own while it saves a checkpoint: the data and index files
# ("<name>.tempstate<digits>"), the `checkpoint` state file and the .meta
# ("<name>.tmp<32 hex digits>", a uuid).
TENSORFLOW_TEMPORARY = re.compile(r"\.tempstate\d+$|\.tmp[0-9a-f]{32}$")
_stage_numbers = itertools.count()


def _host():
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "localhost"


def is_temporary(path):
    """Whether `path` is, or lies in, a file or directory a write in progress (or one a
    killed process left) holds: never an output, never input."""
    parts = path.rstrip("/").split("/")
    return any(_STAGE.match(part) for part in parts) or any(
        pattern.search(parts[-1]) for pattern in (_OLDER_TEMPORARY, TENSORFLOW_TEMPORARY)
    )


def _new_stage(directory):
    """A new staging directory's path in `directory` (not made yet)."""
    name = f".tmp-{_host()}-{os.getpid()}-{next(_stage_numbers)}"
    return os.path.join(directory, name) if directory else name


def _remove(path):
    with contextlib.suppress(Exception):
        if is_remote(path):
            if tf_gfile().exists(path):
                tf_gfile().remove(path)
        elif os.path.exists(path):
            os.remove(path)


def _rename(temp, final):
    if is_remote(final):
        tf_gfile().rename(temp, final, overwrite=True)
    else:
        os.replace(temp, final)


def write_error(path, error, flag=None):
    """The UsageError for a failed write of `path`: flag, file and the reason."""
    reason = error.strerror if isinstance(error, OSError) and error.strerror else None
    reason = reason or errors.first_line(error)
    where = f"{flag}: " if flag else ""
    return errors.UsageError(f"{where}cannot write {path}: {reason}")


def _is_write_failure(error):
    return isinstance(error, OSError) or (
        errors.is_tf_error(error)
        and type(error).__name__
        in ("ResourceExhaustedError", "PermissionDeniedError", "UnavailableError", "InternalError")
    )


class GuardedWriter:
    """Wraps a file or record writer so that a failed write names the output file.

    `path` is the file's final name (not the temporary one), `flag` the
    flag that named it.
    """

    def __init__(self, handle, path, flag=None):
        self._handle, self._path, self._flag = handle, path, flag

    def _call(self, method, *args):
        try:
            return getattr(self._handle, method)(*args)
        except Exception as e:
            if _is_write_failure(e):
                raise write_error(self._path, e, self._flag) from e
            raise

    def write(self, data):
        return self._call("write", data)

    def flush(self):
        return self._call("flush")

    def close(self):
        return self._call("close")


@contextlib.contextmanager
def atomic_paths(paths, flag=None):
    """Yields the temporary paths to write `paths` under; renames them on success.

    For writers that open files themselves (tf.io.TFRecordWriter). Each
    temporary path lies in a staging directory of its own beside its
    output (one per output directory), made here and removed when the
    block ends, whatever way; a failed rename is reported as a UsageError
    naming the file. What killed processes left in those directories goes
    first (remove_stale).
    """
    stages = {}
    temps = []
    try:
        for path in paths:
            directory = os.path.dirname(path)
            if directory not in stages:
                remove_stale(directory, [os.path.basename(p) for p in paths])
                stages[directory] = _new_stage(directory)
                if not is_remote(path):
                    os.makedirs(stages[directory])
            temps.append(os.path.join(stages[directory], os.path.basename(path)))
        yield temps
        for temp, final in zip(temps, paths):
            try:
                _rename(temp, final)
            except Exception as e:
                if _is_write_failure(e):
                    raise write_error(final, e, flag) from e
                raise
    finally:
        for stage in stages.values():
            _remove_tree(stage)


def copy_file(source, target):
    """Copies `source` to `target` (any file system) through a temporary name."""
    with atomic_paths([target]) as (temp,):
        tf_gfile().copy(source, temp, overwrite=True)


def _open(path, mode):
    if is_remote(path):
        return tf_gfile().GFile(path, mode)
    if "b" in mode:
        return open(path, mode)
    return open(path, mode, encoding="utf-8", newline="")


@contextlib.contextmanager
def atomic_files(paths, mode="w", flag=None):
    """Yields one open file per path ("w" text, UTF-8; or "wb"); all-or-nothing.

    A write, flush or close that fails (no space left on device, ...)
    raises UsageError("<flag>: cannot write <path>: <reason>"); the
    temporary files are removed and no file appears under its name.
    """
    with atomic_paths(paths, flag) as temps:
        files = []
        try:
            for temp, final in zip(temps, paths):
                try:
                    files.append(GuardedWriter(_open(temp, mode), final, flag))
                except Exception as e:
                    if _is_write_failure(e):
                        raise write_error(final, e, flag) from e
                    raise
            yield files
        except BaseException:
            for f in files:
                with contextlib.suppress(Exception):
                    f.close()
            raise
        # Closing flushes: a full disk may only show here.
        for f in files:
            f.close()


def write_text(path, text, flag=None):
    """Writes `text` (UTF-8) to `path` through a temporary name, all-or-nothing."""
    with atomic_files([path], "w", flag) as (f,):
        f.write(text)


def _remove_tree(path):
    with contextlib.suppress(Exception):
        if is_remote(path):
            if tf_gfile().exists(path):
                tf_gfile().rmtree(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)


def _process_gone(pid):
    """Whether no process `pid` runs on this machine."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _left_by_the_dead(name, outputs):
    """Whether the entry `name` is a staging directory of a process of this host that no
    longer runs, or a temporary name of one of `outputs` an older version of this code
    gave it ("<output>.tmp-<pid>", ".<output>.tmp-<pid>") whose process no longer runs."""
    stage = _STAGE.match(name)
    if stage:
        pid = int(stage.group("pid"))
        return stage.group("host") == _host() and pid != os.getpid() and _process_gone(pid)
    for output in outputs:
        for prefix in (f"{output}.tmp-", f".{output}.tmp-"):
            pid = name[len(prefix) :]
            if name.startswith(prefix) and pid.isdigit() and int(pid) != os.getpid():
                return _process_gone(int(pid))
    return False


def remove_stale(directory, outputs=()):
    """Removes what killed processes left in `directory` (see _left_by_the_dead): their
    staging directories, and the older temporary names of `outputs` (file names).

    Only local directories: a remote file system has no process ids to check,
    and its writes appear only when complete.
    """
    directory = directory or "."
    if is_remote(directory):
        return
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if _left_by_the_dead(name, outputs):
            path = os.path.join(directory, name)
            if os.path.isdir(path):
                _remove_tree(path)
            else:
                _remove(path)


@contextlib.contextmanager
def staged_directory(path, names=None, flag=None):
    """Yields a temporary directory to fill; when the block ends normally it becomes `path`.

    A `path` that does not exist yet appears whole, with one rename. Into an
    existing directory (allowed only when `names` lists what the block
    writes) the files move in the order of `names`, whose last should be
    the one that makes the result usable (a checkpoint index, a config).
    On any error the staging directory is removed, and one a killed process
    left behind is removed by the next run.
    """
    existing = not is_remote(path) and os.path.isdir(path)
    if existing and names is None:
        where = f"{flag}: " if flag else ""
        raise errors.UsageError(f"{where}{path} already exists; choose a new directory")
    parent = path if existing else os.path.dirname(os.path.abspath(path))
    base = os.path.basename(os.path.abspath(path))
    if is_remote(path):
        stage = _new_stage(os.path.dirname(path.rstrip("/")))
    else:
        remove_stale(parent, [base])
        stage = _new_stage(parent)
    try:
        if not is_remote(path):
            os.makedirs(stage)
        yield stage
        if existing:
            written = sorted(os.listdir(stage))
            if sorted(names) != written:
                raise RuntimeError(f"expected to write {sorted(names)}, wrote {written}")
            for name in names:
                os.replace(os.path.join(stage, name), os.path.join(path, name))
            os.rmdir(stage)
        elif is_remote(path):
            tf_gfile().rename(stage, path)
        else:
            os.rename(stage, path)
    except BaseException:
        _remove_tree(stage)
        raise
