"""Building the graphs the engine runs: one training graph, one eval / predict graph.

Each builder returns a plain record of the graph objects a session needs
(TrainGraph, EvalGraph, PredictGraph); the settings that shaped the graph
stay in RunConfig. ModelBuilder is the one place a model_fn is called and an
input_fn's dataset prepared. The model_fn gets params and batch size only:
what the model computes (precision, optimizer) is in its own closure, and
what training needs of its step (learning rate, accumulate op, variables a
checkpoint may lack) comes back in its EstimatorSpec.
"""

import collections
import contextlib

import tensorflow as tf

from . import input_data, input_position
from .checkpoints import make_saver_and_init_ops
from .config import EstimatorSpec, ModeKeys, UsageError

TrainGraph = collections.namedtuple(
    "TrainGraph",
    [
        "global_step",  # the global_step variable
        "loss",  # runs one optimizer step; its mean loss over replicas
        "step_after",  # global_step once `loss` has run
        "summary_op",  # the model_fn's merged summaries, or None
        "learning_rate",  # scalar learning-rate tensor, or None
        "weights_finite",  # whether every trainable float variable is finite
        "saver",
        "init_ops",  # checkpoints.InitOps
        "scaffolds",  # what the model_fn's scaffold_fn returned
        "optional_in_checkpoint",  # the spec's variables a checkpoint may lack
        "steps_this_run",  # placeholder of the --steps_per_run graph loop, or None
        "accumulate_loss",  # one accumulate-only micro-batch, or None
        "input_position",  # input_position.InputPosition (one device), or None
        "input_files",  # the files the input pipeline reads (one device; else [])
        "stop_flags",  # multi-worker: this worker's [SIGTERM, SIGINT] received (fed), or None
        "job_stop_flags",  # multi-worker: stop_flags summed over the job, or None
        "examples_trained",  # examples trained so far once `loss` has run, or None
    ],
)

EvalGraph = collections.namedtuple(
    "EvalGraph",
    [
        "global_step",
        "values",
        "update_op",
        "predictions",
        "saver",
        "init_ops",
        "scaffolds",
        "optional_in_checkpoint",
        "input_files",
    ],
)

PredictGraph = collections.namedtuple(
    "PredictGraph",
    ["predictions", "saver", "init_ops", "scaffolds", "optional_in_checkpoint", "input_files"],
)

# One training step as built on the replicas: its loss and what goes with it.
_Step = collections.namedtuple(
    "_Step",
    [
        "loss",
        "accumulate_loss",
        "steps_this_run",
        "learning_rate",
        "scaffolds",
        "optional_in_checkpoint",
        "examples_trained",  # the counter of the specs' examples, or None
    ],
)

# Op types left out of XLA clusters under --use_xla: random numbers (so that
# dropout masks and initializers match a run without XLA) and ops XLA has no
# kernel for.
_NOT_XLA_OPS = frozenset(
    [
        "RandomUniform",
        "RandomUniformInt",
        "RandomStandardNormal",
        "TruncatedNormal",
        "Assert",
        "Print",
        "PrintV2",
        "ScalarSummary",
        "HistogramSummary",
        "MergeSummary",
        "IteratorGetNext",
    ]
)


def _xla_compilable(node_def):
    return node_def.op not in _NOT_XLA_OPS and "Initializer" not in node_def.name


def _split_features(element):
    """An input_fn's dataset yields features or (features, labels)."""
    if isinstance(element, tuple) and len(element) == 2:
        return element[0], element[1]
    return element, None


