"""What a model_fn returns, checked as TF 1.15 checked it, before the engine touches it.

TF 1.15's EstimatorSpec refused a missing train_op, loss or predictions, a
loss that is not a scalar, values that are not tensors, eval_metric_ops
that are not (metric_value, update_op) pairs, hooks that are not
SessionRunHooks; its TPUEstimatorSpec refused eval_metrics that are not a
(metric_fn, tensors) pair. The same checks with TF 1.15's messages are
here, each reported in one line that starts with the user's line that made
the spec (or, for what a metric_fn returned, that defines the metric_fn),
instead of an error from inside the engine later.
"""

import functools
import inspect

import tensorflow as tf

from ..machinery.user_errors import UserCodeError

_V1 = tf.compat.v1

TRAIN, EVAL, PREDICT = "train", "eval", "infer"


class SpecError(UserCodeError):
    """A model_fn's spec TF 1.15 would have refused; the message names the user's line."""


def _refuse(where, message):
    text = " ".join(str(message).split())
    return SpecError(f"{where}: {text}" if where else text)


def _is_tensor(value):
    return isinstance(value, (tf.Tensor, tf.Variable))


def _default_graph_check(where, what, name, value):
    graph = getattr(value, "graph", None)
    if graph is not None and graph is not _V1.get_default_graph():
        raise _refuse(
            where,
            f'{what} with "{name}" must be from the default graph. Possible causes of this '
            f"error include: 1) {what} was created outside the context of the default graph. "
            "2) The object passed through to EstimatorSpec was not created in the most recent "
            'call to "model_fn".',
        )


def check_train_op(train_op, mode, where):
    """Refuses a missing train_op in training, or one that is not an op or tensor of the graph."""
    if train_op is None:
        if mode == TRAIN:
            raise _refuse(where, "Missing train_op.")
        return
    if not (isinstance(train_op, tf.Operation) or _is_tensor(train_op)):
        raise _refuse(where, f"train_op must be Operation or Tensor, given: {train_op}")
    _default_graph_check(where, "train_op", train_op.name, train_op)


def check_loss(loss, mode, where):
    """Returns the loss, reshaped to a scalar if it was [1] (as TF 1.15 did)."""
    if loss is None:
        if mode in (TRAIN, EVAL):
            raise _refuse(where, "Missing loss.")
        return None
    if not _is_tensor(loss):
        raise _refuse(where, f"loss must be Tensor, given: {loss}")
    shape = loss.shape
    if shape.num_elements() not in (None, 1):
        raise _refuse(where, f"Loss must be scalar, given: {loss}")
    _default_graph_check(where, "loss", loss.name, loss)
    if not shape.is_compatible_with(tf.TensorShape([])):
        loss = tf.reshape(loss, [])
    return loss


def check_predictions(predictions, mode, where):
    """Refuses missing predictions in prediction, or values that are not tensors of the graph."""
    if predictions is None:
        if mode == PREDICT:
            raise _refuse(where, "Missing predictions.")
        return
    if isinstance(predictions, dict):
        for key, value in predictions.items():
            if not _is_tensor(value):
                raise _refuse(where, f"predictions[{key}] must be Tensor, given: {value}")
            _default_graph_check(where, "prediction values", f"{key}: {value.name}", value)
    elif not _is_tensor(predictions):
        raise _refuse(where, f"predictions must be Tensor, given: {predictions}")
    else:
        _default_graph_check(where, "prediction values", predictions.name, predictions)


def check_hooks(hooks, where):
    """Refuses hooks that are not SessionRunHooks."""
    for hook in hooks or ():
        if not isinstance(hook, _V1.train.SessionRunHook):
            raise _refuse(where, f"All hooks must be SessionRunHook instances, given: {hook}")


def check_scaffold(scaffold, where):
    """Refuses a scaffold that is not a tf.train.Scaffold."""
    if scaffold is not None and not isinstance(scaffold, _V1.train.Scaffold):
        raise _refuse(where, f"scaffold must be tf.train.Scaffold. Given: {scaffold}")


