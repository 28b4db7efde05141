"""Runs a script written for TF 1.x BERT, unchanged, on TensorFlow 2.

    python run_tf1.py path/to/their_script.py --their_flags...
    python run_tf1.py -m their_package.their_module --their_flags...   (as python -m)
    python -m bert.run_tf1 path/to/their_script.py --their_flags...   (installed)
    python run_tf1.py --distribution_strategy=mirrored [--num_gpus=N] their_script.py ...
    python run_tf1.py --tf1_packages=bert_serving their_script.py ...

The launcher's own options, before the script, choose the engine's devices
for every Estimator of the script (one device by default; all local GPUs;
the workers of TF_CONFIG), as the scripts here choose them with the same
flags: a script written for TF 1.x has no such flag of its own; and
--tf1_packages names installed packages written for TF 1.x that get its
API too (those whose metadata requires TensorFlow below 2 get it anyway).
With -m, the module is found from the current directory first and run as
`python -m` runs it (as __main__, its package's relative imports working).

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
import sys

from bert_lib import tf1
from bert_lib.plumbing import errors
from bert_lib.tf1.machinery import launcher as tf1_launcher
from bert_lib.tf1.machinery import namespaces as tf1_api
from bert_lib.tf1.machinery import user_errors as tf1_user_errors

USAGE = (
    "usage: python run_tf1.py [--distribution_strategy=one_device|mirrored|multi_worker]"
    " [--num_gpus=N] [--tf1_packages=name,...] path/to/script.py | -m package.module"
    " [the script's flags ...]"
)

# The launcher's own options, given before the script: the engine's devices,
# which a script written for TF 1.x has no flag for, and the installed packages
# written for TF 1.x.
LAUNCHER_OPTIONS = ("distribution_strategy", "num_gpus", "tf1_packages")


def _launcher_options(argv):
    """({option: value} given before the script, the rest of argv from the script on)."""
    options = {}
    rest = list(argv[1:])
    while rest and rest[0].startswith("--") and rest[0] not in ("--help", "--helpfull"):
        name, _, value = rest.pop(0)[2:].partition("=")
        if name not in LAUNCHER_OPTIONS:
            raise errors.UsageError(
                f"--{name}: run_tf1.py's own options are --distribution_strategy, "
                "--num_gpus and --tf1_packages; the script's flags come after the script"
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
        if name == "tf1_packages":
            value = [package.strip() for package in value.split(",") if package.strip()]
        options[name] = value
    return options, [argv[0], *rest]


def _target_from_argv(argv):
    """("script", its path) or ("module", its name), and the arguments after it."""
    if len(argv) < 2:
        raise errors.UsageError(f"{USAGE} (--help says more)")
    if argv[1] in ("-h", "--help", "--helpfull"):
        sys.stdout.write(USAGE + "\n" + __doc__)
        sys.exit(0)
    if argv[1].startswith("-m"):  # -m name, or -mname as Python takes it
        name = argv[1][2:] or (argv[2] if len(argv) > 2 else "")
        rest = argv[2:] if argv[1][2:] else argv[3:]
        if not name or name.startswith("-"):
            raise errors.UsageError(f"{USAGE}: -m needs a module name")
        return ("module", name), rest
    script = argv[1]
    if script.startswith("-"):
        raise errors.UsageError(f"{USAGE}: the script comes before its flags, got {script}")
    if not os.path.isfile(script):
        raise errors.UsageError(f"{script}: no such script")
    return ("script", script), argv[2:]


def _run(target, argv):
    kind, name = target
    try:
        if kind == "module":
            tf1_launcher.run_module(name, argv)
        else:
            tf1_launcher.run_script(name, argv)
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
    (kind, name), rest = errors.call(_target_from_argv, argv)
    errors.call(lambda: tf1.install(**options))
    # As Python does: a script's directory first on sys.path, for -m the current one.
    user_dir = os.getcwd() if kind == "module" else os.path.dirname(os.path.abspath(name))
    tf1.put_user_dir_first(user_dir)
    errors.call(_run, (kind, name), rest)


if __name__ == "__main__":
    main()