class ModelBuilder:
    """Calls a model_fn and an input_fn with the params of a run, under its XLA setting."""

    def __init__(self, model_fn, config, params):
        self.model_fn = model_fn
        self.config = config
        self.params = dict(params or {})

    def params_for(self, batch_size):
        """What a model_fn or input_fn gets: a copy of the Estimator's params, with
        "batch_size" (per replica) set for the call."""
        params = dict(self.params)
        params["batch_size"] = batch_size
        return params

    def call_model_fn(self, features, labels, mode, batch_size):
        with self.xla_scope():
            spec = self.model_fn(
                features=features,
                labels=labels,
                mode=mode,
                params=self.params_for(batch_size),
            )
        if not isinstance(spec, EstimatorSpec):
            raise TypeError(f"model_fn must return an engine.EstimatorSpec, got {type(spec)}")
        return spec

    def xla_scope(self):
        """With --use_xla, marks every op the model_fn builds (forward, gradients,
        optimizer update) for XLA compilation, except random-number and
        initializer ops, so dropout masks and initial weights are those of a
        run without XLA."""
        if not self.config.use_xla:
            return contextlib.nullcontext()
        return tf.xla.experimental.jit_scope(
            compile_ops=_xla_compilable, separate_compiled_gradients=False
        )

    @property
    def deterministic(self):
        return self.config.tf_random_seed is not None

    def prepare_dataset(self, dataset, skip=0):
        if not isinstance(dataset, tf.data.Dataset):
            raise TypeError(f"input_fn must return a tf.data.Dataset, got {type(dataset)}")
        if self.deterministic:
            options = tf.data.Options()
            options.deterministic = True
            dataset = dataset.with_options(options)
        if skip:
            dataset = dataset.skip(skip)
        # The next batches are made while the current step runs (on a GPU the
        # host input then overlaps device compute).
        return dataset.prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------
# Training


def build_train_graph(
    builder,
    dist,
    input_fn,
    global_batch_size,
    start_step,
    saved_position=None,
    start_over=False,
):
    """Builds everything one training session runs; returns a TrainGraph.

    saved_position (input_position.SavedPosition, one device) is the input
    position to be restored: the pipeline is then built as it was when that
    was saved. If the input_fn now builds another pipeline, or the pipeline
    reads other data, the graph goes no further than the pipeline and an
    input_position.NotRestored is returned: build again without
    saved_position (and with its start_over), as a run without one would
    (the model, built after the check, then draws what it draws in such a
    run). start_over: the input starts from its beginning, without the
    seeded skip of the batches the checkpoint's steps used (they were of
    other data).
    """
    config = builder.config
    with dist.scope():
        global_step = tf.compat.v1.train.get_or_create_global_step()
        iterator, batch_size, skip = _train_iterator(
            builder, dist, input_fn, global_batch_size, start_step, saved_position, start_over
        )
        files = input_data.pipeline_files(iterator.dataset) if dist.strategy is None else []
        fingerprint = data = None
        if saved_position is not None:
            fingerprint = input_position.dataset_fingerprint(iterator.dataset)
            data = input_data.identities(files)
            not_restored = input_position.not_restorable(fingerprint, skip, data, saved_position)
            if not_restored is not None:
                return not_restored
        summaries_before = set(tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.SUMMARIES))
        step = _build_train_step(builder, dist, iterator, batch_size)
        with tf.control_dependencies([step.loss]):
            step_after = tf.identity(global_step.read_value())
            examples_trained = None
            if step.examples_trained is not None:
                examples_trained = tf.identity(step.examples_trained.read_value())
        summaries = _new_in_this_graph(tf.compat.v1.GraphKeys.SUMMARIES, summaries_before)
        learning_rate = step.learning_rate
        if dist.is_tpu:
            summaries, learning_rate = [], None
        weights_finite = _weights_finite()
        # Made after the model, so that seeded runs draw the initial weights
        # they drew before these ops existed.
        position = None
        if dist.strategy is None:
            position = input_position.InputPosition(
                iterator.iterator, iterator.dataset, skip, files, fingerprint, data
            )
        stop_flags, job_stop_flags = _job_stop_flags(dist)
        saver, init_ops = make_saver_and_init_ops(
            iterator.initialize, max_to_keep=config.keep_checkpoint_max
        )
        return TrainGraph(
            global_step=global_step,
            loss=step.loss,
            step_after=step_after,
            summary_op=tf.compat.v1.summary.merge(summaries) if summaries else None,
            learning_rate=learning_rate,
            weights_finite=weights_finite,
            saver=saver,
            init_ops=init_ops,
            scaffolds=step.scaffolds,
            optional_in_checkpoint=step.optional_in_checkpoint,
            steps_this_run=step.steps_this_run,
            accumulate_loss=step.accumulate_loss,
            input_position=position,
            input_files=files,
            stop_flags=stop_flags,
            job_stop_flags=job_stop_flags,
            examples_trained=examples_trained,
        )


