"""Builds the wheel: the root's modules as the package `bert`, and the package bert_lib.

In a clone, the original's modules and this project's scripts sit at the
root and import each other flat (`import modeling`), as the original's did;
everything else is the package bert_lib, whose modules import each other
relatively and the root's modules flat. Installed (`pip install .`), the
root's modules are the package `bert`, as in the bert-tensorflow wheels
(`from bert import modeling`, `python -m bert.run_classifier`), beside
bert_lib. So the wheel's copy of every module has its flat imports of the
root's modules rewritten, and nothing else: `import modeling` becomes
`from bert import modeling`, `from modeling import BertConfig` becomes
`from bert.modeling import BertConfig`. The project's metadata is in
pyproject.toml.

An editable install (`pip install -e .`) links the checkout's files
unchanged, so their flat imports find the root's modules only with the
checkout on sys.path: use it from the checkout, or `pip install .` for a
package.
"""

import ast
import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "bert"  # what the root's modules are installed as
LIBRARY = "bert_lib"


def root_modules(directory=HERE):
    """The modules at the root, which the package `bert` is made of: every .py but this one."""
    return sorted(
        name[:-3]
        for name in os.listdir(directory)
        if name.endswith(".py")
        and name != "setup.py"
        and os.path.isfile(os.path.join(directory, name))
    )


def rewrite_sibling_imports(source, siblings, package=PACKAGE):
    """`source` with its imports of `siblings` made imports from `package`.

    `import x` -> `from package import x`, `import x as y` -> `from package
    import x as y`, `from x import a` -> `from package.x import a`, at any
    indentation. An `import` statement naming a sibling among other modules
    is refused (ValueError): one module per import line, as the code is
    written.
    """
    lines = source.splitlines(keepends=True)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
            if not any(name.split(".")[0] in siblings for name in names):
                continue
            if len(names) != 1 or "." in names[0]:
                raise ValueError(f"line {node.lineno}: import one sibling module per line")
            (alias,) = node.names
            new = f"from {package} import {alias.name}"
            if alias.asname:
                new += f" as {alias.asname}"
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in siblings:
            new = f"from {package}.{node.module} import"
        else:
            continue
        index = node.lineno - 1
        line = lines[index]
        start = node.col_offset
        if isinstance(node, ast.Import):
            end = node.end_col_offset if node.end_lineno == node.lineno else len(line)
        else:
            end = line.index(" import", start) + len(" import")
        lines[index] = line[:start] + new + line[end:]
    return "".join(lines)


class BuildPackage(build_py):
    """Copies the modules into the build as usual, then rewrites their imports of the
    root's modules."""

    def build_module(self, module, module_file, package):
        outfile, copied = super().build_module(module, module_file, package)
        with open(outfile, encoding="utf-8") as f:
            source = f.read()
        rewritten = rewrite_sibling_imports(source, set(root_modules()))
        if rewritten != source:
            with open(outfile, "w", encoding="utf-8") as f:
                f.write(rewritten)
        return outfile, copied


if __name__ == "__main__":
    setup(
        package_dir={PACKAGE: "."},
        py_modules=[f"{PACKAGE}.{name}" for name in root_modules()],
        packages=find_packages(HERE, include=[LIBRARY, f"{LIBRARY}.*"]),
        cmdclass={"build_py": BuildPackage},
    )
