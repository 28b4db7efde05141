"""The TensorFlow 1.x API that BERT code of 2018-2020 was written against, on TensorFlow 2.

Code written for TF 1.x BERT (the original's scripts, and the many research
copies derived from them) starts with `import tensorflow as tf` and uses
tf.flags, tf.contrib.tpu.TPUEstimator, tf.estimator, tf.layers.dense and
tf.contrib.layers.layer_norm, which TensorFlow 2.16+ no longer has.
`install()` makes `import tensorflow` in such code give a module that is
tf.compat.v1 in graph mode plus those APIs, running on this project's
engine (the subpackage estimator/), layers (layers/: tf.layers and TF
1.15's tf.keras.layers), RNN cells and loops (rnn/), contrib pieces
(contrib/, one module per contrib package), TensorFlow's internal module paths
(internals.py) and the MNIST tutorials' tensorflow.examples reader
(mnist_input_data.py). How user code gets it is machinery/'s: whose code it is,
the API's namespaces and refusals, the import hook, what run_tf1.py does
around the user's code, and failures reported at the user's line:

    from bert_lib import tf1
    tf = tf1.install()        # and `import tensorflow as tf` in user code gets it too

Only user code gets that module: an `import tensorflow` in an installed
package (site-packages), the standard library or this project's own modules
still gets TensorFlow 2 itself, so libraries keep working unchanged.
machinery/import_hook.py is the one place in the project that wraps
`builtins.__import__`.

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

import tensorflow as tf

from . import collections_aliases, graph_seeds, old_protobuf, variable_losses
from . import contrib as tf1_contrib
from . import control_flow as tf1_control_flow
from . import estimator as tf1_estimator
from . import image_ops as tf1_image
from . import internals as tf1_internals
from . import layers as tf1_layers
from . import rnn as tf1_rnn
from .machinery import import_hook, user_code
from .machinery import tf1_packages as tf1_packages_mod
from .machinery.launcher import app_run, put_user_dir_first
from .machinery.namespaces import (
    CONTRIB_INSTEAD,
    TOP_LEVEL_INSTEAD,
    Namespace,
    UnsupportedAPIError,
    unsupported,
)
from .machinery.user_code import is_user_file
from .mnist_input_data import examples_module
from .numba_056 import numba_module
from .numpy_1x import numpy_module
from .numpy_bool_index import allow_in_user_code as allow_numpy_bools_as_integers
from .sklearn_random_state import accept_numpy_random

_V1 = tf.compat.v1

# The version the TF 1.x module says it is: the TF 1.x API it gives. TF 1.x code
# checks it to pick its TF 1.x branch (`assert tf.__version__ < "2.0.0"`,
# `if tf.__version__.startswith("1.")`), which is the one that runs here.
# TensorFlow's own version stays in tf.version.GIT_VERSION and tf.compat.v2.
TF1_API_VERSION = "1.15.5"

__all__ = [
    "UnsupportedAPIError",
    "build_module",
    "install",
    "is_user_file",
    "put_user_dir_first",
    "run",
    "unsupported",
]

# tf.app.run of the TF 1.x module.
run = app_run


def build_module(devices):
    """The TF 1.x `tensorflow` module object, its Estimators training on `devices`
    (an estimator.Devices)."""
    flags = _V1.flags
    app = Namespace("tf.app", _V1.app, {"run": run, "flags": flags})
    estimators = tf1_estimator.estimator_classes(devices)
    contrib = Namespace(
        "tf.contrib",
        None,
        tf1_internals.attach_module_paths(tf1_contrib.modules(estimators)),
        CONTRIB_INSTEAD,
    )
    module = Namespace(
        "tf",
        _V1,
        {
            "contrib": contrib,
            "estimator": tf1_estimator.estimator_module(estimators),
            "layers": tf1_layers.layers_module(),
            "keras": tf1_layers.keras_module(estimators["Estimator"]),
            "app": app,
            "flags": flags,
            "examples": examples_module(),
            "cond": tf1_control_flow.cond,
            "split": graph_seeds.split,
            "random_uniform": graph_seeds.random_uniform,
            "__version__": TF1_API_VERSION,
            "VERSION": TF1_API_VERSION,
            "version": Namespace("tf.version", _V1.version, {"VERSION": TF1_API_VERSION}),
            "__path__": list(getattr(tf, "__path__", [])),
            "__file__": getattr(tf, "__file__", None),
        },
        TOP_LEVEL_INSTEAD,
    )
    compat = Namespace("tf.compat", tf.compat, {"v1": module, "v2": tf.compat.v2})
    module.__dict__["compat"] = compat
    module.__dict__["nn"] = Namespace(
        "tf.nn",
        _V1.nn,
        {
            **tf1_rnn.nn_names(),
            "batch_normalization": tf1_layers.nn_batch_normalization,
            "dropout": graph_seeds.dropout,
        },
    )
    module.__dict__["image"] = Namespace("tf.image", _V1.image, tf1_image.image_names())
    module.__dict__["python"] = tf1_internals.python_module(module)
    return module


def install(distribution_strategy="one_device", num_gpus=None, tf1_packages=()):
    """Returns the TF 1.x `tensorflow` module, and makes user code's `import tensorflow` give it.

    Switches TensorFlow to graph mode with TF1 behaviour (ref variables,
    Dimension shapes: `shape[-1].value`), as TF 1.x was. `distribution_strategy`
    ("one_device", "mirrored", "multi_worker") and `num_gpus` are the engine's,
    bound into the module's Estimators and TPUEstimators (run_tf1.py's
    --distribution_strategy and --num_gpus). Called again with the same
    devices, returns the same module.

    User code's `import numpy` gets numpy with what numpy 1.x had and has
    since lost put back (numpy_1x.py), and numpy booleans serve it as integers
    (numpy_bool_index.py); its `import numba` gets numba with numba 0.56's
    `@jit`, which fell back to object mode (numba_056.py). Python 3.9's `collections.Mapping`
    and the other ABC aliases are put back (collections_aliases.py), and `_pb2` modules
    generated before protoc 3.19 load as today's protoc output loads (old_protobuf.py),
    for the whole process; scikit-learn, once imported, takes `random_state=np.random`
    as its versions before 1.2 took it (sklearn_random_state.py). The random ops user
    code builds in a graph with a seed draw TF 1.15's numbers (graph_seeds.py). User code
    is the code outside installed packages and this project, and the installed packages written
    for TF 1.x: those `tf1_packages` names (import or distribution names;
    run_tf1.py's --tf1_packages) and those whose metadata requires TensorFlow
    below 2 (machinery/tf1_packages.py).
    """
    devices = tf1_estimator.Devices(distribution_strategy, num_gpus)
    user_code.add_tf1_package_dirs(tf1_packages_mod.named_package_paths(tf1_packages))
    current = import_hook.installed()
    if current is not None and current.devices == devices:
        return current.module
    if current is None:
        _V1.disable_v2_behavior()
        variable_losses.collect_loss_tensors()
        collections_aliases.put_back()
        old_protobuf.install_finder()
        graph_seeds.seed_as_tf115()
        for paths in tf1_packages_mod.tf1_distribution_paths().values():
            user_code.add_tf1_package_dirs(paths)
    module = build_module(devices)
    import_hook.install_hook(module, devices, numpy_module(), numba_module)
    allow_numpy_bools_as_integers()
    accept_numpy_random()
    return module
