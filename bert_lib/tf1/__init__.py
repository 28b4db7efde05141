"""The TensorFlow 1.x API that BERT code of 2018-2020 was written against, on TensorFlow 2.

Code written for TF 1.x BERT (the original's scripts, and the many research
copies derived from them) starts with `import tensorflow as tf` and uses
tf.flags, tf.contrib.tpu.TPUEstimator, tf.estimator, tf.layers.dense and
tf.contrib.layers.layer_norm, which TensorFlow 2.16+ no longer has.
`install()` makes `import tensorflow` in such code give a module that is
tf.compat.v1 in graph mode plus those APIs, running on this project's
engine (estimator.py, specs.py, export.py), layers (layers.py on
layer_base.py, batch_norm.py), RNN cells and loops (rnn_cells.py, rnn.py),
TF 1.15's Keras layers (keras_layers.py, keras_rnn.py, on layer_base.py and
batch_norm.py too), contrib pieces
(contrib.py, contrib_extras.py) and TensorFlow's internal module paths
(internals.py); failures of the user's code are reported at its line
(user_errors.py):

    from bert_lib import tf1
    tf = tf1.install()        # and `import tensorflow as tf` in user code gets it too

Only user code gets that module: an `import tensorflow` in an installed
package (site-packages), the standard library or this project's own modules
still gets TensorFlow 2 itself, so libraries keep working unchanged. This is
the one place in the project that wraps `builtins.__import__`.

The layer imports none of this project's BERT modules (modeling,
tokenization, optimization), nor does the engine it runs on: in a process
run_tf1.py starts, those names are free for the user's own files, which
put_user_dir_first puts ahead on sys.path.

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

from ..plumbing import command_line
from . import contrib as tf1_contrib
from . import estimator as tf1_estimator
from . import internals as tf1_internals
from . import keras_layers as tf1_keras
from . import keras_rnn, user_errors
from . import layers as tf1_layers
from . import rnn as tf1_rnn
from .api import (
    CHECKOUT,
    CONTRIB_INSTEAD,
    TOP_LEVEL_INSTEAD,
    Namespace,
    UnsupportedAPIError,
    is_user_file,
    make_finder,
    unsupported,
)

_V1 = tf.compat.v1

__all__ = ["UnsupportedAPIError", "install", "put_user_dir_first", "run", "unsupported"]


def _build(devices):
    """The TF 1.x `tensorflow` module object, its Estimators training on `devices`."""
    flags = _V1.flags
    app = Namespace("tf.app", _V1.app, {"run": run, "flags": flags})
    estimators = tf1_estimator.estimator_classes(devices)
    contrib = Namespace("tf.contrib", None, tf1_contrib.modules(estimators), CONTRIB_INSTEAD)
    module = Namespace(
        "tf",
        _V1,
        {
            "contrib": contrib,
            "estimator": tf1_estimator.estimator_module(estimators),
            "layers": tf1_layers.layers_module(),
            "keras": tf1_keras.keras_module(keras_rnn.layers_names()),
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
    command_line.run_main(user_errors.located_main(main), argv)


# ---------------------------------------------------------------------------
# `import tensorflow` in user code

# tensorflow.<name> imports that are TensorFlow's own packages, not the API.
# (tensorflow.python is wrapped: internals.py puts back what TF 1.x code used of it.)
_REAL_PACKAGES = frozenset(["core", "lite", "tools", "compiler", "dtensor", "tsl"])


def _resolve(module, dotted):
    value = module
    for part in dotted:
        value = getattr(value, part)
    return value


class _UserImport:
    """builtins.__import__ once installed: `import tensorflow` (and `tensorflow.x`) in user
    code gives `module`; everything else goes to the import it replaced."""

    def __init__(self, module, devices, real_import):
        self.module = module
        self.devices = devices
        self.real_import = real_import
        # name -> where the module provides it: the hint of a refusal (api._elsewhere).
        self.find_elsewhere = make_finder(module)

    def __call__(self, name, globals=None, locals=None, fromlist=(), level=0):
        if level == 0 and (name == "tensorflow" or name.startswith("tensorflow.")):
            parts = name.split(".")[1:]
            if (not parts or parts[0] not in _REAL_PACKAGES) and _importer_is_user(globals):
                if fromlist:
                    return _resolve(self.module, parts)
                _resolve(self.module, parts)  # `import tensorflow.contrib.slim`: fails if missing
                return self.module
        return self.real_import(name, globals, locals, fromlist, level)


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
    Dimension shapes: `shape[-1].value`), as TF 1.x was. `distribution_strategy`
    ("one_device", "mirrored", "multi_worker") and `num_gpus` are the engine's,
    bound into the module's Estimators and TPUEstimators (run_tf1.py's
    --distribution_strategy and --num_gpus). Called again with the same
    devices, returns the same module.
    """
    devices = tf1_estimator.Devices(distribution_strategy, num_gpus)
    current = builtins.__import__
    if isinstance(current, _UserImport):
        if current.devices == devices:
            return current.module
        real_import = current.real_import
    else:
        _V1.disable_v2_behavior()
        real_import = current
    module = _build(devices)
    builtins.__import__ = _UserImport(module, devices, real_import)
    return module


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
