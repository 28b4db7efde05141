"""tf.estimator and tf.contrib.tpu's TPUEstimator of TF 1.x, on this project's engine.

TF 1.x BERT code builds a TPUEstimator (or a tf.estimator.Estimator) and
calls train / evaluate / predict. Here both are engine.Estimator with the
TF 1.x calling conventions put back, so such code gets the engine's
checkpoints, logs, TensorBoard events, stop handling and error contract:

- model_fn and input_fn receive `params`, `config`, `mode` and `labels`
  only where their signature names them, as tf.estimator did; a
  TPUEstimator's params carry "batch_size", a plain Estimator's do not;
- a model_fn returns TPUEstimatorSpec (eval_metrics, scaffold_fn) or
  EstimatorSpec (eval_metric_ops, scaffold, training_hooks);
- evaluate returns numpy values (float32 metrics, int64 global_step), so
  `"%s = %s" % (key, value)` prints `0.45` as TF 1.x did;
- predict yields a single prediction tensor bare, a dict of them as dicts;
- model_dir=None is a new temporary directory.

The devices every Estimator trains on come from run_tf1.py's own options
(user scripts define no flag for them): estimator_classes(devices) gives
the Estimator and TPUEstimator with those Devices bound, which
estimator_module and tpu_module put in tf.estimator and tf.contrib.tpu
(tf1.install() builds them once). The engine is used through its front
door only.
"""

import collections
import glob
import inspect
import os
import tempfile

import numpy as np
import tensorflow as tf
from absl import logging

from ... import engine
from ..machinery.namespaces import Namespace, unsupported
from ..machinery.user_code import user_location
from . import export as tf1_export
from . import input_files as tf1_input_files
from . import specs as tf1_specs
from . import tensor_input as tf1_tensor_input
from .numpy_input import numpy_input_fn

_V1 = tf.compat.v1

ModeKeys = Namespace(
    "tf.estimator.ModeKeys",
    None,
    {"TRAIN": engine.ModeKeys.TRAIN, "EVAL": engine.ModeKeys.EVAL, "PREDICT": "infer"},
)

_DEFAULT_SAVE_STEPS = 1000


class TPUConfig:
    """tf.contrib.tpu.TPUConfig: the TPU host loop; iterations_per_loop is kept for the log."""

    def __init__(
        self,
        iterations_per_loop=2,
        num_shards=None,
        num_cores_per_replica=None,
        per_host_input_for_training=True,
        tpu_job_name=None,
        initial_infeed_sleep_secs=None,
        input_partition_dims=None,
        eval_training_input_configuration=None,
        experimental_host_call_every_n_steps=1,
    ):
        self.iterations_per_loop = iterations_per_loop
        self.num_shards = num_shards
        self.num_cores_per_replica = num_cores_per_replica
        self.per_host_input_for_training = per_host_input_for_training
        self.tpu_job_name = tpu_job_name


class InputPipelineConfig:
    """tf.contrib.tpu.InputPipelineConfig's values (the engine feeds every device itself)."""

    PER_SHARD_V1 = 1
    PER_HOST_V1 = 2
    PER_HOST_V2 = 3
    BROADCAST = 4
    SLICED = 5


# The devices every Estimator of the user's code trains on: engine.RunConfig's
# distribution_strategy and num_gpus. User scripts define no flag for them
# (TF 1.x took them from RunConfig's train_distribute): run_tf1.py's own
# --distribution_strategy and --num_gpus, given before the script, choose them.
Devices = collections.namedtuple("Devices", ["distribution_strategy", "num_gpus"])
ONE_DEVICE = Devices("one_device", None)


def _one_replica(strategy):
    """Whether a RunConfig's strategy (None, or a tf.distribute strategy) is one device: a
    MirroredStrategy on a machine of one CPU and no GPU trains as the default does."""
    return strategy is None or getattr(strategy, "num_replicas_in_sync", 0) == 1


