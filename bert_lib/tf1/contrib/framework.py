"""tf.contrib.framework of TF 1.x: checkpoint, global-step and variable-selection helpers.

What research code took from it: checkpoint reading and global-step
helpers that tf.train has under the same names, the variable-selection
helpers of fine-tuning scripts (get_variables_to_restore with include /
exclude scopes), and arg_scope, which libraries of the time (TFLearn's
variables, TF-Slim's layers) decorate their functions for.
"""

import contextlib
import functools
import inspect

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


# arg_scope: the scopes in force are a stack of {function key: default arguments}, kept in
# the graph's collection of this name (a new graph starts with none), as TF 1.x kept it.
_ARG_STACK = ("__arg_stack",)
_DECORATED = set()


def _key(function):
    return getattr(function, "_key_op", str(function))


def _arg_stack():
    found = _V1.get_collection(_ARG_STACK)
    if found:
        return found[0]
    stack = [{}]
    _V1.add_to_collection(_ARG_STACK, stack)
    return stack


def current_arg_scope():
    return _arg_stack()[-1]


def has_arg_scope(function):
    return _key(function) in _DECORATED


def add_arg_scope(function):
    """`function` taking, for each argument not given, the value the arg_scopes in force
    name for it."""

    @functools.wraps(function)
    def with_scoped_arguments(*args, **kwargs):
        scoped = current_arg_scope().get(_key(function))
        if scoped is not None:
            kwargs = {**scoped, **kwargs}
        return function(*args, **kwargs)

    _DECORATED.add(_key(function))
    with_scoped_arguments._key_op = _key(function)
    return with_scoped_arguments


@contextlib.contextmanager
def arg_scope(list_ops_or_scope, **kwargs):
    """Default arguments for the decorated functions listed (a scope a former arg_scope
    yielded is entered again as it was, without kwargs)."""
    if isinstance(list_ops_or_scope, dict):
        if kwargs:
            raise ValueError(
                "When attempting to re-use a scope by suppling adictionary, kwargs must be empty."
            )
        scope = dict(list_ops_or_scope)
    else:
        if not isinstance(list_ops_or_scope, (list, tuple)):
            raise TypeError(
                "list_ops_or_scope must either be a list/tuple or reused scope (i.e. dict)"
            )
        scope = dict(current_arg_scope())
        for function in list_ops_or_scope:
            if not has_arg_scope(function):
                # TF 1.x's message, its arguments never formatted in.
                raise ValueError(
                    "%s is not decorated with @add_arg_scope",
                    (function.__module__, function.__name__),
                )
            scope[_key(function)] = {**scope.get(_key(function), {}), **kwargs}
    stack = _arg_stack()
    stack.append(scope)
    try:
        yield scope
    finally:
        stack.pop()


def arg_scoped_arguments(function):
    """The names of the arguments with defaults, which an arg_scope can give `function`."""
    return tuple(
        name
        for name, parameter in inspect.signature(inspect.unwrap(function)).parameters.items()
        if parameter.default is not inspect.Parameter.empty
        and parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    )


def _nest_module():
    """tf.contrib.framework.nest: TF 1.x's tensorflow.python.util.nest (flatten_up_to,
    map_structure_up_to, ... beside tf.nest's), with its is_sequence."""
    from tensorflow.python.util import nest

    return Namespace("tf.contrib.framework.nest", nest, {"is_sequence": nest.is_nested})


def _deprecation():
    from tensorflow.python.util import deprecation

    return deprecation


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
            "nest": _nest_module(),
            "smart_cond": tf.__internal__.smart_cond.smart_cond,
            "arg_scope": arg_scope,
            "add_arg_scope": add_arg_scope,
            "has_arg_scope": has_arg_scope,
            "arg_scoped_arguments": arg_scoped_arguments,
            "current_arg_scope": current_arg_scope,
            # TF 1.x's deprecation decorator (a warning at the first call, a note in
            # the docstring), which TensorFlow keeps.
            "deprecated": _deprecation().deprecated,
            "deprecated_args": _deprecation().deprecated_args,
            "get_name_scope": lambda: _V1.get_default_graph().get_name_scope(),
            "sort": tf.sort,
            "argsort": tf.argsort,
        }
    )
    return Namespace("tf.contrib.framework", None, names)
