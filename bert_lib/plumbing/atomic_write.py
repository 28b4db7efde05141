"""Output files that appear under their names only once complete.

Each file is written to "<path>.tmp-<pid>" and renamed into place when the
block exits normally; on any error or interrupt the temporary files are
removed, so nothing half-written is ever left. A failed write (a full disk,
say) becomes one UsageError naming the output file. Local paths use plain
Python; paths with a scheme (gs://, ...) go through tf.io.gfile, and only
they import TensorFlow.

    with atomic_write.atomic_files([path], "w", flag="--output_file") as (f,):
        f.write(text)
"""

import contextlib
import os
import shutil

from . import errors
from .fileio import is_remote, tf_gfile


def temp_path(path):
    """The temporary name `path` is written under until it is complete."""
    return f"{path}.tmp-{os.getpid()}"


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

    For writers that open files themselves (tf.io.TFRecordWriter). Every
    temporary file is removed if the block raises, and a failed rename is
    reported as a UsageError naming the file.
    """
    temps = [temp_path(path) for path in paths]
    try:
        yield temps
        for temp, final in zip(temps, paths):
            try:
                _rename(temp, final)
            except Exception as e:
                if _is_write_failure(e):
                    raise write_error(final, e, flag) from e
                raise
    except BaseException:
        for temp in temps:
            _remove(temp)
        raise


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


def _remove_stale_stages(parent, base):
    """Removes the staging directories of `base` in `parent` that a killed process left
    (.BASE.tmp-PID of a PID that no longer runs)."""
    prefix = f".{base}.tmp-"
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            pid = name[len(prefix) :]
            if name.startswith(prefix) and pid.isdigit() and int(pid) != os.getpid():
                if _process_gone(int(pid)):
                    _remove_tree(os.path.join(parent, name))


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
    stage = os.path.join(parent, f".{base}.tmp-{os.getpid()}")
    if not is_remote(path):
        _remove_stale_stages(parent, base)
    try:
        if is_remote(path):
            stage = temp_path(path.rstrip("/"))
        else:
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
