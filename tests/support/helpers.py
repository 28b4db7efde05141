"""Helpers the tests share: the repository's paths, script loading and subprocess runs,
a tiny BERT config, file and checkpoint writers, and the assertions of graph checks and
of the one-line error contract (error_line).

Tests import what they need from here (`from helpers import run_script`); the
numpy side of numerical checks lives in numpy_reference.py. conftest.py only
sets up the process (quiet TensorFlow on the CPU, the repository importable).
"""

import atexit
import importlib
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap

import preloaded_python
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTS = os.path.join(REPO, "tests")
# The tests' shared code (this module among it), and the scripts tests start as processes.
SUPPORT = os.path.join(TESTS, "support")
DATA = os.path.join(TESTS, "data")
GOLDEN = os.path.join(DATA, "golden")
VOCAB_UNCASED = os.path.join(DATA, "vocab_uncased.txt")

# The package that holds everything but the files at the root.
PACKAGE = "bert_lib"
PACKAGE_DIR = os.path.join(REPO, PACKAGE)


def root_modules():
    """The modules at the root of the checkout (the original's, this project's scripts),
    without setup.py."""
    return sorted(
        name[:-3]
        for name in os.listdir(REPO)
        if name.endswith(".py") and name != "setup.py" and os.path.isfile(os.path.join(REPO, name))
    )


def package_modules():
    """The package's modules, dotted (bert_lib.engine.estimator), packages' __init__ too
    (bert_lib.engine)."""
    names = []
    for directory, subdirs, files in os.walk(PACKAGE_DIR):
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        dotted = os.path.relpath(directory, REPO).replace(os.sep, ".")
        for name in sorted(files):
            if name == "__init__.py":
                names.append(dotted)
            elif name.endswith(".py"):
                names.append(f"{dotted}.{name[:-3]}")
    return sorted(names)


def module_path(name):
    """The file of a root module (modeling) or of a package module (bert_lib.engine)."""
    path = os.path.join(REPO, *name.split("."))
    if os.path.isdir(path):
        return os.path.join(path, "__init__.py")
    return path + ".py"


# The scripts a user runs (each defines its own flags when imported).
SCRIPTS = (
    "create_pretraining_data",
    "create_vocab",
    "run_pretraining",
    "run_classifier",
    "run_classifier_with_tfhub",
    "run_squad",
    "extract_features",
    "convert_checkpoint",
    "run_ner",
)

# The repository's scripts run_python forks from the preloaded Python: the user's
# scripts and the TF 1.x launcher.
FORKED_SCRIPTS = (*SCRIPTS, "run_tf1")
# The workers in tests/support that run_python forks from the preloaded Python.
FORKED_WORKERS = (
    "engine_worker.py",
    "fault_worker.py",
    "packed_pretraining_worker.py",
    "preemption_worker.py",
    "script_fault_worker.py",
    "speed_worker.py",
)

# The one time limit for every process a test starts. It is there to end a hang, not
# to measure speed, so it is generous for a loaded machine.
SUBPROCESS_TIMEOUT = 600

# The packages of the optional extra [onnx] (pip install 'bert-tensorflow[onnx]'), by
# import name: the ONNX converter and runtimes. A package installed without it runs its
# other tests; those that convert or serve ONNX files are skipped.
ONNX_EXTRA = ("tf2onnx", "onnx", "onnxruntime", "openvino")
ONNX_EXTRA_MISSING = [name for name in ONNX_EXTRA if importlib.util.find_spec(name) is None]
needs_onnx_extra = pytest.mark.skipif(
    bool(ONNX_EXTRA_MISSING),
    reason=f"the [onnx] extra is not installed (no {', '.join(ONNX_EXTRA_MISSING)})",
)


# tf_keras (Keras 2 for TensorFlow 2.16+) is not a requirement: where it is installed,
# tf.keras of TF 1.x code is it (docs/tf1.md). `make` installs it beside the environment,
# not in it (TF_KERAS_DIR), so that the suite runs TF 1.x code both ways: without it, and
# with it on PYTHONPATH for the runs of TF_KERAS_ENV.
HAS_TF_KERAS = importlib.util.find_spec("tf_keras") is not None
TF_KERAS_DIR = os.path.join(sys.prefix, "extras", "tf_keras")


