"""What Python 3.10 and today's protobuf took from TF 1.x libraries of 2017-2020, put back
by run_tf1.py: `collections.Mapping` and the other ABC aliases (collections_aliases.py),
and `_pb2` modules generated before protoc 3.19 (old_protobuf.py).

The scripts are tests/data/tf1_scripts/launch's collections_cases.py and
old_protobuf_cases.py, whose `oldpkg/protos/*_pb2.py` are protoc 3.6.1's output (of
2018) of the test's own basic.proto and shapes.proto; what TF 1.15's Python 3.7 and
protobuf 3.20 printed for them is in tests/data/golden/tf1_15/launch.json
(make_launch_golden.py).
"""

import ast
import binascii
import json
import os
import re

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from helpers import DATA, GOLDEN, run_code, run_script

from bert_lib.tf1 import collections_aliases, old_protobuf

LAUNCH = os.path.join(DATA, "tf1_scripts", "launch")
PROTOS = os.path.join(LAUNCH, "oldpkg", "protos")

with open(os.path.join(GOLDEN, "tf1_15", "launch.json"), encoding="utf-8") as _f:
    TF115 = json.load(_f)

REFUSED = "Descriptors cannot be created directly"


def printed(result):
    """The JSON a script printed last, after checking the run ended well."""
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_golden(name):
    """run_tf1.py with the command line TF 1.15 was given for golden run `name`."""
    return run_script("run_tf1.py", *TF115["runs"][name], cwd=LAUNCH)


# ---------------------------------------------------------------------------
# collections' ABC aliases


@pytest.mark.slow
def test_collections_aliases_serve_tf1_code_as_python_3_7_did():
    """Every alias is the collections.abc class; a MutableMapping subclass, a nest
    flattener on Mapping / Sequence, isinstance and issubclass give Python 3.7's
    answers."""
    assert printed(run_golden("collections_cases")) == TF115["outputs"]["collections_cases"]


def test_the_aliases_are_the_names_python_3_7_gave():
    assert (
        sorted(collections_aliases.REMOVED_IN_PYTHON_3_10)
        == (TF115["outputs"]["collections_cases"]["abc_names"])
    )


def test_python_itself_lacks_the_aliases_outside_run_tf1():
    """Without run_tf1.py (a fresh interpreter), this Python has no collections.Mapping."""
    result = run_code("import collections\nprint(hasattr(collections, 'Mapping'))")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["False"]


# ---------------------------------------------------------------------------
# protobuf modules generated before protoc 3.19


@pytest.mark.slow
def test_old_generated_modules_give_tf115s_names_messages_and_bytes():
    """Through run_tf1.py, protoc 3.6.1's modules have the names TF 1.15's protobuf gave
    them (message classes, enum wrappers and values, DESCRIPTOR, the descriptors) and
    build, serialize and parse the same messages to the same bytes: defaults, proto2
    presence, a nested enum and message, a map, a oneof, a message of another file."""
    assert printed(run_golden("old_protobuf_cases")) == TF115["outputs"]["old_protobuf_cases"]


def test_the_modules_are_of_the_form_todays_protobuf_refuses():
    """Imported plainly, today's protobuf refuses them; the pure-Python implementation runs
    them but no longer reads their maps as maps."""
    refused = run_code("import oldpkg.protos.shapes_pb2", cwd=LAUNCH)
    assert refused.returncode == 1 and REFUSED in refused.stderr
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    source = "import runpy\nrunpy.run_path('old_protobuf_cases.py', run_name='__main__')"
    pure = run_code(source, env=env, cwd=LAUNCH)
    assert pure.returncode == 1
    assert "does not support item assignment" in pure.stderr


@pytest.mark.slow
def test_the_pure_python_implementation_loads_them_as_tf115_did_with_the_finder():
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    source = """
        from bert_lib.tf1 import old_protobuf
        old_protobuf.install_finder()
        import runpy
        runpy.run_path("old_protobuf_cases.py", run_name="__main__")
    """
    got = printed(run_code(source, env=env, cwd=LAUNCH))
    assert got == TF115["outputs"]["old_protobuf_cases"]


def _field(message, name, number, kind, label="LABEL_OPTIONAL", type_name=None, **options):
    field = message.field.add(name=name, number=number)
    field.type = descriptor_pb2.FieldDescriptorProto.Type.Value(kind)
    field.label = descriptor_pb2.FieldDescriptorProto.Label.Value(label)
    if type_name:
        field.type_name = type_name
    for key, value in options.items():
        setattr(field, key, value)
    return field


