"""tf.contrib.crf of TF 1.x: the linear-chain CRF of BERT + CRF taggers.

crf_log_likelihood (its `transitions` variable made by get_variable in the
current scope, as TF 1.15 made it), crf_decode (Viterbi in the graph),
crf_log_norm (the forward algorithm), crf_sequence_score and the numpy
viterbi_decode that taggers run on fetched scores.
"""

import numpy as np
import tensorflow as tf

from ..machinery.namespaces import Namespace

_V1 = tf.compat.v1


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


def crf_module():
    """tf.contrib.crf."""
    return Namespace(
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
