"""Protobuf modules generated before protoc 3.19, loaded as today's generated modules load.

TF 1.x libraries of 2017-2020 shipped `*_pb2.py` modules written by the
protoc of their years (Sonnet 1.36's `sonnet/protos/module_pb2.py`, of 2018).
Such a module builds each descriptor itself, `_descriptor.Descriptor(...)`,
`_descriptor.FieldDescriptor(...)`, at its top level, which today's protobuf
(its upb implementation) refuses: "TypeError: Descriptors cannot be created
directly". Its first statement of substance, `DESCRIPTOR =
_descriptor.FileDescriptor(..., serialized_pb=...)`, holds the whole file's
descriptor serialized: that is all today's generated modules hold, and the
rest they build from it (google.protobuf.internal.builder).

install_finder() puts OldProtobufFinder first on sys.meta_path. For a module
whose name ends in `_pb2`, it finds the module where Python would, and when
its source is of the old form (a FileDescriptor built with `serialized_pb=`,
and other descriptors built directly at the top level) it loads it with
OldProtobufLoader: the module's imports run (the `_pb2` modules of the files
it depends on), the serialized descriptor, read from the source without
running it, is added to the default descriptor pool, and the messages, enums,
extensions and services are built from it as today's protoc output builds
them. The module has the old module's public names: the message classes (their
nested messages and enums), each enum's wrapper and values, the extensions and
their `*_FIELD_NUMBER`, `DESCRIPTOR` and the `_MESSAGE`-style descriptors. Every
other module loads as it did. The pure-Python implementation
(PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python) still runs the old form, but
no longer reads its map fields as maps (`message.tags["a"] = 1` is refused
as item assignment on a repeated field), so old-form modules are loaded this
way under every implementation.
"""

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import sys

# What an old-form module builds itself, beside its FileDescriptor.
_DESCRIPTOR_CLASSES = frozenset(
    [
        "Descriptor",
        "FieldDescriptor",
        "EnumDescriptor",
        "EnumValueDescriptor",
        "OneofDescriptor",
        "ServiceDescriptor",
        "MethodDescriptor",
    ]
)

# The runtime modules an old-form module imports for its own building, which today's
# protobuf may no longer have: not run. Its other imports (the _pb2 modules of the files
# it depends on) are.
_RUNTIME_MODULES = ("google.protobuf", "google.protobuf.internal")


class OldProtobufError(ImportError):
    """An old-form module whose serialized descriptor cannot be read."""


def _called_descriptor_class(node):
    """The `_descriptor.<Class>` a call node calls, or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _file_descriptor_call(tree):
    """The `DESCRIPTOR = _descriptor.FileDescriptor(...)` call at the top of `tree`, or None."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["DESCRIPTOR"]
            and _called_descriptor_class(node.value) == "FileDescriptor"
        ):
            return node.value
    return None


def is_old_form(tree):
    """Whether a module's syntax tree builds its FileDescriptor from `serialized_pb=` and
    other descriptors directly at its top level (protoc's output before 3.19, which today's
    protobuf refuses), not under `if _descriptor._USE_C_DESCRIPTORS == False:`."""
    call = _file_descriptor_call(tree)
    if call is None or not any(k.arg == "serialized_pb" for k in call.keywords):
        return False
    for node in tree.body:
        value = getattr(node, "value", None)
        if isinstance(node, (ast.Assign, ast.Expr)) and (
            _called_descriptor_class(value) in _DESCRIPTOR_CLASSES
        ):
            return True
    return False


def _literal_bytes(node, filename):
    """The bytes an old module's `serialized_pb=` argument spells: `_b('...')` (a str of
    latin-1 code points, the form of protoc 3.0-3.11), `b'...'` (protoc 3.12-3.18), or
    their `+` concatenation."""
    if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
        return node.value
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.encode("latin-1")
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        return _literal_bytes(node.args[0], filename)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal_bytes(node.left, filename) + _literal_bytes(node.right, filename)
    raise OldProtobufError(
        f"{filename}:{getattr(node, 'lineno', '?')}: a protobuf module generated before "
        "protoc 3.19 whose serialized_pb= is not a literal cannot be loaded"
    )


