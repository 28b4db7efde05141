"""Which CPU kernels TensorFlow runs: oneDNN's by default, unless the environment says otherwise.

TensorFlow reads TF_ENABLE_ONEDNN_OPTS once, when it is first imported, and
on x86-64 turns its oneDNN kernels on by itself only on CPUs with AVX-512
VNNI, AVX-512 BF16 or AMX. On the many CPUs without them (AVX2 servers and
laptops) it runs its older Eigen kernels, which measured slower for BERT
on such a CPU (BENCHMARKS.md, "Where a training step's time goes"). The two
give the same numbers to float32 round-off (matmuls and reductions in
another order), which is the bar every output of this project is held to.

So every entry point imports this module before TensorFlow: it sets
TF_ENABLE_ONEDNN_OPTS=1 on x86-64 when the variable is not set at all. A
value in the environment always wins ("0" gives the Eigen kernels back), and
nothing changes if TensorFlow was imported before (say by a program that
imports export/predictor.py after TensorFlow). `describe()` is the one line the
scripts log about it. This module imports nothing but the standard library,
so the scripts that do not use TensorFlow pay nothing for it.
"""

import os
import platform
import sys

VARIABLE = "TF_ENABLE_ONEDNN_OPTS"

# Where the choice came from, for describe(): "environment", "default",
# "imported before" (TensorFlow was already loaded) or "not x86-64".
_SOURCE = None


def choose():
    """Sets TF_ENABLE_ONEDNN_OPTS=1 for TensorFlow's import unless it is already decided.

    Returns where the setting comes from; called once, at this module's import.
    """
    if "tensorflow" in sys.modules:
        return "imported before"
    if VARIABLE in os.environ:
        return "environment"
    if platform.machine().lower() not in ("x86_64", "amd64"):
        # On ARM TensorFlow's own choice (oneDNN with ACL where it pays) stands.
        return "not x86-64"
    os.environ[VARIABLE] = "1"
    return "default"


def describe():
    """One line: which kernels TensorFlow runs in this process, and why."""
    value = os.environ.get(VARIABLE)
    if _SOURCE == "default":
        return (
            f"CPU kernels: oneDNN ({VARIABLE}=1, this project's default on x86-64; "
            f"{VARIABLE}=0 in the environment gives TensorFlow's Eigen kernels)"
        )
    if _SOURCE == "environment":
        kind = "Eigen" if value.strip().lower() in ("0", "false") else "oneDNN"
        return f"CPU kernels: {kind} ({VARIABLE}={value} from the environment)"
    if _SOURCE == "imported before":
        return (
            "CPU kernels: TensorFlow's own choice (it was imported before this "
            f"project's modules; {VARIABLE}={value if value is not None else 'unset'})"
        )
    return f"CPU kernels: TensorFlow's own choice ({platform.machine()}, {VARIABLE} unset)"


_SOURCE = choose()
