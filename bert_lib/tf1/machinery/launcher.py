"""What run_tf1.py and tf.app.run do around the user's code.

put_user_dir_first puts the script's directory (for -m, the current
directory) first on sys.path, as Python does, and this project's clone off
it; run_script and run_module run the user's code as `python script.py`
and `python -m package.module` run it; app_run is tf.app.run: it parses
the flags as TF 1.15 did (unknown ones let through, with a warning) and
runs main, a failure of the user's code reported at its line
(user_errors.py).
"""

import importlib.util
import os
import runpy
import sys

from ...plumbing import command_line, errors
from . import user_code, user_errors
from .user_code import CHECKOUT


def app_run(main=None, argv=None):
    """tf.app.run: parses the flags as TF 1.15 did, runs main(argv); a failure is one ERROR
    line naming the user's line (user_errors.py), exit 1.

    As TF 1.x's, it parses the flags defined and lets the others through to
    main's argv (absl's known_only): a README's extra flag does not stop the
    run, but one WARNING line names each flag left (plumbing/command_line.py).
    """
    if main is None:
        main = sys.modules["__main__"].main
    command_line.run_main(
        user_errors.located_main(main), argv, flags_parser=command_line.parse_known_flags
    )


def put_user_dir_first(user_dir):
    """Puts `user_dir` first on sys.path, and this project's directory off it.

    As when Python runs a script, the script's directory comes first: its
    modules (often a modeling.py, optimization.py, tokenization.py of its
    own) are what `import modeling` in user code finds. In a clone, this
    project's directory (whose modules have those names) is taken off the
    path; nothing run_tf1.py has imported by then has imported them.
    """
    if CHECKOUT is not None:
        sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != CHECKOUT]
    sys.path.insert(0, os.path.abspath(user_dir))


def run_script(path, argv):
    """Runs the script at `path` as `python path argv...` would, as __main__."""
    sys.argv = [path, *argv]
    runpy.run_path(path, run_name="__main__")


def run_module(name, argv):
    """Runs module `name` as `python -m name argv...` would: found on sys.path, run as
    __main__ with its package set (so its relative imports work), sys.argv[0] its file;
    a package runs its __main__ module. No such module is a UsageError.

    The module's top-level package is user code even when installed: run
    through run_tf1.py, it is TF 1.x code by the user's word.
    """
    top = importlib.util.find_spec(name.split(".")[0])  # imports nothing
    if top is not None:  # before its package is imported
        paths = list(top.submodule_search_locations or [top.origin])
        user_code.add_tf1_package_dirs(p for p in paths if p and os.path.exists(p))
    _check_runnable(name)
    sys.argv = ["-m", *argv]
    runpy.run_module(name, run_name="__main__", alter_sys=True)


def _check_runnable(name):
    """Refuses, as one line, a module name Python's -m would not find (importing its
    parent packages, as -m does: their own failures are the user code's)."""
    try:
        spec = importlib.util.find_spec(name)
    except ModuleNotFoundError as error:
        if error.name and (name == error.name or name.startswith(error.name + ".")):
            spec = None
        else:
            raise
    if spec is None:
        raise errors.UsageError(f"-m {name}: no module named {name} on sys.path")
    if spec.submodule_search_locations is not None:
        if importlib.util.find_spec(f"{name}.__main__") is None:
            raise errors.UsageError(
                f"-m {name}: {name} is a package and has no __main__ module to run"
            )
