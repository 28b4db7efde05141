"""The Estimator the scripts train, evaluate and predict with, and what it does.

tf.estimator and TPUEstimator are gone from TensorFlow 2.16, so the scripts
keep their original shape on top of this module instead:

    model_fn(features, labels, mode, params) -> EstimatorSpec
    input_fn(params) -> tf.data.Dataset   (params["batch_size"] = per-replica batch)

    config = engine.RunConfig(model_dir=..., save_checkpoints_steps=1000)
    estimator = engine.Estimator(model_fn, config, train_batch_size=32, ...)
    estimator.train(train_input_fn, max_steps=num_train_steps)
    result = estimator.evaluate(eval_input_fn, steps=max_eval_steps)
    for prediction in estimator.predict(predict_input_fn): ...

Everything runs in tf.compat.v1 graphs and sessions, so model code written
with variable_scope / get_variable works unchanged, whether or not the
process called tf.compat.v1.disable_v2_behavior().

Checkpoints are plain name-based TF checkpoints (`checkpoint`,
`model.ckpt-STEP.*`) holding the variables under their own names (no
replica suffixes), so they load in the original code and the original's
checkpoints (with adam_m / adam_v slots and global_step) resume here.
Training resumes from the newest checkpoint in model_dir; with no
checkpoint the variables start from their initializers, which include
whatever the model_fn asked tf.compat.v1.train.init_from_checkpoint for.
Every checkpoint is checked whole before it is read (checkpoints.py): a
damaged newest one is skipped with a warning, a damaged `checkpoint` state
file is rebuilt from the files on disk, and a model_dir of damaged
checkpoints only is refused rather than trained from step 0. One training
at a time holds model_dir (plumbing/directory_lock.py); evaluate and
predict need no lock, and take the newest checkpoint again when a training
beside them rotated away the one they found.

Training saves every save_checkpoints_steps and at the end (keeping the
keep_checkpoint_max newest), logs step/total, loss, learning rate, steps/sec,
examples/sec and the time left, and writes the same to TensorBoard event
files in model_dir (the learning rate is the scalar tensor the model_fn's
EstimatorSpec carries as learning_rate, if any; other tf.compat.v1.summary
ops the model_fn makes are written too). A NaN or Inf loss stops training
with NanLossError and nothing is saved after the last good checkpoint.
`hooks` (tf.compat.v1.train.SessionRunHook's methods) are the training
loop's one extension point: EveryNSteps(N, action) runs work every N steps
(evaluating while training, evaluation.py, is one). evaluate and predict
build their graph once and run on one device.

The engine knows nothing of the model it runs, as tf.estimator knew nothing
of its own: what the model computes (its precision, its optimizer and
options such as gradient accumulation) is in the model_fn's closure, put
there by the script's model_fn_builder; what training needs of the step
comes back in the EstimatorSpec (learning_rate to log; accumulate_op, the
op that adds a micro-batch's gradients, with
RunConfig(num_accumulation_steps=N): the engine splits each batch into N
micro-batches and runs it on N-1 of them before the train_op; and
optional_in_checkpoint, variables a checkpoint may lack).

Distribution goes through tf.distribute, chosen by RunConfig (the scripts
fill it from their flags): one device (default),
distribution_strategy="mirrored" (all local GPUs, or num_gpus of them; all
logical CPUs when there is no GPU), "multi_worker"
(MultiWorkerMirroredStrategy from TF_CONFIG; model_dir must be shared by
the workers) and use_tpu (TPUStrategy from tpu_name / tpu_zone /
gcp_project / master). The batch size given to the Estimator is the global
batch; each replica gets an equal share. Under a strategy with several
replicas, variables the model_fn creates default to ONLY_FIRST_REPLICA
aggregation: the optimizer must average gradients across replicas (BERT's
AdamWeightDecayOptimizer does, and so do tf.compat.v1.train optimizers,
which average rather than sum here, as under tf.estimator) so that every
replica computes the same update.

With tf_random_seed set, runs are reproducible: the graph-level seed is
fixed, tf.data pipelines are made deterministic, and a resumed run skips
the batches the checkpointed steps already consumed, so a run that was
killed and restarted ends with the same weights as one that was not
(provided the model itself is deterministic, e.g. dropout off).

Errors: bad user input raises a UsageError (plumbing/errors.py) with a one-line
message naming the flag or file at fault; the scripts' entry point
(plumbing/command_line.run_main) reports it, missing or corrupt files and
NanLossError as "ERROR: <message>" on stderr and exit status 1, without a
traceback; a bug keeps its traceback.

SIGTERM or Ctrl-C during training (signals.py) lets the step in
flight finish, saves it and raises TrainingStopped, which the scripts'
entry point reports as "STOPPED: <signal> at step N: saved <checkpoint>;
the same command resumes from it" with exit status 128 + the signal; a
second signal ends the process at once. On one device the tf.data
iterator's state is saved beside each checkpoint (input_position.py),
so a resumed run reads on where the stopped one was, seeded or not; a
position saved by another input pipeline, or in files that have changed
since (input_data.py), is found out before the model is built, and the run
then builds the pipeline afresh. A file the input cannot read as training,
evaluation or prediction goes (a damaged record, a file removed or changed
meanwhile) is an InputReadError naming it, and a checkpoint removed or
damaged while it is restored a UsageError naming it (checkpoints.py).

Multi-worker jobs watch their workers: when one is lost (killed, crashed,
its machine gone), every other worker ends within seconds with one line,
"ERROR: lost worker I (host:port) of N: the newest checkpoint is ...;
starting every worker again with the same command resumes from it", and
exit status 1, instead of waiting in a collective op for ever.

The engine (bert_lib/engine) is layered; each module can be read alone:
  config.py          RunConfig, EstimatorSpec, ModeKeys, errors
  distribution.py    tf.distribute strategies, the multi-worker peer watch
  checkpoints.py     find / restore-or-initialize / save checkpoints
  graphs.py          build the train, eval and predict graphs (plain records)
  training.py        the training loop (logs, summaries, saves, hooks, EveryNSteps)
  signals.py         SIGTERM / Ctrl-C during training
  input_position.py  the input position saved beside each checkpoint
  input_data.py      the files an input pipeline reads, and errors reading them
  saved_model.py     writing a graph and a checkpoint as a SavedModel
  estimator.py       Estimator.train / evaluate / predict / export_saved_model on top
  evaluation.py      evaluating while training, the best checkpoint, early stopping
Nothing here imports BERT's modules (modeling, optimization, tokenization).
"""

