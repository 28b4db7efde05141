"""What an input_fn returns, read as TF 1.15's Estimator read it, as the engine's Dataset.

TF 1.15 took a Dataset or tensors; a list or tuple (a Dataset's element, or
what the input_fn returned) is (features, labels) and must have two entries
(else "input_fn should return (features, labels) as a len 2 tuple."),
anything else is features alone, with labels None. Features and labels may
be any nest of tensors (a tensor, a dict, a tuple, a dict of tuples);
prediction drops the labels. The engine's Dataset yields (features, labels),
or (features,) where there are none (engine_dataset): a 2-tuple of features
stays the features. Tensors that come from neither a Dataset nor a queue
(constants) are read for ever, as TF 1.15 read them; prediction warns so,
with TF 1.15's words.

As for tensors rather than a Dataset:

Estimator code of 2017-2019 often ended its input_fn with
`dataset.make_one_shot_iterator().get_next()` (or an initializable
iterator's), or built it on queues: a `tf.train.string_input_producer` of
file names, a reader (`tf.TextLineReader`, `tf.TFRecordReader`), parsing,
then `tf.train.batch` or `shuffle_batch`, whose queue runners
MonitoredSession started. It returned (features, labels) tensors, where the
engine reads a Dataset. So:

- when what the input_fn returns is taken straight from one iterator's
  get_next() (all of it, or some of it, rearranged: `features, labels =
  it.get_next(); return {"x": features}, labels`), the input_fn's result is
  that iterator's Dataset mapped to the same structure: the same elements,
  in the same order, that get_next() gave TF 1.x's Estimator (the iterators
  a Dataset makes while the input_fn runs are recorded with it);
- any other tensors (queue-based pipelines, tensors computed from get_next()
  by further ops) are read as TF 1.x's Estimator read them: the input_fn is
  called again in a graph of its own (the run's graph seed set, a global
  step made first, as TF 1.15's Estimator made them), a session of that
  graph is started as MonitoredSession started it (global and local
  variables and tables initialized, initializable iterators too, queue
  runners started under a Coordinator), and each run of the returned
  tensors is one element of a Dataset, until the input ends (a queue closed
  after its num_epochs, an iterator's end): as many batches, in the order
  the queues gave them, as TF 1.15 read. An error of a queue runner (a file
  missing) is raised as TF 1.15's MonitoredSession raised it (tf.data would
  turn it into an UnknownError naming neither: raising_input_failures puts the
  error itself back). Tensors fed through placeholders (a hook's feed_dict)
  are refused in one line.
"""

import contextlib

import tensorflow as tf
from absl import logging
from tensorflow.python.data.ops import dataset_ops

from ..machinery.namespaces import unsupported
from ..machinery.user_errors import UserCodeError

_V1 = tf.compat.v1
_GET_NEXT = ("IteratorGetNext", "IteratorGetNextSync")
_MAKERS = ("_make_one_shot_iterator", "_make_initializable_iterator")
# How long the queue runners of a finished input get to stop (they are cancelled at once).
_STOP_GRACE_SECONDS = 10
_PREDICT = "infer"
NOT_TWO = "input_fn should return (features, labels) as a len 2 tuple."
FOREVER = (
    "Input graph does not use tf.data.Dataset or contain a QueueRunner. That means predict "
    "yields forever. This is probably a mistake."
)


def features_and_labels(result, where):
    """(features, labels) of what an input_fn returned, or of a Dataset's element, as TF
    1.15 took them apart: a list or tuple must have two entries; anything else is the
    features, with labels None. where: the input_fn's "file:line", for the refusal."""
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise UserCodeError(f"{where}: {NOT_TWO}" if where else NOT_TWO)
        return result[0], result[1]
    return result, None


def _for_engine(features, labels, mode):
    """The engine's element: (features, labels), or (features,) with no labels (none
    given, or prediction, which TF 1.15 gave none)."""
    return (features,) if labels is None or mode == _PREDICT else (features, labels)


def engine_dataset(returned, made, call_again, mode, where, seed=None, failures=None):
    """The Dataset the engine reads for what an input_fn returned (see the module doc):
    its elements (features, labels), or (features,). made, call_again, seed, failures: as
    for as_dataset; mode: the engine's; where: the input_fn's "file:line"."""
    if isinstance(returned, tf.data.Dataset):
        if isinstance(returned.element_spec, (list, tuple)):
            features_and_labels(returned.element_spec, where)
            if mode != _PREDICT:
                return returned
            return returned.map(lambda features, labels: (features,))
        return returned.map(lambda features: (features,))

    def structured(result):
        return _for_engine(*features_and_labels(result, where), mode)

    element = structured(returned)
    if mode == _PREDICT and not _from_dataset_or_queue(element):
        logging.warning(FOREVER)
    return as_dataset(element, made, lambda: structured(call_again()), seed, failures)


def _from_dataset_or_queue(element):
    """Whether an iterator's get_next() gives one of the tensors, or the graph has queue
    runners (TF 1.15 looked no further)."""
    leaves = [leaf for leaf in tf.nest.flatten(element) if isinstance(leaf, tf.Tensor)]
    if any(leaf.op.type in _GET_NEXT for leaf in leaves):
        return True
    return bool(_V1.get_collection(_V1.GraphKeys.QUEUE_RUNNERS))


