"""benchmarks/peer_speed.py's machinery at tiny sizes (--quick).

Only this project's side runs unless the peers' interpreters are given in
PEER_KERASHUB_PYTHON / PEER_TORCH_PYTHON (scratch virtual environments with
keras-hub, or torch and transformers; never this project's requirements).
No speed is judged here: benchmarks are run alone, by hand.
"""

import os
import subprocess
import sys

import pytest
from helpers import ONNX_EXTRA_MISSING, REPO

sys.path.insert(0, os.path.join(REPO, "benchmarks"))

import peer_speed  # noqa: E402


def test_window_rates_splits_marks_into_windows_of_wall_and_cpu_time():
    marks = [(0.0, 0.0), (1.0, 2.0), (3.0, 4.0), (4.0, 8.0), (8.0, 9.0)]
    wall, cpu = peer_speed.window_rates(marks, 2, 10)
    assert wall == [20 / 3.0, 20 / 5.0]
    assert cpu == [20 / 4.0, 20 / 5.0]


def test_quick_sizes_and_defaults():
    args = peer_speed.parse_args(["--work_dir=/tmp/x", "--quick"])
    assert args.sizes["num_hidden_layers"] == 2 and args.sizes["batch_size"] == 4
    assert args.tolerance == 1e-5
    full = peer_speed.parse_args(["--work_dir=/tmp/x", "--precision=bf16", "--batch_size=8"])
    assert full.sizes["hidden_size"] == 384 and full.sizes["num_attention_heads"] == 12
    assert full.sizes["batch_size"] == 8 and full.tolerance == 2e-2
    assert args.serve_lengths == []
    assert args.serve_shapes == [(1, 2), (4, 8)] and args.threads == ["1", "all"]
    assert full.serve_shapes == [(1, 2), (1, 50), (1, 128), (32, 50), (32, 128)]
    lengths = peer_speed.parse_args(["--work_dir=/tmp/x", "--serve_lengths=2,16,128"])
    assert lengths.serve_lengths == [2, 16, 128]
    assert lengths.serve_shapes[-1] == (1, 16) and lengths.serve_shapes.count((1, 128)) == 1
    with pytest.raises(SystemExit):
        peer_speed.parse_args(["--work_dir=/tmp/x", "--serve_shapes=1by2"])
    with pytest.raises(SystemExit):
        peer_speed.parse_args(["--work_dir=/tmp/x", "--threads=0"])


def test_serving_children_get_their_threads_and_torch_waits_passively():
    one = peer_speed.child_environment("serve_ours", "1")
    assert one["TF_NUM_INTRAOP_THREADS"] == "1" and one["TF_NUM_INTEROP_THREADS"] == "1"
    every = peer_speed.child_environment("serve_ours", "all")
    assert every.get("TF_NUM_INTRAOP_THREADS") == os.environ.get("TF_NUM_INTRAOP_THREADS")
    assert peer_speed.child_environment("serve_torch", "all")["OMP_WAIT_POLICY"] == "PASSIVE"
    assert peer_speed.child_environment("train_torch", "all")["OMP_WAIT_POLICY"] == "PASSIVE"
    with pytest.raises(SystemExit):
        peer_speed.parse_args(["--work_dir=/tmp/x", "--jobs=train,fly"])


@pytest.mark.slow
def test_quick_run_trains_and_serves(tmp_path):
    command = [
        sys.executable,
        os.path.join(REPO, "benchmarks", "peer_speed.py"),
        f"--work_dir={tmp_path}",
        "--quick",
        "--serve_lengths=2,8",
    ]
    peers = {"kerashub": "PEER_KERASHUB_PYTHON", "torch": "PEER_TORCH_PYTHON"}
    given = {side: os.environ[var] for side, var in peers.items() if os.environ.get(var)}
    # ONNX Runtime and OpenVINO are installed with the [onnx] extra.
    with_onnx = not ONNX_EXTRA_MISSING
    if with_onnx:
        given.update(onnxruntime=sys.executable, openvino=sys.executable)
    command += [f"--{side}_python={python}" for side, python in given.items()]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=REPO, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "Fine-tuning steady state" in out and "Raw sentence pairs to probabilities" in out
    assert "| ours | " in out
    assert "| ours, batch 4 | " in out and "| ours, batch 1 | " in out
    assert "The model call alone on token ids, ms a call" in out
    assert "| batch 1, 2 tokens | batch 4, 8 tokens | batch 1, 8 tokens |" in out
    rows = {tuple(line.split(" | ")[:2]) for line in out.splitlines() if line.startswith("| ")}
    names = ["ours fp32 (Predictor, SavedModel)"]
    if with_onnx:
        names += [
            "ours fp32 (Predictor, ONNX Runtime)",
            "ours fp32 (Predictor, OpenVINO)",
            "ours int8 (Predictor, ONNX Runtime)",
            "ours int8 (Predictor, OpenVINO)",
            "ONNX Runtime fp32",
            "ONNX Runtime int8",
            "ONNX Runtime fp32, tuned",
            "ONNX Runtime int8, tuned",
            "OpenVINO fp32",
            "OpenVINO bf16",
            "OpenVINO int8",
            "OpenVINO int8, model_int8.onnx",
        ]
    for name in names:
        assert {(f"| {name}", "1"), (f"| {name}", "all")} <= rows, out
    if with_onnx:
        # The tuned session against Predictor's fastest, each precision, threads, shape.
        assert "A user's tuned ONNX Runtime session's ms a call / Predictor's fastest" in out
        ratios = [line for line in out.splitlines() if line.startswith(("| fp32 | ", "| int8 | "))]
        assert len(ratios) == 2 * 2 * 3, out
    assert os.path.isdir(tmp_path / "export_fp32" / "assets.extra")
    if with_onnx:
        # The graph timed is a trained model's: LayerNorms not left at exactly 1 and 0,
        # which the converter folds away, so each residual sum and LayerNorm is fused.
        import onnx

        model = onnx.load(str(tmp_path / "export_fp32" / "model.onnx"))
        fused = [n for n in model.graph.node if n.op_type == "SkipLayerNormalization"]
        assert len(fused) == 2 * peer_speed.QUICK["num_hidden_layers"]
    for side in set(given) - {"onnxruntime", "openvino"}:
        assert f"| {side} | " in out
    if "torch" in given:
        assert "within 1e-05" in out, out
