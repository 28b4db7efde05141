"""tf.contrib.learn of TF 1.x as code of its years used it, on this project's engine.

What was still used of contrib.learn by 2018: its ModeKeys (train / eval /
infer, the strings tf.estimator's ModeKeys also has), the word-to-id
mapping of text CNNs, preprocessing.VocabularyProcessor, whose vocabulary
files (pickles, as TF 1.15 wrote them) are read and written here in that
same format, and RunConfig / Experiment / learn_runner.run driving a
tf.estimator.Estimator, which here is the TF 1.x layer's (estimator.py).
contrib.learn's own Estimator (model_fns returning ModelFnOps) is not here.
"""

import collections
import io
import pickle
import re
import types

import numpy as np
import tensorflow as tf

from .. import estimator as tf1_estimator
from ..machinery.namespaces import Namespace, unsupported

ModeKeys = Namespace(
    "tf.contrib.learn.ModeKeys", None, {"TRAIN": "train", "EVAL": "eval", "INFER": "infer"}
)

# TF 1.15's word splitting: runs of two or more capitals not followed by a small
# letter, a capitalised word followed by a capital, else runs of word characters,
# apostrophes and hyphens. Punctuation and spaces are dropped.
_WORD_PATTERN = re.compile(r"[A-Z]{2,}(?![a-z])|[A-Z][a-z]+(?=[A-Z])|['\w\-]+", re.UNICODE)


def tokenizer(documents):
    """The words of each document of `documents`, as VocabularyProcessor splits them."""
    for document in documents:
        yield _WORD_PATTERN.findall(document)


class CategoricalVocabulary:
    """Words (or any categories) to ids, 0 for the unknown token; counts words as it goes.

    Until frozen, an unseen word gets the next id; frozen, it gets 0.
    """

    def __init__(self, unknown_token="<UNK>", support_reverse=True):
        self._unknown_token = unknown_token
        self._mapping = {unknown_token: 0}
        self._support_reverse = support_reverse
        if support_reverse:
            self._reverse_mapping = [unknown_token]
        self._freq = collections.defaultdict(int)
        self._freeze = False

    def __len__(self):
        return len(self._mapping)

    def freeze(self, freeze=True):
        self._freeze = freeze

    def get(self, category):
        """The id of `category`, which gets the next one if new and not frozen (else 0)."""
        if category in self._mapping:
            return self._mapping[category]
        if self._freeze:
            return 0
        new_id = len(self._mapping)
        self._mapping[category] = new_id
        if self._support_reverse:
            self._reverse_mapping.append(category)
        return new_id

    def add(self, category, count=1):
        """Counts `category` (given an id first if new); the unknown token is not counted."""
        if self.get(category) > 0:
            self._freq[category] += count

    def trim(self, min_frequency, max_frequency=-1):
        """Keeps the words seen more than min_frequency times (and, if max_frequency > 0,
        fewer than it), renumbered from 1 by count, most frequent first, ties in sorted order.
        """
        alphabetical = sorted(
            self._freq.items(), key=lambda item: (isinstance(item[0], str), item[0])
        )
        by_count = sorted(alphabetical, key=lambda item: item[1], reverse=True)
        self._mapping = {self._unknown_token: 0}
        if self._support_reverse:
            self._reverse_mapping = [self._unknown_token]
        next_id = 1
        for category, count in by_count:
            if 0 < max_frequency <= count:
                continue
            if count <= min_frequency:
                break
            self._mapping[category] = next_id
            next_id += 1
            if self._support_reverse:
                self._reverse_mapping.append(category)
        # As TF 1.15 kept them: the first next_id - 1 counts in count order (which
        # differs from the words kept when max_frequency skipped some).
        self._freq = dict(by_count[: next_id - 1])

    def reverse(self, class_id):
        if not self._support_reverse:
            raise ValueError(
                "This vocabulary wasn't initialized with support_reverse to support reverse() "
                "function."
            )
        return self._reverse_mapping[class_id]