class RunConfig:
    """tf.estimator.RunConfig and tf.contrib.tpu.RunConfig: settings for engine.RunConfig.

    Checkpoints are saved by steps: save_checkpoints_steps, else (where TF
    1.x saved every 600 seconds) every 1000 steps, and at the end.
    """

    def __init__(
        self,
        model_dir=None,
        tf_random_seed=None,
        save_summary_steps=100,
        save_checkpoints_steps=None,
        save_checkpoints_secs=None,
        session_config=None,
        keep_checkpoint_max=5,
        keep_checkpoint_every_n_hours=10000,
        log_step_count_steps=100,
        tpu_config=None,
        master=None,
        cluster=None,
        evaluation_master=None,
        **unused,
    ):
        del keep_checkpoint_every_n_hours, evaluation_master
        for name in ("train_distribute", "eval_distribute", "experimental_distribute"):
            if not _one_replica(unused.get(name)):
                raise unsupported(f"RunConfig({name}=...)", "run_tf1.py's --distribution_strategy")
        self.model_dir = model_dir
        self.tf_random_seed = tf_random_seed
        self.save_summary_steps = save_summary_steps
        self.save_checkpoints_steps = save_checkpoints_steps
        self.save_checkpoints_secs = save_checkpoints_secs
        self.session_config = session_config
        self.keep_checkpoint_max = keep_checkpoint_max
        self.log_step_count_steps = log_step_count_steps
        # Only tf.contrib.tpu.RunConfig shows it (TPURunConfig): code of TF 1.x's years
        # told the two apart by hasattr(config, "tpu_config") (tensor2tensor's input_fn).
        self._tpu_config = tpu_config or TPUConfig()
        self.master = master
        self.cluster = cluster

    def replace(self, **changes):
        """A copy with the given attributes changed, as tf.estimator.RunConfig.replace."""
        copy = type(self).__new__(type(self))
        copy.__dict__.update(self.__dict__, **changes)
        return copy

    def engine_config(self, model_dir, use_tpu, devices=ONE_DEVICE):
        """The engine.RunConfig of an Estimator in model_dir training on `devices`."""
        cluster = self.cluster
        tpu = self._tpu_config
        return engine.RunConfig(
            model_dir=model_dir,
            save_checkpoints_steps=self.save_checkpoints_steps or _DEFAULT_SAVE_STEPS,
            keep_checkpoint_max=self.keep_checkpoint_max,
            iterations_per_loop=1000,
            log_step_count_steps=self.log_step_count_steps,
            save_summary_steps=self.save_summary_steps,
            session_config=self.session_config,
            tf_random_seed=self.tf_random_seed,
            use_tpu=use_tpu,
            tpu_name=getattr(cluster, "tpu", None),
            tpu_zone=getattr(cluster, "zone", None),
            gcp_project=getattr(cluster, "project", None),
            master=self.master if use_tpu else None,
            num_tpu_cores=tpu.num_shards or 8,
            distribution_strategy=devices.distribution_strategy,
            num_gpus=devices.num_gpus,
        )


class TPURunConfig(RunConfig):
    """tf.contrib.tpu.RunConfig: tf.estimator.RunConfig's settings and its tpu_config."""

    @property
    def tpu_config(self):
        return self._tpu_config


class TPUEstimatorSpec:
    """tf.contrib.tpu.TPUEstimatorSpec: what a TPUEstimator's model_fn returns."""

    def __init__(
        self,
        mode,
        predictions=None,
        loss=None,
        train_op=None,
        eval_metrics=None,
        export_outputs=None,
        scaffold_fn=None,
        host_call=None,
        training_hooks=None,
        evaluation_hooks=None,
        prediction_hooks=None,
    ):
        self._where = user_location()
        tf1_specs.check_host_call("eval_metrics", eval_metrics, self._where)
        tf1_specs.check_hooks(training_hooks, self._where)
        if host_call is not None:
            raise unsupported("TPUEstimatorSpec(host_call=...)", "tf.summary ops in the model_fn")
        _refuse_hooks(prediction_hooks, "prediction_hooks")
        self.mode = mode
        self.predictions = predictions
        self.loss = loss
        self.train_op = train_op
        self.eval_metrics = eval_metrics
        self.export_outputs = export_outputs
        self.scaffold_fn = scaffold_fn
        self.training_hooks = list(training_hooks or [])
        self.evaluation_hooks = list(evaluation_hooks or [])


