"""The ABCs of `collections` as TF 1.x code of 2017-2020 reached them (`collections.Mapping`,
Python 3.9 and before), used the ways Sonnet 1 and its neighbours used them; prints JSON."""

import collections
import json
import types
from collections import abc

NAMES = [
    "Awaitable", "Coroutine", "AsyncIterable", "AsyncIterator", "AsyncGenerator",
    "Hashable", "Iterable", "Iterator", "Generator", "Reversible", "Sized", "Container",
    "Callable", "Collection", "Set", "MutableSet", "Mapping", "MutableMapping",
    "MappingView", "KeysView", "ItemsView", "ValuesView", "Sequence", "MutableSequence",
    "ByteString",
]
# Checked on values, all but Reversible: dicts became reversible in Python 3.8 itself.
CHECKED = [name for name in NAMES if name != "Reversible"]


class Registry(collections.MutableMapping):
  """A dict-like store, subclassing the alias as code of those years did."""

  def __init__(self):
    self._items = {}

  def __getitem__(self, key):
    return self._items[key]

  def __setitem__(self, key, value):
    self._items[key] = value

  def __delitem__(self, key):
    del self._items[key]

  def __iter__(self):
    return iter(sorted(self._items))

  def __len__(self):
    return len(self._items)


def flatten(structure):
  """Sonnet-style nest flattening on the aliases."""
  if isinstance(structure, collections.Mapping):
    return [leaf for key in sorted(structure) for leaf in flatten(structure[key])]
  if isinstance(structure, collections.Sequence) and not isinstance(structure, str):
    return [leaf for item in structure for leaf in flatten(item)]
  return [structure]


def main():
  out = {}
  out["aliases"] = {name: getattr(collections, name) is getattr(abc, name) for name in NAMES}
  out["abc_names"] = sorted(
      name for name in dir(abc) if not name.startswith("_") and name in NAMES)
  registry = Registry()
  registry["b"] = 2
  registry.update(a=1, c=3)
  registry.setdefault("d", 4)
  del registry["c"]
  out["registry"] = [list(registry), registry.get("x", -1), "a" in registry,
                     isinstance(registry, dict), len(registry)]
  out["flatten"] = flatten({"x": [1, (2, 3)], "a": {"k": "leaf"}, "m": collections.OrderedDict(
      [("z", 4)])})
  generator = (i for i in range(2))
  values = [{}, [], (), "s", b"b", {1}, frozenset(), len, generator, iter([]), registry,
            collections.OrderedDict(), collections.deque(), types.SimpleNamespace()]
  out["isinstance"] = [[isinstance(v, getattr(collections, name)) for name in CHECKED]
                       for v in values]
  out["issubclass"] = [
      issubclass(collections.OrderedDict, collections.MutableMapping),
      issubclass(collections.deque, collections.MutableSequence),
      issubclass(Registry, collections.Mapping),
      issubclass(tuple, collections.Hashable),
      issubclass(list, collections.Hashable),
  ]
  print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
  main()
