"""How an output of the original and the same output of ours are compared.

Each comparator returns a Comparison: whether the two agree as far as the
two TensorFlows allow, and one line saying how. These run under this
project's interpreter only.
"""

import collections
import json
import os
import re

from .common import float32_str, float32_ulps, read_bytes, read_text

Comparison = collections.namedtuple("Comparison", ["ok", "detail"])


def parse_records(path):
    """Returns a list of {feature: values} for the tf.train.Examples in a TFRecord file."""
    import tensorflow as tf

    out = []
    for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
        example = tf.train.Example.FromString(raw)
        row = {}
        for key, feature in example.features.feature.items():
            kind = feature.WhichOneof("kind")
            row[key] = list(getattr(feature, kind).value)
        out.append(row)
    return out


def compare_records(path_a, path_b):
    """Same content after parsing; the bytes may differ by the protobuf runtime's map order."""
    a, b = parse_records(path_a), parse_records(path_b)
    differing = sum(1 for x, y in zip(a, b) if x != y)
    ok = len(a) == len(b) and differing == 0
    if read_bytes(path_a) == read_bytes(path_b):
        how = "bytes identical"
    else:
        how = "bytes differ (feature map order of the protobuf runtime)"
    return Comparison(ok, f"{len(a)} vs {len(b)} records, {differing} differ in content; {how}")


def compare_json_files(path_a, path_b, json_lines=False):
    """Byte comparison, else structure + the largest float difference."""
    text_a, text_b = read_text(path_a), read_text(path_b)
    if text_a == text_b:
        return Comparison(True, "byte-identical")
    stats = {"shape": [], "other": [], "floats": 0, "max_abs": 0.0}

    def walk(x, y, where):
        if isinstance(x, dict):
            if list(x) != list(y):
                stats["shape"].append(where)
            for key in x:
                if key in y:
                    walk(x[key], y[key], where + "/" + key)
        elif isinstance(x, list):
            if len(x) != len(y):
                stats["shape"].append(where)
            for i, (u, v) in enumerate(zip(x, y)):
                walk(u, v, f"{where}[{i}]")
        elif isinstance(x, float) and isinstance(y, float):
            if x != y:
                stats["floats"] += 1
                stats["max_abs"] = max(stats["max_abs"], abs(x - y))
        elif x != y or type(x) is not type(y):
            stats["other"].append((where, x, y))

    if json_lines:
        docs_a = [json.loads(t) for t in text_a.splitlines()]
        docs_b = [json.loads(t) for t in text_b.splitlines()]
    else:
        docs_a, docs_b = [json.loads(text_a)], [json.loads(text_b)]
    walk(docs_a, docs_b, "")
    ok = not stats["shape"] and not stats["other"]
    return Comparison(
        ok,
        f"bytes differ; structure, keys, order and non-float values "
        f"{'identical' if ok else 'DIFFER ' + repr((stats['shape'] + stats['other'])[:3])}; "
        f"{stats['floats']} floats differ, max |diff| {stats['max_abs']:.3g}",
    )


# eval_results.txt values of one checkpoint evaluated by both codes differ by
# float32 round-off (summation order) at most; more is a different computation.
KEY_VALUE_RELATIVE_TOLERANCE = 1e-4


def _values_close(x, y):
    try:
        a, b = float(x), float(y)
    except ValueError:
        return x == y
    return abs(a - b) <= KEY_VALUE_RELATIVE_TOLERANCE * max(abs(a), abs(b))


def compare_key_value_file(path_a, path_b, extra_ok=()):
    """eval_results.txt: same "key = value" layout, values equal to round-off (a relative
    KEY_VALUE_RELATIVE_TOLERANCE); ours may add the keys in extra_ok."""

    def parse(path):
        pairs = []
        for line in read_text(path).splitlines():
            m = re.fullmatch(r"(\S+) = (\S+)", line)
            pairs.append((m.group(1), m.group(2)) if m else (None, line))
        return pairs

    if read_text(path_a) == read_text(path_b):
        return Comparison(True, "byte-identical")
    a = parse(path_a)
    b = [(k, v) for k, v in parse(path_b) if k not in extra_ok]
    keys_same = [k for k, _ in a] == [k for k, _ in b]
    diffs = [f"{k}: {x} vs {y}" for (k, x), (_, y) in zip(a, b) if x != y]
    far = [f"{k}: {x} vs {y}" for (k, x), (_, y) in zip(a, b) if not _values_close(x, y)]
    return Comparison(
        keys_same and not far,
        f"keys {'identical' if keys_same else 'DIFFER'}"
        f"{' (ours adds ' + ', '.join(extra_ok) + ')' if extra_ok else ''}; "
        f"values differing: {'; '.join(diffs) if diffs else 'none'}"
        f"{'; beyond round-off: ' + '; '.join(far) if far else ''}",
    )


