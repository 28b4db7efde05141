"""`import tensorflow` in user code: the one place in the project that wraps
`builtins.__import__`.

Once installed (bert_lib/tf1/__init__.py's install()), UserImport gives
user code (user_code.is_user_file) the TF 1.x module it holds for
`import tensorflow`, `import tensorflow.contrib.rnn`, `from tensorflow.python.ops
import array_ops`, ..., and the numpy module of TF 1.x's years it holds
(numpy_1x.py) for `import numpy` (`import numpy.linalg` too; `from
numpy.random import ...` gets numpy's own submodule), the numba module of
those years (numba_056.py) for `import numba` and `from numba import jit`,
and the submodules of an
API module user code put in sys.modules under another name (`sys.modules["keras"] =
tf.keras`, then `from keras.layers import *`); every other import,
and every import by code that is not the user's, goes to the import it
replaced.
"""

import builtins
import sys

from .namespaces import Namespace, make_finder
from .user_code import is_user_file

# tensorflow.<name> imports that are TensorFlow's own packages, not the API.
# (tensorflow.python is wrapped: internals.py puts back what TF 1.x code used of it.)
REAL_PACKAGES = frozenset(["core", "lite", "tools", "compiler", "dtensor", "tsl"])


def resolve(module, dotted):
    """module.<dotted[0]>.<dotted[1]>...: each step may raise the API's refusal."""
    value = module
    for part in dotted:
        value = getattr(value, part)
    return value


class UserImport:
    """builtins.__import__ once installed: `import tensorflow` (and `tensorflow.x`) in user
    code gives `module`; everything else goes to the import it replaced."""

    def __init__(self, module, devices, real_import, numpy_module=None, numba_module=None):
        self.module = module
        self.devices = devices
        self.real_import = real_import
        self.numpy_module = numpy_module
        # numba_module(numba) makes the numba module user code gets (numba_056.py's), once
        # user code first imports numba; made_numba_module holds it from then on.
        self.numba_module = numba_module
        self.made_numba_module = None
        # name -> where the module provides it: the hint of a refusal (namespaces._elsewhere).
        self.find_elsewhere = make_finder(module)

    def __call__(self, name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name == "tensorflow" or name.startswith("tensorflow.")):
            parts = name.split(".")[1:]
            if (not parts or parts[0] not in REAL_PACKAGES) and importer_is_user(globals):
                if fromlist:
                    return resolve(self.module, parts)
                resolve(self.module, parts)  # `import tensorflow.contrib.slim`: fails if missing
                return self.module
        aliased = _aliased_api_module(name) if level == 0 else None
        if aliased is not None and importer_is_user(globals):
            # `sys.modules["keras"] = tf.keras`, then `from keras.layers import *`, as code
            # that ran on tf.keras or Keras did: its submodules are the API module's.
            parts = name.split(".")[1:]
            return resolve(aliased, parts) if fromlist else aliased
        if (
            level == 0
            and self.numpy_module is not None
            and (name == "numpy" or (name.startswith("numpy.") and not fromlist))
            and importer_is_user(globals)
        ):
            self.real_import(name, globals, locals, fromlist, level)
            return self.numpy_module
        imported = self.real_import(name, globals, locals, fromlist, level)
        if (
            self.numba_module is not None
            and level == 0
            and name.split(".")[0] == "numba"
            and importer_is_user(globals)  # once numba has finished importing itself
        ):
            if self.made_numba_module is None:
                self.made_numba_module = self.numba_module(sys.modules["numba"])
            if name == "numba" or not fromlist:
                return self.made_numba_module
        return imported


def _aliased_api_module(name):
    """The TF 1.x API module user code put in sys.modules under the first part of the dotted
    `name` (not tensorflow's own), or None."""
    head, dot, _ = name.partition(".")
    if not dot or head in ("tensorflow", "numpy"):
        return None
    found = sys.modules.get(head)
    return found if isinstance(found, Namespace) else None


def importer_is_user(globals):
    """Whether the module whose globals these are is user code."""
    if globals is None:
        return False
    filename = globals.get("__file__")
    if filename is None:
        return globals.get("__name__") == "__main__"
    return is_user_file(filename)


def installed():
    """The UserImport in builtins.__import__, or None."""
    current = builtins.__import__
    return current if isinstance(current, UserImport) else None


def install_hook(module, devices, numpy_module=None, numba_module=None):
    """Puts a UserImport giving `module` (and `numpy_module`, and what numba_module(numba)
    makes) in builtins.__import__, replacing an earlier one."""
    current = installed()
    real_import = current.real_import if current is not None else builtins.__import__
    builtins.__import__ = UserImport(module, devices, real_import, numpy_module, numba_module)