def file_descriptor_protos():
    """basic.proto and shapes.proto as FileDescriptorProtos, written from the .proto files
    the way protoc describes them (fields, then nested types in order, then enums)."""
    basic = descriptor_pb2.FileDescriptorProto(name="oldpkg/protos/basic.proto", package="oldpkg")
    point = basic.message_type.add(name="Point")
    _field(point, "x", 1, "TYPE_INT32")
    _field(point, "y", 2, "TYPE_INT32", default_value="7")
    _field(point, "color", 3, "TYPE_ENUM", type_name=".oldpkg.Color", default_value="GREEN")
    _field(point, "labels", 4, "TYPE_STRING", "LABEL_REPEATED")
    color = basic.enum_type.add(name="Color")
    for number, name in enumerate(["RED", "GREEN", "BLUE"]):
        color.value.add(name=name, number=number)

    shapes = descriptor_pb2.FileDescriptorProto(
        name="oldpkg/protos/shapes.proto",
        package="oldpkg",
        dependency=["oldpkg/protos/basic.proto"],
        syntax="proto3",
    )
    shape = shapes.message_type.add(name="Shape")
    _field(shape, "name", 1, "TYPE_STRING")
    _field(shape, "points", 2, "TYPE_MESSAGE", "LABEL_REPEATED", ".oldpkg.Point")
    _field(shape, "tags", 3, "TYPE_MESSAGE", "LABEL_REPEATED", ".oldpkg.Shape.TagsEntry")
    _field(shape, "radius", 4, "TYPE_DOUBLE", oneof_index=0)
    _field(shape, "box", 5, "TYPE_MESSAGE", type_name=".oldpkg.Shape.Box", oneof_index=0)
    _field(shape, "style", 6, "TYPE_ENUM", type_name=".oldpkg.Shape.Style")
    box = shape.nested_type.add(name="Box")
    _field(box, "w", 1, "TYPE_FLOAT")
    _field(box, "h", 2, "TYPE_FLOAT")
    entry = shape.nested_type.add(name="TagsEntry")
    _field(entry, "key", 1, "TYPE_STRING")
    _field(entry, "value", 2, "TYPE_INT64")
    entry.options.map_entry = True
    style = shape.enum_type.add(name="Style")
    style.value.add(name="SOLID", number=0)
    style.value.add(name="DASHED", number=1)
    shape.oneof_decl.add(name="kind")
    return basic, shapes


def test_golden_descriptors_and_bytes_are_those_of_the_proto_files():
    """The descriptors protoc 3.6.1 serialized into the modules are the .proto files' (as
    FileDescriptorProtos built here), and messages of a pool built from those give the
    golden's bytes: the golden is checked against a computation of its own."""
    golden = TF115["outputs"]["old_protobuf_cases"]
    protos = file_descriptor_protos()
    got = [binascii.hexlify(p.SerializeToString()).decode("ascii") for p in protos]
    assert [got[0], got[1]] == golden["file_descriptors"]
    pool = descriptor_pool.DescriptorPool()
    for proto in protos:
        pool.Add(proto)
    point_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("oldpkg.Point"))
    shape_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("oldpkg.Shape"))
    point = point_class(x=3, labels=["a", "bc"])
    shape = shape_class(name="square", style=1, radius=2.5)
    shape.points.add(x=1, y=2, color=2)
    shape.points.extend([point, point_class()])
    shape.tags["b"] = -5
    shape.tags["a"] = 1 << 40
    circle = shape_class()
    circle.CopyFrom(shape)
    shape.box.w, shape.box.h = 1.5, -0.25

    def hexed(message):
        return binascii.hexlify(message.SerializeToString(deterministic=True)).decode("ascii")

    assert {
        "point": hexed(point),
        "point_default": hexed(point_class()),
        "point_y0": hexed(point_class(y=0)),
        "shape_box": hexed(shape),
        "shape_radius": hexed(circle),
        "shape_empty": hexed(shape_class()),
    } == golden["serialized"]


def _tree(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), path)


def test_only_the_old_form_is_taken_over():
    """protoc 3.6.1's modules are of the old form; today's generated modules (protobuf's
    own) and other modules are left to Python's import."""
    for name in ("basic_pb2.py", "shapes_pb2.py"):
        assert old_protobuf.is_old_form(_tree(os.path.join(PROTOS, name)))
    from google.protobuf import timestamp_pb2

    assert not old_protobuf.is_old_form(_tree(timestamp_pb2.__file__))
    finder = old_protobuf.OldProtobufFinder()
    assert finder.find_spec("google.protobuf.timestamp_pb2", None) is None
    assert finder.find_spec("json", None) is None
    spec = finder.find_spec("oldpkg.protos.basic_pb2", [PROTOS])
    assert isinstance(spec.loader, old_protobuf.OldProtobufLoader)


def test_an_old_module_without_a_literal_descriptor_names_its_file_and_line(tmp_path):
    path = tmp_path / "computed_pb2.py"
    path.write_text(
        "from google.protobuf import descriptor as _descriptor\n"
        "DESCRIPTOR = _descriptor.FileDescriptor(\n"
        "  name='c.proto', package='c',\n"
        "  serialized_pb=make())\n"
        "_M = _descriptor.Descriptor(name='M')\n"
    )
    finder = old_protobuf.OldProtobufFinder()
    spec = finder.find_spec("computed_pb2", [str(tmp_path)])
    assert isinstance(spec.loader, old_protobuf.OldProtobufLoader)
    module = type(os)("computed_pb2")
    module.__file__ = str(path)
    with pytest.raises(
        ImportError, match=re.escape(f"{path}:4: a protobuf module generated before")
    ):
        spec.loader.exec_module(module)
