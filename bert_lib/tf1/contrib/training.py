"""tf.contrib.training of TF 1.x: HParams.

HParams is a bag of hyperparameters set as attributes and parsed from
"name=value,..." strings or JSON, as NMT and seq2seq code configured
itself.
"""

import json

from ..machinery.namespaces import Namespace


class HParams:
    """tf.contrib.training.HParams: hyperparameters as attributes, parsed from text."""

    def __init__(self, hparam_def=None, model_structure=None, **kwargs):
        del hparam_def
        self._model_structure = model_structure
        for name, value in kwargs.items():
            self.add_hparam(name, value)

    def add_hparam(self, name, value):
        """Adds hyperparameter `name`; a name already taken (or a method's) is refused."""
        if getattr(self, name, None) is not None:
            raise ValueError(f"Hyperparameter name is reserved: {name}")
        setattr(self, name, value)

    def set_hparam(self, name, value):
        """Sets an existing hyperparameter, a text value cast to the type it has."""
        if name not in self.values():
            raise ValueError(f"Unknown hyperparameter {name}")
        setattr(self, name, _cast_like(getattr(self, name), value, name))

    def del_hparam(self, name):
        """Removes hyperparameter `name` if there is one."""
        if hasattr(self, name):
            delattr(self, name)

    def parse(self, values):
        """Applies "name=value,name=value" (each value cast to the type the name has)."""
        for item in [part for part in (values or "").split(",") if part.strip()]:
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"Could not parse hparam '{item}' in {values}")
            self.set_hparam(name.strip(), value.strip())
        return self

    def override_from_dict(self, values_dict):
        """Sets each existing hyperparameter named in `values_dict`; returns self."""
        for name, value in values_dict.items():
            self.set_hparam(name, value)
        return self

    def parse_json(self, values_json):
        """Sets the hyperparameters of a JSON object's text; returns self."""
        return self.override_from_dict(json.loads(values_json))

    def values(self):
        """{name: value} of every hyperparameter."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def get(self, key, default=None):
        """The value of hyperparameter `key`, else `default`."""
        return self.values().get(key, default)

    def to_json(self, indent=None, separators=None, sort_keys=False):
        """The hyperparameters as a JSON object's text."""
        return json.dumps(self.values(), indent=indent, separators=separators, sort_keys=sort_keys)

    def get_model_structure(self):
        """The model_structure given when made (None by default)."""
        return self._model_structure

    def __contains__(self, key):
        return key in self.values()

    def __repr__(self):
        return f"HParams({sorted(self.values().items())!r})"


def _cast_like(current, value, name):
    if not isinstance(value, str) or current is None or isinstance(current, str):
        return value
    if isinstance(current, bool):
        if value.lower() in ("true", "1"):
            return True
        if value.lower() in ("false", "0"):
            return False
        raise ValueError(f"Could not parse {value} as a bool for hparam {name}")
    if isinstance(current, (list, tuple)):
        element = current[0] if current else ""
        items = [v for v in value.strip("[]").split(":") if v] if ":" in value else [value]
        return [_cast_like(element, item, name) for item in items]
    return type(current)(value)


def training_module():
    """tf.contrib.training: HParams."""
    return Namespace("tf.contrib.training", None, {"HParams": HParams})
