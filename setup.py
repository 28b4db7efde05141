"""Builds the package `bert` from the flat modules at the top of the checkout.

In a checkout the modules import each other flat (`import modeling`), as the
original scripts did. Installed (`pip install .`), they are the package
`bert`, as in the bert-tensorflow wheels: `from bert import modeling`,
`python -m bert.run_classifier`. So the wheel's copy of each module has its
sibling imports rewritten, and nothing else: `import modeling` becomes
`from bert import modeling`, `from runner import RunConfig` becomes
`from bert.runner import RunConfig`. The project's metadata is in
pyproject.toml.

An editable install (`pip install -e .`) links the checkout's files unchanged,
so their flat imports find their siblings only with the checkout on
sys.path: use it from the checkout, or `pip install .` for a package.
"""

import ast
import os

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "bert"


def package_modules(directory=HERE):
    """The names of the modules the package is made of: every top-level .py but this one."""
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
    """Copies the modules into the build as usual, then rewrites their sibling imports."""

    def build_module(self, module, module_file, package):
        outfile, copied = super().build_module(module, module_file, package)
        with open(outfile, encoding="utf-8") as f:
            source = f.read()
        rewritten = rewrite_sibling_imports(source, set(package_modules()))
        if rewritten != source:
            with open(outfile, "w", encoding="utf-8") as f:
                f.write(rewritten)
        return outfile, copied


if __name__ == "__main__":
    setup(
        package_dir={PACKAGE: "."},
        py_modules=[f"{PACKAGE}.{name}" for name in package_modules()],
        cmdclass={"build_py": BuildPackage},
    )
