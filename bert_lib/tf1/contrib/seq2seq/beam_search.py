"""tf.contrib.seq2seq's beam search of TF 1.x: tile_batch, BeamSearchDecoder (length and
coverage penalties) and gather_tree, which follows the beams back through their parents."""

import collections

import numpy as np
import tensorflow as tf

from . import shapes
from .attention_wrapper import AttentionWrapperState
from .decoders import Decoder

_V1 = tf.compat.v1


def _tile_one(tensor, multiplier):
    tensor = tf.convert_to_tensor(tensor, name="t")
    if tensor.shape.ndims is None:
        raise ValueError("t must have statically known rank")
    if tensor.shape.ndims < 1:
        raise ValueError("t must have rank at least 1")
    shape = tf.shape(tensor)
    tiled = tf.tile(tf.expand_dims(tensor, 1), [1, multiplier] + [1] * (tensor.shape.ndims - 1))
    tiled = tf.reshape(tiled, tf.concat([[shape[0] * multiplier], shape[1:]], 0))
    batch = tensor.shape[0]
    batch = getattr(batch, "value", batch)
    tiled.set_shape(
        [batch * multiplier if batch is not None else None] + tensor.shape[1:].as_list()
    )
    return tiled


def tile_batch(t, multiplier, name=None):
    """Each batch entry of t (or of each tensor of a nested structure) repeated multiplier
    times in a row: [batch, ...] -> [batch * multiplier, ...], for beam search's beams."""
    with tf.name_scope(name or "tile_batch"):
        return tf.nest.map_structure(lambda tensor: _tile_one(tensor, multiplier), t)


class BeamSearchDecoderState(
    collections.namedtuple(
        "BeamSearchDecoderState",
        ("cell_state", "log_probs", "finished", "lengths", "accumulated_attention_probs"),
    )
):
    """The beams' state: the cell's, their log-probabilities, finished flags, lengths
    (and the attention probabilities the coverage penalty sums)."""


class BeamSearchDecoderOutput(
    collections.namedtuple("BeamSearchDecoderOutput", ("scores", "predicted_ids", "parent_ids"))
):
    """One beam search step: the beams' scores, their new ids and their parent beams."""


class FinalBeamSearchDecoderOutput(
    collections.namedtuple(
        "FinalBeamDecoderOutput", ["predicted_ids", "beam_search_decoder_output"]
    )
):
    """What dynamic_decode returns for beam search: the beams' full sequences
    (predicted_ids [batch, time, beam]) and the step outputs they came from."""


def gather_tree(step_ids, parent_ids, max_sequence_lengths, end_token, name=None):
    """The beams' full id sequences [time, batch, beam], followed back from each beam's
    last step (max_sequence_lengths[batch] - 1) through parent_ids; end_token from the
    first end_token of a sequence on, and past its batch's length."""
    with tf.name_scope(name or "GatherTree"):
        step_ids = tf.convert_to_tensor(step_ids, name="step_ids")
        parent_ids = tf.convert_to_tensor(parent_ids, name="parent_ids")
        max_lengths = tf.cast(max_sequence_lengths, tf.int32)
        end = tf.cast(end_token, step_ids.dtype)
        beam_width = tf.shape(step_ids)[2]
        identity = tf.broadcast_to(
            tf.cast(tf.range(beam_width), parent_ids.dtype)[None], tf.shape(step_ids)[1:]
        )

        def back(carry, elements):
            _, parent = carry
            ids, parents, time = elements
            inside = (time < max_lengths)[:, None]
            parent = tf.clip_by_value(parent, 0, tf.cast(beam_width - 1, parent.dtype))
            chosen = tf.gather(ids, parent, batch_dims=1)
            earlier = tf.gather(parents, parent, batch_dims=1)
            return (
                tf.where(inside, chosen, tf.fill(tf.shape(chosen), end)),
                tf.where(inside, earlier, identity),
            )

        beams, _ = tf.scan(
            back,
            (step_ids, parent_ids, tf.range(tf.shape(step_ids)[0])),
            initializer=(tf.zeros_like(step_ids[0]), identity),
            reverse=True,
        )
        ended_before = tf.cumsum(tf.cast(tf.equal(beams, end), tf.int32), axis=0, exclusive=True)
        return tf.where(ended_before > 0, tf.fill(tf.shape(beams), end), beams)