def _job_stop_flags(dist):
    """Multi-worker: (this worker's stop flags, fed each step; their sum over the job).

    The flags are [SIGTERM received, SIGINT received]. Fetched with every
    step, the sum tells every worker at the same step that one of them was
    signalled, so that all save that step and stop together. (None, None)
    for a single process.
    """
    if dist.num_workers < 2:
        return None, None
    flags = tf.compat.v1.placeholder_with_default(tf.zeros([2]), [2], name="stop_flags")

    def replica_fn():
        context = tf.distribute.get_replica_context()
        return context.all_reduce(tf.distribute.ReduceOp.SUM, flags)

    total = dist.strategy.extended.call_for_each_replica(replica_fn)
    return flags, dist.strategy.experimental_local_results(total)[0]


def _new_in_this_graph(collection, before):
    """Members of a collection added since `before`, left out those of replica copies.

    Tensors made inside a graph loop (--steps_per_run) cannot be fetched.
    """
    this_graph = tf.compat.v1.get_default_graph()
    return [
        t
        for t in tf.compat.v1.get_collection(collection)
        if t.graph is this_graph and t not in before and not t.name.startswith("replica_")
    ]


def _weights_finite():
    trainable = [v for v in tf.compat.v1.trainable_variables() if v.dtype.base_dtype.is_floating]
    return tf.reduce_all(
        [tf.reduce_all(tf.math.is_finite(v.read_value())) for v in trainable] or [True]
    )


def _train_iterator(
    builder, dist, input_fn, global_batch_size, start_step, saved_position, start_over
):
    """The training input on every replica.

    Returns (iterator, per-replica micro-batch, the batches skipped first).
    """
    batch_size = dist.replica_batch_size(global_batch_size, "train_batch_size")
    num_accumulation_steps = builder.config.num_accumulation_steps
    if batch_size % num_accumulation_steps:
        raise UsageError(
            f"train_batch_size={global_batch_size} per replica ({batch_size}) must be "
            f"a multiple of --num_accumulation_steps={num_accumulation_steps}"
        )
    # With accumulation the input_fn makes micro-batches; an optimizer step
    # (one global_step) takes num_accumulation_steps of them per replica.
    batch_size //= num_accumulation_steps
    # A seeded run that resumes skips the batches the checkpointed steps used;
    # one that restores its input position builds the pipeline it saved.
    skip = (
        start_step * dist.num_local_replicas * num_accumulation_steps
        if builder.deterministic and not start_over
        else 0
    )
    if saved_position is not None:
        skip = saved_position.skip

    def dataset_fn(input_context):
        dataset = input_fn(builder.params_for(batch_size))
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = builder.prepare_dataset(dataset).shard(
                input_context.num_input_pipelines, input_context.input_pipeline_id
            )
            return dataset.skip(skip) if skip else dataset
        return builder.prepare_dataset(dataset, skip)

    return dist.make_iterator(dataset_fn), batch_size, skip