@contextlib.contextmanager
def recorded_iterators():
    """Within the block, {iterator resource tensor name: (Dataset, iterator)} of every TF
    1.x iterator a Dataset makes (make_one_shot_iterator, make_initializable_iterator, and
    the tf.data functions of the same names, which call these)."""
    made = {}
    originals = {name: getattr(dataset_ops.DatasetV1, name) for name in _MAKERS}

    def recording(original):
        def make(self, *args, **kwargs):
            iterator = original(self, *args, **kwargs)
            made[iterator._iterator_resource.name] = (self, iterator)  # noqa: SLF001
            return iterator

        return make

    for name, original in originals.items():
        setattr(dataset_ops.DatasetV1, name, recording(original))
    try:
        yield made
    finally:
        for name, original in originals.items():
            setattr(dataset_ops.DatasetV1, name, original)


def as_dataset(returned, made, call_again, seed=None, failures=None):
    """The Dataset whose elements are `returned` (tensors of the input_fn's call, in the
    engine's structure), per run (see the module doc). made: recorded_iterators' record of
    the call; call_again(): the same from the input_fn called once more, with the
    arguments it was given (in another graph); seed: the run's graph
    seed (tf_random_seed), or None; failures: a list the errors of reading it go to (for
    raising_input_failures)."""
    leaves = tf.nest.flatten(returned, expand_composites=True)
    others = sorted({type(leaf).__name__ for leaf in leaves if not isinstance(leaf, tf.Tensor)})
    if others or not leaves:
        what = ", ".join(others) if others else "nothing"
        raise unsupported(
            f"an input_fn whose features or labels hold {what} rather than tensors",
            "an input_fn returning a tf.data.Dataset, or features and labels of tensors",
        )
    ops = {leaf.op for leaf in leaves}
    source = ops.pop() if len(ops) == 1 else None
    if source is not None and source.type in _GET_NEXT and source.inputs[0].name in made:
        picked = [leaf.value_index for leaf in leaves]

        def element_as_returned(*element):
            flat = tf.nest.flatten(element)
            return tf.nest.pack_sequence_as(returned, [flat[i] for i in picked])

        return made[source.inputs[0].name][0].map(element_as_returned)
    _refuse_placeholders(leaves)
    return read_in_own_session(returned, call_again, seed, failures)


def _refuse_placeholders(leaves):
    """Refuses tensors that need a feed (a placeholder upstream, fed by a hook in TF 1.x)."""
    seen, stack = set(), [leaf.op for leaf in leaves]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        if op.type == "Placeholder":
            raise unsupported(
                f"an input_fn returning tensors fed through a placeholder ({op.name}: "
                "tf.train.FeedFnHook, a feed_dict)",
                "an input_fn returning a tf.data.Dataset (Dataset.from_tensor_slices or "
                "from_generator)",
            )
        stack.extend(tensor.op for tensor in op.inputs)
        stack.extend(op.control_inputs)


def read_in_own_session(returned, call_again, seed=None, failures=None):
    """A Dataset of the values of the tensors call_again() returns (structured as
    `returned`, which it returned before), run after run, in a graph and session of
    their own started as MonitoredSession started TF 1.15's (see the module doc); the
    error that ends a read goes to `failures` (a list) too."""
    flat = tf.nest.flatten(returned, expand_composites=True)
    signature = tuple(tf.TensorSpec(tensor.shape, tensor.dtype) for tensor in flat)

    def element_as_returned(*components):
        return tf.nest.pack_sequence_as(returned, list(components), expand_composites=True)

    def generator():
        try:
            yield from _values_run_after_run(call_again, seed)
        except Exception as error:
            if failures is not None:
                failures.append(error)
            raise

    dataset = tf.data.Dataset.from_generator(generator, output_signature=signature)
    return dataset.map(element_as_returned)


@contextlib.contextmanager
def raising_input_failures(failures):
    """Within the block, a TensorFlow error that ends a run after a read in its own session
    failed (read_in_own_session) is that read's error itself, with its traceback, as TF
    1.15 raised it (a reader's NotFoundError, the user's input_fn's exception)."""
    del failures[:]
    try:
        yield
    except tf.errors.OpError:
        if not failures:
            raise
        raise failures[-1] from None


def _values_run_after_run(call_again, seed):
    """Yields the values of what call_again() returns, one session run at a time, until
    the input ends; stops the queue runners and closes the session when done or closed."""
    graph = tf.Graph()
    with graph.as_default():
        if seed is not None:
            _V1.set_random_seed(seed)
        _V1.train.get_or_create_global_step()
        with recorded_iterators() as made:
            returned = call_again()
        fetches = tf.nest.flatten(returned, expand_composites=True)
        initialize = [
            _V1.global_variables_initializer(),
            _V1.local_variables_initializer(),
            _V1.tables_initializer(),
        ]
        initialize += [
            iterator.initializer
            for _, iterator in made.values()
            if iterator._initializer is not None  # noqa: SLF001 (a one-shot iterator has none)
        ]
    # Not entered as the default session: tf.data may resume this generator in another
    # thread than the one it started in, whose default-session stack would not hold it.
    session = _V1.Session(graph=graph)
    coordinator = _V1.train.Coordinator()
    threads = []
    try:
        session.run(initialize)
        with graph.as_default():  # (not across a yield: see above)
            threads = _V1.train.start_queue_runners(session, coord=coordinator)
        while True:
            try:
                values = session.run(fetches)
            except tf.errors.OutOfRangeError:
                # A queue closed: its epochs read, or a runner failed (raised here).
                coordinator.raise_requested_exception()
                return
            yield tuple(values)
    finally:
        coordinator.request_stop()
        with contextlib.suppress(Exception):  # a runner's error is raised above
            coordinator.join(threads, stop_grace_period_secs=_STOP_GRACE_SECONDS)
        session.close()
