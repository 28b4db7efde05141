"""The flat modules stay importable both ways, and the package lists all of them.

Each top-level module imports its siblings inside

    if __package__:
        from . import modeling          # installed: the package `bert`
    else:
        import modeling                 # a clone: flat names

so these checks read the sources (no import): a flat sibling import outside
that block, a block whose two branches bind different names, a top-level
module missing from pyproject.toml or a script whose flags block a later
script's would break `pip install .` users without breaking any flat test.
"""

import ast
import os
import re

import pytest
from conftest import REPO

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

MODULES = sorted(
    name[:-3]
    for name in os.listdir(REPO)
    if name.endswith(".py") and name != "__init__.py" and os.path.isfile(os.path.join(REPO, name))
)


def _tree(module, directory=REPO):
    with open(os.path.join(directory, module + ".py"), encoding="utf-8") as f:
        return ast.parse(f.read(), filename=module + ".py")


def _pyproject():
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def _requirements(name):
    with open(os.path.join(REPO, name), encoding="utf-8") as f:
        lines = [line.split("#")[0].strip() for line in f]
    return [line for line in lines if line and not line.startswith("-r")]


def _flat_sibling_import(node, siblings):
    if isinstance(node, ast.Import):
        return any(alias.name.split(".")[0] in siblings for alias in node.names)
    return (
        isinstance(node, ast.ImportFrom)
        and node.level == 0
        and (node.module or "").split(".")[0] in siblings
    )


def _bound(nodes):
    """(module, name, asname) triples a list of import statements binds; None for others."""
    bound = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            bound.update((None, a.name, a.asname) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            bound.update((node.module, a.name, a.asname) for a in node.names)
        else:
            return None
    return bound


def _package_blocks(tree):
    """The `if __package__:` statements of a module."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "__package__"
    ]


def sibling_import_problems(module, directory=REPO, siblings=MODULES):
    """One line per flat sibling import outside the pattern, or block whose branches differ."""
    tree = _tree(module, directory)
    problems = []
    allowed = set()
    for block in _package_blocks(tree):
        relative = block.body
        flat = block.orelse
        where = f"{module}.py:{block.lineno}"
        if not all(isinstance(n, ast.ImportFrom) and n.level == 1 for n in relative):
            problems.append(f"{where}: the `if __package__:` branch holds more than `from .`")
            continue
        if not flat or not all(_flat_sibling_import(n, siblings) for n in flat):
            problems.append(f"{where}: the `else:` branch holds more than sibling imports")
            continue
        if _bound(relative) != _bound(flat):
            problems.append(f"{where}: the two branches import different names")
        allowed.update(id(n) for n in flat)
    for node in ast.walk(tree):
        if _flat_sibling_import(node, siblings) and id(node) not in allowed:
            problems.append(f"{module}.py:{node.lineno}: flat sibling import outside the block")
    return problems


def test_modules_are_found():
    assert {"modeling", "tokenization", "run_classifier", "runner"} <= set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_sibling_imports_work_flat_and_in_the_package(module):
    assert sibling_import_problems(module) == []


def test_the_check_catches_a_flat_import_and_unequal_branches(tmp_path):
    (tmp_path / "bad_flat.py").write_text(
        "if __package__:\n    from . import modeling\nelse:\n    import modeling\n"
        "import tokenization\n"
    )
    (tmp_path / "bad_branches.py").write_text(
        "if __package__:\n    from . import modeling\n"
        "else:\n    import modeling\n    import tokenization\n"
    )
    (tmp_path / "good.py").write_text(
        "import os\n\n\ndef f():\n    if __package__:\n        from . import features as f\n"
        "        from .runner import x\n"
        "    else:\n        import features as f\n        from runner import x\n"
    )
    siblings = {"modeling", "tokenization", "features", "runner"}

    def problems(module):
        return sibling_import_problems(module, str(tmp_path), siblings)

    assert problems("bad_flat") == ["bad_flat.py:5: flat sibling import outside the block"]
    assert problems("bad_branches") == [
        "bad_branches.py:1: the two branches import different names"
    ]
    assert problems("good") == []


def test_pyproject_lists_every_top_level_module_in_the_package():
    setuptools = _pyproject()["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"bert": "."}
    assert sorted(setuptools["py-modules"]) == [f"bert.{name}" for name in MODULES]
    assert "packages" not in setuptools  # only the listed modules: no tests/, benchmarks/


def test_package_dependencies_are_the_requirements_files():
    project = _pyproject()["project"]
    assert project["name"] == "bert-tensorflow"
    assert project["dependencies"] == _requirements("requirements.txt")
    dev = [
        re.sub(r"\s+", " ", d.replace("'", '"')) for d in project["optional-dependencies"]["dev"]
    ]
    assert dev == _requirements("requirements-dev.txt")


def _module_level_flag_calls(tree):
    """(line, "flags.DEFINE_string", ...) of module-level `flags.<name>(...)` calls."""
    calls = []
    for node in tree.body:
        call = getattr(node, "value", None)  # an expression or the value assigned
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            if isinstance(call.func.value, ast.Name) and call.func.value.id == "flags":
                calls.append((node.lineno, ast.unparse(call.func)))
    return calls


def _is_script(tree):
    return any(
        isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body
    )


SCRIPTS_WITH_FLAGS = [
    m
    for m in MODULES
    if _is_script(_tree(m))
    and any(name.startswith("flags.DEFINE") for _, name in _module_level_flag_calls(_tree(m)))
]


def test_the_scripts_with_flags_are_found():
    assert {"run_classifier", "run_squad", "create_pretraining_data"} <= set(SCRIPTS_WITH_FLAGS)


@pytest.mark.parametrize("module", SCRIPTS_WITH_FLAGS)
def test_script_lets_later_scripts_redefine_its_flags(module):
    """Without the call after its last flag, importing another script after it fails."""
    tree = _tree(module)
    calls = _module_level_flag_calls(tree)
    last_flag_line = max(line for line, _ in calls)
    marks = [
        node.lineno
        for node in tree.body
        if isinstance(node, ast.Expr)
        and ast.unparse(node) == "script_flags.allow_redefinition(__name__)"
    ]
    assert marks and max(marks) > last_flag_line, module
