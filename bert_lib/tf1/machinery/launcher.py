"""What run_tf1.py and tf.app.run do around the user's code.

put_user_dir_first puts the script's directory first on sys.path, as
Python does for a script, and this project's clone off it; app_run is
tf.app.run: it parses the flags and runs main, a failure of the user's
code reported at its line (user_errors.py).
"""

import os
import sys

from ...plumbing import command_line
from . import user_errors
from .user_code import CHECKOUT


def app_run(main=None, argv=None):
    """tf.app.run: parses flags, runs main(argv); a failure is one ERROR line naming the
    user's line (user_errors.py), exit 1."""
    if main is None:
        main = sys.modules["__main__"].main
    command_line.run_main(user_errors.located_main(main), argv)


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
