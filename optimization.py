"""How BERT trains: the learning-rate schedule and Adam with decoupled weight decay.

`create_optimizer` builds the whole train op the way BERT was pre-trained:
linear warmup then linear decay of the learning rate, gradients clipped to a
global norm of 1.0, `AdamWeightDecayOptimizer` (Adam without bias
correction, plus weight decay that bypasses the moment estimates), and a
global_step increment of one per run of the train op. With
optimizer="lamb" the update is `LAMBOptimizer`'s instead (the same moments,
then a per-variable trust ratio, for large-batch pre-training); everything
else stays.

The pieces are public so an engine can insert steps between them (gradient
accumulation, loss scaling) without changing the arithmetic:

    learning_rate = create_learning_rate(init_lr, num_train_steps, num_warmup_steps)
    optimizer = create_bert_optimizer(learning_rate)
    train_op = apply_clipped_gradients(optimizer, grads, tvars, global_step)

`create_training_step` builds the same step with gradient accumulation and
float16 loss scaling (TrainingOptions), and returns what a training loop
needs besides the train op (TrainingStep: the learning rate to log, the op
that accumulates a micro-batch, the variables a checkpoint may lack).

Under a `tf.distribute` strategy (graph mode), `apply_gradients` may be called
in a replica context (inside `call_for_each_replica`): gradients are then
averaged across replicas and every copy of each variable and its slots gets
the same update.
"""

import collections
import re

import tensorflow as tf

# The settings BERT was trained with; create_optimizer uses exactly these.
WEIGHT_DECAY_RATE = 0.01
BETA_1 = 0.9
BETA_2 = 0.999
EPSILON = 1e-6
EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")
CLIP_NORM = 1.0

# Dynamic loss scaling (float16): start high, halve on every step whose
# gradients overflow (that step is skipped), double after this many good steps.
INITIAL_LOSS_SCALE = 2.0**15
LOSS_SCALE_GROWTH_INTERVAL = 2000


class TrainingOptions(
    collections.namedtuple("TrainingOptions", ["num_accumulation_steps", "dynamic_loss_scaling"])
):
    """What create_optimizer builds beyond the plain step (the defaults build none of it).

    num_accumulation_steps=N: the train op applies the average gradient of N
      micro-batches: run the step's accumulate_op N-1 times, then the train
      op once (global_step counts these optimizer steps).
    dynamic_loss_scaling: for float16 compute, the loss is multiplied by a
      scale before differentiation and the gradients divided by it; a step whose
      gradients hold Inf or NaN changes no weight or slot and halves the scale,
      and the scale doubles after LOSS_SCALE_GROWTH_INTERVAL good steps in a row.
      global_step advances on skipped steps too.

    The accumulators are local variables (not in checkpoints: a training
    loop saves only between optimizer steps, when they are zero). The loss
    scale and its good-step count are saved, so a resumed float16 run keeps
    them; a checkpoint without them (the original's, a float32 run's) may
    still be restored, leaving them at their initial values (the step's
    optional_in_checkpoint).
    """

    def __new__(cls, num_accumulation_steps=1, dynamic_loss_scaling=False):
        if int(num_accumulation_steps) < 1:
            raise ValueError(f"num_accumulation_steps must be >= 1, got {num_accumulation_steps}")
        return super().__new__(cls, int(num_accumulation_steps), bool(dynamic_loss_scaling))


class TrainingStep(
    collections.namedtuple(
        "TrainingStep", ["train_op", "learning_rate", "accumulate_op", "optional_in_checkpoint"]
    )
):
    """What create_training_step builds.

    train_op: runs one optimizer step (and adds one to global_step).
    learning_rate: the scalar learning rate of the step, for logging.
    accumulate_op: with gradient accumulation, the op that only adds one
      micro-batch's gradients to the accumulators (run it N-1 times before
      each train_op); else None.
    optional_in_checkpoint: variables a checkpoint need not hold (the float16
      loss scale and its good-step count: the original's checkpoints and
      float32 runs' have none); restoring such a checkpoint leaves them at
      their initial values. Empty without loss scaling.
    """


