"""`pip install .` gives the package `bert` that bert-tensorflow users imported.

A wheel is built from the checkout's root files and bert_lib/ and installed into a
new virtual environment that sees this environment's site-packages (for
TensorFlow) but not the repository: everything below runs there, from an
empty directory, so an import that only works from a clone fails here.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest
from helpers import (
    GOLDEN,
    REPO,
    TESTS,
    VOCAB_UNCASED,
    module_path,
    package_modules,
    root_modules,
    run_command,
    run_outside_repository,
    run_script,
)
from reference_tokenizer import full_tokenize, load_vocab

pytestmark = pytest.mark.slow

ROOT_MODULES = root_modules()
PACKAGE_MODULES = package_modules()


class Venv:
    """The new environment: its python, its directories, and a way to run code there."""

    def __init__(self, root, python, purelib, wheel, workdir):
        self.root, self.python, self.purelib = root, python, purelib
        self.wheel, self.workdir = wheel, workdir

    def run(self, *argv):
        return run_outside_repository([self.python, *argv], cwd=self.workdir)

    def run_code(self, source, *args):
        result = self.run("-c", source, *args)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout


def _check(result, what):
    assert result.returncode == 0, f"{what}:\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    root = tmp_path_factory.mktemp("package")
    # The checkout's root files and the package, copied so that the build's own
    # files (build/, *.egg-info) are not left in the repository.
    source = root / "source"
    source.mkdir()
    for name in os.listdir(REPO):
        path = os.path.join(REPO, name)
        if os.path.isfile(path) and not name.startswith("."):
            shutil.copy2(path, source / name)
    shutil.copytree(
        os.path.join(REPO, "bert_lib"),
        source / "bert_lib",
        ignore=shutil.ignore_patterns("__pycache__"),
    )

    build = [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-w", str(root)]
    if importlib.util.find_spec("setuptools") is not None:
        build += ["--no-build-isolation", "--no-index"]
    _check(run_command(build, cwd=str(root)), "pip wheel")
    (wheel,) = root.glob("bert_tensorflow-*.whl")

    venv_dir = root / "venv"
    _check(
        run_command([sys.executable, "-m", "venv", "--without-pip", str(venv_dir)], cwd=str(root)),
        "venv",
    )
    python = str(venv_dir / "bin" / "python")
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # TensorFlow and the rest from this environment, without installing them again:
    # its site-packages directories (not this process's sys.path, which holds the
    # repository) are appended to the new environment's.
    ours = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    with open(os.path.join(purelib, "_test_environment.pth"), "w") as f:
        f.write("".join(path + "\n" for path in ours))
    workdir = root / "work"
    workdir.mkdir()
    env = Venv(str(venv_dir), python, purelib, str(wheel), str(workdir))
    # pip (this environment's, seen through the .pth) installs into the new one; the
    # dependencies must already be satisfied there, nothing is downloaded.
    _check(env.run("-m", "pip", "install", "--no-index", "--no-cache-dir", str(wheel)), "install")
    return env


def test_the_wheel_holds_every_module_and_nothing_else(venv):
    with zipfile.ZipFile(venv.wheel) as wheel:
        names = wheel.namelist()
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        requires = [
            line.split(":", 1)[1].strip()
            for line in wheel.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:") and "extra ==" not in line
        ]
    package_files = [os.path.relpath(module_path(m), REPO) for m in PACKAGE_MODULES]
    assert sorted(n for n in names if ".dist-info/" not in n) == sorted(
        [f"bert/{m}.py" for m in ROOT_MODULES] + package_files
    )
    with open(os.path.join(REPO, "requirements.txt")) as f:
        assert requires == [line.strip() for line in f if line.strip()]


def test_every_module_imports_from_the_installed_package_in_one_process(venv):
    """All of them in one process: the scripts' shared flag names do not clash."""
    out = venv.run_code(
        """
import importlib, json, sys
import bert
files = {}
for name in sys.argv[1:]:
    files[name] = importlib.import_module(
        name if name.startswith("bert_lib") else "bert." + name
    ).__file__
try:
    import modeling
    flat = modeling.__file__
except ModuleNotFoundError:
    flat = None
print(json.dumps({"files": files, "path": list(bert.__path__), "flat": flat,
                  "sys_path": sys.path}))
""",
        *ROOT_MODULES,
        *PACKAGE_MODULES,
    )
    found = json.loads(out.splitlines()[-1])
    assert found["flat"] is None  # the repository is not on sys.path
    assert REPO not in found["sys_path"] and TESTS not in found["sys_path"]
    package_dir = os.path.join(venv.purelib, "bert")
    assert found["path"][0] == package_dir
    expected = {m: os.path.join(package_dir, m + ".py") for m in ROOT_MODULES}
    expected.update(
        {
            m: os.path.join(venv.purelib, os.path.relpath(module_path(m), REPO))
            for m in PACKAGE_MODULES
        }
    )
    assert found["files"] == expected


