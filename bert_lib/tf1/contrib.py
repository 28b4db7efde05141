"""The tf.contrib pieces TF 1.x BERT code used, for the TF 1.x API module (tf1/__init__.py).

tf.contrib is gone from TensorFlow 2. What BERT code and the research
derived from it took from it is here: tpu (estimator/), layers
(layers/), data (now tf.data.experimental), cluster_resolver, the
linear-chain CRF of BERT+CRF taggers (crf_log_likelihood, crf_decode),
metrics.streaming_pearson_correlation and streaming_concat, rnn (rnn/) and
compiler.jit.experimental_jit_scope.
"""

import numpy as np
import tensorflow as tf

from . import contrib_extras, contrib_parts
from . import estimator as tf1_estimator
from . import internals as tf1_internals
from . import layers as tf1_layers
from . import rnn as tf1_rnn
from .machinery.namespaces import Namespace

_V1 = tf.compat.v1


class TPUClusterResolver:
    """tf.contrib.cluster_resolver.TPUClusterResolver: names the TPU for RunConfig(cluster=).

    The engine resolves the TPU itself (TPUStrategy) from these names when
    training starts; nothing is contacted when this is made.
    """

    def __init__(self, tpu=None, zone=None, project=None, job_name="worker", **unused):
        self.tpu = tpu
        self.zone = zone
        self.project = project
        self.job_name = job_name

    def master(self, *unused_args, **unused_kwargs):
        """The TPU's name, as RunConfig(master=...) took it."""
        return self.tpu


# ---------------------------------------------------------------------------
# Linear-chain CRF (tf.contrib.crf)


def _length_mask(sequence_lengths, max_length, dtype):
    return tf.sequence_mask(sequence_lengths, max_length, dtype=dtype)


def crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params):
    """Score of each tag sequence: its unary potentials plus its transitions, within its length.

    inputs [batch, time, tags] float; tag_indices [batch, time] int;
    sequence_lengths [batch]; transition_params [tags, tags]. Returns [batch].
    """
    tag_indices = tf.cast(tag_indices, tf.int32)
    max_length = tf.shape(inputs)[1]
    mask = _length_mask(sequence_lengths, max_length, inputs.dtype)
    unary = tf.reduce_sum(tf.gather(inputs, tag_indices, axis=2, batch_dims=2) * mask, axis=1)
    pairs = tf.stack([tag_indices[:, :-1], tag_indices[:, 1:]], axis=2)
    binary = tf.gather_nd(transition_params, pairs) * mask[:, 1:]
    return unary + tf.reduce_sum(binary, axis=1)


def crf_log_norm(inputs, sequence_lengths, transition_params):
    """log of the sum over all tag sequences of exp(score): the forward algorithm. [batch]."""
    first = inputs[:, 0, :]
    rest = tf.transpose(inputs[:, 1:, :], [1, 0, 2])
    steps = tf.range(1, tf.shape(inputs)[1])
    lengths = tf.cast(sequence_lengths, tf.int32)

    def step(alpha, elements):
        unary, t = elements
        scores = tf.reduce_logsumexp(alpha[:, :, None] + transition_params[None], axis=1) + unary
        return tf.where((t < lengths)[:, None], scores, alpha)

    alphas = tf.scan(step, (rest, steps), initializer=first)
    last = tf.concat([first[None], alphas], axis=0)[-1]
    log_norm = tf.reduce_logsumexp(last, axis=1)
    return tf.where(lengths <= 0, tf.zeros_like(log_norm), log_norm)


def crf_log_likelihood(inputs, tag_indices, sequence_lengths, transition_params=None):
    """Log-likelihood of the tag sequences under a linear-chain CRF.

    Makes the variable `transitions` [tags, tags] (get_variable, in the
    current scope) when transition_params is None. Returns
    (log_likelihood [batch], transition_params).
    """
    num_tags = inputs.shape[2]
    num_tags = getattr(num_tags, "value", num_tags)
    if transition_params is None:
        transition_params = _V1.get_variable("transitions", [num_tags, num_tags])
    score = crf_sequence_score(inputs, tag_indices, sequence_lengths, transition_params)
    return score - crf_log_norm(inputs, sequence_lengths, transition_params), transition_params


