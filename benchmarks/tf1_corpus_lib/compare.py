"""What TF 1.15's run and run_tf1.py's wrote, side by side (this project's Python only)."""

import glob
import os
import re

from compat_check_lib.comparators import Comparison, compare_checkpoint_variables

# File names that differ between two runs of the same code: the times and hosts
# in event files' names, run folders named by a timestamp. An events file's name keeps
# its `.profile-empty` suffix: TF 1.15's Keras TensorBoard callback wrote that file
# beside its own events file, and a run without it wrote fewer files.
_EVENTS = re.compile(r"events\.out\.tfevents\.[^/]*?(\.profile-empty)?$")
_LONG_NUMBER = re.compile(r"\d{9,}")
# A metric in a file's name (Kyubyong's iwslt2016_E01L4.26: the epoch's loss), which
# training from other random weights changes.
_DECIMAL = re.compile(r"\d+\.\d+")
# A run folder named by its start time (WaveNet's generate/2019-01-31T12-00-00).
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d[-:]\d\d[-:]\d\d")
# A folder tempfile named (bert-as-service's socket folder).
_TEMPORARY = re.compile(r"\btmp[A-Za-z0-9_]{6,8}\b")
# A checkpoint's step: scripts stopped by Ctrl-C (or saving by time) save at other steps.
_CHECKPOINT_STEP = re.compile(r"-\d+(\.(index|meta|data-\d+-of-\d+|input))$")
# The data shards of a checkpoint: TF 1.15's saver wrote one per device (a Keras TF-format
# file: two, the object graph's tensor pinned to /cpu:0), today's writes one; the index
# names them, and either side reads the other's.
_SHARDS = re.compile(r"\.data-\d+-of-\d+$")
# A TensorBoard profile (Keras's callback traces its second batch): its folder is named by
# the time, and the trace file is the profiler's of each version (TF 1.15's local.trace,
# today's HOST.xplane.pb, the format today's TensorBoard reads).
_PROFILE = re.compile(r"(plugins/profile)/[^/]+/[^/]+$")


def normalized(path, any_step=False):
    """The name two runs of the same step give the same file (with any_step, a checkpoint
    of any step: a run stopped by Ctrl-C saves at the step the signal came)."""
    path = _EVENTS.sub(r"events.out.tfevents\1", path)
    if any_step:
        path = _CHECKPOINT_STEP.sub(r"-N\1", path)
    path = _TEMPORARY.sub("tmp#", _TIMESTAMP.sub("#T#", path))
    path = _PROFILE.sub(r"\1/#/trace", _SHARDS.sub(".data-#", path))
    return _DECIMAL.sub("#.#", _LONG_NUMBER.sub("#", path))


def missing_files(tf115_written, run_tf1_written, any_step=False):
    """The files TF 1.15's run wrote that run_tf1.py's did not (by normalized name)."""
    ours = {normalized(p, any_step) for p in run_tf1_written}
    return sorted({normalized(p, any_step) for p in tf115_written} - ours)


def newest_checkpoints(tree, written):
    """{normalized checkpoint prefix: path} of the checkpoints among `written`, the newest
    of each folder (the highest step)."""
    newest = {}
    for path in written:
        if not path.endswith(".index"):
            continue
        prefix = path[: -len(".index")]
        folder = os.path.dirname(prefix)
        step = re.search(r"-(\d+)$", prefix)
        number = int(step.group(1)) if step else -1
        key = normalized(folder, any_step=True)
        if key not in newest or number > newest[key][0]:
            newest[key] = (number, tree + os.sep + prefix)
    return {key: path for key, (_, path) in newest.items()}


def compare_checkpoints(tf115_tree, tf115_written, run_tf1_tree, run_tf1_written):
    """Comparisons of each folder's newest checkpoint: variable names and shapes."""
    a = newest_checkpoints(tf115_tree, tf115_written)
    b = newest_checkpoints(run_tf1_tree, run_tf1_written)
    results = []
    for key in sorted(a):
        if key not in b:
            results.append((f"checkpoint in {key or '.'}", Comparison(False, "run_tf1: none")))
            continue
        name = f"checkpoint {os.path.relpath(a[key], tf115_tree)}"
        results.append((name, compare_checkpoint_variables(a[key], b[key])))
    return results


def printed_numbers(output, pattern):
    """The printed lines `pattern` finds, each from where it matches (a log line's time,
    thread and file prefix left out)."""
    found = (re.search(pattern, line) for line in output.splitlines())
    return "\n".join(m.string[m.start() :] for m in found if m)


