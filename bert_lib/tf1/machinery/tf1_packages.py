"""Installed packages written for TF 1.x: which they are, and where their code lives.

An installed package gets TensorFlow 2 itself from `import tensorflow`
(user_code.py), which is right for a library of today and wrong for one
written for TF 1.x (a BERT sentence-encoding server installed with pip
calls tf.ConfigProto). Such a package gets the TF 1.x API when it is named
(run_tf1.py --tf1_packages=name,..., or tf1.install(tf1_packages=...)), by
its import name or its distribution's name, or, with no naming, when its
distribution's metadata requires TensorFlow below 2 (Requires-Dist:
`tensorflow<2`, `tensorflow>=1.10,<2.0`, `tensorflow==1.15.*`,
`tensorflow-gpu~=1.14`, ...; under an extra too).
"""

import importlib.metadata
import importlib.util
import os
import re

from ...plumbing import errors

# The distributions TensorFlow 1.x came as.
_TENSORFLOW_NAMES = frozenset(["tensorflow", "tensorflow-gpu", "tensorflow-cpu"])

_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*\(?([^;()]*)\)?")
_SPECIFIER = re.compile(r"\s*(===|==|~=|!=|<=|>=|<|>)\s*([0-9][0-9a-zA-Z.*+!-]*)\s*")


def _normalized(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def _release(version):
    """The leading numbers of a version ("1.15.*" -> (1, 15)); stops at the first non-number."""
    numbers = []
    for part in version.split("."):
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers)


def requires_tensorflow_1(requirement):
    """Whether a requirement string (as in Requires-Dist) allows TensorFlow 1.x only."""
    match = _REQUIREMENT.match(requirement)
    if not match or _normalized(match.group(1)) not in _TENSORFLOW_NAMES:
        return False
    for specifier in filter(None, (s.strip() for s in match.group(3).split(","))):
        found = _SPECIFIER.fullmatch(specifier)
        if not found:
            continue
        operator, version = found.group(1), _release(found.group(2))
        if not version:
            continue
        if operator == "<" and version <= (2,) + (0,) * (len(version) - 1):
            return True
        if operator == "<=" and version[0] < 2:
            return True
        if operator in ("==", "===", "~=") and version[0] == 1:
            return True
    return False


def _code_paths(distribution):
    """The directories holding a distribution's Python files, and its top-level modules.

    Directories, not their top-level package: a namespace package such as
    `google/` holds other distributions' code beside this one's.
    """
    paths = set()
    for file in distribution.files or ():
        parts = file.parts
        top = parts[0]
        if top in ("..", os.curdir) or top.endswith((".dist-info", ".egg-info", ".data")):
            continue
        if not parts[-1].endswith(".py"):
            continue
        located = str(distribution.locate_file(file))
        paths.add(located if len(parts) == 1 else os.path.dirname(located))
    if not paths:  # no RECORD: its top_level.txt names the packages
        for name in (distribution.read_text("top_level.txt") or "").split():
            paths.update(_import_paths(name) or ())
    return sorted(paths)


def _import_paths(name):
    """Where the package or module importable as `name` lives, or None if there is none."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return list(spec.submodule_search_locations)
    return [spec.origin] if spec.origin and os.path.isfile(spec.origin) else None


def named_package_paths(names):
    """The code paths of the packages `names` name (import names or distribution names);
    a name that is neither is a UsageError naming --tf1_packages."""
    paths = []
    for name in names:
        found = _import_paths(name)
        if found is None:
            try:
                found = _code_paths(importlib.metadata.distribution(name))
            except importlib.metadata.PackageNotFoundError:
                found = None
        if not found:
            raise errors.UsageError(
                f"--tf1_packages: {name} is neither an installed package nor a distribution"
            )
        paths.extend(found)
    return paths


def tf1_distribution_paths():
    """The code paths of every installed distribution whose requirements hold TensorFlow
    below 2, as {distribution name: paths}."""
    found = {}
    for distribution in importlib.metadata.distributions():
        try:
            requirements = distribution.requires or ()
            if any(requires_tensorflow_1(r) for r in requirements):
                found[distribution.metadata["Name"]] = _code_paths(distribution)
        except Exception:  # a distribution with broken metadata is not one of them
            continue
    return found