class VocabularyProcessor:
    """tf.contrib.learn.preprocessing.VocabularyProcessor: documents to fixed-length id rows.

    fit learns the vocabulary (ids in order of first appearance; with
    min_frequency, by count), transform yields one int64 row of
    max_document_length ids per document (0: padding or unknown), save and
    restore keep the processor in a pickle TF 1.15 reads and writes.
    """

    def __init__(self, max_document_length, min_frequency=0, vocabulary=None, tokenizer_fn=None):
        self.max_document_length = max_document_length
        self.min_frequency = min_frequency
        self.vocabulary_ = vocabulary if vocabulary else CategoricalVocabulary()
        self._tokenizer = tokenizer_fn if tokenizer_fn else tokenizer

    def fit(self, raw_documents, unused_y=None):
        for words in self._tokenizer(raw_documents):
            for word in words:
                self.vocabulary_.add(word)
        if self.min_frequency > 0:
            self.vocabulary_.trim(self.min_frequency)
        self.vocabulary_.freeze()
        return self

    def fit_transform(self, raw_documents, unused_y=None):
        """fit, then transform (a generator: `np.array(list(...))` makes the matrix)."""
        self.fit(raw_documents)
        return self.transform(raw_documents)

    def transform(self, raw_documents):
        for words in self._tokenizer(raw_documents):
            row = np.zeros(self.max_document_length, np.int64)
            for position, word in enumerate(words[: self.max_document_length]):
                row[position] = self.vocabulary_.get(word)
            yield row

    def reverse(self, documents):
        """Each row of ids back to its words joined by spaces (padding as "<UNK>")."""
        for row in documents:
            yield " ".join(self.vocabulary_.reverse(class_id) for class_id in row)

    def save(self, filename):
        """Writes this processor to `filename` as the pickle TF 1.15 wrote."""
        with tf.io.gfile.GFile(filename, "wb") as f:
            f.write(_dumps(self))

    @classmethod
    def restore(cls, filename):
        """The processor saved in `filename`, by TF 1.15 or by save."""
        with tf.io.gfile.GFile(filename, "rb") as f:
            return _Unpickler(io.BytesIO(f.read())).load()


class ByteProcessor:
    """tf.contrib.learn.preprocessing.ByteProcessor: documents to rows of their UTF-8 bytes."""

    def __init__(self, max_document_length):
        self.max_document_length = max_document_length

    def fit(self, x):
        del x

    def fit_transform(self, x):
        return self.transform(x)

    def transform(self, x):
        for document in x:
            if isinstance(document, str):
                document = document.encode("utf-8")
            data = np.frombuffer(document[: self.max_document_length], dtype=np.uint8)
            yield np.pad(data, (0, self.max_document_length - len(data)), "constant")

    def reverse(self, x):
        for row in x:
            text = np.trim_zeros(row.astype(np.int8), trim="b").tobytes()
            try:
                yield text.decode("utf-8")
            except UnicodeDecodeError:
                yield ""


# ---------------------------------------------------------------------------
# The pickle format of TF 1.15's VocabularyProcessor.save: these objects under the
# names TF 1.15's modules gave them, protocol 3 (Python 3's default then).

_TEXT = "tensorflow.contrib.learn.python.learn.preprocessing.text"
_TF115_NAMES = {
    VocabularyProcessor: (_TEXT, "VocabularyProcessor"),
    ByteProcessor: (_TEXT, "ByteProcessor"),
    tokenizer: (_TEXT, "tokenizer"),
    CategoricalVocabulary: (
        "tensorflow.contrib.learn.python.learn.preprocessing.categorical_vocabulary",
        "CategoricalVocabulary",
    ),
}
_FROM_TF115_NAMES = {names: value for value, names in _TF115_NAMES.items()}


class _Pickler(pickle._Pickler):  # noqa: SLF001  (the pure-Python pickler: save_global)
    """Writes the classes above by TF 1.15's module names, everything else as pickle does."""

    def save_global(self, obj, name=None):
        names = _TF115_NAMES.get(obj) if _hashable(obj) else None
        if names is None:
            super().save_global(obj, name)
            return
        module, qualname = names
        self.write(pickle.GLOBAL + f"{module}\n{qualname}\n".encode())
        self.memoize(obj)

    # The base class's table calls its own save_global for functions: this one instead.
    dispatch = {**pickle._Pickler.dispatch, types.FunctionType: save_global}  # noqa: SLF001