def crf_decode(potentials, transition_params, sequence_length):
    """Viterbi decoding: (best tags [batch, time] int32, their scores [batch]).

    Positions at or past a sequence's length repeat its last tag.
    """
    first = potentials[:, 0, :]
    rest = tf.transpose(potentials[:, 1:, :], [1, 0, 2])
    steps = tf.range(1, tf.shape(potentials)[1])
    lengths = tf.cast(sequence_length, tf.int32)
    num_tags = tf.shape(potentials)[2]
    identity = tf.tile(tf.range(num_tags)[None], [tf.shape(potentials)[0], 1])

    def step(carry, elements):
        alpha, _ = carry
        unary, t = elements
        scores = alpha[:, :, None] + transition_params[None]
        best_previous = tf.argmax(scores, axis=1, output_type=tf.int32)
        new_alpha = tf.reduce_max(scores, axis=1) + unary
        inside = (t < lengths)[:, None]
        return tf.where(inside, new_alpha, alpha), tf.where(inside, best_previous, identity)

    alphas, pointers = tf.scan(step, (rest, steps), initializer=(first, identity))
    last_alpha = tf.concat([first[None], alphas], axis=0)[-1]
    best_score = tf.reduce_max(last_alpha, axis=1)
    last_tag = tf.argmax(last_alpha, axis=1, output_type=tf.int32)

    def back(tag, pointer):
        return tf.gather(pointer, tag[:, None], axis=1, batch_dims=1)[:, 0]

    earlier = tf.scan(back, pointers, initializer=last_tag, reverse=True)
    tags = tf.concat([earlier, last_tag[None]], axis=0)
    return tf.transpose(tags, [1, 0]), best_score


def viterbi_decode(score, transition_params):
    """numpy Viterbi for one sequence: (best tag list, its score)."""
    score = np.asarray(score)
    trellis = score[0].copy()
    pointers = []
    for t in range(1, score.shape[0]):
        scores = trellis[:, None] + transition_params
        pointers.append(np.argmax(scores, axis=0))
        trellis = np.max(scores, axis=0) + score[t]
    tags = [int(np.argmax(trellis))]
    for pointer in reversed(pointers):
        tags.append(int(pointer[tags[-1]]))
    tags.reverse()
    return tags, float(np.max(trellis))


# ---------------------------------------------------------------------------
# Metrics