import contextlib
import os
import time

import numpy as np
import tensorflow as tf
from absl import logging

from ..plumbing import directory_lock
from ..plumbing.progress import format_seconds
from . import input_data, input_position, saved_model, signals
from .checkpoints import (
    check_model_dir,
    checkpoint_step,
    checkpoint_to_load,
    checkpoint_to_resume,
    is_whole,
    newest_checkpoint,
    remove_unfinished_saves,
    restore_or_initialize,
)
from .config import (
    ModeKeys,
    UsageError,
    session_config,
)
from .distribution import Distribution, is_chief
from .graphs import ModelBuilder, build_eval_graph, build_predict_graph, build_train_graph
from .signals import StopSignals
from .training import TrainingLoop, scalar_summary


class Estimator:
    """Trains, evaluates and predicts with a model_fn, like TPUEstimator did.

    Batch sizes are global (split over replicas); params passed to model_fn and
    input_fn are a copy of `params` with "batch_size" set for the call.
    """

    def __init__(
        self,
        model_fn,
        config,
        params=None,
        train_batch_size=None,
        eval_batch_size=None,
        predict_batch_size=None,
    ):
        if config is None:
            raise ValueError("Estimator needs a RunConfig")
        self._model_fn = model_fn
        self._config = config
        self._params = dict(params or {})
        self._builder = ModelBuilder(model_fn, config, self._params)
        self._train_batch_size = train_batch_size
        self._eval_batch_size = eval_batch_size
        self._predict_batch_size = predict_batch_size

    @property
    def model_dir(self):
        return self._config.model_dir

    @property
    def config(self):
        return self._config

    def latest_checkpoint(self):
        """The newest checkpoint in model_dir, or None."""
        return newest_checkpoint(self._config.model_dir)

    # ---------------------------------------------------------------- train

    def train(self, input_fn, max_steps=None, steps=None, hooks=None):
        """Trains until global_step reaches max_steps (or `steps` more, or the input ends).

        Resumes from the newest checkpoint in model_dir; saves every
        save_checkpoints_steps and at the end (chief only), keeping the
        keep_checkpoint_max newest. Raises NanLossError, without saving, if
        the loss becomes NaN or Inf, and WorkerLostError if a multi-worker
        job loses a worker. `hooks` are tf.compat.v1.train SessionRunHook-like
        objects (begin, after_create_session, before_run, after_run, end),
        the training loop's one extension point: their before_run and
        after_run get a training.StepContext, and EveryNSteps(N, action) runs
        work every N steps. Returns self.
        """
        config = self._config
        with training_lock(config):
            start_checkpoint, start_step, max_steps = self._train_range(max_steps, steps)
            if max_steps is not None and start_step >= max_steps:
                logging.info(
                    "Checkpoint %s is already at step %d >= max_steps %d; nothing to train.",
                    start_checkpoint,
                    start_step,
                    max_steps,
                )
                return self
            with StopSignals(config.model_dir) as stop_signals:
                self._train(input_fn, start_checkpoint, max_steps, list(hooks or []), stop_signals)
        return self

    def _train(self, input_fn, start_checkpoint, max_steps, hooks, stop_signals):
        """Builds the training graph and runs it from start_checkpoint (None: initializers)."""
        config = self._config
        graph, dist, train_graph, saved = self._train_graph(input_fn, start_checkpoint)
        session = tf.compat.v1.Session(target=dist.target, graph=graph, config=dist.session_config)
        try:
            with graph.as_default():
                for hook in hooks:
                    hook.begin()
            with graph.as_default(), dist.watch_peers(config.model_dir) as peer_watch:
                dist.initialize_system(session)
                _start_session(session, train_graph, start_checkpoint, config.model_dir)
                if saved is not None:
                    train_graph.input_position.restore(session, saved)
                for hook in hooks:
                    hook.after_create_session(session, None)
                loop = TrainingLoop(
                    session,
                    dist,
                    train_graph,
                    config,
                    self._train_batch_size,
                    hooks,
                    peer_watch,
                    stop_signals,
                )
                loop.run(max_steps, resumed=start_checkpoint is not None)
                for hook in hooks:
                    hook.end(session)
                dist.shutdown_system(session)
        finally:
            session.close()

    def _train_graph(self, input_fn, start_checkpoint):
        """The training graph: (graph, Distribution, TrainGraph, the SavedPosition it restores
        or None).

        On one device, a resumed run restores the input position saved beside
        its checkpoint, if the input_fn builds the pipeline that saved it over
        the same data; that is checked as soon as the pipeline is built, and a
        run whose pipeline or data changed is built again without it, before
        any session (with its data changed, its input starting over).
        """
        config = self._config
        saved = None
        if (
            start_checkpoint
            and config.distribution_strategy == "one_device"
            and not config.use_tpu
        ):
            saved = input_position.read_saved(start_checkpoint)
        graph, dist, train_graph = self._build_train_graph(input_fn, start_checkpoint, saved)
        if isinstance(train_graph, input_position.NotRestored):
            start_over = train_graph.start_over
            saved = None
            graph, dist, train_graph = self._build_train_graph(
                input_fn, start_checkpoint, None, start_over
            )
        return graph, dist, train_graph, saved

    def _build_train_graph(self, input_fn, start_checkpoint, saved_position, start_over=False):
        """A new training graph: (graph, Distribution, TrainGraph or
        input_position.NotRestored: see graphs.build_train_graph)."""
        config = self._config
        start_step = checkpoint_step(start_checkpoint) if start_checkpoint else 0
        graph = tf.Graph()
        with graph.as_default():
            if config.tf_random_seed is not None:
                tf.compat.v1.set_random_seed(config.tf_random_seed)
            dist = Distribution(config)
            train_graph = build_train_graph(
                self._builder,
                dist,
                input_fn,
                self._train_batch_size,
                start_step,
                saved_position,
                start_over,
            )
        return graph, dist, train_graph

    def _train_range(self, max_steps, steps):
        """Returns (checkpoint to resume from or None, its step, max_steps to train to)."""
        if steps is not None and max_steps is not None:
            raise ValueError("train() takes steps or max_steps, not both")
        for name, value in (("steps", steps), ("max_steps", max_steps)):
            if value is not None and value <= 0:
                raise UsageError(f"{name} must be positive, got {value}")
        check_model_dir(self._config.model_dir, create=True)
        if is_chief(self._config):
            remove_unfinished_saves(self._config.model_dir)
        start_checkpoint = checkpoint_to_resume(
            self._config.model_dir, repair_state=is_chief(self._config)
        )
        start_step = checkpoint_step(start_checkpoint) if start_checkpoint else 0
        if max_steps is None and steps is not None:
            max_steps = start_step + steps
        return start_checkpoint, start_step, max_steps

    # ---------------------------------------------------------------- eval

    def evaluate(
        self,
        input_fn,
        steps=None,
        checkpoint_path=None,
        name=None,
        with_predictions=False,
        write_summaries=True,
        hooks=(),
    ):
        """Evaluates the newest checkpoint (or `checkpoint_path`) over `steps` batches.

        steps=None runs until the input is exhausted. Returns a dict of
        Python numbers: every metric of eval_metrics, "loss" (mean of the
        per-batch loss) and "global_step" of the evaluated weights. With
        write_summaries (the default), also writes the metrics as TensorBoard
        scalars to model_dir/eval[_name] (evaluating while training writes
        the script's whole result there itself instead). `hooks` are
        tf.compat.v1.train SessionRunHook-like objects run around the batches
        (begin once the graph is built, after_create_session, before_run and
        after_run each batch, end), as tf.estimator ran evaluation hooks.

        with_predictions=True returns (that dict, a list of one dict of numpy
        values per example, in the order evaluated) from the same pass: the
        EVAL spec's `predictions`, as predict would yield them. Metrics that
        need every output at once (F1, MCC, correlations) then cost no
        second pass over the data.
        """
        batch_size = self._eval_batch_size
        if batch_size is None or batch_size <= 0:
            raise UsageError(f"eval_batch_size must be positive, got {batch_size}")
        if steps is not None and steps <= 0:
            raise UsageError(f"evaluation steps must be positive, got {steps}")
        given = checkpoint_path
        checkpoint_path = checkpoint_to_load(self._config.model_dir, checkpoint_path, "evaluation")
        graph = tf.Graph()
        with graph.as_default():
            eval_graph = build_eval_graph(self._builder, input_fn, batch_size)
            for hook in hooks:
                hook.begin()
        if with_predictions and eval_graph.predictions is None:
            raise ValueError("evaluate(with_predictions=True) needs an EVAL spec with predictions")
        fetch = eval_graph.update_op
        if with_predictions:
            fetch = {"update": eval_graph.update_op, "predictions": eval_graph.predictions}
        session = self._open_newest(graph, eval_graph, checkpoint_path, given)
        t_start = time.time()
        batches = []
        try:
            for hook in hooks:
                hook.after_create_session(session, None)
            with input_data.naming_read_errors(eval_graph.input_files):
                done = _run_evaluation(
                    session, fetch, steps, t_start, batches if with_predictions else None, hooks
                )
            for hook in hooks:
                hook.end(session)
            result, step = session.run((eval_graph.values, eval_graph.global_step))
            step = int(step)
        finally:
            session.close()
        result = {key: _to_python(value) for key, value in result.items()}
        result["global_step"] = step
        logging.info(
            "Evaluation of %d batches done in %s: %s",
            done,
            format_seconds(time.time() - t_start),
            ", ".join(f"{k} = {result[k]}" for k in sorted(result)),
        )
        if write_summaries:
            self.write_eval_summary(result, step, name)
        if with_predictions:
            examples = [
                example for batch in batches for example in _single_examples(batch["predictions"])
            ]
            return result, examples
        return result

    def write_eval_summary(self, result, step, name=None):
        """Writes a result's finite numbers as TensorBoard scalars to model_dir/eval[_name]."""
        if not tf.io.gfile.isdir(self._config.model_dir):
            return
        eval_dir = os.path.join(self._config.model_dir, "eval" if not name else f"eval_{name}")
        scalars = {
            k: v
            for k, v in result.items()
            if k != "global_step" and isinstance(v, (int, float)) and np.isfinite(v)
        }
        with tf.Graph().as_default():
            # Event files are named by the second they are opened in; the step in the
            # name keeps two evaluations within one second from sharing a file.
            writer = tf.compat.v1.summary.FileWriter(
                eval_dir, filename_suffix=f".step-{step:010d}"
            )
            writer.add_summary(scalar_summary(scalars), step)
            writer.close()

    def _open_newest(self, graph, built, checkpoint_path, given):
        """_open_session, retried with the newest checkpoint when the one found (not
        `given`) was rotated away by a training in model_dir before it was read."""
        for _ in range(_RACE_RETRIES):
            try:
                return _open_session(graph, built, checkpoint_path)
            except (UsageError, tf.errors.NotFoundError, tf.errors.DataLossError):
                if given or checkpoint_path is None or is_whole(checkpoint_path):
                    raise
                newer = newest_checkpoint(self._config.model_dir)
                if newer is None or newer == checkpoint_path:
                    raise
                logging.warning(
                    "%s was deleted (rotated away by the training in %s) before it was "
                    "read; using %s, the newest now.",
                    checkpoint_path,
                    self._config.model_dir,
                    newer,
                )
                checkpoint_path = newer
        return _open_session(graph, built, checkpoint_path)

    # ---------------------------------------------------------------- predict

    def predict(self, input_fn, checkpoint_path=None, yield_single_examples=True):
        """Yields predictions of the newest checkpoint (or `checkpoint_path`).

        One dict of numpy values per example (batch dimension removed), or
        one dict per batch with yield_single_examples=False. The graph is
        built once; the session stays open while the generator is consumed.
        """
        batch_size = self._predict_batch_size
        if batch_size is None or batch_size <= 0:
            raise UsageError(f"predict_batch_size must be positive, got {batch_size}")
        given = checkpoint_path
        checkpoint_path = checkpoint_to_load(self._config.model_dir, checkpoint_path, "prediction")
        graph = tf.Graph()
        with graph.as_default():
            predict_graph = build_predict_graph(self._builder, input_fn, batch_size)
        session = self._open_newest(graph, predict_graph, checkpoint_path, given)
        try:
            while True:
                # Predicting while training (run_squad's evaluation): a stop signal
                # does not wait for the end.
                signals.check()
                try:
                    with input_data.naming_read_errors(predict_graph.input_files):
                        batch = session.run(predict_graph.predictions)
                except tf.errors.OutOfRangeError:
                    break
                if yield_single_examples:
                    yield from _single_examples(batch)
                else:
                    yield batch
        finally:
            session.close()

    # ---------------------------------------------------------------- export

    def export_saved_model(
        self,
        export_dir,
        serving_input_fn,
        checkpoint_path=None,
        assets_extra=None,
        cast_weights_once=False,
        weights_as_constants=False,
    ):
        """Exports the model_fn's PREDICT graph with a checkpoint's weights as a SavedModel.

        serving_input_fn() returns {name: placeholder}: the features the
        model_fn gets and the "serving_default" signature's inputs; its
        outputs are the model_fn's predictions. The graph is built as
        predict builds it (the model_fn in PREDICT mode, with this RunConfig's
        XLA setting), so an export computes as prediction does. The weights come
        from `checkpoint_path` (a checkpoint or a directory), default the
        newest in model_dir. `assets_extra` ({file name: text}) go to
        assets.extra/. With `cast_weights_once`, weights the graph reads only
        in 16 bits are stored in 16 bits (saved_model.export_graph), so that a
        bfloat16 or float16 model casts no weights per call; with
        `weights_as_constants` the weights are constants of the graph and the
        SavedModel holds no variables (saved_model.export_graph). `export_dir`
        must not exist; it appears only complete.
        Returns the checkpoint exported.
        """
        checkpoint_path = checkpoint_to_load(self._config.model_dir, checkpoint_path, "export")
        if checkpoint_path is None:
            raise UsageError(f"no checkpoint in {self._config.model_dir} to export")

        def build():
            features = serving_input_fn()
            spec = self._builder.call_model_fn(dict(features), None, ModeKeys.PREDICT, None)
            predictions = spec.predictions
            if not isinstance(predictions, dict):
                predictions = {"predictions": predictions}
            return features, predictions

        saved_model.export_graph(
            export_dir,
            checkpoint_path,
            build,
            assets_extra,
            cast_weights_once,
            weights_as_constants,
        )
        return checkpoint_path