def test_full_tokenizer_of_the_package_gives_the_golden_ids(venv):
    golden = os.path.join(GOLDEN, "tokenization", "expected.jsonl")
    out = venv.run_code(
        """
import json, sys
from bert import tokenization
vocab_file, golden = sys.argv[1:]
tokenizers = {case: tokenization.FullTokenizer(vocab_file, do_lower_case=case)
              for case in (True, False)}
ids = []
with open(golden, encoding="utf-8") as f:
    for line in f:
        record = json.loads(line)
        tokenizer = tokenizers[record["do_lower_case"]]
        ids.append(tokenizer.convert_tokens_to_ids(tokenizer.tokenize(record["text"])))
print(json.dumps(ids))
""",
        VOCAB_UNCASED,
        golden,
    )
    with open(golden, encoding="utf-8") as f:
        expected = [json.loads(line)["ids"] for line in f]
    assert len(expected) == 30
    assert json.loads(out.splitlines()[-1]) == expected


def _without_header(text, script_path):
    """--helpshort output with the script's own path (its flag section's title) blanked."""
    return text.replace(script_path + ":", "<script>:")


def test_python_m_runs_the_script_with_the_same_flags(venv):
    installed = venv.run("-m", "bert.run_classifier", "--helpshort")
    cloned = run_script("run_classifier.py", "--helpshort")
    # absl ends --helpshort with exit status 1; the clone's run does the same.
    assert installed.returncode == cloned.returncode, installed.stderr[-2000:]
    installed_path = os.path.join(venv.purelib, "bert", "run_classifier.py")
    assert installed_path + ":" in installed.stdout
    flag_names = re.findall(r"^\s+--(?:\[no\])?(\w+):", installed.stdout, re.M)
    assert {"task_name", "max_seq_length", "do_train", "bert_config_file"} <= set(flag_names)
    assert _without_header(installed.stdout, installed_path) == _without_header(
        cloned.stdout, os.path.join(REPO, "run_classifier.py")
    )


def test_a_mistake_modeling_finds_is_one_error_line_from_the_installed_script(venv, tmp_path):
    """modeling raises its own error class (the file works copied alone); the installed
    scripts recognise bert.modeling's as the clone's recognise modeling's."""
    config = tmp_path / "bert_config.json"
    config.write_text('{"vocab_size": 30,\n "hidden', encoding="utf-8")
    result = venv.run(
        "-m",
        "bert.run_classifier",
        "--task_name=mrpc",
        "--do_train=true",
        f"--data_dir={tmp_path}",
        f"--vocab_file={tmp_path / 'vocab.txt'}",
        f"--bert_config_file={config}",
        f"--output_dir={tmp_path / 'out'}",
    )
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith(f"ERROR: {config}:2: not a valid JSON BERT config"), last


