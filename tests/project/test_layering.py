"""The house's plan, read from its imports: rooms that point only down, an engine without BERT.

From the sources (every import at any depth, inside functions too, and the
package __init__ files an import runs), with a self-test for each check
that it catches what it is meant to:
- the engine (bert_lib/engine), the TF 1.x layer (bert_lib/tf1) and the
  plumbing reach none of BERT's modules (modeling, optimization,
  tokenization), not even through the package's other modules: the engine
  knows nothing of the model it runs, as tf.estimator did not, and in a
  process run_tf1.py starts those names stay free for the user's own files;
- bert_lib's parts import only downwards (LAYERS): plumbing nothing of the
  package, task_data and engine only plumbing, bert_runs (BERT on the
  engine, the steps of each task's run) the engine, task_data and plumbing,
  export the engine, task_data, bert_runs (its
  converters check what they write with the model's checks) and
  plumbing, tf1 the engine, task_data and plumbing, script_flags
  anything; nothing in the package imports a script;
  the TF 1.x layer, which stands for user code, reaches the engine through
  its front door only (bert_lib/engine/__init__.py);
- no module of the project removes entries from sys.modules, and only the
  TF 1.x layer replaces builtins.__import__.
"""

import ast
import os

import pytest
from helpers import PACKAGE, REPO

BERT_MODULES = ("modeling", "optimization", "tokenization")

# What each part of the package may import of the others (script_flags: all).
LAYERS = {
    "plumbing": set(),
    "task_data": {"plumbing"},
    "engine": {"plumbing"},
    "bert_runs": {"engine", "task_data", "plumbing"},
    "export": {"engine", "task_data", "bert_runs", "plumbing"},
    "tf1": {"engine", "task_data", "plumbing"},
    "script_flags": {"plumbing", "task_data", "engine", "bert_runs", "export", "tf1"},
}

# The parts whose imports, followed through the package, must reach no BERT module.
WITHOUT_BERT = ("engine", "tf1", "plumbing")

# Inside the TF 1.x layer: what each subpackage may import of the others. The modules
# at bert_lib/tf1's top (its __init__, internals) assemble the API from all.
TF1_LAYERS = {
    "machinery": set(),
    # tf.keras's model_to_estimator builds an Estimator: layers stand on the estimator.
    "layers": {"machinery", "estimator"},
    "rnn": {"layers", "machinery"},
    "estimator": {"machinery"},
    "contrib": {"machinery", "layers", "rnn", "estimator"},
}


# ---------------------------------------------------------------------------
# The import graph of a checkout


def _modules(root, package):
    """{module name: file} of a checkout: the root's modules and the package's (packages
    by their dotted name, for their __init__.py)."""
    found = {
        name[:-3]: os.path.join(root, name)
        for name in os.listdir(root)
        if name.endswith(".py") and name != "setup.py"
    }
    for directory, subdirs, files in os.walk(os.path.join(root, package)):
        subdirs[:] = [d for d in subdirs if d != "__pycache__"]
        dotted = os.path.relpath(directory, root).replace(os.sep, ".")
        for name in files:
            if name == "__init__.py":
                found[dotted] = os.path.join(directory, name)
            elif name.endswith(".py"):
                found[f"{dotted}.{name[:-3]}"] = os.path.join(directory, name)
    return found


def _tree(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), filename=path)