def create_optimizer(
    loss, init_lr, num_train_steps, num_warmup_steps, use_tpu, *, optimizer="adamw"
):
    """Builds the op that runs one training step on `loss`.

    Gradients of all trainable variables are clipped to global norm 1.0 and
    applied by `create_bert_optimizer(optimizer=optimizer)`; then the global
    step (created if missing) goes up by one.

    Args:
      loss: scalar float Tensor.
      init_lr: peak learning rate.
      num_train_steps: step at which the learning rate reaches 0.
      num_warmup_steps: steps of linear warmup from 0 (0 for none).
      use_tpu: accepted for compatibility. The original wrapped the optimizer
        for TPU cross-shard gradient averaging; here any tf.distribute strategy
        is handled by `AdamWeightDecayOptimizer.apply_gradients` itself.
      optimizer: "adamw" (BERT's, the default) or "lamb"; see OPTIMIZERS.

    Returns:
      The train op (create_training_step's, without accumulation or loss
      scaling).

    Raises:
      ValueError: num_train_steps is not positive, num_warmup_steps is
        negative, or optimizer is not in OPTIMIZERS.
    """
    del use_tpu  # See the docstring: distribution needs no optimizer wrapper.
    return create_training_step(
        loss, init_lr, num_train_steps, num_warmup_steps, optimizer=optimizer
    ).train_op


def create_training_step(
    loss, init_lr, num_train_steps, num_warmup_steps, optimizer="adamw", options=None
):
    """create_optimizer's step, with `options` (TrainingOptions); returns a TrainingStep.

    Without options (or with the default TrainingOptions()) the train op is
    create_optimizer's, op for op.

    Raises:
      ValueError: as create_optimizer.
    """
    global_step = tf.compat.v1.train.get_or_create_global_step()
    learning_rate = create_learning_rate(init_lr, num_train_steps, num_warmup_steps, global_step)
    optimizer = create_bert_optimizer(learning_rate, optimizer=optimizer)
    tvars = tf.compat.v1.trainable_variables()
    num_accumulation_steps, dynamic_loss_scaling = options or TrainingOptions()
    if num_accumulation_steps == 1 and not dynamic_loss_scaling:
        grads = tf.gradients(loss, tvars)
        train_op = apply_clipped_gradients(optimizer, grads, tvars, global_step)
        return TrainingStep(train_op, learning_rate, None, ())

    optional = ()
    if dynamic_loss_scaling:
        loss_scale = DynamicLossScale()
        optional = (loss_scale.scale_variable, loss_scale.good_steps)
        backward_scale = _backward_loss_scale(
            loss_scale.scale, num_accumulation_steps * _replicas_in_sync()
        )
        grads = tf.gradients(loss * backward_scale, tvars)
        grads = [None if g is None else _dense_gradient(g) / backward_scale for g in grads]
        optimizer.skip_nonfinite_updates = True
        optimizer.on_gradients_checked = loss_scale.update
    else:
        grads = tf.gradients(loss, tvars)
    if num_accumulation_steps == 1:
        grads = [None if g is None else _dense_gradient(g) for g in grads]
        train_op = apply_clipped_gradients(optimizer, grads, tvars, global_step)
        return TrainingStep(train_op, learning_rate, None, optional)

    pairs = [(g, v) for g, v in zip(grads, tvars) if g is not None]
    accumulators = [_accumulator(v) for _, v in pairs]
    accumulate_op = tf.group(
        *[_accumulate(acc, g) for acc, (g, _) in zip(accumulators, pairs)],
        name="accumulate_gradients",
    )
    scale = 1.0 / num_accumulation_steps
    averaged = [
        (acc.read_value() + _dense_gradient(g)) * scale for acc, (g, _) in zip(accumulators, pairs)
    ]
    apply_op = apply_clipped_gradients(optimizer, averaged, [v for _, v in pairs], global_step)
    with tf.control_dependencies([apply_op]):
        clear_op = tf.group(
            *[acc.assign(tf.zeros_like(acc), read_value=False) for acc in accumulators]
        )
    train_op = tf.group(apply_op, clear_op, name="train_op")
    return TrainingStep(train_op, learning_rate, accumulate_op, optional)


def _accumulate(accumulator, grad):
    """Adds a micro-batch's gradient to its accumulator. An embedding's gradient
    (IndexedSlices, the rows of the micro-batch's tokens) is added row by row on one
    device, rather than made dense first: a table of 30,522 rows is touched at a few
    hundred; under a strategy (per-replica accumulators) it is made dense."""
    if isinstance(grad, tf.IndexedSlices) and not tf.distribute.has_strategy():
        return accumulator.scatter_add(grad)
    return accumulator.assign_add(_dense_gradient(grad), read_value=False)


