"""`collections.Mapping` and the other ABC aliases Python 3.10 removed, for TF 1.x code.

TF 1.x code of 2017-2020 ran on Python 3.9 and before, where the abstract
base classes of `collections.abc` were also reachable as `collections.<name>`
(with a DeprecationWarning from 3.7). Python 3.10 removed those aliases, so
such code (Sonnet 1's `isinstance(x, collections.Mapping)`) stops with an
AttributeError. put_back() sets each on the `collections` module, as the very
class `collections.abc` has, in the process run_tf1.py runs (tf1.install());
names `collections` has of its own are left as they are.
"""

import collections
import collections.abc

# The names Python 3.9's `collections` gave from `collections.abc` (its
# `_collections_abc.__all__`), which Python 3.10 removed.
REMOVED_IN_PYTHON_3_10 = (
    "Awaitable",
    "Coroutine",
    "AsyncIterable",
    "AsyncIterator",
    "AsyncGenerator",
    "Hashable",
    "Iterable",
    "Iterator",
    "Generator",
    "Reversible",
    "Sized",
    "Container",
    "Callable",
    "Collection",
    "Set",
    "MutableSet",
    "Mapping",
    "MutableMapping",
    "MappingView",
    "KeysView",
    "ItemsView",
    "ValuesView",
    "Sequence",
    "MutableSequence",
    "ByteString",
)


def put_back():
    """Makes `collections.<name>` the `collections.abc` class for each removed name that
    `collections` lacks (and this Python's `collections.abc` still has)."""
    for name in REMOVED_IN_PYTHON_3_10:
        if name not in vars(collections) and name in vars(collections.abc):
            setattr(collections, name, getattr(collections.abc, name))