def gather_tree_from_array(t, parent_ids, sequence_length):
    """The entries of t [time, batch * beam or batch, beam, ...] reordered along the beams'
    ancestry (parent_ids), as the decoded sequences are."""
    max_time = shapes.static_or_dynamic(parent_ids, 0)
    batch_size = shapes.static_or_dynamic(parent_ids, 1)
    beam_width = shapes.static_or_dynamic(parent_ids, 2)
    beam_ids = tf.tile(tf.range(beam_width)[None, None], [max_time, batch_size, 1])
    max_lengths = tf.cast(tf.reduce_max(sequence_length, axis=1), tf.int32)
    sorted_ids = gather_tree(beam_ids, parent_ids, max_lengths, beam_width + 1)
    in_bounds = tf.transpose(tf.sequence_mask(sequence_length, maxlen=max_time), [2, 0, 1])
    sorted_ids = tf.where(in_bounds, sorted_ids, beam_ids)
    time_index = tf.tile(tf.reshape(tf.range(max_time), [-1, 1, 1]), [1, batch_size, beam_width])
    batch_index = tf.transpose(
        tf.tile(tf.reshape(tf.range(batch_size), [-1, 1, 1]), [1, max_time, beam_width]),
        [1, 0, 2],
    )
    indices = tf.stack([time_index, batch_index, sorted_ids], -1)
    final_shape = tf.shape(t)
    ordered = tf.gather_nd(tf.reshape(t, [max_time, batch_size, beam_width, -1]), indices)
    return tf.reshape(ordered, final_shape)


def _gather_beams(gather_indices, gather_from, batch_size, range_size, gather_shape, name=None):
    """gather_from's rows picked per batch entry by gather_indices [batch, beam]."""
    with tf.name_scope(name or "tensor_gather_helper"):
        offsets = tf.expand_dims(tf.range(batch_size) * range_size, 1)
        flat_indices = tf.reshape(gather_indices + offsets, [-1])
        output = tf.gather(tf.reshape(gather_from, gather_shape), flat_indices)
        final_shape = tf.shape(gather_from)[: 1 + len(gather_shape)]
        static = tf.TensorShape([tf.get_static_value(batch_size)]).concatenate(
            gather_from.shape[1 : 1 + len(gather_shape)]
        )
        output = tf.reshape(output, final_shape, name="output")
        output.set_shape(static)
        return output


def _maybe_gather_beams(gather_indices, gather_from, batch_size, range_size, gather_shape):
    if isinstance(gather_from, tf.TensorArray):
        return gather_from
    if gather_from.shape.ndims >= len(gather_shape):
        return _gather_beams(gather_indices, gather_from, batch_size, range_size, gather_shape)
    return gather_from


def _length_penalty(sequence_lengths, penalty_factor):
    """((5 + length) / 6) ** penalty_factor (Wu et al., 2016); 1 when the factor is 0."""
    penalty_factor = tf.convert_to_tensor(penalty_factor, name="penalty_factor")
    penalty_factor.set_shape(())
    static = tf.get_static_value(penalty_factor)
    if static is not None and static == 0:
        return 1.0
    return tf.math.divide(
        (5.0 + tf.cast(sequence_lengths, tf.float32)) ** penalty_factor,
        (5.0 + 1.0) ** penalty_factor,
    )


def _attention_probs(state):
    probs = state.alignments
    if isinstance(probs, tuple):
        probs = tf.reduce_mean(tf.concat([tf.expand_dims(p, -1) for p in probs], -1), -1)
    return probs


def _coverage_attention_probs(cell_state, coverage_penalty_weight):
    if coverage_penalty_weight == 0.0:
        return None
    if isinstance(cell_state, AttentionWrapperState):
        per_layer = [_attention_probs(cell_state)]
    elif isinstance(cell_state, tuple):
        per_layer = [
            _attention_probs(s) for s in cell_state if isinstance(s, AttentionWrapperState)
        ]
    else:
        per_layer = []
    if not per_layer:
        raise ValueError("coverage_penalty_weight must be 0.0 if no cell is attentional.")
    if len(per_layer) == 1:
        return per_layer[0]
    return tf.reduce_mean(tf.concat([tf.expand_dims(p, -1) for p in per_layer], -1), -1)