def metric_objects_as_pairs(eval_metric_ops):
    """eval_metric_ops with Keras Metric objects among its values (TF 1.15 took those too)
    as (result, update_op) pairs, their variables local variables so that evaluation
    initializes them (a Metric's are in no collection)."""
    if not isinstance(eval_metric_ops, dict):
        return eval_metric_ops
    pairs = dict(eval_metric_ops)
    local = {id(v) for v in _V1.get_collection(_V1.GraphKeys.LOCAL_VARIABLES)}
    for key, value in eval_metric_ops.items():
        if isinstance(value, tuple) or not all(
            hasattr(value, name) for name in ("result", "updates", "variables")
        ):
            continue
        pairs[key] = (value.result(), value.updates[0])
        for variable in value.variables:
            if id(variable) not in local:
                _V1.add_to_collection(_V1.GraphKeys.LOCAL_VARIABLES, variable)
                local.add(id(variable))
    return pairs


def check_eval_metric_ops(eval_metric_ops, where):
    """{name: (metric_value, update_op)}, each a tensor or op of the default graph."""
    if eval_metric_ops is None:
        return
    if not isinstance(eval_metric_ops, dict):
        raise _refuse(where, f"eval_metric_ops must be a dict, given: {eval_metric_ops}")
    for key, value in eval_metric_ops.items():
        if not isinstance(value, tuple) or len(value) != 2:
            raise _refuse(
                where,
                "Values of eval_metric_ops must be (metric_value, update_op) tuples, given: "
                f"{value} for key: {key}",
            )
        for part in value:
            if not (isinstance(part, tf.Operation) or _is_tensor(part)):
                raise _refuse(
                    where,
                    f"eval_metric_ops[{key}] must be Operation or Tensor, given: {part}",
                )
            _default_graph_check(where, "eval_metric_ops", f"{key}: {part.name}", part)


def check_host_call(name, host_call, where):
    """TPUEstimatorSpec's eval_metrics: (metric_fn, tensors as a list or a dict)."""
    if host_call is None:
        return
    if not isinstance(host_call, (tuple, list)):
        raise _refuse(where, f"{name} should be tuple or list")
    if len(host_call) != 2:
        raise _refuse(where, f"{name} should have two elements.")
    function, tensors = host_call
    if not callable(function):
        raise _refuse(where, f"{name}[0] should be callable.")
    if not isinstance(tensors, (tuple, list, dict)):
        raise _refuse(where, f"{name}[1] should be tuple or list, or dict.")
    if isinstance(tensors, (tuple, list)):
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            return
        if any(p.kind == p.VAR_POSITIONAL for p in parameters):
            return
        count = sum(
            1 for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        )
        if len(tensors) != count:
            raise _refuse(
                where,
                f"In TPUEstimatorSpec.{name}, length of tensors {len(tensors)} does not match "
                f"method args of the function, which takes {count}.",
            )


def check_estimator_spec(spec_fields, mode, where):
    """TF 1.15's checks of an EstimatorSpec's fields (a dict); returns the loss to use."""
    check_train_op(spec_fields.get("train_op"), mode, where)
    loss = check_loss(spec_fields.get("loss"), mode, where)
    check_predictions(spec_fields.get("predictions"), mode, where)
    check_eval_metric_ops(spec_fields.get("eval_metric_ops"), where)
    for name in ("training_chief_hooks", "training_hooks", "evaluation_hooks", "prediction_hooks"):
        check_hooks(spec_fields.get(name), where)
    check_scaffold(spec_fields.get("scaffold"), where)
    return loss


def definition_line(function):
    """ "file:line" where `function` is defined (for what it returns), or None."""
    while isinstance(function, functools.partial):
        function = function.func
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else None


def checked_metric_fn(metric_fn):
    """metric_fn whose returned dict is checked as eval_metric_ops were, at metric_fn's line."""

    def call(*args, **kwargs):
        ops = metric_fn(*args, **kwargs)
        check_eval_metric_ops(ops, definition_line(metric_fn))
        return ops

    return call