def _imported_names(module, path, is_package):
    """The dotted names an import statement of the module may load, at any depth."""
    names = []
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                if not is_package:
                    base = base[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            names.append(source)
            # `from package import module` loads the module too.
            names += [f"{source}.{alias.name}" for alias in node.names]
    return names


def import_graph(root, package):
    """{module: set of the project's modules importing it runs}; a submodule's import runs
    its packages' __init__ too (importing bert_lib.engine.config runs bert_lib.engine)."""
    modules = _modules(root, package)
    graph = {}
    for module, path in modules.items():
        is_package = path.endswith("__init__.py")
        edges = set()
        for name in [module] + _imported_names(module, path, is_package):
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                if prefix in modules and prefix != module:
                    edges.add(prefix)
        graph[module] = edges
    return graph


def reachable(graph, start):
    """The modules importing `start` loads, directly or through others."""
    seen, stack = set(), [start]
    while stack:
        for name in graph[stack.pop()]:
            if name not in seen:
                seen.add(name)
                stack.append(name)
    return seen


def _part(module, package):
    """The part of the package a module belongs to (engine, plumbing, script_flags, ...),
    or None for a module at the root."""
    parts = module.split(".")
    if parts[0] != package or len(parts) == 1:
        return None
    return parts[1]


def bert_reached(root, package, parts=WITHOUT_BERT):
    """["module -> BERT module"] for each module of `parts` whose imports reach one."""
    graph = import_graph(root, package)
    found = []
    for module in sorted(graph):
        if _part(module, package) in parts:
            for bert in sorted(reachable(graph, module) & set(BERT_MODULES)):
                found.append(f"{module} -> {bert}")
    return found


def upward_imports(root, package, layers=LAYERS):
    """["module -> module"] for each import of the package against `layers` (and of a root
    module other than BERT's)."""
    graph = import_graph(root, package)
    found = []
    for module in sorted(graph):
        part = _part(module, package)
        if part is None:
            continue
        for name in sorted(graph[module]):
            other = _part(name, package)
            if other == part or name == package:
                continue
            if other is None and name in BERT_MODULES and part not in WITHOUT_BERT:
                continue
            if other is None or other not in layers.get(part, set()):
                found.append(f"{module} -> {name}")
    return found


def back_doors(root, package, part="tf1", into="engine"):
    """["module -> module"] for each import by the `part` modules of a module of `into`
    other than its package's __init__ (the front door)."""
    graph = import_graph(root, package)
    front = f"{package}.{into}"
    return [
        f"{module} -> {name}"
        for module in sorted(graph)
        if _part(module, package) == part
        for name in sorted(graph[module])
        if _part(name, package) == into and name != front
    ]


def inner_upward_imports(root, package, part="tf1", layers=TF1_LAYERS):
    """["module -> module"] for each import between the subpackages of `part` against
    `layers` (a subpackage not in `layers` is reported as "module -> ?")."""
    graph = import_graph(root, package)
    prefix = f"{package}.{part}."

    def subpackage(module):
        rest = module[len(prefix) :].split(".") if module.startswith(prefix) else []
        is_package = os.path.isdir(os.path.join(root, *module.split(".")))
        return rest[0] if len(rest) > 1 or (rest and is_package) else None

    found = []
    for module in sorted(graph):
        inner = subpackage(module)
        if inner is None:
            continue
        if inner not in layers:
            found.append(f"{module} -> ?")
            continue
        for name in sorted(graph[module]):
            other = subpackage(name)
            if other is not None and other != inner and other not in layers[inner]:
                found.append(f"{module} -> {name}")
    return found


def private_imports(root, package, part="tf1"):
    """["module:line name"] wherever a module of `part` takes a private name (one
    underscore) of another module of the project: `from .x import _name`, or `x._name`
    of a module `x` it imported."""
    modules = _modules(root, package)
    found = []
    for module, path in sorted(modules.items()):
        if _part(module, package) != part:
            continue
        tree = _tree(path)
        is_package = path.endswith("__init__.py")
        aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _imported_names(module, path, is_package)
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{module}:{node.lineno} {alias.name}")
                    if any(n.endswith(f".{alias.name}") and n in modules for n in source):
                        aliases.add(alias.asname or alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules and alias.asname:
                        aliases.add(alias.asname)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{module}:{node.lineno} {node.value.id}.{node.attr}")
    return found


# ---------------------------------------------------------------------------
# The checks on this checkout


def test_the_graph_follows_relative_imports_and_package_inits():
    graph = import_graph(REPO, PACKAGE)
    assert "bert_lib.engine.config" in graph["bert_lib.engine.graphs"]
    assert "bert_lib.plumbing.errors" in graph["bert_lib.engine.config"]
    assert "bert_lib.engine" in graph["bert_lib.tf1.estimator.estimators"]
    assert "modeling" in graph["bert_lib.bert_runs.model_fns"]
    assert "bert_lib.engine.estimator" in reachable(graph, "bert_lib.engine.config")


def test_the_engine_the_tf1_layer_and_plumbing_reach_no_bert_module():
    assert bert_reached(REPO, PACKAGE) == []


def test_the_package_imports_only_downwards():
    assert upward_imports(REPO, PACKAGE) == []


def test_the_tf1_layer_uses_the_engines_front_door():
    assert back_doors(REPO, PACKAGE) == []


def test_the_tf1_layers_subpackages_import_only_downwards():
    assert inner_upward_imports(REPO, PACKAGE) == []


def test_no_tf1_module_takes_another_modules_private_names():
    assert private_imports(REPO, PACKAGE) == []


def test_every_part_of_the_package_has_a_place_in_the_layers():
    parts = {_part(m, PACKAGE) for m in _modules(REPO, PACKAGE)} - {None}
    assert parts == set(LAYERS)


def _write(root, files):
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)


@pytest.fixture
def toy_house(tmp_path):
    """A checkout in miniature whose engine reaches modeling only through a function-level
    import in plumbing, and whose plumbing imports the engine."""
    _write(
        str(tmp_path),
        {
            "modeling.py": "X = 1\n",
            "run_x.py": "from pkg import engine\n",
            "pkg/__init__.py": "",
            "pkg/engine/__init__.py": "from .core import Estimator\n",
            "pkg/engine/core.py": "from ..plumbing import shapes\n\nEstimator = 1\n",
            "pkg/plumbing/__init__.py": "",
            "pkg/plumbing/shapes.py": (
                "def check():\n    import modeling\n    from .. import engine\n"
            ),
            "pkg/plumbing/clean.py": "import os\n",
        },
    )
    return str(tmp_path)


def test_the_checks_catch_a_bert_import_deep_down_and_an_upward_import(toy_house):
    assert bert_reached(toy_house, "pkg") == [
        "pkg.engine -> modeling",
        "pkg.engine.core -> modeling",
        "pkg.plumbing.shapes -> modeling",
    ]
    assert upward_imports(toy_house, "pkg") == [
        "pkg.plumbing.shapes -> modeling",
        "pkg.plumbing.shapes -> pkg.engine",
    ]


def test_the_front_door_check_catches_a_back_door(toy_house):
    _write(
        toy_house,
        {
            "pkg/tf1/__init__.py": "from .. import engine\n",
            "pkg/tf1/estimator.py": "from ..engine.core import Estimator\n",
        },
    )
    assert back_doors(toy_house, "pkg") == ["pkg.tf1.estimator -> pkg.engine.core"]


def test_the_inner_checks_catch_an_upward_import_an_unplaced_part_and_private_names(tmp_path):
    _write(
        str(tmp_path),
        {
            "pkg/__init__.py": "",
            "pkg/tf1/__init__.py": "from . import layers\n",
            "pkg/tf1/machinery/__init__.py": "",
            "pkg/tf1/machinery/hook.py": "from ..layers import dense\n",
            "pkg/tf1/layers/__init__.py": "",
            "pkg/tf1/layers/dense.py": (
                "from ..machinery import hook\nfrom ..machinery.hook import _secret\n\n"
                "X = hook._state\nY = hook.__name__\n"
            ),
            "pkg/tf1/odd/__init__.py": "",
        },
    )
    assert inner_upward_imports(str(tmp_path), "pkg") == [
        "pkg.tf1.machinery.hook -> pkg.tf1.layers",
        "pkg.tf1.machinery.hook -> pkg.tf1.layers.dense",
        "pkg.tf1.odd -> ?",
    ]
    assert private_imports(str(tmp_path), "pkg") == [
        "pkg.tf1.layers.dense:2 _secret",
        "pkg.tf1.layers.dense:4 hook._state",
    ]


# ---------------------------------------------------------------------------
# sys.modules and builtins.__import__


def _project_files(root, package):
    """The checkout's modules and its benchmark scripts, as (name, file)."""
    files = _modules(root, package)
    for directory in ("benchmarks", os.path.join("benchmarks", "compat_check_lib")):
        if os.path.isdir(os.path.join(root, directory)):
            for name in os.listdir(os.path.join(root, directory)):
                if name.endswith(".py"):
                    files[os.path.join(directory, name)] = os.path.join(root, directory, name)
    return sorted(files.items())


def import_tricks(root, package, allowed_hook=("tf1",)):
    """["module:line what"] wherever a module removes an entry from sys.modules or assigns
    builtins.__import__ outside the parts of `allowed_hook`."""
    found = []
    for module, path in _project_files(root, package):
        for node in ast.walk(_tree(path)):
            line = f"{module}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if ast.unparse(node.func.value) == "sys.modules" and node.func.attr in (
                    "pop",
                    "popitem",
                    "clear",
                    "__delitem__",
                ):
                    found.append(f"{line} sys.modules.{node.func.attr}")
            elif isinstance(node, ast.Delete):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and (
                        ast.unparse(target.value) == "sys.modules"
                    ):
                        found.append(f"{line} del sys.modules[...]")
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                hooked = any(ast.unparse(t) == "builtins.__import__" for t in targets)
                if hooked and _part(module, package) not in allowed_hook:
                    found.append(f"{line} builtins.__import__ =")
    return sorted(
        found, key=lambda entry: (entry.split(":")[0], int(entry.split(":")[1].split()[0]))
    )


def test_no_module_removes_entries_from_sys_modules_and_only_tf1_hooks_import():
    assert import_tricks(REPO, PACKAGE) == []


def test_the_trick_check_catches_each_way(tmp_path):
    _write(
        str(tmp_path),
        {
            "tool.py": (
                "import builtins\nimport sys\n\n\ndef f(name):\n"
                "    sys.modules.pop(name)\n    del sys.modules[name]\n"
                "    builtins.__import__ = None\n"
            ),
            "pkg/__init__.py": "",
            "pkg/tf1/__init__.py": "import builtins\nbuiltins.__import__ = print\n",
            "pkg/plumbing/__init__.py": "",
            "pkg/plumbing/ok.py": "import sys\nsys.modules.get('x')\n",
        },
    )
    assert import_tricks(str(tmp_path), "pkg") == [
        "tool:6 sys.modules.pop",
        "tool:7 del sys.modules[...]",
        "tool:8 builtins.__import__ =",
    ]