class EstimatorSpec(TPUEstimatorSpec):
    """tf.estimator.EstimatorSpec: eval_metric_ops {name: (value, update_op)}, a Scaffold."""

    def __init__(
        self,
        mode,
        predictions=None,
        loss=None,
        train_op=None,
        eval_metric_ops=None,
        export_outputs=None,
        training_chief_hooks=None,
        training_hooks=None,
        scaffold=None,
        evaluation_hooks=None,
        prediction_hooks=None,
    ):
        eval_metric_ops = tf1_specs.metric_objects_as_pairs(eval_metric_ops)
        fields = dict(locals())
        loss = tf1_specs.check_estimator_spec(fields, mode, user_location())
        eval_metrics = None
        if eval_metric_ops:
            ops = dict(eval_metric_ops)
            eval_metrics = (lambda: ops, [])
        super().__init__(
            mode,
            predictions=predictions,
            loss=loss,
            train_op=train_op,
            eval_metrics=eval_metrics,
            export_outputs=export_outputs,
            scaffold_fn=(lambda: scaffold) if scaffold is not None else None,
            training_hooks=list(training_chief_hooks or []) + list(training_hooks or []),
            evaluation_hooks=evaluation_hooks,
            prediction_hooks=prediction_hooks,
        )


def _refuse_hooks(hooks, what):
    if hooks:
        raise unsupported(f"EstimatorSpec({what}=...)", "code around the predict loop")


def _parameters(function):
    """The parameters of function's signature by name, or None when it has none to read."""
    try:
        return inspect.signature(function).parameters
    except (TypeError, ValueError):
        return None


def call_with_named(function, available):
    """function(**the entries of `available` its signature names), as tf.estimator called."""
    parameters = _parameters(function)
    if parameters is None or any(
        p.kind == inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    ):
        return function(**available)
    return function(**{k: v for k, v in available.items() if k in parameters})


class _SpecHooks:
    """The hooks of the newest spec of one mode (a TRAIN spec's training_hooks, an EVAL
    spec's evaluation_hooks), run as one engine hook."""

    def __init__(self):
        self.hooks = []

    def begin(self):
        for hook in self.hooks:
            hook.begin()

    def after_create_session(self, session, coord):
        for hook in self.hooks:
            hook.after_create_session(session, coord)

    def before_run(self, run_context):
        args = [hook.before_run(run_context) for hook in self.hooks]
        return _V1.train.SessionRunArgs([a.fetches if a is not None else [] for a in args])

    def after_run(self, run_context, run_values):
        results = run_values.results or [None] * len(self.hooks)
        for hook, result in zip(self.hooks, results):
            hook.after_run(run_context, _V1.train.SessionRunValues(result, None, None))

    def end(self, session):
        for hook in self.hooks:
            hook.end(session)


class _TrainingSpecHooks(_SpecHooks):
    """The TRAIN spec's training_hooks, and what TF 1.15's Estimator wrote as training
    started: `graph.pbtxt` in model_dir, and a checkpoint of the step it starts from
    (model.ckpt-0 for a new run; a resumed run's is there already), which its
    checkpoint-saving hook wrote before the first step."""

    def __init__(self, model_dir):
        super().__init__()
        self.train_hooks = []  # those given to train(), for their graph variables
        self.model_dir = model_dir
        self._started = False

    def begin(self):
        self._started = False
        super().begin()

    def after_create_session(self, session, coord):
        graph = session.graph.as_graph_def(add_shapes=True)
        _V1.train.write_graph(graph, self.model_dir, "graph.pbtxt")
        super().after_create_session(session, coord)

    def before_run(self, run_context):
        if not self._started:
            self._started = True
            run_context.save_checkpoint()
        return super().before_run(run_context)