def _accumulator(param):
    """A float32 local (unsaved), per-replica variable "<name>/grad_accum" shaped like param."""
    root_scope = tf.compat.v1.VariableScope(reuse=tf.compat.v1.AUTO_REUSE, name="")
    with tf.init_scope(), tf.compat.v1.variable_scope(root_scope, auxiliary_name_scope=False):
        return tf.compat.v1.get_variable(
            name=f"{_variable_name(param.name)}/grad_accum",
            shape=param.shape.as_list(),
            dtype=tf.float32,
            trainable=False,
            initializer=tf.compat.v1.zeros_initializer(),
            collections=[tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.SUM,
        )


def _backward_loss_scale(scale, num_shares):
    """What a share of the batch multiplies its loss by for its float16 backward pass.

    A share is one micro-batch on one replica; there are num_shares
    (micro-batches times replicas) in a step. Its loss is the mean over its
    own examples, so each example weighs num_shares times what it weighs in
    the whole batch's mean, and so does every float16 gradient of its
    backward pass: at the same loss scale a step of 4 micro-batches
    overflowed where the whole batch's did not (grouped runs of
    next_sentence_pairs skipped 1-2 of 200 steps, full-length runs none).
    Dividing the scale by num_shares gives the backward pass the whole
    batch's magnitudes, on one device or many; the gradients are divided by
    the same number, so the update is unchanged (exactly so for a power of
    two).
    """
    if num_shares == 1:
        return scale
    return scale / float(num_shares)


def _replicas_in_sync():
    """How many replicas each compute this loss on their own examples: the
    strategy's replica count inside `call_for_each_replica`, else 1."""
    context = tf.distribute.get_replica_context()
    return 1 if context is None else context.num_replicas_in_sync


class DynamicLossScale:
    """The float16 loss scale and its count of good steps, saved in checkpoints.

    `scale` multiplies the loss; `update(grads_finite)` returns the op that
    halves it (not below 1) after an overflow, or counts a good step and
    doubles it every `growth_interval` good steps in a row.
    """

    def __init__(self, initial_scale=None, growth_interval=None):
        """Defaults: INITIAL_LOSS_SCALE and LOSS_SCALE_GROWTH_INTERVAL (read when called)."""
        if initial_scale is None:
            initial_scale = INITIAL_LOSS_SCALE
        if growth_interval is None:
            growth_interval = LOSS_SCALE_GROWTH_INTERVAL
        self.growth_interval = growth_interval
        root_scope = tf.compat.v1.VariableScope(reuse=tf.compat.v1.AUTO_REUSE, name="")
        with tf.init_scope(), tf.compat.v1.variable_scope(root_scope, auxiliary_name_scope=False):
            self.scale_variable = tf.compat.v1.get_variable(
                "loss_scale",
                shape=[],
                dtype=tf.float32,
                trainable=False,
                initializer=tf.compat.v1.constant_initializer(initial_scale),
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
            self.good_steps = tf.compat.v1.get_variable(
                "loss_scale_good_steps",
                shape=[],
                dtype=tf.int64,
                trainable=False,
                initializer=tf.compat.v1.zeros_initializer(),
                aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA,
            )
        self.scale = tf.identity(self.scale_variable.read_value(), name="loss_scale_value")

    def update(self, grads_finite):
        """The op moving scale and good-step count on, given whether this step's grads are finite.

        Call it in a cross-replica context under a strategy (the optimizer
        does, with the finiteness of the averaged gradients).
        """
        scale = self.scale_variable.read_value()
        good = tf.where(grads_finite, self.good_steps.read_value() + 1, tf.constant(0, tf.int64))
        grow = good >= self.growth_interval
        new_scale = tf.where(
            grads_finite,
            tf.where(grow, scale * 2.0, scale),
            tf.maximum(scale * 0.5, 1.0),
        )
        new_good = tf.where(grow, tf.constant(0, tf.int64), good)
        return tf.group(
            _assign_everywhere(self.scale_variable, new_scale),
            _assign_everywhere(self.good_steps, new_good),
        )


def _assign_everywhere(variable, value):
    """Assigns `value` to a variable, to every copy of it under a strategy."""
    if tf.distribute.has_strategy() and tf.distribute.in_cross_replica_context():
        return tf.distribute.get_strategy().extended.update(
            variable, lambda v, x: v.assign(x, read_value=False), args=(value,), group=True
        )
    return variable.assign(value, read_value=False)


def create_learning_rate(init_lr, num_train_steps, num_warmup_steps, global_step=None):
    """The learning rate at `global_step`, as a scalar float32 Tensor.

    Linear decay from init_lr at step 0 to 0 at num_train_steps (polynomial
    decay of power 1, no cycling; it stays 0 after). During the first
    num_warmup_steps steps, if any, it is init_lr * step / num_warmup_steps
    instead.

    Raises:
      ValueError: num_train_steps is not positive or num_warmup_steps is
        negative.
    """
    if num_train_steps is None or num_train_steps <= 0:
        raise ValueError(f"num_train_steps must be positive, got {num_train_steps}")
    if num_warmup_steps is not None and num_warmup_steps < 0:
        raise ValueError(f"num_warmup_steps must not be negative, got {num_warmup_steps}")
    if global_step is None:
        global_step = tf.compat.v1.train.get_or_create_global_step()

    with tf.name_scope("learning_rate"):
        init_lr_tensor = tf.constant(init_lr, shape=[], dtype=tf.float32)

        # Linear decay: init_lr * (1 - min(step, total) / total).
        step = tf.cast(global_step, tf.float32)
        total_steps = tf.cast(num_train_steps, tf.float32)
        decay_progress = tf.minimum(step, total_steps) / total_steps
        learning_rate = init_lr_tensor * (1.0 - decay_progress)

        if num_warmup_steps:
            # Blended by a 0/1 float rather than selected, as the original
            # computed it (same values, same graph shape for XLA).
            step_int = tf.cast(global_step, tf.int32)
            warmup_steps_int = tf.constant(num_warmup_steps, dtype=tf.int32)
            warmup_progress = tf.cast(step_int, tf.float32) / tf.cast(warmup_steps_int, tf.float32)
            warmup_learning_rate = init_lr * warmup_progress
            is_warmup = tf.cast(step_int < warmup_steps_int, tf.float32)
            learning_rate = (1.0 - is_warmup) * learning_rate + is_warmup * warmup_learning_rate
    return learning_rate


def create_bert_optimizer(learning_rate, optimizer="adamw"):
    """The optimizer named `optimizer` with BERT's settings: weight decay 0.01
    except for LayerNorm and bias variables, betas 0.9 / 0.999, epsilon 1e-6.

    "adamw" is `AdamWeightDecayOptimizer`; "lamb" is `LAMBOptimizer`, which
    also leaves LayerNorm and bias variables out of its trust ratio.

    Raises:
      ValueError: optimizer is not in OPTIMIZERS.
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
    return OPTIMIZERS[optimizer](
        learning_rate=learning_rate,
        weight_decay_rate=WEIGHT_DECAY_RATE,
        beta_1=BETA_1,
        beta_2=BETA_2,
        epsilon=EPSILON,
        exclude_from_weight_decay=list(EXCLUDE_FROM_WEIGHT_DECAY),
    )


def apply_clipped_gradients(optimizer, grads, tvars, global_step, clip_norm=CLIP_NORM):
    """Clips `grads` by global norm, applies them, then increments global_step.

    Args:
      optimizer: an optimizer whose apply_gradients leaves global_step alone
        (as AdamWeightDecayOptimizer does).
      grads: list of gradients (Tensors, IndexedSlices or None), one per tvar.
      tvars: the variables the gradients belong to.
      global_step: the int64 global step variable.
      clip_norm: the global norm the gradients are scaled down to, if above.

    Returns:
      An op that updates the variables and then adds one to global_step. The
      increment waits for the update, so the learning rate an update uses is
      always that of the step before the increment.
    """
    grads, _ = tf.clip_by_global_norm(grads, clip_norm=clip_norm)
    apply_op = optimizer.apply_gradients(zip(grads, tvars), global_step=global_step)
    with tf.control_dependencies([apply_op]):
        step_update = global_step.assign_add(1, read_value=False)
    return tf.group(apply_op, step_update, name="train_op")


class AdamWeightDecayOptimizer(tf.compat.v1.train.Optimizer):
    """Adam without bias correction, with decoupled ("correct") L2 weight decay.

    Per variable, with gradient g:
      m = beta_1 * m + (1 - beta_1) * g
      v = beta_2 * v + (1 - beta_2) * g^2
      update = m / (sqrt(v) + epsilon) [+ weight_decay_rate * param]
      param = param - learning_rate * update
    Weight decay is added to the update, not to the loss, so it does not pass
    through m and v; it is skipped for variables whose name matches any
    pattern in exclude_from_weight_decay (re.search).

    The slots are float32, non-trainable, zero-initialized variables named
    "<variable name>/adam_m" and "<variable name>/adam_v" (the names BERT
    checkpoints carry). apply_gradients does not touch global_step.
    """

    def __init__(
        self,
        learning_rate,
        weight_decay_rate=0.0,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=None,
        name="AdamWeightDecayOptimizer",
    ):
        """Stores the hyperparameters; learning_rate may be a float or a scalar Tensor."""
        super().__init__(False, name)
        self.learning_rate = learning_rate
        self.weight_decay_rate = weight_decay_rate
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.exclude_from_weight_decay = exclude_from_weight_decay
        # Set by create_optimizer for loss scaling: when True, a step whose
        # (averaged) gradients are not all finite leaves every variable and
        # slot as it was, and on_gradients_checked(all_finite) (if set) is
        # called once to build an op that runs with the update.
        self.skip_nonfinite_updates = False
        self.on_gradients_checked = None

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Returns an op applying one update to every variable that has a gradient.

        Pairs whose gradient or variable is None are skipped. IndexedSlices
        gradients are made dense first (m and v decay on every row, as in the
        original). `global_step` is left unchanged (AdamW does not read it).

        Under a tf.distribute strategy, called in a replica context, the
        gradients of all replicas are averaged (ReduceOp.MEAN) and the
        averaged update is applied to each copy of the variables and slots;
        called in the cross-replica context, per-replica gradients are
        averaged the same way. Pass gradients of each replica's own loss, as
        create_optimizer does with tf.gradients (the base class's
        compute_gradients divides the loss by the replica count, for summing).
        """
        grads_and_vars = [
            (_dense_gradient(grad), param)
            for grad, param in grads_and_vars
            if grad is not None and param is not None
        ]
        step_args = self._step_args(global_step)

        if not tf.distribute.has_strategy():
            return self._apply_all(grads_and_vars, step_args, name)

        step_args = tuple(tf.convert_to_tensor(arg, dtype=tf.float32) for arg in step_args)
        if tf.distribute.in_cross_replica_context():
            return self._distributed_apply(
                tf.distribute.get_strategy(), grads_and_vars, step_args, name
            )
        return tf.distribute.get_replica_context().merge_call(
            self._distributed_apply, args=(grads_and_vars, step_args, name)
        )

    def _step_args(self, global_step):
        """What the updates of all variables share in one step: the learning rate."""
        del global_step  # Incremented by the caller; see create_optimizer.
        return (self.learning_rate,)

    def _variable_args(self, param_name):
        """What the update of the variable named `param_name` depends on: its weight decay."""
        return (self._do_use_weight_decay(param_name),)

    def _apply_all(self, grads_and_vars, step_args, name):
        """Single-copy path: one update per (gradient, variable) pair."""
        updates = []
        finite = self._all_finite([grad for grad, _ in grads_and_vars])
        for grad, param in grads_and_vars:
            m, v = self._get_or_create_slots(param)
            variable_args = self._variable_args(param.name)
            updates.append(self._apply_one(param, grad, m, v, step_args, variable_args, finite))
        updates += self._after_check(finite)
        return tf.group(*updates, name=name)

    def _all_finite(self, grads):
        """None unless skipping non-finite updates; else a bool scalar over all `grads`."""
        if not self.skip_nonfinite_updates:
            return None
        return tf.reduce_all([tf.reduce_all(tf.math.is_finite(g)) for g in grads])

    def _after_check(self, finite):
        if finite is None or self.on_gradients_checked is None:
            return []
        return [self.on_gradients_checked(finite)]

    def _distributed_apply(self, strategy, grads_and_vars, step_args, name):
        """Cross-replica path: average gradients, then update every variable copy.

        `strategy.extended.update` runs `_apply_one` once per copy, on that
        copy's device, with that replica's share of the averaged gradient and
        step arguments; the mirrored slots resolve to their local copy there.
        """
        reduced_grads = strategy.extended.batch_reduce_to(
            tf.distribute.ReduceOp.MEAN, grads_and_vars
        )
        updates = []
        finite = None
        if self.skip_nonfinite_updates:
            finite = self._all_finite(
                [strategy.experimental_local_results(g)[0] for g in reduced_grads]
            )
        for grad, (_, param) in zip(reduced_grads, grads_and_vars):
            m, v = self._get_or_create_slots(param)
            variable_args = self._variable_args(param.name)
            updates.append(
                strategy.extended.update(
                    param,
                    self._apply_one,
                    args=(grad, m, v, step_args, variable_args, finite),
                    group=True,
                )
            )
        updates += self._after_check(finite)
        return tf.group(*updates, name=name)

    def _next_moments(self, grad, m, v):
        """Adam's moment estimates after `grad`: (next_m, next_v)."""
        next_m = tf.multiply(self.beta_1, m) + tf.multiply(1.0 - self.beta_1, grad)
        next_v = tf.multiply(self.beta_2, v) + tf.multiply(1.0 - self.beta_2, tf.square(grad))
        return next_m, next_v

    def _apply_one(self, param, grad, m, v, step_args, variable_args, finite=None):
        """The update of one variable and its two slots; returns the grouped assigns.

        With `finite` (a bool scalar) False, the assigns write back the old values.
        """
        (learning_rate,) = step_args
        (use_weight_decay,) = variable_args
        next_m, next_v = self._next_moments(grad, m, v)
        # No bias correction of m and v: BERT was trained this way.
        update = next_m / (tf.sqrt(next_v) + self.epsilon)
        if use_weight_decay:
            update += self.weight_decay_rate * param
        next_param = param - learning_rate * update
        return self._assign_all(param, m, v, next_param, next_m, next_v, finite)

    @staticmethod
    def _assign_all(param, m, v, next_param, next_m, next_v, finite):
        """Writes the new values of a variable and its slots (the old ones if not `finite`)."""
        if finite is not None:
            next_m = tf.where(finite, next_m, m)
            next_v = tf.where(finite, next_v, v)
            next_param = tf.where(finite, next_param, param)
        return tf.group(
            param.assign(next_param, read_value=False),
            m.assign(next_m, read_value=False),
            v.assign(next_v, read_value=False),
        )

    def _get_or_create_slots(self, param):
        """Returns (adam_m, adam_v) of `param`, creating them on first use.

        They are named after the variable whatever the caller's variable
        scope, and created outside any control-flow or control-dependency
        context (so apply_gradients may be called inside a tf.cond).
        """
        param_name = _variable_name(param.name)
        root_scope = tf.compat.v1.VariableScope(reuse=tf.compat.v1.AUTO_REUSE, name="")
        slots = []
        with tf.init_scope(), tf.compat.v1.variable_scope(root_scope, auxiliary_name_scope=False):
            for suffix in ("adam_m", "adam_v"):
                slots.append(
                    tf.compat.v1.get_variable(
                        name=f"{param_name}/{suffix}",
                        shape=param.shape.as_list(),
                        dtype=tf.float32,
                        trainable=False,
                        initializer=tf.compat.v1.zeros_initializer(),
                    )
                )
        return tuple(slots)

    def _do_use_weight_decay(self, param_name):
        """Whether weight decay applies to the variable named `param_name`."""
        return bool(self.weight_decay_rate) and not self._is_excluded(param_name)

    def _is_excluded(self, param_name):
        """Whether `param_name` matches a pattern of exclude_from_weight_decay."""
        param_name = _variable_name(param_name)
        patterns = self.exclude_from_weight_decay or []
        return any(re.search(pattern, param_name) is not None for pattern in patterns)

    def _get_variable_name(self, param_name):
        """Strips the output index: "bert/pooler/dense/bias:0" -> "bert/pooler/dense/bias"."""
        return _variable_name(param_name)


class LAMBOptimizer(AdamWeightDecayOptimizer):
    """LAMB (You et al., 2019): Adam's update rescaled per variable by a trust ratio.

    Per variable, at step t = global_step + 1, with gradient g:
      m = beta_1 * m + (1 - beta_1) * g
      v = beta_2 * v + (1 - beta_2) * g^2
      update = (m / (1 - beta_1^t)) / (sqrt(v / (1 - beta_2^t)) + epsilon)
               [+ weight_decay_rate * param]
      trust_ratio = ||param|| / ||update||, or 1 if either norm is 0
      param = param - learning_rate * trust_ratio * update
    Norms are Euclidean over the whole variable: each variable is one "layer"
    of the paper. Variables whose name matches exclude_from_weight_decay
    (BERT: LayerNorm and bias) get neither the decay nor the trust ratio:
    their step is plain bias-corrected Adam.

    Bias correction follows the paper's algorithm, unlike the AdamW path
    (BERT's AdamW has none). t comes from the global step, which the
    checkpoint holds, so a resumed or re-started run corrects as an
    uninterrupted one; under gradient accumulation t counts optimizer steps,
    and under loss scaling it counts skipped steps too.

    The slots are AdamWeightDecayOptimizer's ("<variable name>/adam_m",
    "<variable name>/adam_v"): no variable is added, so a checkpoint written
    with either optimizer loads into a run with the other.
    """

    def __init__(
        self,
        learning_rate,
        weight_decay_rate=0.0,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=None,
        name="LAMBOptimizer",
    ):
        """As AdamWeightDecayOptimizer's; the exclusions also cover the trust ratio."""
        super().__init__(
            learning_rate,
            weight_decay_rate=weight_decay_rate,
            beta_1=beta_1,
            beta_2=beta_2,
            epsilon=epsilon,
            exclude_from_weight_decay=exclude_from_weight_decay,
            name=name,
        )

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """As AdamWeightDecayOptimizer's, but reads (never moves) the global step.

        global_step: the step counter for bias correction; by default the
        graph's global step.

        Raises:
          ValueError: no global_step is given and the graph has none.
        """
        if global_step is None:
            global_step = tf.compat.v1.train.get_global_step()
        if global_step is None:
            raise ValueError("LAMBOptimizer needs a global step for its bias correction")
        return super().apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def _step_args(self, global_step):
        """(learning rate, 1 - beta_1^t, 1 - beta_2^t), with t = global_step + 1."""
        t = tf.cast(global_step, tf.float32) + 1.0
        return (
            self.learning_rate,
            1.0 - tf.pow(tf.constant(self.beta_1, tf.float32), t),
            1.0 - tf.pow(tf.constant(self.beta_2, tf.float32), t),
        )

    def _variable_args(self, param_name):
        """(use weight decay, use trust ratio) for the variable named `param_name`."""
        return (self._do_use_weight_decay(param_name), not self._is_excluded(param_name))

    def _apply_one(self, param, grad, m, v, step_args, variable_args, finite=None):
        """LAMB's update of one variable and its two slots (see the class docstring)."""
        learning_rate, correction_1, correction_2 = step_args
        use_weight_decay, use_trust_ratio = variable_args
        next_m, next_v = self._next_moments(grad, m, v)
        update = (next_m / correction_1) / (tf.sqrt(next_v / correction_2) + self.epsilon)
        if use_weight_decay:
            update += self.weight_decay_rate * param
        if use_trust_ratio:
            param_norm = tf.norm(param)
            update_norm = tf.norm(update)
            both_positive = tf.logical_and(param_norm > 0.0, update_norm > 0.0)
            trust_ratio = tf.where(
                both_positive, tf.math.divide_no_nan(param_norm, update_norm), 1.0
            )
            update = trust_ratio * update
        next_param = param - learning_rate * update
        return self._assign_all(param, m, v, next_param, next_m, next_v, finite)


# The optimizers create_optimizer and create_bert_optimizer build, by name.
OPTIMIZERS = {"adamw": AdamWeightDecayOptimizer, "lamb": LAMBOptimizer}


def _variable_name(tensor_name):
    """A variable's name without its ":0" output index."""
    m = re.match(r"^(.*):\d+$", tensor_name)
    return m.group(1) if m is not None else tensor_name


def _dense_gradient(grad):
    """IndexedSlices -> dense Tensor (duplicate indices summed); others unchanged."""
    if isinstance(grad, tf.IndexedSlices):
        return tf.convert_to_tensor(grad)
    return grad