def _beam_scores(
    log_probs,
    lengths,
    length_penalty_weight,
    coverage_penalty_weight,
    finished,
    accumulated_attention_probs,
):
    scores = log_probs / tf.cast(_length_penalty(lengths, length_penalty_weight), log_probs.dtype)
    weight = tf.convert_to_tensor(coverage_penalty_weight, name="coverage_penalty_weight")
    if weight.shape.ndims != 0:
        raise ValueError(
            f"coverage_penalty_weight should be a scalar, but saw shape: {weight.shape}"
        )
    if tf.get_static_value(weight) == 0.0:
        return scores
    probs = tf.where(
        tf.equal(accumulated_attention_probs, 0.0),
        tf.ones_like(accumulated_attention_probs),
        accumulated_attention_probs,
    )
    coverage = tf.reduce_sum(tf.math.log(tf.minimum(probs, 1.0)), 2)
    coverage *= tf.cast(finished, tf.float32)
    return scores + tf.expand_dims(coverage * weight, 2)


class BeamSearchDecoder(Decoder):
    """Beam search over the cell: each step keeps the beam_width best continuations of
    every batch entry by log-probability (divided by the length penalty, plus the coverage
    penalty); a finished beam only extends with end_token at no cost. The cell's state and
    the memory of its attention must be tiled beam_width times (tile_batch). finalize gives
    FinalBeamSearchDecoderOutput, whose predicted_ids [batch, time, beam] are the beams'
    sequences followed back through their parents (gather_tree)."""

    tracks_own_finished = True

    def __init__(
        self,
        cell,
        embedding,
        start_tokens,
        end_token,
        initial_state,
        beam_width,
        output_layer=None,
        length_penalty_weight=0.0,
        coverage_penalty_weight=0.0,
        reorder_tensor_arrays=True,
    ):
        self._cell = cell
        self._output_layer = output_layer
        self._reorder_tensor_arrays = reorder_tensor_arrays
        self._beam_width = beam_width
        self._length_penalty_weight = length_penalty_weight
        self._coverage_penalty_weight = coverage_penalty_weight
        if callable(embedding):
            self._embedding_fn = embedding
        else:
            self._embedding_fn = lambda ids: tf.nn.embedding_lookup(embedding, ids)
        self._start_tokens = tf.convert_to_tensor(start_tokens, tf.int32, name="start_tokens")
        if self._start_tokens.get_shape().ndims != 1:
            raise ValueError("start_tokens must be a vector")
        self._end_token = tf.convert_to_tensor(end_token, tf.int32, name="end_token")
        if self._end_token.get_shape().ndims != 0:
            raise ValueError("end_token must be a scalar")
        self._batch_size = tf.size(start_tokens)
        self._initial_cell_state = tf.nest.map_structure(
            self._maybe_split_batch_beams, initial_state, self._cell.state_size
        )
        self._start_tokens = tf.tile(tf.expand_dims(self._start_tokens, 1), [1, beam_width])
        self._start_inputs = self._embedding_fn(self._start_tokens)
        self._finished = tf.one_hot(
            tf.zeros([self._batch_size], dtype=tf.int32),
            depth=beam_width,
            on_value=False,
            off_value=True,
            dtype=tf.bool,
        )

    @property
    def batch_size(self):
        return self._batch_size

    def _rnn_output_size(self):
        if self._output_layer is None:
            return self._cell.output_size
        return shapes.layer_output_size(self._output_layer, self._cell.output_size)

    @property
    def output_size(self):
        width = tf.TensorShape([self._beam_width])
        return BeamSearchDecoderOutput(scores=width, predicted_ids=width, parent_ids=width)

    @property
    def output_dtype(self):
        dtype = tf.nest.flatten(self._initial_cell_state)[0].dtype
        return BeamSearchDecoderOutput(
            scores=tf.nest.map_structure(lambda _: dtype, self._rnn_output_size()),
            predicted_ids=tf.int32,
            parent_ids=tf.int32,
        )

    def initialize(self, name=None):
        dtype = tf.nest.flatten(self._initial_cell_state)[0].dtype
        log_probs = tf.one_hot(
            tf.zeros([self._batch_size], dtype=tf.int32),
            depth=self._beam_width,
            on_value=tf.convert_to_tensor(0.0, dtype=dtype),
            off_value=tf.convert_to_tensor(-np.inf, dtype=dtype),
            dtype=dtype,
        )
        attention_probs = _coverage_attention_probs(
            self._initial_cell_state, self._coverage_penalty_weight
        )
        state = BeamSearchDecoderState(
            cell_state=self._initial_cell_state,
            log_probs=log_probs,
            finished=self._finished,
            lengths=tf.zeros([self._batch_size, self._beam_width], dtype=tf.int64),
            accumulated_attention_probs=() if attention_probs is None else attention_probs,
        )
        return self._finished, self._start_inputs, state

    def finalize(self, outputs, final_state, sequence_lengths):
        del sequence_lengths
        max_lengths = tf.cast(tf.reduce_max(final_state.lengths, axis=1), tf.int32)
        predicted_ids = gather_tree(
            outputs.predicted_ids, outputs.parent_ids, max_lengths, self._end_token
        )
        if self._reorder_tensor_arrays:
            final_state = final_state._replace(
                cell_state=tf.nest.map_structure(
                    lambda t: self._maybe_sort_array_beams(
                        t, outputs.parent_ids, final_state.lengths
                    ),
                    final_state.cell_state,
                )
            )
        return (
            FinalBeamSearchDecoderOutput(
                beam_search_decoder_output=outputs, predicted_ids=predicted_ids
            ),
            final_state,
        )

    def _merge_batch_beams(self, t, s=None):
        s = shapes.state_shape(s)
        static_batch = tf.get_static_value(self._batch_size)
        merged_batch = None if static_batch is None else static_batch * self._beam_width
        merged = tf.reshape(
            t, tf.concat(([self._batch_size * self._beam_width], tf.shape(t)[2:]), 0)
        )
        merged.set_shape(tf.TensorShape([merged_batch]).concatenate(s))
        return merged

    def _split_batch_beams(self, t, s=None):
        s = shapes.state_shape(s)
        split = tf.reshape(
            t, tf.concat(([self._batch_size, self._beam_width], tf.shape(t)[1:]), 0)
        )
        expected = tf.TensorShape(
            [tf.get_static_value(self._batch_size), self._beam_width]
        ).concatenate(s)
        if not split.shape.is_compatible_with(expected):
            raise ValueError(
                "Unexpected behavior when reshaping between beam width and batch size.  The "
                f"reshaped tensor has shape: {split.shape}.  We expected it to have shape "
                f"(batch_size, beam_width, depth) == {expected}.  Perhaps you forgot to "
                "create a zero_state with batch_size=encoder_batch_size * beam_width?"
            )
        split.set_shape(expected)
        return split

    def _maybe_split_batch_beams(self, t, s):
        if isinstance(t, tf.TensorArray) or t.shape.ndims < 1:
            return t
        return self._split_batch_beams(t, s)

    def _maybe_merge_batch_beams(self, t, s):
        if isinstance(t, tf.TensorArray) or t.shape.ndims < 2:
            return t
        return self._merge_batch_beams(t, s)

    def _maybe_sort_array_beams(self, t, parent_ids, sequence_length):
        if not isinstance(t, tf.TensorArray):
            return t
        shape = t.element_shape
        if shape.ndims is None or shape.ndims < 1:
            return t
        # Reordered only when TF 1.15 reordered it: its check leaves an array of
        # [batch * beam, ...] elements of rank 2 or more (such as an alignment history)
        # as it is.
        static_batch = tf.get_static_value(self._batch_size)
        first = tf.compat.dimension_value(shape[0])
        second = tf.compat.dimension_value(shape[1]) if shape.ndims >= 2 else None
        if (
            static_batch is not None
            and first is not None
            and (
                first != static_batch * self._beam_width
                or (second is not None and (first != static_batch or second != self._beam_width))
            )
        ):
            return t
        return gather_tree_from_array(t.stack(), parent_ids, sequence_length)

    def step(self, time, inputs, state, name=None):
        batch_size, beam_width, end_token = self._batch_size, self._beam_width, self._end_token
        with tf.name_scope(name or "BeamSearchDecoderStep"):
            inputs = tf.nest.map_structure(
                lambda x: self._merge_batch_beams(x, s=x.shape[2:]), inputs
            )
            cell_state = tf.nest.map_structure(
                self._maybe_merge_batch_beams, state.cell_state, self._cell.state_size
            )
            cell_outputs, next_cell_state = self._cell(inputs, cell_state)
            cell_outputs = tf.nest.map_structure(
                lambda out: self._split_batch_beams(out, out.shape[1:]), cell_outputs
            )
            next_cell_state = tf.nest.map_structure(
                self._maybe_split_batch_beams, next_cell_state, self._cell.state_size
            )
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            output, next_state = _beam_search_step(
                time,
                cell_outputs,
                next_cell_state,
                state,
                batch_size,
                beam_width,
                end_token,
                self._length_penalty_weight,
                self._coverage_penalty_weight,
            )
            finished = next_state.finished
            next_inputs = _V1.cond(
                tf.reduce_all(finished),
                lambda: self._start_inputs,
                lambda: self._embedding_fn(output.predicted_ids),
            )
        return output, next_state, next_inputs, finished