def _tf_keras_env():
    """The environment a run needs for tf.keras to be tf_keras: {} where this Python
    imports it already, else PYTHONPATH to TF_KERAS_DIR where `make` installed it there;
    None where neither has it."""
    if HAS_TF_KERAS:
        return {}
    if not os.path.isdir(os.path.join(TF_KERAS_DIR, "tf_keras")):
        return None
    path = [TF_KERAS_DIR, *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(path)}


TF_KERAS_ENV = _tf_keras_env()
needs_tf_keras = pytest.mark.skipif(
    TF_KERAS_ENV is None,
    reason=f"tf_keras is neither installed nor in {TF_KERAS_DIR} (make installs it there)",
)


def load_script(name):
    """Imports one script (flags and all), as user code that imports it does."""
    return importlib.import_module(name)


# ---------------------------------------------------------------------------
# Processes


def subprocess_env(env=None):
    """This process's environment with TensorFlow quiet and on CPU, plus `env`."""
    merged = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="-1")
    merged.update(env or {})
    return merged


def flag_args(defaults, **overrides):
    """["--name=value", ...] from `defaults` with `overrides` applied; None leaves a flag out."""
    merged = {**defaults, **overrides}
    return [f"--{name}={value}" for name, value in merged.items() if value is not None]


def run_command(argv, env=None, cwd=REPO):
    """Runs argv to the end with text output captured; a hang fails after the one timeout."""
    return subprocess.run(
        argv,
        capture_output=True,
        text=True,
        env=subprocess_env(env),
        cwd=cwd,
        timeout=SUBPROCESS_TIMEOUT,
    )


def run_outside_repository(argv, cwd):
    """Runs argv to the end as run_command does, but with no PYTHONPATH or PYTHONHOME:
    from a `cwd` outside the repository, nothing of the repository is importable."""
    env = {k: v for k, v in subprocess_env().items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=SUBPROCESS_TIMEOUT
    )


def run_python(*argv, env=None, cwd=REPO):
    """Runs the Python that runs the tests on argv (a file and its arguments, or -c code).

    The repository's scripts of FORKED_SCRIPTS and the workers of
    FORKED_WORKERS are forked from this test process's preloaded Python
    (preloaded_python.py), which has imported TensorFlow once, unless
    PRELOADED_PYTHON=0 is in the environment; anything else starts afresh.
    """
    preloaded = _preloaded()
    if preloaded is not None and argv and _forkable(argv[0]):
        result = preloaded.run(list(argv), subprocess_env(env), cwd, SUBPROCESS_TIMEOUT)
        if result is not None:
            return result
    return run_command([sys.executable, *argv], env=env, cwd=cwd)


def _forkable(path):
    """Whether `path` is a script of FORKED_SCRIPTS or a worker of FORKED_WORKERS."""
    directory, name = os.path.split(os.path.abspath(path))
    if directory == REPO:
        return name.endswith(".py") and name[:-3] in FORKED_SCRIPTS
    return directory == SUPPORT and name in FORKED_WORKERS


def run_script(script, *args, env=None, cwd=REPO):
    """Runs one of the repository's scripts ("run_squad.py") as a user would."""
    return run_python(os.path.join(REPO, script), *args, env=env, cwd=cwd)


_PRELOADED = []


def _preloaded():
    """This process's preloaded Python (started on its first run), None if turned off."""
    if not _PRELOADED:
        preloaded = None
        if os.environ.get("PRELOADED_PYTHON", "1") != "0":
            scratch = tempfile.mkdtemp(prefix="preloaded_python_")
            # Registered first, so run after the preloaded Python is closed.
            atexit.register(shutil.rmtree, scratch, True)
            preloaded = preloaded_python.PreloadedPython(sys.executable, subprocess_env(), scratch)
        _PRELOADED.append(preloaded)
    return _PRELOADED[0]


def run_code(source, env=None, cwd=REPO):
    """Runs Python source (dedented) in a fresh interpreter with the repo and tests importable."""
    prelude = f"import sys\nsys.path[:0] = [{REPO!r}, {SUPPORT!r}]\n"
    return run_python("-c", prelude + textwrap.dedent(source), env=env, cwd=cwd)


