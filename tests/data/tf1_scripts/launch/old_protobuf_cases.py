"""Builds, serializes and parses messages of oldpkg's generated modules (protoc 3.6.1's
output of basic.proto and shapes.proto, of 2018) and prints what it saw as JSON."""

import binascii
import json
import types

from oldpkg.protos import basic_pb2
from oldpkg.protos import shapes_pb2


def hexed(message):
  return binascii.hexlify(message.SerializeToString(deterministic=True)).decode("ascii")


def described(value):
  if isinstance(value, type):
    return "message " + value.DESCRIPTOR.full_name
  if isinstance(value, int):
    return value
  if hasattr(value, "keys") and hasattr(value, "Value"):
    return ["enum", sorted(value.items())]
  if hasattr(value, "fields_by_name"):
    return "message descriptor " + value.full_name
  if hasattr(value, "values_by_name"):
    return "enum descriptor " + value.full_name
  if hasattr(value, "package"):
    return "file " + value.name + " " + value.package
  return type(value).__name__


def names(module):
  """The module's names (but the modules it imported and its runtime's helpers)."""
  found = {}
  for name in sorted(vars(module)):
    value = getattr(module, name)
    if name.startswith("__") or isinstance(value, types.ModuleType):
      continue
    if name.startswith("_") and not name[1:].replace("_", "").isupper():
      continue
    if name == "_b":
      continue
    found[name] = described(value)
  return found


def point_fields(point):
  return [point.x, point.y, point.color, list(point.labels), point.HasField("y"),
          point.HasField("color")]


def shape_fields(shape):
  return {
      "name": shape.name,
      "points": [point_fields(p) for p in shape.points],
      "tags": sorted(shape.tags.items()),
      "kind": shape.WhichOneof("kind"),
      "radius": shape.radius,
      "box": [shape.box.w, shape.box.h],
      "style": shape.style,
  }


def main():
  out = {"names": {"basic": names(basic_pb2), "shapes": names(shapes_pb2)}}
  point = basic_pb2.Point(x=3, labels=["a", "bc"])
  default = basic_pb2.Point()
  out["point_default"] = point_fields(default)
  out["enums"] = [
      basic_pb2.Color.Name(2), basic_pb2.Color.Value("GREEN"), basic_pb2.BLUE,
      shapes_pb2.Shape.Style.Name(1), shapes_pb2.Shape.DASHED,
  ]
  shape = shapes_pb2.Shape(name="square", style=shapes_pb2.Shape.DASHED)
  shape.points.add(x=1, y=2, color=basic_pb2.BLUE)
  shape.points.extend([point, default])
  shape.tags["b"] = -5
  shape.tags["a"] = 1 << 40
  shape.radius = 2.5
  circle = shapes_pb2.Shape()
  circle.CopyFrom(shape)
  shape.box.w = 1.5
  shape.box.h = -0.25
  out["serialized"] = {
      "point": hexed(point),
      "point_default": hexed(default),
      "point_y0": hexed(basic_pb2.Point(y=0)),
      "shape_box": hexed(shape),
      "shape_radius": hexed(circle),
      "shape_empty": hexed(shapes_pb2.Shape()),
  }
  parsed = {}
  for name, data in sorted(out["serialized"].items()):
    kind = basic_pb2.Point if name.startswith("point") else shapes_pb2.Shape
    message = kind.FromString(binascii.unhexlify(data))
    parsed[name] = point_fields(message) if kind is basic_pb2.Point else shape_fields(message)
  out["parsed"] = parsed
  out["file_descriptors"] = [
      binascii.hexlify(module.DESCRIPTOR.serialized_pb).decode("ascii")
      for module in (basic_pb2, shapes_pb2)
  ]
  print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
  main()