def _build_train_step(builder, dist, iterator, batch_size):
    """The one place a training step is built; returns a _Step.

    Running its loss takes the next element of `iterator` on every replica,
    calls the model_fn in TRAIN mode there and runs its train_op (which must
    add one to global_step); the loss is the mean over replicas. The
    learning rate is the spec's (the first replica's), for the log.

    With --num_accumulation_steps=N > 1, accumulate_loss runs one
    micro-batch and only accumulates its gradients: it runs the spec's
    accumulate_op, which the spec must carry (the optimizer step is N-1 runs
    of it, then one run of the loss).

    With --steps_per_run=k > 1 (one device, no accumulation) the step is the
    body of a graph loop that runs steps_this_run (a placeholder, default 1,
    at most k) steps per session.run; the loss and learning_rate are those
    of its last step.
    """
    num_accumulation_steps = builder.config.num_accumulation_steps
    specs, scaffolds, counters = [], [], []

    def replica_step(element):
        features, labels = _split_features(element)
        with dist.model_fn_scope():
            spec = builder.call_model_fn(features, labels, ModeKeys.TRAIN, batch_size)
            if spec.scaffold_fn is not None:
                scaffolds.append(spec.scaffold_fn())
            count = []
            if spec.examples is not None:
                counters.append(_examples_counter())
                count = [counters[-1].assign_add(tf.cast(spec.examples, tf.int64))]
        specs.append(spec)
        with tf.control_dependencies([spec.train_op, *count]):
            loss = tf.identity(spec.loss)
        if num_accumulation_steps == 1:
            if spec.accumulate_op is not None:
                # Its train_op would average gradients accumulated over micro-batches
                # that no step here runs.
                raise UsageError(
                    "the model_fn's EstimatorSpec carries an accumulate_op (a train_op built "
                    "for gradient accumulation) but RunConfig has num_accumulation_steps=1: "
                    "give both the same --num_accumulation_steps"
                )
            return loss
        if spec.accumulate_op is None:
            raise UsageError(
                f"--num_accumulation_steps={num_accumulation_steps} needs a model_fn whose "
                "EstimatorSpec carries the accumulate_op of its train_op (the op that only "
                "adds one micro-batch's gradients)"
            )
        with tf.control_dependencies([spec.accumulate_op, *count]):
            return loss, tf.identity(spec.loss)

    if builder.config.steps_per_run > 1 and dist.strategy is None and num_accumulation_steps == 1:
        loss, steps_this_run, rate = _build_step_loop(iterator, replica_step, specs)
        return _Step(
            loss,
            None,
            steps_this_run,
            rate,
            scaffolds,
            _optional(specs, counters),
            _first(counters),
        )
    outputs = dist.run(replica_step, iterator)
    rate = _first_replica([spec.learning_rate for spec in specs])
    if num_accumulation_steps == 1:
        loss, accumulate_loss = dist.reduce_mean(outputs), None
    else:
        loss, accumulate_loss = dist.reduce_mean(outputs[0]), dist.reduce_mean(outputs[1])
    return _Step(
        loss, accumulate_loss, None, rate, scaffolds, _optional(specs, counters), _first(counters)
    )


def _first_replica(tensors):
    """The first replica's of the tensors each replica's model_fn made (the others' names
    start with "replica_"), or None when there are none."""
    for tensor in tensors:
        if tensor is not None and not tensor.name.startswith("replica_"):
            return tensor
    return None


def _optional(specs, counters):
    """The variables any of the specs says a checkpoint may lack, and the examples
    counter (checkpoints of runs that counted none have none)."""
    return tuple(v for spec in specs for v in spec.optional_in_checkpoint) + tuple(counters[:1])


def _first(values):
    return values[0] if values else None


def _examples_counter():
    """The examples trained so far (EstimatorSpec.examples), saved with the checkpoints;
    each replica adds its own."""
    with tf.compat.v1.variable_scope(
        tf.compat.v1.get_variable_scope(), reuse=tf.compat.v1.AUTO_REUSE
    ):
        return tf.compat.v1.get_variable(
            "examples_trained",
            [],
            tf.int64,
            tf.compat.v1.zeros_initializer(),
            trainable=False,
            aggregation=tf.VariableAggregation.SUM,
        )


def _build_step_loop(iterator, replica_step, specs):
    """Wraps one-device training steps in a tf.while_loop (see _build_train_step).

    Returns (loss, steps_this_run placeholder, learning rate or None).
    """
    steps_this_run = tf.compat.v1.placeholder_with_default(
        tf.constant(1, tf.int32), [], name="steps_this_run"
    )

    def body(i, unused_loss, unused_rate):
        del unused_loss, unused_rate
        loss = replica_step(iterator.get_next())
        rate = specs[-1].learning_rate
        rate = tf.constant(0.0) if rate is None else tf.cast(rate, tf.float32)
        return i + 1, tf.cast(loss, tf.float32), rate

    _, loss, rate = tf.compat.v1.while_loop(
        lambda i, unused_loss, unused_rate: i < steps_this_run,
        body,
        [tf.constant(0), tf.constant(0.0), tf.constant(0.0)],
        parallel_iterations=1,
    )
    has_rate = any(spec.learning_rate is not None for spec in specs)
    return loss, steps_this_run, rate if has_rate else None


