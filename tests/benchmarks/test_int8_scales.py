"""benchmarks/int8_scales.py: int8 rounding error per matrix against per column."""

import os
import sys

import numpy as np
from helpers import REPO, write_checkpoint

sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import int8_scales  # noqa: E402


def test_rounding_error_by_hand():
    # Column ranges 127 and 1.27: per column both round exactly; per matrix the step is
    # 1, so the second column's 0.5 and 1.27 become 0 and 1.
    weights = np.array([[127.0, 0.5], [-63.0, 1.27]])
    assert int8_scales.rounding_error(weights, per_column=True) == 0.0
    rms = np.sqrt(np.mean(weights**2))
    expected = np.sqrt((0.5**2 + 0.27**2) / 4) / rms
    np.testing.assert_allclose(int8_scales.rounding_error(weights, False), expected)


def test_columns_of_one_range_cost_nothing_and_an_outlier_column_costs_a_lot():
    rng = np.random.default_rng(0)
    even = rng.uniform(-1, 1, (64, 8))
    even[0] = 1.0  # every column's largest |w| is 1
    ratio, spread = int8_scales.compare(even)
    assert ratio == 1.0 and spread == 1.0
    outlier = even.copy()
    outlier[:, 3] *= 50
    ratio, spread = int8_scales.compare(outlier)
    # Per matrix all 8 columns round on the outlier's step, 50x the others' own: the
    # squared error grows from about 1/8 of the per-matrix one to all of it, a ratio
    # near sqrt(8).
    assert spread == 50.0 and 2.5 < ratio < 3.2


def test_reads_each_kind_of_dense_kernel_of_a_checkpoint(tmp_path, capsys):
    rng = np.random.default_rng(1)
    values = {
        f"bert/encoder/layer_{i}/{kind}/kernel": rng.standard_normal((4, 6)).astype(np.float32)
        for i in range(2)
        for kind in int8_scales.KINDS
    }
    values["bert/pooler/dense/kernel"] = rng.standard_normal((4, 4)).astype(np.float32)
    values["bert/encoder/layer_0/attention/self/query/bias"] = np.zeros(6, np.float32)
    path = write_checkpoint(tmp_path / "model.ckpt", values)
    int8_scales.main([f"--init_checkpoint={path}"])
    lines = capsys.readouterr().out.splitlines()[2:]
    assert [line.split()[0] for line in lines] == [*int8_scales.KINDS, "pooler/dense"]
    query = values["bert/encoder/layer_1/attention/self/query/kernel"]
    ratio, _ = int8_scales.compare(query)
    assert lines[0].split()[3] == f"{ratio:.2f}"  # the second layer's, after the first's
    assert len(lines[-1].split("column ranges")[1].split()) == 1