class Estimator:
    """tf.estimator.Estimator on engine.Estimator.

    _devices: the Devices it trains on (estimator_classes binds run_tf1.py's).
    """

    _tpu_params = False
    _devices = ONE_DEVICE
    _warm_start_from = None

    def __init__(self, model_fn, model_dir=None, config=None, params=None, warm_start_from=None):
        if warm_start_from is not None and not isinstance(warm_start_from, str):
            raise unsupported(
                "Estimator(warm_start_from=WarmStartSettings(...))",
                "warm_start_from=a checkpoint path, or tf.train.init_from_checkpoint",
            )
        self._warm_start_from = warm_start_from
        self._setup(model_fn, model_dir, config, params, None, None, None, False)

    def _setup(self, model_fn, model_dir, config, params, train_bs, eval_bs, predict_bs, use_tpu):
        config = config or RunConfig()
        model_dir = model_dir or config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp()
            logging.warning("Using temporary folder as model directory: %s", model_dir)
        self._config = config.replace(model_dir=model_dir)
        tf1_input_files.watch(model_dir)
        self._user_model_fn = model_fn
        self.params = dict(params or {})
        self._spec_hooks = _TrainingSpecHooks(model_dir)
        self._eval_hooks = _SpecHooks()
        self._bare_prediction = False
        # What ended a read of an input_fn's tensors in their own session (tensor_input.py).
        self._input_failures = []
        self._engine = engine.Estimator(
            self._model_fn,
            self._config.engine_config(model_dir, use_tpu, self._devices),
            params=self.params,
            train_batch_size=train_bs or 1,
            eval_batch_size=eval_bs or 1,
            predict_batch_size=predict_bs or 1,
        )

    @property
    def model_dir(self):
        """Where checkpoints and events go (a temporary directory for model_dir=None)."""
        return self._config.model_dir

    @property
    def config(self):
        """The RunConfig the Estimator was made with."""
        return self._config

    def _user_params(self, params):
        """The params TF 1.x gave: the user's own, plus a TPUEstimator's batch_size.

        Built from the user's params rather than from the engine's, so that
        whatever else the engine passes its own model_fns stays out.
        """
        user = dict(self.params)
        if self._tpu_params and "batch_size" in params:
            user["batch_size"] = params["batch_size"]
        return user

    def _model_fn(self, features, labels, mode, params):
        if labels is None:  # an element of _input_fn's Dataset with no labels: (features,)
            (features,) = features
        return self._spec(features, labels, mode, params)

    def _spec(self, features, labels, mode, params):
        """The user's model_fn called on features and labels (None, or as the input_fn
        gave them); its spec for the engine."""
        parameters = _parameters(self._user_model_fn)
        if labels is not None and parameters is not None and "labels" not in parameters:
            where = tf1_specs.definition_line(self._user_model_fn)
            message = "model_fn does not take labels, but input_fn returns labels."
            raise tf1_specs.SpecError(f"{where}: {message}" if where else message)
        spec = call_with_named(
            self._user_model_fn,
            {
                "features": features,
                "labels": labels,
                "mode": mode,
                "params": self._user_params(params),
                "config": self._config,
            },
        )
        spec = self._checked(spec, mode)
        if mode == engine.ModeKeys.TRAIN and self._warm_start_from:
            _warm_start(self._warm_start_from)
        predictions = spec.predictions
        if mode == engine.ModeKeys.PREDICT and not isinstance(predictions, dict):
            self._bare_prediction = True
            predictions = {"predictions": predictions}
        if mode == engine.ModeKeys.EVAL:
            self._eval_hooks.hooks = spec.evaluation_hooks
        if mode == engine.ModeKeys.TRAIN:
            self._spec_hooks.hooks = spec.training_hooks
            for hook in [*spec.training_hooks, *self._spec_hooks.train_hooks]:
                if hasattr(hook, "make_graph_variables"):
                    hook.make_graph_variables()
        return engine.EstimatorSpec(
            mode=mode,
            loss=spec.loss,
            train_op=spec.train_op,
            eval_metrics=spec.eval_metrics,
            predictions=predictions,
            scaffold_fn=spec.scaffold_fn,
        )

    def _checked(self, spec, mode):
        """The model_fn's spec, refused where TF 1.15 refused it (specs.py)."""
        if not isinstance(spec, TPUEstimatorSpec):
            where = tf1_specs.definition_line(self._user_model_fn)
            raise tf1_specs.SpecError(f"{where}: model_fn should return an EstimatorSpec.")
        if not isinstance(spec, EstimatorSpec):  # checked as TF 1.15 checked it on CPU
            spec.loss = tf1_specs.check_estimator_spec(vars(spec), mode, spec._where)  # noqa: SLF001
        if spec.eval_metrics is not None:
            metric_fn, tensors = spec.eval_metrics
            spec.eval_metrics = (tf1_specs.checked_metric_fn(metric_fn), tensors)
        return spec

    def _input_fn(self, input_fn, mode):
        def call(params):
            arguments = {"params": self._user_params(params), "config": self._config, "mode": mode}
            with tf1_tensor_input.recorded_iterators() as made:
                returned = call_with_named(input_fn, arguments)
            return tf1_tensor_input.engine_dataset(
                returned,
                made,
                lambda: call_with_named(input_fn, arguments),
                mode,
                tf1_specs.definition_line(input_fn),
                self._config.tf_random_seed,
                self._input_failures,
            )

        return call

    def latest_checkpoint(self):
        """The newest checkpoint's path in model_dir, or None."""
        return self._engine.latest_checkpoint()

    def train(self, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
        """Trains from `input_fn` for `steps` more steps or up to `max_steps`; returns self."""
        if saving_listeners:
            raise unsupported("Estimator.train(saving_listeners=...)", "training hooks")
        self._spec_hooks.train_hooks = list(hooks or [])
        with tf1_tensor_input.raising_input_failures(self._input_failures):
            self._engine.train(
                self._input_fn(input_fn, engine.ModeKeys.TRAIN),
                max_steps=max_steps,
                steps=steps,
                hooks=[self._spec_hooks, *(hooks or [])],
            )
        return self

    def evaluate(self, input_fn, steps=None, hooks=None, checkpoint_path=None, name=None):
        """Evaluates a checkpoint (the newest by default) on `input_fn`: {metric: numpy value};
        the EVAL spec's evaluation_hooks and `hooks` run around its batches."""
        with tf1_tensor_input.raising_input_failures(self._input_failures):
            result = self._engine.evaluate(
                self._input_fn(input_fn, engine.ModeKeys.EVAL),
                steps=steps,
                checkpoint_path=checkpoint_path,
                name=name,
                hooks=[self._eval_hooks, *(hooks or [])],
            )
        return {key: numpy_value(key, value) for key, value in result.items()}

    def predict(
        self,
        input_fn,
        predict_keys=None,
        hooks=None,
        checkpoint_path=None,
        yield_single_examples=True,
    ):
        """Yields the model_fn's predictions for `input_fn`, one example at a time by default."""
        if hooks:
            raise unsupported("Estimator.predict(hooks=...)", "code around the predict loop")
        if isinstance(predict_keys, str):
            predict_keys = [predict_keys]
        predictions = self._engine.predict(
            self._input_fn(input_fn, engine.ModeKeys.PREDICT),
            checkpoint_path=checkpoint_path,
            yield_single_examples=yield_single_examples,
        )
        with tf1_tensor_input.raising_input_failures(self._input_failures):
            for prediction in predictions:
                if self._bare_prediction:
                    yield prediction["predictions"]
                elif predict_keys:
                    yield {key: prediction[key] for key in predict_keys}
                else:
                    yield prediction

    def export_saved_model(
        self,
        export_dir_base,
        serving_input_receiver_fn,
        assets_extra=None,
        as_text=False,
        checkpoint_path=None,
        **unused,
    ):
        """The PREDICT graph and the newest checkpoint as a SavedModel (export.py)."""
        return tf1_export.export_saved_model(
            self,
            self._predictions_for_export,
            export_dir_base,
            serving_input_receiver_fn,
            assets_extra,
            checkpoint_path,
        )

    export_savedmodel = export_saved_model

    def _predictions_for_export(self, features):
        return dict(self._spec(features, None, engine.ModeKeys.PREDICT, {}).predictions)

    def eval_dir(self, name=None):
        """Where evaluate writes its TensorBoard events (model_dir/eval or eval_<name>)."""
        return os.path.join(self.model_dir, "eval" if not name else f"eval_{name}")

    def get_variable_names(self):
        """The names of the newest checkpoint's variables."""
        return [name for name, _ in tf.train.list_variables(self.model_dir)]

    def get_variable_value(self, name):
        """The value of variable `name` in the newest checkpoint."""
        return tf.train.load_variable(self.model_dir, name)


def _warm_start(checkpoint):
    """TF 1.15's warm_start_from=a path (a checkpoint, or a folder of them): training with no
    checkpoint of its own starts its trainable variables from that checkpoint's values of
    the same names (the engine restores model_dir's newest over those initial values)."""
    logging.info("Warm-starting from: %s", checkpoint)
    _V1.train.init_from_checkpoint(checkpoint, {v.op.name: v for v in _V1.trainable_variables()})


class TPUEstimator(Estimator):
    """tf.contrib.tpu.TPUEstimator: params carry "batch_size"; use_tpu picks the TPU."""

    _tpu_params = True

    def __init__(
        self,
        model_fn=None,
        model_dir=None,
        config=None,
        params=None,
        use_tpu=True,
        train_batch_size=None,
        eval_batch_size=None,
        predict_batch_size=None,
        batch_axis=None,
        eval_on_tpu=True,
        export_to_tpu=True,
        export_to_cpu=True,
        warm_start_from=None,
        **unused,
    ):
        if warm_start_from is not None:
            raise unsupported("TPUEstimator(warm_start_from=...)", "tf.train.init_from_checkpoint")
        if params and "batch_size" in params:
            raise ValueError("params must not hold batch_size: TPUEstimator sets it")
        self._setup(
            model_fn,
            model_dir,
            config,
            params,
            train_batch_size,
            eval_batch_size,
            predict_batch_size,
            bool(use_tpu),
        )


def numpy_value(key, value):
    """What TF 1.x's evaluate returned: float32 metrics, an int64 global_step."""
    if key == "global_step" or isinstance(value, (bool, int)):
        return np.int64(value)
    return np.asarray(value, dtype=np.float32)[()]


class TrainSpec:
    """tf.estimator.TrainSpec."""

    def __init__(self, input_fn, max_steps=None, hooks=None):
        self.input_fn = input_fn
        self.max_steps = max_steps
        self.hooks = list(hooks or [])


class EvalSpec:
    """tf.estimator.EvalSpec: evaluated at every checkpoint training saves, and at its end."""

    def __init__(
        self,
        input_fn,
        steps=100,
        name=None,
        hooks=None,
        exporters=None,
        start_delay_secs=120,
        throttle_secs=600,
    ):
        if hooks:
            raise unsupported("EvalSpec(hooks=...)", "training hooks")
        if exporters:
            raise unsupported("EvalSpec(exporters=...)", "run_classifier.py --export_dir")
        self.input_fn = input_fn
        self.steps = steps
        self.name = name
        # TF 1.15's fields, read back by code that evaluates by itself (tensor2tensor).
        self.hooks = ()
        self.exporters = ()
        self.start_delay_secs = start_delay_secs
        self.throttle_secs = throttle_secs


def train_and_evaluate(estimator, train_spec, eval_spec):
    """Trains to train_spec.max_steps, evaluating each checkpoint saved and the last.

    Returns (the last evaluation's result, []) as tf.estimator did locally.
    """
    results = []

    def evaluate(step_context):
        step_context.save_checkpoint()
        results.append(
            estimator.evaluate(eval_spec.input_fn, steps=eval_spec.steps, name=eval_spec.name)
        )

    save_steps = estimator.config.save_checkpoints_steps or _DEFAULT_SAVE_STEPS
    estimator._spec_hooks.train_hooks = list(train_spec.hooks)
    with tf1_tensor_input.raising_input_failures(estimator._input_failures):
        estimator._engine.train(
            estimator._input_fn(train_spec.input_fn, engine.ModeKeys.TRAIN),
            max_steps=train_spec.max_steps,
            hooks=[
                estimator._spec_hooks,
                *train_spec.hooks,
                engine.EveryNSteps(save_steps, evaluate),
            ],
        )
    newest = estimator.latest_checkpoint()
    if not results or results[-1]["global_step"] != engine.checkpoint_step(newest):
        results.append(
            estimator.evaluate(eval_spec.input_fn, steps=eval_spec.steps, name=eval_spec.name)
        )
    return results[-1], []


class _EarlyStoppingHook(_V1.train.SessionRunHook):
    """Stops training when an evaluation metric has not improved for a number of steps.

    Reads the evaluations written so far (TensorBoard events in the eval
    directory, as evaluate writes them) every `every_steps` training steps.
    """

    def __init__(
        self, eval_dir, metric_name, max_steps_without_improvement, better, min_steps, every_steps
    ):
        self.eval_dir = eval_dir
        self.metric_name = metric_name
        self.patience = max_steps_without_improvement
        self.better = better
        self.min_steps = min_steps
        self.every_steps = max(1, int(every_steps))
        self._global_step = None
        self._last_check = None

    def begin(self):
        self._global_step = _V1.train.get_global_step()

    @staticmethod
    def make_graph_variables():
        """TF 1.x's early-stopping hooks signalled workers through this variable, which
        its checkpoints therefore hold (and a TF 1.x restore of ours then finds); made in
        the training graph before its saver (_model_fn)."""
        with _V1.variable_scope("signal_early_stopping", values=[], reuse=_V1.AUTO_REUSE):
            _V1.get_variable(
                "STOP",
                shape=[],
                dtype=tf.bool,
                initializer=_V1.constant_initializer(False),
                collections=[_V1.GraphKeys.GLOBAL_VARIABLES],
                trainable=False,
            )

    def before_run(self, run_context):
        return _V1.train.SessionRunArgs(self._global_step)

    def after_run(self, run_context, run_values):
        step = int(run_values.results)
        if step < self.min_steps:
            return
        if self._last_check is not None and step - self._last_check < self.every_steps:
            return
        self._last_check = step
        if self.should_stop():
            logging.info(
                "Early stopping: %s has not improved in %d steps", self.metric_name, self.patience
            )
            run_context.request_stop()

    def evaluations(self):
        """{step: value of the metric} of every evaluation in eval_dir."""
        found = {}
        for path in sorted(glob.glob(os.path.join(self.eval_dir, "events.out.tfevents.*"))):
            for event in _V1.train.summary_iterator(path):
                for value in event.summary.value:
                    if value.tag == self.metric_name:
                        found[int(event.step)] = value.simple_value
        return found

    def should_stop(self):
        evaluations = self.evaluations()
        if not evaluations:
            return False
        best_step = None
        for step in sorted(evaluations):
            if best_step is None or self.better(evaluations[step], evaluations[best_step]):
                best_step = step
        return max(evaluations) - best_step >= self.patience


def _early_stopping_hook(better):
    def make(
        estimator,
        metric_name,
        max_steps_without_decrease=None,
        eval_dir=None,
        min_steps=0,
        run_every_secs=60,
        run_every_steps=None,
        max_steps_without_increase=None,
    ):
        del run_every_secs  # checked by steps here: every run_every_steps, else every 100
        patience = max_steps_without_decrease or max_steps_without_increase
        return _EarlyStoppingHook(
            eval_dir or estimator.eval_dir(),
            metric_name,
            patience,
            better,
            min_steps,
            run_every_steps or 100,
        )

    return make


stop_if_no_decrease_hook = _early_stopping_hook(lambda value, best: value < best)
stop_if_no_increase_hook = _early_stopping_hook(lambda value, best: value > best)


def contrib_estimator_module():
    """tf.contrib.estimator: the early-stopping hooks."""
    return Namespace(
        "tf.contrib.estimator",
        None,
        {
            "stop_if_no_decrease_hook": stop_if_no_decrease_hook,
            "stop_if_no_increase_hook": stop_if_no_increase_hook,
        },
    )


def estimator_classes(devices=ONE_DEVICE):
    """{"Estimator": ..., "TPUEstimator": ...}: subclasses of this module's two training on
    `devices`, the classes user code gets (the TPUEstimator one is also an instance of the
    Estimator one, as in TF 1.x)."""
    estimator = type(
        "Estimator", (Estimator,), {"_devices": devices, "__doc__": Estimator.__doc__}
    )
    tpu_estimator = type(
        "TPUEstimator", (TPUEstimator, estimator), {"__doc__": TPUEstimator.__doc__}
    )
    return {"Estimator": estimator, "TPUEstimator": tpu_estimator}


def estimator_module(classes):
    """tf.estimator, with the Estimator of `classes` (estimator_classes)."""
    return Namespace(
        "tf.estimator",
        None,
        {
            "Estimator": classes["Estimator"],
            "EstimatorSpec": EstimatorSpec,
            "ModeKeys": ModeKeys,
            "RunConfig": RunConfig,
            "TrainSpec": TrainSpec,
            "EvalSpec": EvalSpec,
            "train_and_evaluate": train_and_evaluate,
            "experimental": Namespace(
                "tf.estimator.experimental",
                None,
                {
                    "stop_if_no_decrease_hook": stop_if_no_decrease_hook,
                    "stop_if_no_increase_hook": stop_if_no_increase_hook,
                },
            ),
            "tpu": tpu_module(classes, "tf.estimator.tpu"),
            "export": tf1_export.export_module(),
            "inputs": Namespace("tf.estimator.inputs", None, {"numpy_input_fn": numpy_input_fn}),
            "SessionRunHook": _V1.train.SessionRunHook,
            "SessionRunArgs": _V1.train.SessionRunArgs,
            "LoggingTensorHook": _V1.train.LoggingTensorHook,
            "StopAtStepHook": _V1.train.StopAtStepHook,
            # TF 1.15's tf.estimator also named these hooks of tf.train's.
            **{name: getattr(_V1.train, name) for name in _TRAIN_HOOKS},
        },
        {
            "BestExporter": "--best_checkpoint_metric of this project's scripts",
            "LatestExporter": "run_classifier.py --export_dir",
        },
    )


# tf.train's hooks and helpers that TF 1.15's tf.estimator gave under the same names.
_TRAIN_HOOKS = (
    "CheckpointSaverHook",
    "CheckpointSaverListener",
    "FeedFnHook",
    "FinalOpsHook",
    "GlobalStepWaiterHook",
    "NanLossDuringTrainingError",
    "NanTensorHook",
    "ProfilerHook",
    "SecondOrStepTimer",
    "StepCounterHook",
    "SummarySaverHook",
)


def tpu_module(classes, api="tf.contrib.tpu"):
    """tf.contrib.tpu, and the same API as TF 1.14+ also named it, tf.estimator.tpu, with the
    TPUEstimator of `classes` (estimator_classes)."""
    return Namespace(
        api,
        _V1.tpu,
        {
            "TPUEstimator": classes["TPUEstimator"],
            "TPUEstimatorSpec": TPUEstimatorSpec,
            "RunConfig": TPURunConfig,
            "TPUConfig": TPUConfig,
            "InputPipelineConfig": InputPipelineConfig,
            "CrossShardOptimizer": _V1.tpu.CrossShardOptimizer,
        },
    )
