"""The modules of the TF 1.x API and the error for an API they do not provide.

Namespace is a module of that API: its own names first, then those of the
TensorFlow 2 module it extends, else an UnsupportedAPIError naming the API
and the user's file and line (user_code.user_location), with what to use
instead where the module has it under another name (make_finder).
"""

import builtins
import types

from ...plumbing import errors
from .user_code import user_location


class UnsupportedAPIError(errors.UsageError, AttributeError):
    """A TF 1.x API this module does not provide; the message names it and the user's line."""


def unsupported(api, instead=None):
    """The UnsupportedAPIError for `api` (say "tf.contrib.slim"), naming the user's line.

    `instead` names what to use in its place; without it, a name the TF 1.x
    module provides elsewhere (tf.nn.rnn_cell.LSTMBlockCell: tf.contrib.rnn's)
    is named if there is one.
    """
    where = user_location()
    text = f"{api} is not provided by the TF 1.x API on TensorFlow 2 (run_tf1.py)"
    if where:
        text = f"{where}: {text}"
    instead = instead or _elsewhere(api)
    if instead:
        text += f"; use {instead} instead"
    else:
        text += f"; {WHAT_IS_PROVIDED} lists what is provided"
    error = UnsupportedAPIError(text)
    error.api = api
    _LAST_ERROR[:] = [error]
    return error


# Where the user reads what the TF 1.x module provides.
WHAT_IS_PROVIDED = "docs/tf1.md"


def _elsewhere(api):
    """Where the installed TF 1.x module provides `api`'s name under another path, or None.

    install() (tf1/__init__.py) puts its import hook in builtins.__import__,
    holding the module it built and a finder over it (make_finder).
    """
    find = getattr(builtins.__import__, "find_elsewhere", None)
    if find is None:
        return None
    try:
        found = find(api.rsplit(".", 1)[-1])
    except Exception:  # a hint is a courtesy: never the reason a refusal fails
        return None
    return found if found and found != api else None


# The newest UnsupportedAPIError made: `from tensorflow.contrib import rnn`
# turns it into an ImportError, which run_tf1.py then reports as this.
_LAST_ERROR = []


def last_unsupported(api):
    """The newest UnsupportedAPIError if it was about `api`, else None."""
    if _LAST_ERROR and _LAST_ERROR[0].api == api:
        return _LAST_ERROR[0]
    return None


# ---------------------------------------------------------------------------
# Namespaces


class Namespace(types.ModuleType):
    """A module of the TF 1.x API: its own names, then those of `base`, else an error.

    `base` is the real TensorFlow module it extends (None: only its own
    names); its submodules are wrapped in turn, so that a missing name
    anywhere below says which API it was. `instead` maps names known to be
    gone to what to use in their place.
    """

    def __init__(self, api, base=None, own=None, instead=None):
        super().__init__(api)
        self.__dict__["_tf1_api"] = api
        self.__dict__["_tf1_base"] = base
        self.__dict__["_tf1_instead"] = dict(instead or {})
        self.__dict__.update(own or {})

    def __getattr__(self, name):
        if name == "__all__":  # `from tensorflow.keras.layers import *`: every public name
            return [n for n in dir(self) if not n.startswith("_")]
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        api = self.__dict__["_tf1_api"]
        base = self.__dict__["_tf1_base"]
        instead = self.__dict__["_tf1_instead"]
        if base is not None and name not in instead:
            try:
                value = getattr(base, name)
            except AttributeError:
                pass
            else:
                if isinstance(value, types.ModuleType) and not isinstance(value, Namespace):
                    value = Namespace(f"{api}.{name}", value)
                self.__dict__[name] = value
                return value
        raise unsupported(f"{api}.{name}", instead.get(name))

    def __dir__(self):
        names = set(self.__dict__) - {"_tf1_api", "_tf1_base", "_tf1_instead"}
        base = self.__dict__["_tf1_base"]
        if base is not None:
            names.update(dir(base))
        return sorted(names)

    def __repr__(self):
        return f"<TF 1.x API module {self.__dict__['_tf1_api']!r}>"


# Gone with no stand-in here, and what to use instead (None: nothing to name).
TOP_LEVEL_INSTEAD = {}

CONTRIB_INSTEAD = {
    "distribute": "tf.distribute",
    "summary": "tf.summary",
    "cudnn_rnn": "tf.nn.rnn_cell",
    "keras": "tf.keras",
}


# Real TensorFlow modules a hint never points into: generated or internal.
_NOT_HINTED = frozenset(["compat", "python", "keras", "raw_ops", "experimental", "internal"])


def _keras3_below(path, base):
    """Whether `base` is Keras 3 under tf.keras, whose names are not TF 1.15's to hint
    (where the tf_keras package is tf.keras, they are)."""
    return path.startswith("tf.keras") and not base.__name__.startswith("tf_keras")


def make_finder(root):
    """A function: name -> the API path under `root` (the TF 1.x module) that provides
    it, or None: the shortest such path, this module's own namespaces (breadth
    first) before the public names of the TensorFlow modules they extend."""
    index = {}

    def offer(name, path):
        """The path with the fewest parts wins; the first found among equals."""
        if name not in index or path.count(".") < index[name].count("."):
            index[name] = path

    def namespaces():
        queue, seen = [("tf", root)], set()
        while queue:
            path, namespace = queue.pop(0)
            if id(namespace) in seen:
                continue
            seen.add(id(namespace))
            yield path, namespace
            for name, value in sorted(namespace.__dict__.items()):
                if isinstance(value, Namespace) and name not in ("compat", "python"):
                    queue.append((f"{path}.{name}", value))

    def build():
        found = list(namespaces())
        for path, namespace in found:
            for name, value in namespace.__dict__.items():
                if not name.startswith("_") and not isinstance(value, types.ModuleType):
                    offer(name, f"{path}.{name}")
        for path, namespace in found:
            base = namespace.__dict__.get("_tf1_base")
            if not isinstance(base, types.ModuleType) or _keras3_below(path, base):
                continue
            modules = []
            for name in dir(base):
                if name.startswith("_") or name in _NOT_HINTED:
                    continue
                try:
                    value = getattr(base, name, None)
                except Exception:  # a lazily loaded module that fails to load (Keras's)
                    continue
                if not isinstance(value, types.ModuleType):
                    offer(name, f"{path}.{name}")
                elif path == "tf":
                    modules.append((f"{path}.{name}", value))
            for module_path, module in modules:
                try:
                    names = dir(module)
                except Exception:  # a lazily loaded module that fails to load
                    continue
                for name in names:
                    if not name.startswith("_"):
                        try:
                            if isinstance(getattr(module, name), types.ModuleType):
                                continue
                        except Exception:
                            continue
                        offer(name, f"{module_path}.{name}")

    def find(name):
        if not index:
            build()
        return index.get(name)

    return find