def compare_tsv(path_a, path_b):
    """test_results.tsv: same cells, each the shortest text of a float32, values up to ulps."""
    text_a, text_b = read_text(path_a), read_text(path_b)
    if text_a == text_b:
        return Comparison(True, "byte-identical")
    rows_a = [line.split("\t") for line in text_a.split("\n")]
    rows_b = [line.split("\t") for line in text_b.split("\n")]
    shape_same = [len(r) for r in rows_a] == [len(r) for r in rows_b]
    numbers = [(x, y) for ra, rb in zip(rows_a, rows_b) for x, y in zip(ra, rb) if x]
    differing = [(x, y) for x, y in numbers if x != y]
    ulps = max((float32_ulps(float(x), float(y)) for x, y in differing), default=0)
    repr_ok = all(x == float32_str(float(x)) for x, _ in numbers) and all(
        y == float32_str(float(y)) for _, y in numbers
    )
    return Comparison(
        shape_same and repr_ok,
        f"lines and columns {'identical' if shape_same else 'DIFFER'}; every value is the "
        f"shortest repr of a float32 in both: {repr_ok}; {len(differing)} of {len(numbers)} "
        f"values differ, by at most {ulps} float32 ulp",
    )


def compare_files_exactly(path_a, path_b):
    """Byte equality, for outputs no float arithmetic of TensorFlow reaches."""
    try:
        same = read_bytes(path_a) == read_bytes(path_b)
    except FileNotFoundError:
        same = False
    return Comparison(same, "byte-identical" if same else "bytes DIFFER")


def compare_adam_slots(checkpoint_a, checkpoint_b):
    """After one step adam_m = 0.1 g and adam_v = 0.001 g^2, so equal slots mean equal gradients.

    Each slot is compared relative to its own largest value. Key biases get
    no gradient (softmax ignores a per-query constant): their slots hold
    round-off only and are left out.
    """
    import tensorflow as tf

    a, b = tf.train.load_checkpoint(checkpoint_a), tf.train.load_checkpoint(checkpoint_b)
    worst, count = 0.0, 0
    for name in sorted(a.get_variable_to_shape_map()):
        if not name.endswith(("/adam_m", "/adam_v")) or "/key/bias" in name:
            continue
        x, y = a.get_tensor(name), b.get_tensor(name)
        scale = float(abs(x).max())
        count += 1
        worst = max(worst, float(abs(x - y).max()) / max(scale, 1e-30))
    return Comparison(
        worst < 1e-4 and count > 0,
        f"{count} slots compared; largest difference {worst:.2g} of the slot's largest value",
    )


def compare_resumed_step(before, after, lr):
    """Re-derives the one AdamWeightDecay step between two checkpoints of a run.

    The gradient follows from the first moments (g = (m4 - 0.9 m3) / 0.1); the
    second moments and the weights must then agree with it at learning rate lr.
    Slots that did not load (zeros) or a global_step that did not carry over
    break the equalities.
    """
    import numpy as np
    import tensorflow as tf

    a, b = tf.train.load_checkpoint(before), tf.train.load_checkpoint(after)
    step_a, step_b = int(a.get_tensor("global_step")), int(b.get_tensor("global_step"))
    names = sorted(
        n[: -len("/adam_m")] for n in a.get_variable_to_shape_map() if n.endswith("/adam_m")
    )
    worst_w = worst_v = 0.0
    for name in names:
        m3, v3, w3 = (a.get_tensor(name + s) for s in ("/adam_m", "/adam_v", ""))
        m4, v4, w4 = (b.get_tensor(name + s) for s in ("/adam_m", "/adam_v", ""))
        grad = (m4 - 0.9 * m3) / 0.1
        v_expected = 0.999 * v3 + 0.001 * grad * grad
        update = m4 / (np.sqrt(v4) + 1e-6)
        if not re.search("LayerNorm|layer_norm|bias", name):
            update = update + 0.01 * w3
        worst_w = max(worst_w, float(np.max(np.abs(w3 - lr * update - w4))))
        worst_v = max(worst_v, float(np.max(np.abs(v_expected - v4) / (np.abs(v4) + 1e-12))))
    ok = step_a + 1 == step_b and names and worst_w < 1e-6 and worst_v < 1e-4
    return Comparison(
        bool(ok),
        f"global_step {step_a} -> {step_b}; {len(names)} variables with adam_m/adam_v; "
        f"max |w - expected| {worst_w:.3g}, max rel. error of adam_v {worst_v:.3g}",
    )


