"""tf.contrib.framework of TF 1.x: checkpoint, global-step and variable-selection helpers.

What research code took from it: checkpoint reading and global-step
helpers that tf.train has under the same names, and the variable-selection
helpers of fine-tuning scripts (get_variables_to_restore with include /
exclude scopes).
"""

import tensorflow as tf

from ..machinery.namespaces import Namespace

_V1 = tf.compat.v1


def _in_scopes(variable, scopes):
    return any(variable.op.name.startswith(scope) for scope in scopes)


def get_variables_to_restore(include=None, exclude=None):
    """The global variables under the `include` scopes (all if None), minus `exclude`'s."""
    variables = _V1.global_variables()
    if include is not None:
        variables = [v for v in variables if _in_scopes(v, include)]
    if exclude is not None:
        variables = [v for v in variables if not _in_scopes(v, exclude)]
    return variables


def get_variables(scope=None, suffix=None, collection=_V1.GraphKeys.GLOBAL_VARIABLES):
    """The variables of `collection` under `scope` (name or VariableScope) ending in `suffix`."""
    scope_name = scope.name if isinstance(scope, _V1.VariableScope) else scope
    variables = _V1.get_collection(collection, scope_name)
    if suffix is not None:
        variables = [v for v in variables if v.op.name.endswith(suffix)]
    return variables


def framework_module():
    """tf.contrib.framework: checkpoint, global-step and variable-selection helpers."""
    names = {
        name: getattr(_V1.train, name)
        for name in (
            "list_variables",
            "load_checkpoint",
            "load_variable",
            "init_from_checkpoint",
            "get_or_create_global_step",
            "get_global_step",
            "create_global_step",
        )
    }
    names.update(
        {
            "get_variables_to_restore": get_variables_to_restore,
            "get_variables": get_variables,
            "get_trainable_variables": lambda scope=None, suffix=None: get_variables(
                scope, suffix, _V1.GraphKeys.TRAINABLE_VARIABLES
            ),
            "get_model_variables": _V1.model_variables,
            "nest": tf.nest,
        }
    )
    return Namespace("tf.contrib.framework", None, names)
