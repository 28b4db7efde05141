"""Whose code is running: the user's (it gets the TF 1.x API) or installed and project code.

run_tf1.py gives the TF 1.x `tensorflow` module to the user's script and
the modules it imports from beside itself, and to the installed packages
written for TF 1.x (tf1_packages.py finds their directories, which
add_tf1_package_dirs adds here); everything else (the standard
library, installed packages, this project's own modules) gets TensorFlow 2
itself. user_location finds the user's line on the stack for an error
message.
"""

import os
import site
import sys
import sysconfig

import tensorflow  # noqa: F401  (its directory is one of _excluded_dirs)

# This project's code: the package (bert_lib/) and, in a clone, the scripts and the
# original's modules beside it in the checkout. Installed, the package's parent is
# site-packages and those modules are the package `bert` there: CHECKOUT is None.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
_PARENT = os.path.dirname(PACKAGE_DIR)
CHECKOUT = _PARENT if os.path.isfile(os.path.join(_PARENT, "run_tf1.py")) else None


# ---------------------------------------------------------------------------
# Whose code is it


# The standard library's directories, each ending in a separator.
_STANDARD_LIBRARY_DIRS = tuple(
    {
        os.path.join(os.path.realpath(path), "")
        for path in (sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib"))
        if path
    }
)


def _excluded_dirs():
    """Where installed code lives: the standard library and every package directory.

    Package directories are site-packages / dist-packages anywhere on
    sys.path (a .pth file or PYTHONPATH may add another environment's) and
    the ones that hold TensorFlow, numpy and absl themselves.
    """
    paths = sysconfig.get_paths()
    dirs = {paths.get(key) for key in ("purelib", "platlib")} | set(_STANDARD_LIBRARY_DIRS)
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:  # virtualenv's old site.py
        pass
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        dirs.add(site.getusersitepackages())
    dirs.update(
        p
        for p in sys.path
        if os.path.basename(p.rstrip(os.sep)) in ("site-packages", "dist-packages")
    )
    for package in ("tensorflow", "numpy", "absl"):
        module = sys.modules.get(package)
        if getattr(module, "__file__", None):
            dirs.add(os.path.dirname(os.path.dirname(module.__file__)))
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs if d)


_EXCLUDED_DIRS = _excluded_dirs()


def is_project_file(filename):
    """Whether `filename` is this project's: in the package, or a module beside it in a clone."""
    path = os.path.realpath(filename)
    in_checkout = CHECKOUT is not None and os.path.dirname(path) == CHECKOUT
    return in_checkout or path.startswith(os.path.join(PACKAGE_DIR, ""))


# The directories of installed packages whose code is the user's: written for TF 1.x.
_TF1_PACKAGE_DIRS = set()


def add_tf1_package_dirs(paths):
    """Counts the code under each of `paths` (package directories or module files) as the
    user's from now on."""
    for path in paths:
        path = os.path.realpath(path)
        _TF1_PACKAGE_DIRS.add(os.path.join(path, "") if os.path.isdir(path) else path)


def is_user_file(filename):
    """Whether code from `filename` is the user's (it gets the TF 1.x module).

    Not the user's: the standard library, installed packages (but for those
    written for TF 1.x, add_tf1_package_dirs), and this project's own modules
    (the package, and the scripts and modules beside it).
    """
    if not filename or filename.startswith("<frozen"):
        return False
    if filename.startswith("<"):  # exec'd code, a notebook cell
        return True
    if is_project_file(filename):
        return False
    path = os.path.realpath(filename)
    if _TF1_PACKAGE_DIRS and (
        path in _TF1_PACKAGE_DIRS or path.startswith(tuple(_TF1_PACKAGE_DIRS))
    ):
        return True
    return not path.startswith(_EXCLUDED_DIRS)


def asked_by_user_code(frame):
    """Whether the innermost frame from `frame` outward that is not the standard library's
    is user code's: code the user's code called in the standard library (`random.sample`)
    acts for it."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (
            filename.startswith("<frozen")
            or os.path.realpath(filename).startswith(_STANDARD_LIBRARY_DIRS)
        ):
            return is_user_file(filename)
        frame = frame.f_back
    return False


def user_location():
    """ "file:line" of the innermost frame of user code on the stack, or None."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if is_user_file(filename):
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None
