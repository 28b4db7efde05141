"""TF 1.x research code through run_tf1.py against TensorFlow 1.15's own numbers.

The scripts of tests/data/tf1_scripts (RNN and Keras layer cases, a
BERT + BiLSTM + CRF tagger with a metrics module on TF internals, an
ELECTRA-style TPUEstimator fine-tuner, a tf.keras.layers classifier) run
unchanged through run_tf1.py; tests/data/golden/tf1_15 holds what TF 1.15.5
computed from them (make_golden.py there; tests/data/README.md says how):

- the layer cases: variable names and shapes, outputs and gradients;
- from a checkpoint TF 1.15 trained: run_tf1.py evaluates and predicts as
  TF 1.15 did (a checkpoint moves from TF 1.15 to run_tf1.py);
- from a checkpoint run_tf1.py trained: TF 1.15 evaluated and predicted
  from it, and run_tf1.py gives the same (it moves the other way);
- trained here now, a script's checkpoint holds exactly the variables,
  with the shapes, of the one TF 1.15 wrote.
"""

import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
from helpers import DATA, GOLDEN, REPO, TF_KERAS_ENV, needs_tf_keras, run_script

SCRIPTS = os.path.join(DATA, "tf1_scripts")
TF1_GOLDEN = os.path.join(GOLDEN, "tf1_15")
with open(os.path.join(TF1_GOLDEN, "runs.json"), encoding="utf-8") as _f:
    RUNS = json.load(_f)

# Predictions and evaluation values: TF 1.15's to this (float32 printing keeps ~7 digits).
TOLERANCE = 1e-5


def run_tf1(*args, env=None, cwd=REPO):
    return run_script("run_tf1.py", *args, env=env, cwd=cwd)


def _command(name, output_dir, work, *mode_flags):
    run = RUNS[name]
    script = os.path.join(SCRIPTS, run["script"])
    values = {"script_dir": os.path.dirname(script), "work": str(work)}
    flags = [flag.format(**values) for flag in run["flags"]]
    return [script, f"--{run['output_flag']}={output_dir}", *flags, *mode_flags]


def _copy_checkpoint(source, target):
    shutil.copytree(source, target)
    return str(target)


def _tokens(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split()


def _assert_same_outputs(got_dir, want_dir, names):
    """Text the same, numbers within TOLERANCE, file by file."""
    for name in names:
        got, want = _tokens(os.path.join(got_dir, name)), _tokens(os.path.join(want_dir, name))
        assert len(got) == len(want), name
        for a, b in zip(got, want):
            if re.fullmatch(r"-?\d+\.\d*(e-?\d+)?", b):
                assert float(a) == pytest.approx(float(b), abs=TOLERANCE), (name, a, b)
            else:
                assert a == b, (name, a, b)


@pytest.mark.slow
def test_rnn_and_keras_layer_cases_have_tf115s_names_outputs_and_gradients(tmp_path):
    out = tmp_path / "cases.npz"
    result = run_tf1(
        os.path.join(SCRIPTS, "layer_cases", "run_layer_cases.py"), f"--output_file={out}"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    want = np.load(os.path.join(TF1_GOLDEN, "layer_cases.npz"))
    got = np.load(out)
    assert sorted(got.files) == sorted(want.files)
    for key in want.files:
        if key.endswith("/names"):
            assert list(got[key]) == list(want[key]), key
        else:
            np.testing.assert_allclose(got[key], want[key], atol=TOLERANCE, rtol=1e-5, err_msg=key)


# A checkpoint run_tf1.py starts from, and what TF 1.15 computed from that same checkpoint.
CHECKPOINTS = {
    "tf115_trained": ("tf115_ckpt", "tf115_on_tf115"),  # from TF 1.15 to run_tf1.py
    "trained_here": ("ours_ckpt", "tf115_on_ours"),  # from run_tf1.py to TF 1.15
}


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint", sorted(CHECKPOINTS))
@pytest.mark.parametrize("name", sorted(RUNS))
def test_evaluates_and_predicts_from_a_checkpoint_as_tf115_did_from_it(name, checkpoint, tmp_path):
    checkpoint_dir, tf115_outputs = CHECKPOINTS[checkpoint]
    model_dir = _copy_checkpoint(
        os.path.join(TF1_GOLDEN, name, checkpoint_dir), tmp_path / "model"
    )
    result = run_tf1(*_command(name, model_dir, tmp_path, "--do_eval", "--do_predict"))
    assert result.returncode == 0, result.stderr[-3000:]
    _assert_same_outputs(
        model_dir, os.path.join(TF1_GOLDEN, name, tf115_outputs), RUNS[name]["outputs"]
    )


def _variables(checkpoint_dir):
    return sorted((n, tuple(s)) for n, s in tf.train.list_variables(checkpoint_dir))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RUNS))
def test_training_writes_the_variables_tf115_writes(name, tmp_path):
    model_dir = str(tmp_path / "model")
    result = run_tf1(*_command(name, model_dir, tmp_path, "--do_train", "--do_eval"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert _variables(model_dir) == _variables(os.path.join(TF1_GOLDEN, name, "tf115_ckpt"))
    # The engine's input-position files go with their checkpoints, also those the
    # script deleted itself (the ELECTRA-style script keeps only its best one).
    names = os.listdir(model_dir)
    for input_file in [n for n in names if n.endswith(".input")]:
        assert input_file[: -len(".input")] + ".index" in names, names


@pytest.mark.slow
@needs_tf_keras
def test_keras_functional_api_with_tf_keras_gives_tf115s_names_losses_and_checkpoint(tmp_path):
    """tf.keras's functional API in a TF 1.x script (Input, Model(inputs, outputs), compile,
    fit, evaluate, predict, save_weights / load_weights), which tf.keras is when the tf_keras
    package is installed: TF 1.15's variable and checkpoint names, losses, evaluation and
    predictions (tests/data/golden/tf1_15/keras_functional). Without tf_keras, tf.keras is
    the layers built here and tf.keras.Input is refused, naming it."""
    script = os.path.join(SCRIPTS, "keras_functional", "train_functional.py")
    result = run_tf1(script, str(tmp_path), env=TF_KERAS_ENV)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(tmp_path / "results.json", encoding="utf-8") as f:
        got = json.load(f)
    with open(os.path.join(TF1_GOLDEN, "keras_functional", "results.json"), encoding="utf-8") as f:
        want = json.load(f)
    for key in ("names", "globals", "checkpoint"):
        assert got[key] == want[key], key
    for key in ("losses", "evaluated", "predicted", "reloaded"):
        np.testing.assert_allclose(got[key], want[key], atol=TOLERANCE)
