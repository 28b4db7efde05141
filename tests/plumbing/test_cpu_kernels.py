"""oneDNN's CPU kernels by default: set before TensorFlow loads, the user's setting wins.

TensorFlow reads TF_ENABLE_ONEDNN_OPTS once, at its import, so what is
pinned here is order and precedence: every entry point imports cpu_kernels
before anything else, the variable it leaves for TensorFlow is the user's
when there is one and "1" on x86-64 otherwise, a TensorFlow imported
earlier is left alone, and a script logs which kernels it runs.
"""

import ast
import os
import platform

import pytest
from helpers import REPO, module_path, root_modules, run_code

VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
ON_X86 = platform.machine().lower() in ("x86_64", "amd64")


def entry_points():
    """Every script of the checkout (a `__main__` block) and export/predictor.py, which
    programs import first."""
    names = ["bert_lib.export.predictor"]
    for name in root_modules():
        with open(module_path(name), encoding="utf-8") as f:
            if 'if __name__ == "__main__":' in f.read():
                names.append(name)
    return names


def first_import(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if isinstance(node, ast.Import):
            return node.names[0].name
        if isinstance(node, ast.ImportFrom):
            return "." * node.level + f"{node.module}.{node.names[0].name}"
    return None


@pytest.mark.parametrize("name", entry_points())
def test_entry_point_imports_cpu_kernels_before_anything_else(name):
    assert first_import(module_path(name)).endswith("plumbing.cpu_kernels"), name


def test_every_script_is_an_entry_point_checked():
    names = entry_points()
    for script in ["run_classifier", "run_pretraining", "run_squad", "run_ner"]:
        assert script in names


def environment_after_import(env_value, tensorflow_first=False):
    """TF_ENABLE_ONEDNN_OPTS as a fresh interpreter holds it after importing cpu_kernels."""
    prelude = f"import os\nos.environ.pop({VARIABLE!r}, None)\n"
    if env_value is not None:
        prelude += f"os.environ[{VARIABLE!r}] = {env_value!r}\n"
    if tensorflow_first:
        prelude += "import tensorflow\n"
    result = run_code(
        prelude
        + f"from bert_lib.plumbing import cpu_kernels\nprint(repr(os.environ.get({VARIABLE!r})))\n"
        "print(cpu_kernels.describe())\n"
    )
    assert result.returncode == 0, result.stderr[-2000:]
    value_line, description = result.stdout.splitlines()[-2:]
    return ast.literal_eval(value_line), description


def test_unset_variable_becomes_one_on_x86():
    value, description = environment_after_import(None)
    if ON_X86:
        assert value == "1"
        assert "oneDNN" in description and "default" in description
    else:
        assert value is None
        assert "TensorFlow's own choice" in description


@pytest.mark.parametrize("user_value, kind", [("0", "Eigen"), ("1", "oneDNN"), ("false", "Eigen")])
def test_users_value_wins(user_value, kind):
    value, description = environment_after_import(user_value)
    assert value == user_value
    assert description.startswith(f"CPU kernels: {kind} ")
    assert "from the environment" in description


@pytest.mark.slow
def test_tensorflow_imported_first_is_left_alone():
    value, description = environment_after_import(None, tensorflow_first=True)
    assert value is None
    assert "imported before" in description


@pytest.mark.slow
@pytest.mark.parametrize("user_value, expected", [(None, "oneDNN"), ("0", "Eigen")])
def test_script_logs_which_kernels_run(tmp_path, user_value, expected):
    # The flag checks in main refuse this run (no do_* flag) after the line is logged.
    code = (
        f"import os, runpy, sys\nos.environ.pop({VARIABLE!r}, None)\n"
        + (f"os.environ[{VARIABLE!r}] = {user_value!r}\n" if user_value is not None else "")
        + f"sys.argv = [{os.path.join(REPO, 'run_classifier.py')!r}, '--task_name=mrpc',"
        f" '--data_dir={tmp_path}', '--vocab_file=v', '--bert_config_file=c',"
        f" '--output_dir={tmp_path / 'out'}']\n"
        f"runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    result = run_code(code)
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if "CPU kernels:" in line]
    assert len(lines) == 1, result.stderr[-2000:]
    if ON_X86 or user_value is not None:
        assert f"CPU kernels: {expected} " in lines[0]
