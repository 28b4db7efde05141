"""The root's modules are imported flat, and the wheel's build turns that into the package `bert`.

These checks read the sources and setup.py's rewrite (no wheel is built:
test_package_install.py does that, slowly): no module keeps a two-branch
`if __package__:` block, every flat import of a root module becomes an
import from `bert` in the wheel, the package `bert` holds every root module,
and each shared flag is defined in one place.
"""

import ast
import importlib.util
import os
import re

import pytest
from helpers import REPO, module_path, package_modules, root_modules

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT_MODULES = root_modules()
MODULES = ROOT_MODULES + package_modules()


def _setup():
    """setup.py as a module (its setup() call runs only as a program)."""
    spec = importlib.util.spec_from_file_location("bert_setup", os.path.join(REPO, "setup.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _source(module):
    with open(module_path(module), encoding="utf-8") as f:
        return f.read()


def _requirements(name):
    with open(os.path.join(REPO, name), encoding="utf-8") as f:
        lines = [line.split("#")[0].strip() for line in f]
    return [line for line in lines if line and not line.startswith("-r")]


def _flat_sibling_imports(tree, siblings):
    """Line numbers of `import x` / `from x import y` statements naming a sibling module."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            if any(alias.name.split(".")[0] in siblings for alias in node.names):
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            if (node.module or "").split(".")[0] in siblings:
                lines.append(node.lineno)
    return lines


def test_modules_are_found():
    assert {"modeling", "tokenization", "run_classifier", "run_tf1"} <= set(ROOT_MODULES)
    assert {"bert_lib.engine.estimator", "bert_lib.script_flags"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_no_module_has_a_two_branch_import_block(module):
    tree = ast.parse(_source(module))
    blocks = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "__package__" in ast.unparse(node.test)
    ]
    assert blocks == []


def test_the_rewrite_turns_each_kind_of_sibling_import_into_an_import_from_bert():
    source = (
        "import os\n"
        "import modeling\n"
        "import tokenization as tok  # a comment stays\n"
        "from engine import RunConfig\n"
        "from engine_config import (\n"
        "    EstimatorSpec,\n"
        "    ModeKeys,\n"
        ")\n"
        "import numpy as np\n"
        "\n"
        "\n"
        "def f():\n"
        "    import dynamic_padding\n"
        "    return modeling.x, os.sep\n"
    )
    expected = (
        "import os\n"
        "from bert import modeling\n"
        "from bert import tokenization as tok  # a comment stays\n"
        "from bert.engine import RunConfig\n"
        "from bert.engine_config import (\n"
        "    EstimatorSpec,\n"
        "    ModeKeys,\n"
        ")\n"
        "import numpy as np\n"
        "\n"
        "\n"
        "def f():\n"
        "    from bert import dynamic_padding\n"
        "    return modeling.x, os.sep\n"
    )
    siblings = {"modeling", "tokenization", "engine", "engine_config", "dynamic_padding"}
    assert _setup().rewrite_sibling_imports(source, siblings) == expected


def test_the_rewrite_refuses_two_siblings_on_one_import_line():
    with pytest.raises(ValueError, match="line 2"):
        _setup().rewrite_sibling_imports("import os\nimport modeling, engine\n", {"modeling"})


@pytest.mark.parametrize("module", MODULES)
def test_the_wheel_copy_of_each_module_imports_no_sibling_flat(module):
    siblings = set(ROOT_MODULES)
    rewritten = _setup().rewrite_sibling_imports(_source(module), siblings)
    tree = ast.parse(rewritten)
    assert _flat_sibling_imports(tree, siblings) == []
    # Only import lines changed: the rest of the file is as written.
    original = _source(module).splitlines()
    changed = [
        number
        for number, (a, b) in enumerate(zip(original, rewritten.splitlines()), start=1)
        if a != b
    ]
    assert set(changed) <= set(_flat_sibling_imports(ast.parse(_source(module)), siblings))


def test_the_package_bert_is_every_root_module_but_setup():
    assert _setup().root_modules(REPO) == ROOT_MODULES


def test_package_dependencies_are_the_requirements_files():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["name"] == "bert-tensorflow"
    assert project["dependencies"] == _requirements("requirements.txt")
    dev = [
        re.sub(r"\s+", " ", d.replace("'", '"')) for d in project["optional-dependencies"]["dev"]
    ]
    assert dev == _requirements("requirements-dev.txt")
    # The tests run the ONNX export and runtimes: the [onnx] extra is among the dev tools.
    assert set(project["optional-dependencies"]["onnx"]) <= set(dev)


def _defined_flag_names(module):
    """Names given to flags.DEFINE_*("name", ...) calls anywhere in a module."""
    names = []
    for node in ast.walk(ast.parse(_source(module))):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func).startswith("flags.DEFINE")
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.append(node.args[0].value)
    return names


def test_every_flag_name_is_defined_in_one_module_only():
    owners = {}
    for module in MODULES:
        for name in _defined_flag_names(module):
            owners.setdefault(name, []).append(module)
    assert {name: where for name, where in owners.items() if len(where) > 1} == {}


def test_no_script_defines_a_flag_another_script_also_takes():
    from bert_lib import script_flags

    for module in MODULES:
        if module == "bert_lib.script_flags":
            continue
        assert set(_defined_flag_names(module)) & set(script_flags.SHARED_FLAGS) == set(), module
