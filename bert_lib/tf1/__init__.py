"""The TensorFlow 1.x API that BERT code of 2018-2020 was written against, on TensorFlow 2.

Code written for TF 1.x BERT (the original's scripts, and the many research
copies derived from them) starts with `import tensorflow as tf` and uses
tf.flags, tf.contrib.tpu.TPUEstimator, tf.estimator, tf.layers.dense and
tf.contrib.layers.layer_norm, which TensorFlow 2.16+ no longer has.
`install()` makes `import tensorflow` in such code give a module that is
tf.compat.v1 in graph mode plus those APIs, running on this project's
runner (estimator.py, specs.py, export.py), layers (layers.py on
layer_base.py, batch_norm.py), RNN cells and loops (rnn_cells.py, rnn.py),
TF 1.15's Keras layers (keras_layers.py, keras_rnn.py), contrib pieces
(contrib.py, contrib_extras.py) and TensorFlow's internal module paths
(internals.py); failures of the user's code are reported at its line
(user_errors.py):

    from bert_lib import tf1
    tf = tf1.install()        # and `import tensorflow as tf` in user code gets it too

Only user code gets that module: an `import tensorflow` in an installed
package (site-packages), the standard library or this project's own modules
still gets TensorFlow 2 itself, so libraries keep working unchanged.

An attribute of `tf`, `tf.contrib`, ... that is not provided raises
UnsupportedAPIError, a UsageError (plumbing/errors.py: one "ERROR:" line, exit 1)
that names the API and the user's file and line (and what to use instead
where there is something), and also an AttributeError, so that
`hasattr(tf, name)` checks in user code keep answering False.
"""

import builtins
import os
import sys

import tensorflow as tf

from .. import script_flags
from . import contrib as tf1_contrib
from . import estimator as tf1_estimator
from . import internals as tf1_internals
from . import keras_layers as tf1_keras
from . import layers as tf1_layers
from . import rnn as tf1_rnn
from . import user_errors
from .api import (
    CONTRIB_INSTEAD,
    HERE,
    TOP_LEVEL_INSTEAD,
    Namespace,
    UnsupportedAPIError,
    is_project_file,
    is_user_file,
    make_finder,
    set_finder,
    unsupported,
)

_V1 = tf.compat.v1

__all__ = ["UnsupportedAPIError", "install", "isolate_user_dir", "run", "unsupported"]


_MODULE = None


def _build():
    """The TF 1.x `tensorflow` module object (built once per process)."""
    flags = _V1.flags
    app = Namespace("tf.app", _V1.app, {"run": run, "flags": flags})
    contrib = Namespace("tf.contrib", None, tf1_contrib.modules(), CONTRIB_INSTEAD)
    module = Namespace(
        "tf",
        _V1,
        {
            "contrib": contrib,
            "estimator": tf1_estimator.estimator_module(),
            "layers": tf1_layers.layers_module(),
            "keras": tf1_keras.keras_module(),
            "app": app,
            "flags": flags,
            "__version__": tf.__version__,
            "__path__": list(getattr(tf, "__path__", [])),
            "__file__": getattr(tf, "__file__", None),
        },
        TOP_LEVEL_INSTEAD,
    )
    compat = Namespace("tf.compat", tf.compat, {"v1": module, "v2": tf.compat.v2})
    module.__dict__["compat"] = compat
    module.__dict__["nn"] = Namespace("tf.nn", _V1.nn, tf1_rnn.nn_names())
    module.__dict__["python"] = tf1_internals.python_module(module)
    return module


def run(main=None, argv=None):
    """tf.app.run: parses flags, runs main(argv); a failure is one ERROR line naming the
    user's line (user_errors.py), exit 1."""
    if main is None:
        main = sys.modules["__main__"].main
    script_flags.run_main(user_errors.located_main(main), argv)


# ---------------------------------------------------------------------------
# `import tensorflow` in user code

_REAL_IMPORT = builtins.__import__
# This project's top-level modules that isolate_user_dir took out of sys.modules.
_PROJECT_MODULES = {}
# tensorflow.<name> imports that are TensorFlow's own packages, not the API.
# (tensorflow.python is wrapped: internals.py puts back what TF 1.x code used of it.)
_REAL_PACKAGES = frozenset(["core", "lite", "tools", "compiler", "dtensor", "tsl"])


def _resolve(module, dotted):
    value = module
    for part in dotted:
        value = getattr(value, part)
    return value


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level == 0 and (name == "tensorflow" or name.startswith("tensorflow.")):
        parts = name.split(".")[1:]
        if (not parts or parts[0] not in _REAL_PACKAGES) and _importer_is_user(globals):
            module = _MODULE
            if fromlist:
                return _resolve(module, parts)
            _resolve(module, parts)  # `import tensorflow.contrib.slim`: fails here if missing
            return module
    elif level == 0 and name in _PROJECT_MODULES and _importer_is_project(globals):
        # A module of this project importing a sibling inside a function, after
        # isolate_user_dir: it gets its sibling, never the user's module of that name.
        return _PROJECT_MODULES[name]
    return _REAL_IMPORT(name, globals, locals, fromlist, level)


def _importer_is_project(globals):
    filename = (globals or {}).get("__file__")
    return bool(filename) and is_project_file(filename)


def _importer_is_user(globals):
    if globals is None:
        return False
    filename = globals.get("__file__")
    if filename is None:
        return globals.get("__name__") == "__main__"
    return is_user_file(filename)


def install(distribution_strategy="one_device", num_gpus=None):
    """Returns the TF 1.x `tensorflow` module, and makes user code's `import tensorflow` give it.

    Switches TensorFlow to graph mode with TF1 behaviour (ref variables,
    Dimension shapes: `shape[-1].value`), as TF 1.x was. Idempotent.
    `distribution_strategy` ("one_device", "mirrored", "multi_worker") and
    `num_gpus` are the runner's, for every Estimator and TPUEstimator built
    after the call (run_tf1.py's --distribution_strategy and --num_gpus).
    """
    global _MODULE
    tf1_estimator.use_distribution(distribution_strategy, num_gpus)
    if _MODULE is None:
        _V1.disable_v2_behavior()
        _MODULE = _build()
        set_finder(make_finder(_MODULE))
        builtins.__import__ = _import
    return _MODULE


def project_module_names():
    """The top-level modules of this project that are imported now (a clone's flat layout)."""
    names = []
    for name, module in list(sys.modules.items()):
        filename = getattr(module, "__file__", None)
        if "." not in name and filename and os.path.dirname(os.path.realpath(filename)) == HERE:
            names.append(name)
    return sorted(names)


def isolate_user_dir(user_dir):
    """Puts `user_dir` first on sys.path, its modules winning over this project's.

    In a clone, this project's modules are top-level (`modeling`,
    `optimization`, `features`, ...) and a user directory often holds
    modules of the same names. The runner and this module keep the objects
    they imported; the names are dropped from sys.modules and this
    project's directory from sys.path, so that `import modeling` in user
    code finds the user's file. A module of this project that imports a
    sibling inside a function still gets this project's (see _import).
    """
    if _MODULE is None:
        install()
    for name in project_module_names():
        _PROJECT_MODULES[name] = sys.modules.pop(name)
    sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != HERE]
    sys.path.insert(0, os.path.abspath(user_dir))