# --------------------------------------------------------------------------
# Evaluation and prediction (one device)


def _build_single_device(builder, input_fn, mode, batch_size):
    """Input, model_fn and scaffolds for evaluate / predict; returns (iterator, spec, ...)."""
    if builder.config.tf_random_seed is not None:
        tf.compat.v1.set_random_seed(builder.config.tf_random_seed)
    global_step = tf.compat.v1.train.get_or_create_global_step()
    dataset = builder.prepare_dataset(input_fn(builder.params_for(batch_size)))
    # Read from the graph while it holds the pipeline only.
    files = input_data.pipeline_files(dataset)
    iterator = tf.compat.v1.data.make_initializable_iterator(_without_autotuning(dataset))
    features, labels = _split_features(iterator.get_next())
    spec = builder.call_model_fn(features, labels, mode, batch_size)
    scaffolds = [spec.scaffold_fn()] if spec.scaffold_fn is not None else []
    return global_step, iterator, spec, scaffolds, files


def _without_autotuning(dataset):
    """`dataset` with tf.data's autotuning off: what AUTOTUNE asks for (the map's
    parallelism, the prefetch buffer) takes tf.data's fixed defaults instead.

    The autotuner's thread re-plans the pipeline at intervals that double up
    to a minute, and closing the session waited for it: a prediction of
    1,600 pairs on a loaded 2-core machine then spent 12-48 s of wall time,
    and no CPU, in Session.close, in half the runs (never in runs without
    autotuning). An eval or predict pipeline only decodes records ahead of
    a model that takes far longer per batch, so there is nothing to tune;
    the records and their order are the same.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def build_eval_graph(builder, input_fn, batch_size):
    """The model_fn's metrics (and the mean loss) as streaming ops; returns an EvalGraph.

    Its `predictions` are the EVAL spec's, if it has any: an evaluation that
    also needs every example's output (metrics that do not stream) gets both
    from one pass over the data.
    """
    global_step, iterator, spec, scaffolds, files = _build_single_device(
        builder, input_fn, ModeKeys.EVAL, batch_size
    )
    metric_ops = {}
    if spec.eval_metrics is not None:
        metric_fn, tensors = spec.eval_metrics
        if isinstance(tensors, dict):
            metric_ops = metric_fn(**tensors)
        else:
            metric_ops = metric_fn(*tensors)
        metric_ops = dict(metric_ops)
    if "loss" not in metric_ops:
        metric_ops["loss"] = tf.compat.v1.metrics.mean(spec.loss)
    values = {key: value for key, (value, _) in metric_ops.items()}
    update_op = tf.group(*[update for _, update in metric_ops.values()])
    saver, init_ops = make_saver_and_init_ops(lambda: iterator.initializer)
    predictions = spec.predictions
    if predictions is not None and not isinstance(predictions, dict):
        predictions = {"predictions": predictions}
    return EvalGraph(
        global_step=global_step,
        values=values,
        update_op=update_op,
        predictions=predictions,
        saver=saver,
        init_ops=init_ops,
        scaffolds=scaffolds,
        optional_in_checkpoint=spec.optional_in_checkpoint,
        input_files=files,
    )


def build_predict_graph(builder, input_fn, batch_size):
    _, iterator, spec, scaffolds, files = _build_single_device(
        builder, input_fn, ModeKeys.PREDICT, batch_size
    )
    predictions = spec.predictions
    if not isinstance(predictions, dict):
        predictions = {"predictions": predictions}
    saver, init_ops = make_saver_and_init_ops(lambda: iterator.initializer)
    return PredictGraph(
        predictions, saver, init_ops, scaffolds, spec.optional_in_checkpoint, files
    )