@pytest.mark.parametrize(
    "order", [("run_classifier", "run_squad"), ("run_squad", "run_classifier")]
)
def test_two_scripts_import_in_one_process_whatever_the_order(venv, order):
    """Shared flags are defined once: max_seq_length keeps its one default (128) in any
    order; run_squad's 384 is set only when it runs as a program."""
    out = venv.run_code(
        f"""
from absl import flags
from bert import {order[0]}, {order[1]}
print(flags.FLAGS["max_seq_length"].default, "task_name" in flags.FLAGS,
      "doc_stride" in flags.FLAGS)
"""
    )
    assert out.split() == ["128", "True", "True"]


# The page whose "Install as a package" section shows the worked example.
PACKAGE_PAGE = os.path.join(REPO, "docs", "python.md")


def _package_example():
    """The code block of docs/python.md's "Install as a package" that runs the worked
    example."""
    with open(PACKAGE_PAGE, encoding="utf-8") as f:
        text = f.read()
    section = text.split("\n## Install as a package\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    (block,) = [b for b in blocks if "convert_examples_to_features" in b]
    return block


def test_the_documented_example_runs_against_the_installed_package(venv):
    code = _package_example()
    vocab_dir = os.path.join(venv.workdir, "uncased_L-12_H-768_A-12")
    os.makedirs(vocab_dir, exist_ok=True)
    shutil.copy(VOCAB_UNCASED, os.path.join(vocab_dir, "vocab.txt"))
    dump = (
        "\nimport json\n"
        "print(json.dumps([[f.input_ids, f.input_mask, f.segment_ids, f.label_id]"
        " for f in features]))\n"
    )
    out = venv.run_code(code + dump).splitlines()

    vocab = load_vocab(VOCAB_UNCASED)

    def ids(text):
        return [vocab[t] for t in full_tokenize(text, vocab)]

    # The printed tokens are those of the page's comment and of the reference tokenizer.
    comment = re.search(r"^# (\[.*\])$", code, re.M).group(1)
    text = "A charming little hotel, unbeatable views!"
    assert out[0] == comment == repr(full_tokenize(text, vocab))

    cls, sep = vocab["[CLS]"], vocab["[SEP]"]
    single = [cls, *ids("The hotel was charming."), sep]
    a, b = ids("The room was dirty"), ids("and the staff unfriendly.")
    pair = [cls, *a, sep, *b, sep]
    assert len(pair) == 15  # as the page says
    expected = [
        [
            single + [0] * (16 - len(single)),
            [1] * len(single) + [0] * (16 - len(single)),
            [0] * 16,
            1,
        ],
        [pair + [0], [1] * 15 + [0], [0] * (len(a) + 2) + [1] * (len(b) + 1) + [0], 0],
    ]
    assert json.loads(out[-1]) == expected
    assert out[1:5] == [str(expected[1][0]), str(expected[1][2]), str(expected[1][1]), "0"]


def test_python_m_bert_run_tf1_runs_tf1_code_with_its_own_modeling(venv, tmp_path):
    """The installed launcher: the user's modeling.py wins, TensorFlow's own imports
    (from another environment's site-packages here) still get TensorFlow 2."""
    (tmp_path / "modeling.py").write_text("WHOSE = 'user'\n")
    # A package installed beside bert in the environment: the script must still find it
    # (the launcher takes a clone's directory off sys.path, never site-packages).
    with open(os.path.join(venv.purelib, "installed_beside_bert.py"), "w") as f:
        f.write("WHERE = 'site-packages'\n")
    script = tmp_path / "script.py"
    script.write_text(
        "import tensorflow as tf\nimport modeling\nimport installed_beside_bert\n"
        "print(modeling.WHOSE, tf.contrib.tpu.TPUEstimator.__module__,\n"
        "      tf.layers.dense.__module__, installed_beside_bert.WHERE)\n"
    )
    result = venv.run("-m", "bert.run_tf1", str(script))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[-1] == (
        "user bert_lib.tf1.estimator.estimators bert_lib.tf1.layers.tf_layers site-packages"
    )