def compare_softmax_rows(rows_a, rows_b):
    """Ok whenever both gave their rows: this shows how far the kernels alone differ."""
    pairs = list(zip(rows_a, rows_b))
    differing = sum(1 for a, b in pairs if a != b)
    ulps = max(
        (float32_ulps(float(x), float(y)) for a, b in pairs for x, y in zip(a, b)), default=0
    )
    return Comparison(
        len(rows_a) == len(rows_b) and len(rows_a) > 0,
        f"{differing} rows differ between the two TensorFlows, by at most {ulps} ulp",
    )


# Outputs of TF 1.x research scripts computed from one checkpoint by TF 1.15 and by
# run_tf1.py: predictions and metrics agree to this (absolute, or relative when larger).
RESEARCH_TOLERANCE = 1e-5


def _numbers_close(x, y):
    try:
        a, b = float(x), float(y)
    except ValueError:
        return x == y
    return abs(a - b) <= RESEARCH_TOLERANCE * max(1.0, abs(a), abs(b))


def compare_text_with_numbers(path_a, path_b):
    """Whitespace-separated tokens: words identical, numbers within RESEARCH_TOLERANCE."""
    a, b = read_text(path_a).split(), read_text(path_b).split()
    if a == b:
        return Comparison(True, "identical")
    far = [(x, y) for x, y in zip(a, b) if not _numbers_close(x, y)]
    differing = [(x, y) for x, y in zip(a, b) if x != y]
    largest = max((abs(float(x) - float(y)) for x, y in differing), default=0.0)
    return Comparison(
        len(a) == len(b) and not far,
        f"{len(a)} vs {len(b)} tokens; {len(differing)} numbers differ, by at most "
        f"{largest:.2g}{'; beyond tolerance: ' + repr(far[:3]) if far else ''}",
    )


def _variable_shapes(checkpoint):
    """{name: shape} of a checkpoint given by its prefix (which may end in a slash, as a
    Saver given a folder's path writes it: `model.weights/.index`) or its folder."""
    import tensorflow as tf

    if os.path.exists(checkpoint + ".index"):
        return tf.compat.v1.train.NewCheckpointReader(checkpoint).get_variable_to_shape_map()
    return dict(tf.train.list_variables(checkpoint))


def compare_checkpoint_variables(checkpoint_a, checkpoint_b):
    """The same variable names with the same shapes (a checkpoint of one loads in the other)."""
    a = _variable_shapes(checkpoint_a)
    b = _variable_shapes(checkpoint_b)
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    shapes = sorted(name for name in set(a) & set(b) if a[name] != b[name])
    return Comparison(
        not (only_a or only_b or shapes),
        f"{len(a)} vs {len(b)} variables; only in the first: {only_a[:3]}, only in the "
        f"second: {only_b[:3]}, other shapes: {shapes[:3]}",
    )


def compare_npz(path_a, path_b):
    """Arrays of the same names: `*/names` entries equal, numbers within RESEARCH_TOLERANCE."""
    import numpy as np

    a, b = np.load(path_a), np.load(path_b)
    if sorted(a.files) != sorted(b.files):
        return Comparison(False, f"entries differ: {sorted(set(a.files) ^ set(b.files))[:3]}")
    names_differ = [k for k in a.files if k.endswith("/names") and list(a[k]) != list(b[k])]
    worst, far = 0.0, []
    for key in a.files:
        if key.endswith("/names"):
            continue
        diff = float(np.max(np.abs(a[key] - b[key]))) if a[key].size else 0.0
        worst = max(worst, diff)
        if diff > RESEARCH_TOLERANCE * max(1.0, float(np.max(np.abs(a[key])))):
            far.append(key)
    cases = len({k.split("/")[0] for k in a.files})
    names = f"DIFFER in {names_differ[:3]}" if names_differ else "identical"
    return Comparison(
        not names_differ and not far,
        f"{cases} cases; variable names {names}; "
        f"largest difference of outputs and gradients {worst:.2g}"
        f"{'; beyond tolerance: ' + repr(far[:3]) if far else ''}",
    )
