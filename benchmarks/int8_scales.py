"""What one int8 weight scale per matrix costs against one per output column, layer by layer.

model_int8.onnx (run_classifier.py --export_format=onnx_int8) stores each
dense layer's weight as symmetric int8 with one scale per output column;
ONNX Runtime's quantize_dynamic at its defaults uses one scale per matrix,
whose integer matmuls run a few percent faster (BENCHMARKS.md, "Serving").
Per matrix, every column is rounded on the step of the matrix's largest
value, so a column whose values are small loses most of its resolution.

For each dense kernel of a BERT checkpoint (query, key, value, attention
output, intermediate, output of every layer, and the pooler), this rounds
the weights to int8 both ways (scale = largest |w| / 127, values rounded to
[-127, 127]) and prints, per kind of layer and layer by layer, the RMS
rounding error per matrix over that per column, beside the largest
column's largest |w| over the median column's. A ratio near 1 says the
matrix could take one scale at no cost in rounding; a large one says its
columns differ in range. It reads weights only: no data, no runtime.

  .venv/bin/python benchmarks/int8_scales.py --init_checkpoint=/tmp/minilm_tf/bert_model.ckpt
"""

import argparse
import collections
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from bert_lib.export.onnx_runtimes import symmetric_int8  # noqa: E402

KINDS = (
    "attention/self/query",
    "attention/self/key",
    "attention/self/value",
    "attention/output/dense",
    "intermediate/dense",
    "output/dense",
)


def rounding_error(weights, per_column):
    """RMS error of rounding `weights` ([inputs, outputs]) to symmetric int8, relative to
    the weights' RMS: one scale per output column, or one for the matrix."""
    weights = np.asarray(weights, np.float64)
    values, scale = symmetric_int8(weights, axis=0 if per_column else None)
    rounded = values * scale
    return np.sqrt(np.mean((rounded - weights) ** 2) / np.mean(weights**2))


def dense_kernels(reader):
    """{kind: [(layer index or None, kernel)]} of a checkpoint reader's BERT dense layers."""
    found = collections.defaultdict(list)
    for name in sorted(reader.get_variable_to_shape_map()):
        match = re.fullmatch(r"bert/encoder/layer_(\d+)/(.+)/kernel", name)
        if match and match.group(2) in KINDS:
            found[match.group(2)].append((int(match.group(1)), reader.get_tensor(name)))
        elif name == "bert/pooler/dense/kernel":
            found["pooler/dense"].append((None, reader.get_tensor(name)))
    for layers in found.values():
        layers.sort(key=lambda item: -1 if item[0] is None else item[0])
    return found


def compare(kernel):
    """(per-matrix error / per-column error, largest column range / median column range)."""
    columns = np.abs(np.asarray(kernel, np.float64)).max(axis=0)
    ratio = rounding_error(kernel, False) / rounding_error(kernel, True)
    return ratio, columns.max() / np.median(columns)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--init_checkpoint", required=True)
    args = parser.parse_args(argv)
    import tensorflow as tf

    kernels = dense_kernels(tf.train.load_checkpoint(args.init_checkpoint))
    print("per-matrix RMS rounding error / per-column, layer by layer (column ranges: largest")
    print("column's largest |w| / the median column's)")
    for kind in (*KINDS, "pooler/dense"):
        rows = [compare(kernel) for _, kernel in kernels.get(kind, [])]
        if rows:
            errors = " ".join(f"{ratio:.2f}" for ratio, _ in rows)
            ranges = " ".join(f"{spread:.1f}" for _, spread in rows)
            print(f"  {kind:24s} error {errors}   column ranges {ranges}")


if __name__ == "__main__":
    main()
