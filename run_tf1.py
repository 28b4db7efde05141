"""Runs a script written for TF 1.x BERT, unchanged, on TensorFlow 2.

    python run_tf1.py path/to/their_script.py --their_flags...
    python -m bert.run_tf1 path/to/their_script.py --their_flags...   (installed)
    python run_tf1.py --distribution_strategy=mirrored [--num_gpus=N] their_script.py ...

The launcher's own options, before the script, choose the engine's devices
for every Estimator of the script (one device by default; all local GPUs;
the workers of TF_CONFIG), as the scripts here choose them with the same
flags: a script written for TF 1.x has no such flag of its own.

Inside the script and the modules it imports from beside itself (its own
modeling.py, optimization.py, tokenization.py, helpers), `import
tensorflow as tf` gives TF 1.x's API on TensorFlow 2 (bert_lib/tf1): compat.v1
in graph mode plus tf.contrib.tpu / tf.estimator.tpu, tf.estimator, tf.layers,
the RNN cells and loops, TF 1.15's tf.keras.layers and the other tf.contrib
pieces and TensorFlow internals research code on BERT used, on this
project's engine. The script's directory comes first on sys.path, as when
Python runs a script, and its modules win over this project's of the same
names (the launcher, the TF 1.x layer and the engine import none of this
project's modeling, optimization or tokenization). A user error, or an API
that is not provided, ends the run with one "ERROR:" line naming the line of
the user's code, and exit status 1 (bert_lib/tf1/machinery/user_errors.py).
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import os
import re
import runpy
import sys

from bert_lib import tf1
from bert_lib.plumbing import errors
from bert_lib.tf1.machinery import namespaces as tf1_api
from bert_lib.tf1.machinery import user_errors as tf1_user_errors

USAGE = (
    "usage: python run_tf1.py [--distribution_strategy=one_device|mirrored|multi_worker]"
    " [--num_gpus=N] path/to/script.py [the script's flags ...]"
)

# The launcher's own options, given before the script: the engine's devices,
# which a script written for TF 1.x has no flag for.
LAUNCHER_OPTIONS = ("distribution_strategy", "num_gpus")


def _launcher_options(argv):
    """({option: value} given before the script, the rest of argv from the script on)."""
    options = {}
    rest = list(argv[1:])
    while rest and rest[0].startswith("--") and rest[0] not in ("--help", "--helpfull"):
        name, _, value = rest.pop(0)[2:].partition("=")
        if name not in LAUNCHER_OPTIONS:
            raise errors.UsageError(
                f"--{name}: run_tf1.py's own options are --distribution_strategy and "
                "--num_gpus; the script's flags come after the script"
            )
        if not value:
            raise errors.UsageError(f"--{name} needs a value (--{name}=...)")
        if name == "num_gpus":
            try:
                value = int(value)
            except ValueError:
                raise errors.UsageError(
                    f"--num_gpus must be a whole number, got {value}"
                ) from None
        options[name] = value
    return options, [argv[0], *rest]


def _script_from_argv(argv):
    if len(argv) < 2:
        raise errors.UsageError(f"{USAGE} (--help says more)")
    if argv[1] in ("-h", "--help", "--helpfull"):
        sys.stdout.write(USAGE + "\n" + __doc__)
        sys.exit(0)
    script = argv[1]
    if script.startswith("-"):
        raise errors.UsageError(f"{USAGE}: the script comes before its flags, got {script}")
    if not os.path.isfile(script):
        raise errors.UsageError(f"{script}: no such script")
    return script


def _run_script(script, argv):
    sys.argv = [script, *argv]
    try:
        runpy.run_path(script, run_name="__main__")
    except Exception as error:
        api = _unprovided_import(error)
        if api is not None:
            raise tf1_api.last_unsupported(api) or tf1.unsupported(api) from None
        located = tf1_user_errors.locate(error)
        if located is error:
            raise
        raise located from error


def _unprovided_import(error):
    """The API of `from tensorflow import name` of a name not provided, else None.

    Python turns the UnsupportedAPIError into an ImportError; the API is reported, not that.
    """
    if not isinstance(error, ImportError):
        return None
    match = re.match(r"cannot import name '(\w+)' from '(tensorflow|tf)([\w.]*)'", str(error))
    return f"{match.group(2)}{match.group(3)}.{match.group(1)}" if match else None


def main(argv=None):
    argv = list(sys.argv if argv is None else argv)
    options, argv = errors.call(_launcher_options, argv)
    script = errors.call(_script_from_argv, argv)
    tf1.install(**options)
    tf1.put_user_dir_first(os.path.dirname(os.path.abspath(script)))
    errors.call(_run_script, script, argv[2:])


if __name__ == "__main__":
    main()
