"""tf.contrib.layers' optimizers of TF 1.x: optimize_loss and OPTIMIZER_CLS_NAMES.

optimize_loss was the one call that turned a loss into a train op in the
Estimator code of its years (tensor2tensor's trainer among it): the update
ops run first, the optimizer given by name, class, instance or function,
gradients with optional noise, multipliers and clipping by their global
norm, the summaries asked for, and a train op that returns the loss once
the variables are updated. Its variable scope (`name`, else OptimizeLoss)
is where the optimizer's slots are made, so the checkpoint's names are TF
1.15's.
"""

import tensorflow as tf

_V1 = tf.compat.v1

# The optimizers optimize_loss takes by name, as TF 1.15 had them (Momentum's 0.9 fixed).
OPTIMIZER_CLS_NAMES = {
    "Adagrad": _V1.train.AdagradOptimizer,
    "Adam": _V1.train.AdamOptimizer,
    "Ftrl": _V1.train.FtrlOptimizer,
    "Momentum": lambda learning_rate: _V1.train.MomentumOptimizer(learning_rate, momentum=0.9),
    "RMSProp": _V1.train.RMSPropOptimizer,
    "SGD": _V1.train.GradientDescentOptimizer,
}

OPTIMIZER_SUMMARIES = [
    "learning_rate",
    "loss",
    "gradients",
    "gradient_norm",
    "global_gradient_norm",
]


def _with_dependencies(dependencies, tensor):
    """`tensor` once `dependencies` have run: an identity of it, colocated with it, named
    control_dependency in the current scope (TF 1.x's control_flow_ops.with_dependencies)."""
    with _V1.name_scope(None, "control_dependency", [*dependencies, tensor]) as name:
        with _V1.colocate_with(tensor), tf.control_dependencies(dependencies):
            return tf.identity(tensor, name=name)


def _learning_rate(learning_rate):
    """A scalar tensor stays; a float becomes the non-trainable variable `learning_rate`."""
    if isinstance(learning_rate, tf.Tensor) and learning_rate.get_shape().ndims == 0:
        return learning_rate
    if isinstance(learning_rate, float):
        if learning_rate < 0.0:
            raise ValueError("Invalid learning_rate %s.", learning_rate)
        return _V1.get_variable(
            "learning_rate",
            [],
            trainable=False,
            initializer=_V1.constant_initializer(learning_rate),
        )
    raise ValueError(
        "Learning rate should be 0d Tensor or float. "
        f"Got {learning_rate} of type {type(learning_rate)}"
    )


def _optimizer(optimizer, learning_rate, lr):
    """The optimizer instance optimize_loss's `optimizer` argument stands for."""
    if isinstance(optimizer, str):
        if lr is None:
            raise ValueError(
                "Learning rate is None, but should be specified if optimizer is "
                f"string ({optimizer})."
            )
        if optimizer not in OPTIMIZER_CLS_NAMES:
            raise ValueError(
                f"Optimizer name should be one of [{', '.join(OPTIMIZER_CLS_NAMES)}], "
                f"you provided {optimizer}."
            )
        return OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
    if isinstance(optimizer, type) and issubclass(optimizer, _V1.train.Optimizer):
        if lr is None:
            raise ValueError(
                "Learning rate is None, but should be specified if optimizer is "
                f"class ({optimizer})."
            )
        return optimizer(learning_rate=lr)
    if isinstance(optimizer, _V1.train.Optimizer):
        return optimizer
    if callable(optimizer):
        made = optimizer(lr) if learning_rate is not None else optimizer()
        if not isinstance(made, _V1.train.Optimizer):
            raise ValueError(
                "Unrecognized optimizer: function should return subclass of "
                f"Optimizer. Got {made}."
            )
        return made
    raise ValueError(
        "Unrecognized optimizer: should be string, subclass of Optimizer, instance of "
        f"subclass of Optimizer or function with one argument. Got {optimizer}."
    )


def _with_noise(gradients, scale):
    """Each gradient plus truncated normal noise of its shape times `scale`."""
    noisy = []
    for gradient, variable in gradients:
        if gradient is None:
            noisy.append((None, variable))
            continue
        if isinstance(gradient, tf.IndexedSlices):
            shape = gradient.dense_shape
        else:
            shape = gradient.get_shape()
        noisy.append((gradient + _V1.truncated_normal(shape) * scale, variable))
    return noisy


