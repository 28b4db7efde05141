"""Failures of the user's code under run_tf1.py, as one ERROR line naming its file and line.

A script run through run_tf1.py is the user's code, not this project's, so
whatever stops it is reported at the user's line:

- a syntax error in the script or a module it imports: the file and line
  Python names, "SyntaxError: <what>";
- an OSError (a missing ./output/ the script writes to), a TensorFlow
  error about data, or a package the script imports that is not installed,
  raised under the user's code: the innermost line of the user's code on
  the way (for an error of a graph op, the line that made the op), then
  the message, with no traceback;
- any other exception (a bug, in the user's code or met on its behalf):
  its traceback, then the same one line, "<file:line>: <Type>: <what>";
  when it is an installed package that found a TF 1.x name missing from
  TensorFlow 2 (`module 'tensorflow' has no attribute 'diag_part'`: a
  helper package of TF 1.x's years whose metadata does not say so), the
  line ends with the launcher option that gives it the TF 1.x API.

Refusals made here keep their own text: an UnsupportedAPIError and a
model_fn spec error already name the user's line, and a UsageError of the
engine names its flag or file.
"""

import re
import traceback

from ...plumbing import errors
from .namespaces import UnsupportedAPIError
from .user_code import is_user_file


class UserCodeError(errors.UsageError):
    """A failure in the user's code; the message starts with the user's file:line."""


def _innermost_user_line(error):
    """ "file:line" of the innermost user frame: in a graph op's creation stack, else the
    exception's traceback; None when the user's code is not on the way."""
    op = getattr(error, "op", None) if errors.is_tf_error(error) else None
    for frame in reversed(list(getattr(op, "traceback", None) or [])):
        filename, lineno = frame[0], frame[1]
        if is_user_file(filename):
            return f"{filename}:{lineno}"
    found = None
    tb = error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if is_user_file(filename):
            found = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def locate(error):
    """What run_tf1.py reports for `error`, raised while the user's code ran.

    Returns `error` itself when it already says where (or is not the user
    code's), else a UserCodeError with the user's file:line; for a bug the
    traceback is printed first.
    """
    if isinstance(error, (UnsupportedAPIError, UserCodeError)):
        return error
    if not isinstance(error, Exception):  # KeyboardInterrupt, SystemExit, Stopped
        return error
    if isinstance(error, SyntaxError) and error.filename and is_user_file(error.filename):
        text = f"{error.filename}:{error.lineno}: {type(error).__name__}: {error.msg}"
        return _chained(UserCodeError(text), error)
    if isinstance(error, (errors.UsageError, errors.RunError)) and not isinstance(error, OSError):
        return error
    where = _innermost_user_line(error)
    if where is None:
        return error
    if errors.is_user_error(error):
        return _chained(UserCodeError(f"{where}: {errors.message(error)}"), error)
    if isinstance(error, ModuleNotFoundError):  # a package the script needs is not installed
        return _chained(UserCodeError(f"{where}: ModuleNotFoundError: {error}"), error)
    traceback.print_exception(type(error), error, error.__traceback__)
    text = f"{where}: {type(error).__name__}: {errors.first_line(error)}"
    return _chained(UserCodeError(text + _tf1_package_hint(error)), error)


_TF2_MISSING = re.compile(r"module 'tensorflow(\.[\w.]+)?' has no attribute")
_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]([^/\\]+)")


def _tf1_package_hint(error):
    """ "; <package> ... --tf1_packages=<package>" when an installed package met TensorFlow 2
    without a name TF 1.x had, else ""."""
    if not isinstance(error, AttributeError) or not _TF2_MISSING.search(str(error)):
        return ""
    package = None
    tb = error.__traceback__
    while tb is not None:
        found = _INSTALLED.search(tb.tb_frame.f_code.co_filename)
        if found:
            package = found.group(1).removesuffix(".py")
        tb = tb.tb_next
    if package is None:
        return ""
    return (
        f" (in the installed package {package}, which gets TensorFlow 2 itself; if it was "
        f"written for TF 1.x, run with: run_tf1.py --tf1_packages={package} ...)"
    )


def _chained(new, cause):
    new.__cause__ = cause
    return new


def located_main(main):
    """`main` whose failures are reported at the user's line (for tf.app.run)."""

    def run(argv):
        try:
            return main(argv)
        except Exception as error:
            located = locate(error)
            if located is error:
                raise
            raise located from error

    return run