def _finished_only_end(log_probs, end_token, finished):
    """log_probs [batch, beam, vocab] where a finished beam continues only with end_token,
    at no cost (0 for end_token, the dtype's minimum for every other id)."""
    vocab_size = tf.shape(log_probs)[2]
    finished_row = tf.one_hot(
        end_token,
        vocab_size,
        dtype=log_probs.dtype,
        on_value=tf.convert_to_tensor(0.0, dtype=log_probs.dtype),
        off_value=log_probs.dtype.min,
    )
    finished_probs = tf.tile(
        tf.reshape(finished_row, [1, 1, -1]), tf.concat([tf.shape(finished), [1]], 0)
    )
    finished_mask = tf.tile(tf.expand_dims(finished, 2), [1, 1, vocab_size])
    return _V1.where(finished_mask, finished_probs, log_probs)


def _beam_search_step(
    time,
    logits,
    next_cell_state,
    beam_state,
    batch_size,
    beam_width,
    end_token,
    length_penalty_weight,
    coverage_penalty_weight,
):
    static_batch = tf.get_static_value(batch_size)
    lengths = beam_state.lengths
    previously_finished = beam_state.finished
    not_finished = tf.logical_not(previously_finished)
    step_log_probs = _finished_only_end(tf.nn.log_softmax(logits), end_token, previously_finished)
    vocab_size = tf.compat.dimension_value(logits.shape[-1]) or tf.shape(logits)[-1]
    total_probs = tf.expand_dims(beam_state.log_probs, 2) + step_log_probs
    lengths_to_add = tf.one_hot(
        tf.fill([batch_size, beam_width], end_token),
        depth=vocab_size,
        on_value=tf.constant(0, tf.int64),
        off_value=tf.constant(1, tf.int64),
        dtype=tf.int64,
    )
    lengths_to_add *= tf.expand_dims(tf.cast(not_finished, tf.int64), 2)
    new_lengths = lengths_to_add + tf.expand_dims(lengths, 2)
    accumulated = None
    attention_probs = _coverage_attention_probs(next_cell_state, coverage_penalty_weight)
    if attention_probs is not None:
        attention_probs *= tf.expand_dims(tf.cast(not_finished, tf.float32), 2)
        accumulated = beam_state.accumulated_attention_probs + attention_probs
    scores = _beam_scores(
        total_probs,
        new_lengths,
        length_penalty_weight,
        coverage_penalty_weight,
        previously_finished,
        accumulated,
    )
    scores_flat = tf.reshape(scores, [batch_size, -1])
    next_scores, word_indices = tf.nn.top_k(
        scores_flat, k=tf.convert_to_tensor(beam_width, dtype=tf.int32, name="beam_width")
    )
    next_scores.set_shape([static_batch, beam_width])
    word_indices.set_shape([static_batch, beam_width])
    next_probs = _gather_beams(
        word_indices,
        total_probs,
        batch_size,
        beam_width * vocab_size,
        [-1],
        name="next_beam_probs",
    )
    next_word_ids = tf.cast(tf.math.floormod(word_indices, vocab_size), tf.int32)
    next_parent_ids = tf.cast(
        tf.math.truediv(word_indices, vocab_size), tf.int32, name="next_beam_parent_ids"
    )
    previously_finished = _gather_beams(
        next_parent_ids, previously_finished, batch_size, beam_width, [-1]
    )
    next_finished = tf.logical_or(
        previously_finished, tf.equal(next_word_ids, end_token), name="next_beam_finished"
    )
    next_lengths = _gather_beams(next_parent_ids, beam_state.lengths, batch_size, beam_width, [-1])
    next_lengths += tf.cast(tf.logical_not(previously_finished), tf.int64)
    next_accumulated = ()
    if accumulated is not None:
        next_accumulated = _gather_beams(
            next_parent_ids,
            accumulated,
            batch_size,
            beam_width,
            [batch_size * beam_width, -1],
            name="next_accumulated_attention_probs",
        )
    next_cell_state = tf.nest.map_structure(
        lambda state: _maybe_gather_beams(
            next_parent_ids, state, batch_size, beam_width, [batch_size * beam_width, -1]
        ),
        next_cell_state,
    )
    next_state = BeamSearchDecoderState(
        cell_state=next_cell_state,
        log_probs=next_probs,
        lengths=next_lengths,
        finished=next_finished,
        accumulated_attention_probs=next_accumulated,
    )
    output = BeamSearchDecoderOutput(
        scores=next_scores, predicted_ids=next_word_ids, parent_ids=next_parent_ids
    )
    return output, next_state


# The decoding pieces that are not here.