def run_checks(source, ref_variables=False, replicas=1):
    """Runs graph checks (source) in a fresh interpreter and fails unless they all pass.

    Some set-ups are process-wide and cannot be undone inside pytest: ref variables
    (disable_v2_behavior) and the CPU split into `replicas` logical devices. The
    calling test's folder is importable, so that `source` can import its checks.
    """
    caller_dir = os.path.dirname(os.path.abspath(inspect.stack()[1].filename))
    setup = f"import sys\nsys.path.insert(0, {caller_dir!r})\nimport tensorflow as tf\n"
    if ref_variables:
        setup += "tf.compat.v1.disable_v2_behavior()\n"
    if replicas > 1:
        setup += f"import mirrored\nmirrored.split_cpu({replicas})\n"
    result = run_code(setup + textwrap.dedent(source) + "\nprint('ALL CHECKS PASSED')\n")
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.splitlines()[-1:] == ["ALL CHECKS PASSED"], result.stdout[-2000:]


def error_line(result):
    """The ERROR line of a run refused by the one-line error contract, after checking it.

    `result` has returncode and stderr (a subprocess.CompletedProcess): exit
    status 1, no traceback, and the last line of stderr "ERROR: <message>".
    """
    stderr = result.stderr
    assert result.returncode == 1, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("ERROR: "), stderr[-3000:]
    return lines[-1]


def start_python(*argv, env=None, cwd=REPO, **popen_kwargs):
    """Starts the test Python on argv in the background, for tests that kill or race it."""
    return subprocess.Popen(
        [sys.executable, *argv], env=subprocess_env(env), cwd=cwd, **popen_kwargs
    )


# ---------------------------------------------------------------------------
# A tiny BERT


def tiny_bert_config(vocab_size, **overrides):
    """A bert_config.json dict small enough to train in seconds; `overrides` replace keys."""
    config = {
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": 64,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
    }
    config.update(overrides)
    return config


def write_bert_config(path, vocab_size, **overrides):
    """Writes tiny_bert_config(vocab_size, **overrides) as JSON to `path`; returns it as str."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tiny_bert_config(vocab_size, **overrides), f)
    return str(path)


def write_text(path, text):
    """Writes `text` as UTF-8 to `path` (a CoNLL file, a CSV with quoted newlines); returns str."""
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return str(path)


def write_lines(path, lines):
    """Writes `lines` one a line (a vocabulary, an input file); returns the path as str."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return str(path)


def write_checkpoint(prefix, values, global_step=None):
    """Saves {checkpoint name: array} with a bare Saver, no project code involved.

    The names in the checkpoint are exactly the keys, whatever graph names
    would clash. Returns the checkpoint path (prefix, plus -global_step if given).
    """
    import numpy as np
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        var_list = {
            name: tf.compat.v1.Variable(np.asarray(value), name=f"v{index}")
            for index, (name, value) in enumerate(values.items())
        }
        saver = tf.compat.v1.train.Saver(var_list=var_list)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return saver.save(
                session, str(prefix), global_step=global_step, write_meta_graph=False
            )


def checkpoint_values(path):
    """{name: numpy value} of every variable in a checkpoint."""
    import tensorflow as tf

    reader = tf.train.load_checkpoint(path)
    return {name: reader.get_tensor(name) for name, _ in tf.train.list_variables(path)}


# ---------------------------------------------------------------------------
# Graph checks


def variable_named(name):
    """The global variable called `name` (tensor names give resource handles)."""
    import tensorflow as tf

    (var,) = [v for v in tf.compat.v1.global_variables() if v.op.name == name]
    return var


def assert_close(actual, expected, what):
    import numpy as np

    np.testing.assert_allclose(actual, expected, rtol=2e-5, atol=1e-6, err_msg=what)


def assert_nested_close(got, want, tolerance, where=""):
    """`got` has `want`'s structure (dict keys, list lengths) and values: floats within
    `tolerance`, everything else equal; `where` names the place that differs."""
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for key in want:
            assert_nested_close(got[key], want[key], tolerance, f"{where}.{key}")
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for index, (a, b) in enumerate(zip(got, want)):
            assert_nested_close(a, b, tolerance, f"{where}[{index}]")
    elif isinstance(want, float):
        assert got == pytest.approx(want, abs=tolerance), where
    else:
        assert got == want, where


def run_tf1_for_json(script, output_dir, golden, env=None):
    """Runs `script` through run_tf1.py with --output_dir (and `env`); (the results.json it
    wrote there, the golden JSON file `golden` of TF 1.15's run), for a test to compare."""
    result = run_script("run_tf1.py", script, f"--output_dir={output_dir}", env=env, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(os.path.join(output_dir, "results.json"), encoding="utf-8") as f:
        got = json.load(f)
    with open(golden, encoding="utf-8") as f:
        return got, json.load(f)