def compare_printed(tf115_output, cross_output, pattern):
    a = printed_numbers(tf115_output, pattern)
    b = printed_numbers(cross_output, pattern)
    if not a:
        return Comparison(False, f"TF 1.15 printed no line matching {pattern!r}")
    return _compare_texts(a, b)


def _compare_texts(a, b):
    if a == b:
        return Comparison(True, "identical")
    tokens_a, tokens_b = _tokens(a), _tokens(b)
    return compare_token_lists(tokens_a, tokens_b)


def _tokens(text):
    return re.findall(r"-?\d+\.?\d*(?:[eE][-+]?\d+)?|[^\s\d]+", text)


def compare_token_lists(a, b):
    """Words identical; numbers equal to float32 round-off, or to the last printed digit."""
    if len(a) != len(b):
        return Comparison(False, f"{len(a)} vs {len(b)} tokens")
    far = []
    largest = 0.0
    for x, y in zip(a, b):
        if x == y:
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            far.append((x, y))
            continue
        largest = max(largest, abs(fx - fy))
        if not _close(x, y, fx, fy):
            far.append((x, y))
    return Comparison(
        not far,
        f"{len(a)} tokens; numbers differ by at most {largest:.2g}"
        + (f"; beyond round-off: {far[:3]!r}" if far else ""),
    )


def _printed_step(text):
    """One unit of the last printed digit of a number's text (1e-6 for '0.123456')."""
    mantissa = text.lower().split("e")[0]
    exponent = int(text.lower().split("e")[1]) if "e" in text.lower() else 0
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (exponent - decimals)


def _close(x, y, fx, fy):
    tolerance = max(1e-5 * max(1.0, abs(fx), abs(fy)), _printed_step(x), _printed_step(y))
    return abs(fx - fy) <= tolerance * 1.0000001


def compare_files(tf115_tree, cross_tree, pattern):
    """The files matching `pattern` in both trees, number for number."""
    found = sorted(glob.glob(os.path.join(tf115_tree, pattern), recursive=True))
    if not found:
        return [(pattern, Comparison(False, "TF 1.15 wrote no such file"))]
    results = []
    for path in found:
        relative = os.path.relpath(path, tf115_tree)
        other = os.path.join(cross_tree, relative)
        candidates = [other] if os.path.exists(other) else _same_name(cross_tree, relative)
        if not candidates:
            results.append((relative, Comparison(False, "run_tf1 wrote no such file")))
            continue
        if path.endswith((".hdf5", ".h5")):
            results.append((relative, compare_hdf5(path, candidates[0])))
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            a = f.read()
        with open(candidates[0], encoding="utf-8", errors="replace") as f:
            b = f.read()
        results.append((relative, _compare_texts(a, b)))
    return results


def _hdf5_arrays(path):
    import h5py
    import numpy as np

    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, item: (
                arrays.__setitem__(name, np.asarray(item[()]))
                if isinstance(item, h5py.Dataset)
                else None
            )
        )
    return arrays


def compare_hdf5(a_path, b_path):
    """An HDF5 file's datasets (ELMo's cached embeddings): the same names and shapes,
    numbers to float32 round-off (1e-5 relative to the largest magnitude)."""
    import numpy as np

    a, b = _hdf5_arrays(a_path), _hdf5_arrays(b_path)
    if sorted(a) != sorted(b):
        return Comparison(False, f"datasets {sorted(a)[:5]} vs {sorted(b)[:5]}")
    largest = 0.0
    for name in sorted(a):
        if a[name].shape != b[name].shape:
            return Comparison(False, f"{name}: shape {a[name].shape} vs {b[name].shape}")
        if a[name].dtype.kind not in "fiu":
            if not np.array_equal(a[name], b[name]):
                return Comparison(False, f"{name}: values differ")
            continue
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        difference = float(np.max(np.abs(x - y))) if x.size else 0.0
        scale = max(1.0, float(np.max(np.abs(x))) if x.size else 0.0)
        largest = max(largest, difference)
        if difference > 1e-5 * scale:
            return Comparison(False, f"{name}: numbers differ by {difference:.2g}")
    return Comparison(True, f"{len(a)} datasets; numbers differ by at most {largest:.2g}")


def _same_name(tree, relative):
    wanted = normalized(relative)
    return [
        os.path.join(directory, name)
        for directory, _, names in os.walk(tree)
        for name in names
        if normalized(os.path.relpath(os.path.join(directory, name), tree)) == wanted
    ]


__all__ = [
    "compare_checkpoints",
    "compare_files",
    "compare_printed",
    "missing_files",
]