def serialized_file_descriptor(tree, filename):
    """The serialized FileDescriptorProto an old-form module's syntax tree holds."""
    call = _file_descriptor_call(tree)
    for keyword in call.keywords:
        if keyword.arg == "serialized_pb":
            return _literal_bytes(keyword.value, filename)
    raise OldProtobufError(f"{filename}: no serialized_pb= in its FileDescriptor")


def _dependency_imports(tree):
    """The module's top-level imports but for its runtime's and `__future__`'s."""
    kept = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            if node.module == "__future__":
                continue
            if node.level == 0 and node.module in _RUNTIME_MODULES:
                names = [a for a in node.names if a.name.endswith("_pb2")]
                if names:
                    kept.append(ast.copy_location(ast.ImportFrom(node.module, names, 0), node))
                continue
            kept.append(node)
        elif isinstance(node, ast.Import):
            kept.append(node)
    return kept


def _uses_services(tree):
    """Whether the module built service classes (it imports service_reflection)."""
    return any(
        isinstance(node, ast.ImportFrom)
        and any(a.name == "service_reflection" for a in node.names)
        for node in tree.body
    )


class OldProtobufLoader(importlib.machinery.SourceFileLoader):
    """Loads an old-form `_pb2` module from its serialized descriptor, as today's protoc
    output does. `tree` is the module's syntax tree, which the finder parsed already."""

    def __init__(self, fullname, path, tree):
        super().__init__(fullname, path)
        self.tree = tree

    def exec_module(self, module):
        from google.protobuf import descriptor_pool
        from google.protobuf.internal import builder

        filename = self.get_filename(module.__name__)
        tree = self.tree
        data = serialized_file_descriptor(tree, filename)
        namespace = module.__dict__
        imports = ast.fix_missing_locations(
            ast.Module(body=_dependency_imports(tree), type_ignores=[])
        )
        exec(compile(imports, filename, "exec"), namespace)
        file_descriptor = descriptor_pool.Default().AddSerializedFile(data)
        namespace["DESCRIPTOR"] = file_descriptor
        builder.BuildMessageAndEnumDescriptors(file_descriptor, namespace)
        builder.BuildTopDescriptorsAndMessages(file_descriptor, module.__name__, namespace)
        if _uses_services(tree):
            builder.BuildServices(file_descriptor, module.__name__, namespace)


def _old_form_source(spec):
    """The syntax tree of the module `spec` finds if it is an old-form _pb2 source, or None."""
    loader = spec.loader
    if not isinstance(loader, importlib.machinery.SourceFileLoader) or not spec.origin:
        return None
    try:
        data = loader.get_data(spec.origin)
    except OSError:
        return None
    if b"FileDescriptor(" not in data or b"serialized_pb" not in data:
        return None
    try:
        tree = ast.parse(data, spec.origin)
    except (SyntaxError, ValueError):
        return None
    return tree if is_old_form(tree) else None


class OldProtobufFinder(importlib.abc.MetaPathFinder):
    """First on sys.meta_path: gives an old-form `*_pb2` module OldProtobufLoader."""

    def find_spec(self, fullname, path, target=None):
        if not fullname.endswith("_pb2"):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        tree = _old_form_source(spec)
        if tree is None:
            return None
        return importlib.util.spec_from_file_location(
            fullname,
            spec.origin,
            loader=OldProtobufLoader(fullname, spec.origin, tree),
            submodule_search_locations=spec.submodule_search_locations,
        )


def install_finder():
    """Puts an OldProtobufFinder first on sys.meta_path (once)."""
    if not any(isinstance(f, OldProtobufFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, OldProtobufFinder())