# How many times evaluate / predict take the newest checkpoint again when a training
# beside them rotated away the one they found.
_RACE_RETRIES = 3


def training_lock(config):
    """The block one training of config.model_dir runs in (directory_lock.held): taken by
    the process that writes the checkpoints (worker 0 of a multi-worker job)."""
    if not is_chief(config):
        return contextlib.nullcontext()
    check_model_dir(config.model_dir, create=True)
    return directory_lock.held(config.model_dir)


def _start_session(session, built, checkpoint_path, model_dir=None):
    """Restores or initializes a built graph's variables, then freezes the graph."""
    restore_or_initialize(
        session,
        built.saver,
        built.init_ops,
        built.scaffolds,
        checkpoint_path,
        model_dir,
        built.optional_in_checkpoint,
    )
    session.graph.finalize()


def _open_session(graph, built, checkpoint_path):
    """A one-device session for evaluate / predict with its variables set."""
    session = tf.compat.v1.Session(graph=graph, config=session_config(inference=True))
    with graph.as_default():
        _start_session(session, built, checkpoint_path)
    return session


def _run_evaluation(session, fetch, steps, t_start, outputs, hooks=()):
    """Runs `fetch` (the metric updates) over `steps` batches (None: all); returns how many ran.

    Each batch's fetched values are appended to `outputs`, unless it is None;
    each hook's before_run fetches run with the batch, its after_run gets them.
    """
    done = 0
    total = "?" if steps is None else str(steps)
    log_every = max(1, (steps or 1000) // 10)
    while steps is None or done < steps:
        # Evaluating while training: a stop signal does not wait for the end.
        signals.check()
        context = tf.compat.v1.train.SessionRunContext(
            tf.compat.v1.train.SessionRunArgs(fetch), session
        )
        extra = [hook.before_run(context) for hook in hooks]
        try:
            fetched, extra_values = session.run(
                (fetch, [args.fetches if args is not None else [] for args in extra])
            )
        except tf.errors.OutOfRangeError:
            break
        for hook, value in zip(hooks, extra_values):
            hook.after_run(context, tf.compat.v1.train.SessionRunValues(value, None, None))
        if outputs is not None:
            outputs.append(fetched)
        done += 1
        if done % log_every == 0:
            logging.info(
                "Evaluation [%d/%s], %.3g batches/sec",
                done,
                total,
                done / max(time.time() - t_start, 1e-9),
            )
    return done


def _single_examples(batch):
    """Splits a batch of predictions into one dict per example."""
    sizes = {value.shape[0] for value in batch.values()}
    if len(sizes) != 1:
        raise ValueError(
            f"all predictions must share the batch dimension, got sizes {sorted(sizes)}"
        )
    for i in range(sizes.pop()):
        yield {key: value[i] for key, value in batch.items()}


def _to_python(value):
    value = np.asarray(value)
    if value.shape == ():
        return value.item()
    return value.tolist()


# --------------------------------------------------------------------------
# Entry point for scripts


def first_predictions(predictions, output_name, count):
    """output_name of the first `count` prediction dicts (padding examples come last)."""
    outputs = []
    for i, prediction in enumerate(predictions):
        if i >= count:
            break
        outputs.append(prediction[output_name])
    if len(outputs) != count:
        raise RuntimeError(f"Expected {count} predictions, got {len(outputs)}")
    return outputs