def _multiplied(gradients, multipliers):
    """Gradients of the variables in `multipliers` (keyed by the variable, else by its
    name) times their factor."""
    multiplied = []
    for gradient, variable in gradients:
        by_variable = [k for k in multipliers if k is variable]
        key = by_variable[0] if by_variable else variable.name
        if gradient is not None and (by_variable or key in multipliers):
            factor = multipliers[key]
            if isinstance(gradient, tf.IndexedSlices):
                gradient = tf.IndexedSlices(
                    gradient.values * factor, gradient.indices, gradient.dense_shape
                )
            else:
                gradient *= tf.cast(factor, gradient.dtype)
        multiplied.append((gradient, variable))
    return multiplied


def _global_norm(gradients):
    return tf.linalg.global_norm([gradient for gradient, _ in gradients])


def _clipped(gradients, clip_gradients):
    """Gradients clipped by their global norm (a float) or by a function of them."""
    if isinstance(clip_gradients, float):
        values, variables = zip(*gradients)
        values, _ = tf.clip_by_global_norm(values, clip_gradients)
        return list(zip(values, variables))
    if callable(clip_gradients):
        return clip_gradients(gradients)
    if clip_gradients is not None:
        raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
    return gradients


def _summarize_gradients(gradients, summaries):
    """Histograms of the gradients and their norms, one per variable, as asked."""
    for gradient, variable in gradients:
        values = gradient.values if isinstance(gradient, tf.IndexedSlices) else gradient
        if values is None:
            continue
        name = variable.name.replace(":", "_")
        if "gradients" in summaries:
            _V1.summary.histogram(f"gradients/{name}", values)
        if "gradient_norm" in summaries:
            _V1.summary.scalar(f"gradient_norm/{name}", tf.linalg.global_norm([values]))


def optimize_loss(
    loss,
    global_step,
    learning_rate,
    optimizer,
    gradient_noise_scale=None,
    gradient_multipliers=None,
    clip_gradients=None,
    learning_rate_decay_fn=None,
    update_ops=None,
    variables=None,
    name=None,
    summaries=None,
    colocate_gradients_with_ops=False,
    increment_global_step=True,
):
    """tf.contrib.layers.optimize_loss: the loss, once the optimizer has applied its
    gradients (noised, multiplied, clipped as asked) to `variables` (default: the
    trainable ones) and, with increment_global_step, counted the step."""
    loss = tf.convert_to_tensor(loss)
    loss.get_shape().assert_has_rank(0)
    if global_step is None:
        global_step = _V1.train.get_global_step()
    else:
        _V1.train.assert_global_step(global_step)
    with _V1.variable_scope(name, "OptimizeLoss", [loss, global_step]):
        if update_ops is None:
            update_ops = set(_V1.get_collection(_V1.GraphKeys.UPDATE_OPS))
        if update_ops:
            loss = _with_dependencies(list(update_ops), loss)
        lr = None if learning_rate is None else _learning_rate(learning_rate)
        if summaries is None:
            summaries = ["loss", "learning_rate", "global_gradient_norm"]
        for summary in summaries:
            if summary not in OPTIMIZER_SUMMARIES:
                raise ValueError(
                    f"Summaries should be one of [{', '.join(OPTIMIZER_SUMMARIES)}], "
                    f"you provided {summary}."
                )
        if learning_rate is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
            if "learning_rate" in summaries:
                _V1.summary.scalar("learning_rate", lr)
        opt = _optimizer(optimizer, learning_rate, lr)
        if variables is None:
            variables = _V1.trainable_variables()
        gradients = opt.compute_gradients(
            loss, variables, colocate_gradients_with_ops=colocate_gradients_with_ops
        )
        if gradient_noise_scale is not None:
            gradients = _with_noise(gradients, gradient_noise_scale)
        if gradient_multipliers is not None:
            gradients = _multiplied(gradients, gradient_multipliers)
            if not gradients:
                raise ValueError(
                    "Empty list of (gradient, var) pairs encountered. This is most "
                    "likely to be caused by an improper value of gradient_multipliers."
                )
        norms = "global_gradient_norm" in summaries or "gradient_norm" in summaries
        if norms:
            _V1.summary.scalar("global_norm/gradient_norm", _global_norm(gradients))
        gradients = _clipped(gradients, clip_gradients)
        if "loss" in summaries:
            _V1.summary.scalar("loss", loss)
        _summarize_gradients(gradients, summaries)
        if clip_gradients is not None and norms:
            _V1.summary.scalar("global_norm/clipped_gradient_norm", _global_norm(gradients))
        grad_updates = opt.apply_gradients(
            gradients,
            global_step=global_step if increment_global_step else None,
            name="train",
        )
        return _with_dependencies([grad_updates], loss)