def _hashable(obj):
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _dumps(obj):
    buffer = io.BytesIO()
    _Pickler(buffer, protocol=3).dump(obj)
    return buffer.getvalue()


class _Unpickler(pickle.Unpickler):
    """Reads TF 1.15's names of the classes above as these classes."""

    def find_class(self, module, name):
        found = _FROM_TF115_NAMES.get((module, name))
        return found if found is not None else super().find_class(module, name)


# ---------------------------------------------------------------------------
# RunConfig, Experiment, learn_runner


class RunConfig(tf1_estimator.RunConfig):
    """tf.contrib.learn.RunConfig: tf.estimator.RunConfig's settings under contrib.learn's
    arguments (the devices and GPU memory ones have nothing to set on the engine)."""

    def __init__(
        self,
        master=None,
        num_cores=0,
        log_device_placement=False,
        gpu_memory_fraction=1,
        tf_random_seed=None,
        save_summary_steps=100,
        save_checkpoints_secs=None,
        save_checkpoints_steps=None,
        keep_checkpoint_max=5,
        keep_checkpoint_every_n_hours=10000,
        log_step_count_steps=100,
        protocol=None,
        evaluation_master="",
        model_dir=None,
        session_config=None,
        **unused,
    ):
        del num_cores, log_device_placement, gpu_memory_fraction, protocol, evaluation_master
        super().__init__(
            model_dir=model_dir,
            tf_random_seed=tf_random_seed,
            save_summary_steps=save_summary_steps,
            save_checkpoints_steps=save_checkpoints_steps,
            save_checkpoints_secs=save_checkpoints_secs,
            session_config=session_config,
            keep_checkpoint_max=keep_checkpoint_max,
            keep_checkpoint_every_n_hours=keep_checkpoint_every_n_hours,
            log_step_count_steps=log_step_count_steps,
            master=master,
            **unused,
        )


def replace_monitors_with_hooks(monitors_or_hooks, estimator):
    """tf.contrib.learn.monitors.replace_monitors_with_hooks: the SessionRunHooks given, as
    they are. contrib.learn's own monitors (not hooks) are not provided: one is refused."""
    del estimator  # it only decided which monitors ran on workers other than the chief
    hooks = list(monitors_or_hooks or [])
    for hook in hooks:
        if not isinstance(hook, tf.compat.v1.train.SessionRunHook):
            raise unsupported(f"tf.contrib.learn.monitors.{type(hook).__name__}")
    return hooks


class Experiment:
    """tf.contrib.learn.Experiment around a tf.estimator.Estimator: train, evaluate, or
    train_and_evaluate (tf.estimator.train_and_evaluate: an evaluation at every checkpoint
    training saves and at its end)."""

    def __init__(
        self,
        estimator,
        train_input_fn,
        eval_input_fn,
        eval_metrics=None,
        train_steps=None,
        eval_steps=100,
        train_monitors=None,
        eval_hooks=None,
        export_strategies=None,
        **unused,
    ):
        if eval_metrics is not None:
            raise unsupported(
                "tf.contrib.learn.Experiment(eval_metrics=...)", "the model_fn's eval_metric_ops"
            )
        if eval_hooks:
            raise unsupported("tf.contrib.learn.Experiment(eval_hooks=...)", "training hooks")
        if export_strategies:
            raise unsupported(
                "tf.contrib.learn.Experiment(export_strategies=...)",
                "Estimator.export_savedmodel after training",
            )
        self._estimator = estimator
        self._train_input_fn = train_input_fn
        self._eval_input_fn = eval_input_fn
        self._train_steps = train_steps
        self._eval_steps = eval_steps
        self._train_monitors = list(train_monitors or [])

    @property
    def estimator(self):
        return self._estimator

    @property
    def train_steps(self):
        return self._train_steps

    @property
    def eval_steps(self):
        return self._eval_steps

    def train(self, delay_secs=None):
        """Trains the estimator to train_steps."""
        del delay_secs
        return self._estimator.train(
            self._train_input_fn, max_steps=self._train_steps, hooks=self._train_monitors
        )

    def evaluate(self, delay_secs=None, name=None):
        """Evaluates the newest checkpoint on eval_steps batches."""
        del delay_secs
        return self._estimator.evaluate(self._eval_input_fn, steps=self._eval_steps, name=name)

    def train_and_evaluate(self):
        """Trains to train_steps evaluating as it goes; (the last evaluation, [] exports)."""
        train_spec = tf1_estimator.TrainSpec(
            self._train_input_fn, max_steps=self._train_steps, hooks=self._train_monitors
        )
        eval_spec = tf1_estimator.EvalSpec(self._eval_input_fn, steps=self._eval_steps)
        return tf1_estimator.train_and_evaluate(self._estimator, train_spec, eval_spec)

    continuous_train_and_eval = train_and_evaluate

    def test(self):
        """One training step and one evaluation step, as a smoke test."""
        self._estimator.train(self._train_input_fn, steps=1, hooks=self._train_monitors)
        return self._estimator.evaluate(self._eval_input_fn, steps=1, name="one_pass")