def streaming_pearson_correlation(
    predictions,
    labels,
    weights=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """Pearson's r of predictions and labels over every batch seen: (value, update_op).

    Weighted sums are accumulated in float64 local variables.
    """
    with _V1.variable_scope(name, default_name="pearson_r"):
        x = tf.reshape(tf.cast(predictions, tf.float64), [-1])
        y = tf.reshape(tf.cast(labels, tf.float64), [-1])
        w = tf.ones_like(x) if weights is None else tf.reshape(tf.cast(weights, tf.float64), [-1])
        w = w * tf.ones_like(x)
        sums = {}
        updates = []
        for key, batch in (
            ("n", w),
            ("x", w * x),
            ("y", w * y),
            ("xx", w * x * x),
            ("yy", w * y * y),
            ("xy", w * x * y),
        ):
            total = _V1.get_variable(
                key,
                [],
                tf.float64,
                initializer=_V1.zeros_initializer(),
                trainable=False,
                collections=[_V1.GraphKeys.LOCAL_VARIABLES, _V1.GraphKeys.METRIC_VARIABLES],
            )
            sums[key] = total
            updates.append(_V1.assign_add(total, tf.reduce_sum(batch)))

        def value(s):
            n = s["n"]
            covariance = n * s["xy"] - s["x"] * s["y"]
            spread = (n * s["xx"] - s["x"] ** 2) * (n * s["yy"] - s["y"] ** 2)
            return tf.cast(covariance / tf.sqrt(spread), tf.float32)

        result = value(sums)
        with tf.control_dependencies(updates):
            update_op = value({k: tf.identity(v) for k, v in sums.items()})
        for collection in metrics_collections or ():
            _V1.add_to_collection(collection, result)
        for collection in updates_collections or ():
            _V1.add_to_collection(collection, update_op)
        return result, update_op


def streaming_concat(
    values,
    axis=0,
    max_size=None,
    metrics_collections=None,
    updates_collections=None,
    name=None,
):
    """Every batch's `values` concatenated along `axis`: (value, update_op), in a local
    variable that grows (max_size is not enforced)."""
    del max_size
    with _V1.variable_scope(name, default_name="streaming_concat", values=[values]):
        values = tf.convert_to_tensor(values)
        empty = values.shape.as_list()
        axis = axis % len(empty)
        empty[axis] = 0
        if None in empty:
            raise ValueError(f"streaming_concat needs static dimensions besides axis {axis}")
        array = _V1.Variable(
            tf.zeros(empty, values.dtype),
            trainable=False,
            validate_shape=False,
            collections=[_V1.GraphKeys.LOCAL_VARIABLES, _V1.GraphKeys.METRIC_VARIABLES],
            name="array",
        )
        update_op = _V1.assign(array, tf.concat([array, values], axis), validate_shape=False)
        value = tf.identity(array)
        for collection in metrics_collections or ():
            _V1.add_to_collection(collection, value)
        for collection in updates_collections or ():
            _V1.add_to_collection(collection, update_op)
        return value, update_op


def experimental_jit_scope(compile_ops=True, separate_compiled_gradients=False):
    """tf.contrib.compiler.jit.experimental_jit_scope: XLA-compile the ops made inside."""
    return tf.xla.experimental.jit_scope(
        compile_ops=compile_ops, separate_compiled_gradients=separate_compiled_gradients
    )


def modules(estimator_classes):
    """tf.contrib's submodules, by name: the one place a contrib package is registered
    (its TF 1.15 module paths, internals.attach_module_paths, follow from the name).
    tf.contrib.tpu's TPUEstimator is that of estimator_classes
    (estimator.estimator_classes)."""
    crf = Namespace(
        "tf.contrib.crf",
        None,
        {
            "crf_log_likelihood": crf_log_likelihood,
            "crf_decode": crf_decode,
            "crf_log_norm": crf_log_norm,
            "crf_sequence_score": crf_sequence_score,
            "viterbi_decode": viterbi_decode,
        },
    )
    return tf1_internals.attach_module_paths(
        {
            "tpu": tf1_estimator.tpu_module(estimator_classes),
            "cluster_resolver": Namespace(
                "tf.contrib.cluster_resolver",
                tf.distribute.cluster_resolver,
                {"TPUClusterResolver": TPUClusterResolver},
            ),
            "data": Namespace("tf.contrib.data", _V1.data.experimental),
            "layers": tf1_layers.contrib_layers_module(),
            "crf": crf,
            "rnn": tf1_rnn.contrib_rnn_module(),
            "framework": contrib_extras.framework_module(),
            "training": contrib_extras.training_module(),
            "estimator": tf1_estimator.contrib_estimator_module(),
            "metrics": Namespace(
                "tf.contrib.metrics",
                None,
                {
                    "streaming_pearson_correlation": streaming_pearson_correlation,
                    "streaming_concat": streaming_concat,
                },
                {"streaming_accuracy": "tf.metrics.accuracy", "streaming_mean": "tf.metrics.mean"},
            ),
            "compiler": Namespace(
                "tf.contrib.compiler",
                None,
                {
                    "jit": Namespace(
                        "tf.contrib.compiler.jit",
                        None,
                        {"experimental_jit_scope": experimental_jit_scope},
                    )
                },
            ),
            **contrib_parts.modules(estimator_classes),
        }
    )