def run(experiment_fn, output_dir=None, schedule=None, run_config=None, hparams=None):
    """tf.contrib.learn.learn_runner.run: builds the Experiment, experiment_fn(run_config=,
    hparams=) or experiment_fn(output_dir=), and runs its `schedule` (default
    train_and_evaluate) in this process."""
    if output_dir is not None and run_config is not None:
        raise ValueError("Cannot provide both `output_dir` and `run_config`")
    if output_dir is None and run_config is None:
        raise ValueError("Must set value for `output_dir` or `run_config`")
    if not callable(experiment_fn):
        raise TypeError(f'Experiment builder "{experiment_fn}" is not callable.')
    if run_config is not None:
        experiment = experiment_fn(run_config=run_config, hparams=hparams)
    else:
        if hparams is not None:
            raise ValueError("Must set `hparams` as None for `experiment_fn` with `output_dir`.")
        experiment = experiment_fn(output_dir=output_dir)
    if not isinstance(experiment, Experiment):
        raise TypeError(
            "Experiment builder did not return an Experiment instance, got "
            f"{type(experiment)} instead."
        )
    schedule = schedule or "train_and_evaluate"
    task = getattr(experiment, schedule, None)
    if task is None or schedule.startswith("_"):
        raise ValueError(f"Schedule references non-existent task {schedule}")
    if not callable(task):
        raise TypeError(f"Schedule references non-callable member {schedule}")
    return task()


def learn_module(estimator_classes):
    """tf.contrib.learn; its Experiment runs the Estimators user code makes of
    estimator_classes (contrib.learn's own Estimator is not provided)."""
    del estimator_classes  # Experiment drives whichever Estimator it is given
    preprocessing = Namespace(
        "tf.contrib.learn.preprocessing",
        None,
        {
            "VocabularyProcessor": VocabularyProcessor,
            "CategoricalVocabulary": CategoricalVocabulary,
            "ByteProcessor": ByteProcessor,
            "tokenizer": tokenizer,
        },
    )
    learn_runner = Namespace("tf.contrib.learn.learn_runner", None, {"run": run})
    monitors = Namespace(
        "tf.contrib.learn.monitors",
        None,
        {"replace_monitors_with_hooks": replace_monitors_with_hooks},
    )
    module = Namespace(
        "tf.contrib.learn",
        None,
        {
            "ModeKeys": ModeKeys,
            "preprocessing": preprocessing,
            "RunConfig": RunConfig,
            "Experiment": Experiment,
            "learn_runner": learn_runner,
            "monitors": monitors,
        },
        {
            "Estimator": "tf.estimator.Estimator",
            "ModelFnOps": "tf.estimator.EstimatorSpec",
            "DNNClassifier": None,
            "LinearClassifier": None,
        },
    )
    # TF 1.15's module paths: tensorflow.contrib.learn.python.learn.preprocessing.text, ...
    paths = {
        "python": module,
        "learn": module,
        "text": preprocessing,
        "categorical_vocabulary": preprocessing,
        "estimators": module,
        "model_fn": module,
        "run_config": module,
        "experiment": module,
    }
    for name, target in paths.items():
        module.__dict__.setdefault(name, target)
    preprocessing.__dict__.update({"text": preprocessing, "categorical_vocabulary": preprocessing})
    return module
