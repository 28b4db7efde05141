"""tf.contrib.seq2seq of TF 1.x: attention, decoding loops and the sequence loss.

What sequence-to-sequence code with attention of 2017-2019 used:
BahdanauAttention and LuongAttention over an encoder's outputs,
AttentionWrapper around a decoder cell (its state AttentionWrapperState),
BasicDecoder driven by a TrainingHelper (teacher forcing) or a
GreedyEmbeddingHelper (feeding back its own argmax) in dynamic_decode's
while loop, BeamSearchDecoder over tile_batch'ed memory and state (its
beams followed back by gather_tree), and sequence_loss (the weighted
per-token cross-entropy, averaged or summed over time and batch as its four
switches say, a zero denominator giving zero). Variables are named as TF
1.15 named them (`memory_layer/kernel`,
`decoder/attention_wrapper/lstm_cell/kernel`,
`.../bahdanau_attention/attention_v`, `.../attention_layer/kernel`), with
its initializers, so checkpoints move both ways. ScheduledOutputTrainingHelper
and the monotonic attentions are not here: using one names it, refused.
"""

import collections
import math

import numpy as np
import tensorflow as tf

from ..layers import tf_layers as tf1_layers
from ..machinery.namespaces import Namespace
from ..rnn import cells as tf1_rnn_cells

_V1 = tf.compat.v1


def _rank(tensor):
    return len(tensor.get_shape())


def sequence_loss(
    logits,
    targets,
    weights,
    average_across_timesteps=True,
    average_across_batch=True,
    sum_over_timesteps=False,
    sum_over_batch=False,
    softmax_loss_function=None,
    name=None,
):
    """Weighted cross-entropy of logits [batch, time, classes] against targets [batch,
    time], weights [batch, time].

    Averaged over both axes (the default): sum of weighted losses / sum of weights.
    Summed over both: / the number of nonzero weights. Otherwise per axis: an average
    over one axis gives a vector over the other; sum_over_* divides by the nonzero
    weights of that axis. An average switch wins over the other axis's sum switch, as in
    TF 1.15. A zero denominator gives 0.
    """
    if _rank(logits) != 3:
        raise ValueError("Logits must be a [batch_size x sequence_length x logits] tensor")
    if _rank(targets) != 2:
        raise ValueError("Targets must be a [batch_size x sequence_length] tensor")
    if _rank(weights) != 2:
        raise ValueError("Weights must be a [batch_size x sequence_length] tensor")
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError(
            "average_across_timesteps and sum_over_timesteps cannot be set to True at same time."
        )
    if average_across_batch and sum_over_batch:
        raise ValueError(
            "average_across_batch and sum_over_batch cannot be set to True at same time."
        )
    with tf.name_scope(name or "sequence_loss"):
        flat_logits = tf.reshape(logits, [-1, tf.shape(logits)[2]])
        flat_targets = tf.reshape(targets, [-1])
        if softmax_loss_function is None:
            losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=flat_targets, logits=flat_logits
            )
        else:
            losses = softmax_loss_function(labels=flat_targets, logits=flat_logits)
        losses *= tf.reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return tf.math.divide_no_nan(tf.reduce_sum(losses), tf.reduce_sum(weights))
        if sum_over_timesteps and sum_over_batch:
            count = tf.cast(tf.math.count_nonzero(weights), losses.dtype)
            return tf.math.divide_no_nan(tf.reduce_sum(losses), count)
        losses = tf.reshape(losses, tf.shape(logits)[0:2])
        if average_across_timesteps or average_across_batch:
            axis = [0] if average_across_batch else [1]
            return tf.math.divide_no_nan(
                tf.reduce_sum(losses, axis=axis), tf.reduce_sum(weights, axis=axis)
            )
        if sum_over_timesteps or sum_over_batch:
            axis = [0] if sum_over_batch else [1]
            count = tf.cast(tf.math.count_nonzero(weights, axis=axis), losses.dtype)
            return tf.math.divide_no_nan(tf.reduce_sum(losses, axis=axis), count)
        return losses


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


# ---------------------------------------------------------------------------
# Attention mechanisms


def _static_or_dynamic(tensor, axis):
    size = tensor.shape[axis]
    size = getattr(size, "value", size)
    return size if size is not None else tf.shape(tensor)[axis]


def _zeros(size, batch_size, dtype):
    """Zeros [batch_size, size] (or [batch_size] + size), with what is known of the shape."""
    size = tf.TensorShape(size)
    dims = tf.constant(size.as_list(), dtype=tf.int32)
    batch = tf.reshape(tf.cast(batch_size, tf.int32), [1])
    value = tf.zeros(tf.concat([batch, dims], 0), dtype=dtype)
    value.set_shape(tf.TensorShape([tf.get_static_value(batch_size)]).concatenate(size))
    return value


def _prepare_memory(memory, memory_sequence_length, check_inner_dims_defined=True):
    """The memory, its positions past each sequence's length zeroed."""
    memory = tf.nest.map_structure(lambda m: tf.convert_to_tensor(m, name="memory"), memory)
    if check_inner_dims_defined:
        for m in tf.nest.flatten(memory):
            if not m.get_shape()[2:].is_fully_defined():
                raise ValueError(
                    f"Expected memory {m.name} to have fully defined inner dims, but saw "
                    f"shape: {m.get_shape()}"
                )
    if memory_sequence_length is None:
        return memory
    lengths = tf.convert_to_tensor(memory_sequence_length, name="memory_sequence_length")
    first = tf.nest.flatten(memory)[0]
    mask = tf.sequence_mask(lengths, maxlen=tf.shape(first)[1], dtype=first.dtype)

    def masked(m):
        extra_ones = tf.ones([m.get_shape().ndims - 2], dtype=tf.int32)
        return m * tf.reshape(mask, tf.concat((tf.shape(mask), extra_ones), 0))

    return tf.nest.map_structure(masked, memory)


def _mask_score(score, memory_sequence_length, score_mask_value):
    if memory_sequence_length is None:
        return score
    message = "All values in memory_sequence_length must be greater than zero."
    with tf.control_dependencies([_V1.assert_positive(memory_sequence_length, message=message)]):
        mask = tf.sequence_mask(memory_sequence_length, maxlen=tf.shape(score)[1])
    return _V1.where(mask, score, score_mask_value * tf.ones_like(score))


class AttentionMechanism:
    """What AttentionWrapper takes: BahdanauAttention, LuongAttention."""

    @property
    def alignments_size(self):
        raise NotImplementedError

    @property
    def state_size(self):
        raise NotImplementedError


class _MemoryAttention(AttentionMechanism):
    """Keys: the memory through `memory_layer` (a Dense without bias, called once, where
    the mechanism is made); values: the memory itself. Scores past a sequence's length
    become score_mask_value (-inf) before probability_fn."""

    def __init__(
        self,
        query_layer,
        memory_layer,
        memory,
        probability_fn,
        memory_sequence_length,
        score_mask_value,
        custom_key_value_fn,
        name,
    ):
        self._query_layer = query_layer
        self._memory_layer = memory_layer
        self.dtype = memory_layer.dtype
        if not callable(probability_fn):
            raise TypeError(
                f"probability_fn must be callable, saw type: {type(probability_fn).__name__}"
            )
        if score_mask_value is None:
            score_mask_value = tf.as_dtype(self.dtype or "float32").as_numpy_dtype(-np.inf)
        self._probability_fn = lambda score, previous: probability_fn(
            _mask_score(score, memory_sequence_length, score_mask_value), previous
        )
        with tf.name_scope(name):
            self._values = _prepare_memory(memory, memory_sequence_length)
            self._keys = memory_layer(self._values) if memory_layer else self._values
            if custom_key_value_fn is not None:
                self._keys, self._values = custom_key_value_fn(self._keys, self._values)
            self._batch_size = _static_or_dynamic(self._keys, 0)
            self._alignments_size = _static_or_dynamic(self._keys, 1)

    memory_layer = property(lambda self: self._memory_layer)
    query_layer = property(lambda self: self._query_layer)
    values = property(lambda self: self._values)
    keys = property(lambda self: self._keys)
    batch_size = property(lambda self: self._batch_size)
    alignments_size = property(lambda self: self._alignments_size)
    state_size = property(lambda self: self._alignments_size)

    def initial_alignments(self, batch_size, dtype):
        return _zeros(self._alignments_size, batch_size, dtype)

    def initial_state(self, batch_size, dtype):
        return self.initial_alignments(batch_size, dtype)


def _dense(num_units, name, dtype):
    return tf1_layers.Dense(num_units, name=name, use_bias=False, dtype=dtype)


class LuongAttention(_MemoryAttention):
    """Multiplicative attention: score = query . key (times the scalar attention_g with
    scale=True); the query must be as wide as num_units."""

    def __init__(
        self,
        num_units,
        memory,
        memory_sequence_length=None,
        scale=False,
        probability_fn=None,
        score_mask_value=None,
        dtype=None,
        custom_key_value_fn=None,
        name="LuongAttention",
    ):
        probability_fn = probability_fn or tf.nn.softmax
        dtype = dtype or tf.float32
        super().__init__(
            None,
            _dense(num_units, "memory_layer", dtype),
            memory,
            lambda score, _: probability_fn(score),
            memory_sequence_length,
            score_mask_value,
            custom_key_value_fn,
            name,
        )
        self._num_units = num_units
        self._scale = scale
        self._name = name

    def __call__(self, query, state):
        with _V1.variable_scope(None, "luong_attention", [query]):
            scale = None
            if self._scale:
                scale = _V1.get_variable(
                    "attention_g", dtype=query.dtype, initializer=_V1.ones_initializer, shape=()
                )
            depth, key_units = query.get_shape()[-1], self._keys.get_shape()[-1]
            if depth != key_units:
                raise ValueError(
                    "Incompatible or unknown inner dimensions between query and keys.  "
                    f"Query ({query}) has units: {depth}.  Keys ({self._keys}) have units: "
                    f"{key_units}.  Perhaps you need to set num_units to the keys' dimension "
                    f"({key_units})?"
                )
            score = tf.squeeze(
                tf.matmul(tf.expand_dims(query, 1), self._keys, transpose_b=True), [1]
            )
            if scale is not None:
                score = scale * score
        alignments = self._probability_fn(score, state)
        return alignments, alignments


class BahdanauAttention(_MemoryAttention):
    """Additive attention: score = v . tanh(keys + query_layer(query)) (with normalize=True,
    v weight-normalized by attention_g and a bias attention_b added inside the tanh)."""

    def __init__(
        self,
        num_units,
        memory,
        memory_sequence_length=None,
        normalize=False,
        probability_fn=None,
        score_mask_value=None,
        dtype=None,
        custom_key_value_fn=None,
        name="BahdanauAttention",
    ):
        probability_fn = probability_fn or tf.nn.softmax
        dtype = dtype or tf.float32
        super().__init__(
            _dense(num_units, "query_layer", dtype),
            _dense(num_units, "memory_layer", dtype),
            memory,
            lambda score, _: probability_fn(score),
            memory_sequence_length,
            score_mask_value,
            custom_key_value_fn,
            name,
        )
        self._num_units = num_units
        self._normalize = normalize
        self._name = name

    def __call__(self, query, state):
        with _V1.variable_scope(None, "bahdanau_attention", [query]):
            processed = self.query_layer(query) if self.query_layer else query
            v = _V1.get_variable("attention_v", [self._num_units], dtype=query.dtype)
            processed = tf.expand_dims(processed, 1)
            if self._normalize:
                g = _V1.get_variable(
                    "attention_g",
                    dtype=query.dtype,
                    initializer=_V1.constant_initializer(math.sqrt(1.0 / self._num_units)),
                    shape=(),
                )
                b = _V1.get_variable(
                    "attention_b",
                    [self._num_units],
                    dtype=query.dtype,
                    initializer=_V1.zeros_initializer(),
                )
                normed_v = g * v * tf.math.rsqrt(tf.reduce_sum(tf.square(v)))
                score = tf.reduce_sum(normed_v * tf.tanh(self._keys + processed + b), [2])
            else:
                score = tf.reduce_sum(v * tf.tanh(self._keys + processed), [2])
        alignments = self._probability_fn(score, state)
        return alignments, alignments


def hardmax(logits, name=None):
    """One-hot of each row's argmax."""
    with tf.name_scope(name or "Hardmax"):
        logits = tf.convert_to_tensor(logits, name="logits")
        return tf.one_hot(
            tf.argmax(logits, -1), _static_or_dynamic(logits, -1), dtype=logits.dtype
        )


# ---------------------------------------------------------------------------
# AttentionWrapper


class AttentionWrapperState(
    collections.namedtuple(
        "AttentionWrapperState",
        ("cell_state", "attention", "time", "alignments", "alignment_history", "attention_state"),
    )
):
    """The state of an AttentionWrapper: the wrapped cell's, the last attention, the step,
    the alignments (and their history, a TensorArray, with alignment_history=True)."""

    def clone(self, **kwargs):
        def same_shape(old, new):
            if isinstance(old, tf.Tensor) and isinstance(new, tf.Tensor):
                new.set_shape(old.shape)
            return new

        return tf.nest.map_structure(same_shape, self, self._replace(**kwargs))


def _compute_attention(attention_mechanism, cell_output, attention_state, attention_layer):
    alignments, next_attention_state = attention_mechanism(cell_output, state=attention_state)
    context = tf.squeeze(tf.matmul(tf.expand_dims(alignments, 1), attention_mechanism.values), [1])
    if attention_layer is not None:
        attention = attention_layer(tf.concat([cell_output, context], 1))
    else:
        attention = context
    return attention, alignments, next_attention_state


class AttentionWrapper(tf1_rnn_cells.RNNCell):
    """A cell whose input is joined with the previous attention (cell_input_fn: concat),
    whose output queries the attention mechanism(s); the attention (through
    `attention_layer`, a Dense without bias, with attention_layer_size) is its output
    (output_attention) and the next step's input. The wrapped cell's variables are under
    its scope, `attention_wrapper`."""

    def __init__(
        self,
        cell,
        attention_mechanism,
        attention_layer_size=None,
        alignment_history=False,
        cell_input_fn=None,
        output_attention=True,
        initial_cell_state=None,
        name=None,
        attention_layer=None,
        attention_fn=None,
        dtype=None,
    ):
        super().__init__(name=name, dtype=dtype)
        self._is_multi = isinstance(attention_mechanism, (list, tuple))
        mechanisms = tuple(attention_mechanism) if self._is_multi else (attention_mechanism,)
        for mechanism in mechanisms:
            if not isinstance(mechanism, AttentionMechanism):
                raise TypeError(
                    "attention_mechanism must be an AttentionMechanism or list of multiple "
                    f"AttentionMechanism instances, saw type: {type(mechanism).__name__}"
                )
        if cell_input_fn is None:
            cell_input_fn = lambda inputs, attention: tf.concat([inputs, attention], -1)  # noqa: E731
        elif not callable(cell_input_fn):
            raise TypeError(
                f"cell_input_fn must be callable, saw type: {type(cell_input_fn).__name__}"
            )
        if attention_layer_size is not None and attention_layer is not None:
            raise ValueError("Only one of attention_layer_size and attention_layer should be set")
        if attention_layer_size is not None:
            sizes = tuple(
                attention_layer_size
                if isinstance(attention_layer_size, (list, tuple))
                else (attention_layer_size,)
            )
            if len(sizes) != len(mechanisms):
                raise ValueError(
                    "If provided, attention_layer_size must contain exactly one integer per "
                    f"attention_mechanism, saw: {len(sizes)} vs {len(mechanisms)}"
                )
            self._attention_layers = tuple(
                tf1_layers.Dense(
                    size, name="attention_layer", use_bias=False, dtype=mechanisms[i].dtype
                )
                for i, size in enumerate(sizes)
            )
            self._attention_layer_size = sum(sizes)
        elif attention_layer is not None:
            layers = (
                attention_layer
                if isinstance(attention_layer, (list, tuple))
                else (attention_layer,)
            )
            self._attention_layers = tuple(layers)
            self._attention_layer_size = sum(layer.units for layer in self._attention_layers)
        else:
            self._attention_layers = None
            self._attention_layer_size = sum(
                tf.compat.dimension_value(m.values.shape[-1]) for m in mechanisms
            )
        self._attention_fn = attention_fn or _compute_attention
        self._cell = cell
        self._attention_mechanisms = mechanisms
        self._cell_input_fn = cell_input_fn
        self._output_attention = output_attention
        self._alignment_history = alignment_history
        self._initial_cell_state = None
        if initial_cell_state is not None:
            with tf.name_scope(name or "AttentionWrapperInit"):
                last = tf.nest.flatten(initial_cell_state)[-1]
                message = (
                    f"When constructing AttentionWrapper {self._base_name}: Non-matching "
                    "batch sizes between the memory (encoder output) and initial_cell_state."
                )
                with tf.control_dependencies(
                    self._batch_size_checks(_static_or_dynamic(last, 0), message)
                ):
                    self._initial_cell_state = tf.nest.map_structure(
                        lambda s: tf.identity(s, name="check_initial_cell_state"),
                        initial_cell_state,
                    )

    def _batch_size_checks(self, batch_size, message):
        return [
            _V1.assert_equal(batch_size, m.batch_size, message=message)
            for m in self._attention_mechanisms
        ]

    def _item_or_tuple(self, seq):
        items = tuple(seq)
        return items if self._is_multi else items[0]

    @property
    def output_size(self):
        return self._attention_layer_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self):
        return AttentionWrapperState(
            cell_state=self._cell.state_size,
            time=tf.TensorShape([]),
            attention=self._attention_layer_size,
            alignments=self._item_or_tuple(m.alignments_size for m in self._attention_mechanisms),
            attention_state=self._item_or_tuple(m.state_size for m in self._attention_mechanisms),
            alignment_history=self._item_or_tuple(
                m.alignments_size if self._alignment_history else ()
                for m in self._attention_mechanisms
            ),
        )

    def zero_state(self, batch_size, dtype):
        with tf.name_scope(type(self).__name__ + "ZeroState"):
            if self._initial_cell_state is not None:
                cell_state = self._initial_cell_state
            else:
                cell_state = self._cell.zero_state(batch_size, dtype)
            message = (
                f"When calling zero_state of AttentionWrapper {self._base_name}: Non-matching "
                "batch sizes between the memory (encoder output) and the requested batch size."
            )
            with tf.control_dependencies(self._batch_size_checks(batch_size, message)):
                cell_state = tf.nest.map_structure(
                    lambda s: tf.identity(s, name="checked_cell_state"), cell_state
                )
            alignments = [
                m.initial_alignments(batch_size, dtype) for m in self._attention_mechanisms
            ]
            return AttentionWrapperState(
                cell_state=cell_state,
                time=tf.zeros([], dtype=tf.int32),
                attention=_zeros(self._attention_layer_size, batch_size, dtype),
                alignments=self._item_or_tuple(alignments),
                attention_state=self._item_or_tuple(
                    m.initial_state(batch_size, dtype) for m in self._attention_mechanisms
                ),
                alignment_history=self._item_or_tuple(
                    tf.TensorArray(dtype, size=0, dynamic_size=True, element_shape=a.shape)
                    if self._alignment_history
                    else ()
                    for a in alignments
                ),
            )

    def call(self, inputs, state):
        if not isinstance(state, AttentionWrapperState):
            raise TypeError(
                "Expected state to be instance of AttentionWrapperState. Received type "
                f"{type(state)} instead."
            )
        cell_inputs = self._cell_input_fn(inputs, state.attention)
        cell_output, next_cell_state = self._cell(cell_inputs, state.cell_state)
        message = (
            f"When applying AttentionWrapper {self.name}: Non-matching batch sizes between "
            "the memory (encoder output) and the query (decoder output)."
        )
        with tf.control_dependencies(
            self._batch_size_checks(_static_or_dynamic(cell_output, 0), message)
        ):
            cell_output = tf.identity(cell_output, name="checked_cell_output")
        if self._is_multi:
            previous_states, previous_histories = state.attention_state, state.alignment_history
        else:
            previous_states, previous_histories = (
                [state.attention_state],
                [state.alignment_history],
            )
        attentions, all_alignments, attention_states, histories = [], [], [], []
        for i, mechanism in enumerate(self._attention_mechanisms):
            attention, alignments, next_attention_state = self._attention_fn(
                mechanism,
                cell_output,
                previous_states[i],
                self._attention_layers[i] if self._attention_layers else None,
            )
            history = (
                previous_histories[i].write(state.time, alignments)
                if self._alignment_history
                else ()
            )
            attention_states.append(next_attention_state)
            all_alignments.append(alignments)
            attentions.append(attention)
            histories.append(history)
        attention = tf.concat(attentions, 1)
        next_state = AttentionWrapperState(
            time=state.time + 1,
            cell_state=next_cell_state,
            attention=attention,
            attention_state=self._item_or_tuple(attention_states),
            alignments=self._item_or_tuple(all_alignments),
            alignment_history=self._item_or_tuple(histories),
        )
        return (attention if self._output_attention else cell_output), next_state


# ---------------------------------------------------------------------------
# Helpers, BasicDecoder, dynamic_decode


def _transpose_batch_time(value):
    """[a, b, ...] -> [b, a, ...], keeping what is known of the shape."""
    value = tf.convert_to_tensor(value)
    rank = value.shape.ndims
    if rank is not None and rank < 2:
        return value
    swapped = tf.transpose(value, tf.concat(([1, 0], tf.range(2, tf.rank(value))), 0))
    if rank is not None:
        dims = value.shape.as_list()
        swapped.set_shape([dims[1], dims[0], *dims[2:]])
    return swapped


def _unstack_ta(value):
    return tf.TensorArray(
        dtype=value.dtype, size=tf.shape(value)[0], element_shape=value.get_shape()[1:]
    ).unstack(value)


class Helper:
    """How a BasicDecoder gets its inputs: initialize(), sample(), next_inputs()."""


class TrainingHelper(Helper):
    """Teacher forcing: step t reads inputs[:, t]; finished at each sequence's length."""

    def __init__(self, inputs, sequence_length, time_major=False, name=None):
        with tf.name_scope(name or "TrainingHelper"):
            inputs = tf.convert_to_tensor(inputs, name="inputs")
            self._inputs = inputs
            if not time_major:
                inputs = tf.nest.map_structure(_transpose_batch_time, inputs)
            self._input_tas = tf.nest.map_structure(_unstack_ta, inputs)
            self._sequence_length = tf.convert_to_tensor(sequence_length, name="sequence_length")
            if self._sequence_length.get_shape().ndims != 1:
                raise ValueError(
                    "Expected sequence_length to be a vector, but received shape: "
                    f"{self._sequence_length.get_shape()}"
                )
            self._zero_inputs = tf.nest.map_structure(lambda x: tf.zeros_like(x[0, :]), inputs)
            self._batch_size = tf.size(sequence_length)

    inputs = property(lambda self: self._inputs)
    sequence_length = property(lambda self: self._sequence_length)
    batch_size = property(lambda self: self._batch_size)
    sample_ids_shape = property(lambda self: tf.TensorShape([]))
    sample_ids_dtype = property(lambda self: tf.int32)

    def initialize(self, name=None):
        with tf.name_scope(name or "TrainingHelperInitialize"):
            finished = tf.equal(0, self._sequence_length)
            next_inputs = _V1.cond(
                tf.reduce_all(finished),
                lambda: self._zero_inputs,
                lambda: tf.nest.map_structure(lambda ta: ta.read(0), self._input_tas),
            )
            return finished, next_inputs

    def sample(self, time, outputs, name=None, **unused):
        with tf.name_scope(name or "TrainingHelperSample"):
            return tf.cast(tf.argmax(outputs, axis=-1), tf.int32)

    def next_inputs(self, time, outputs, state, name=None, **unused):
        with tf.name_scope(name or "TrainingHelperNextInputs"):
            next_time = time + 1
            finished = next_time >= self._sequence_length
            next_inputs = _V1.cond(
                tf.reduce_all(finished),
                lambda: self._zero_inputs,
                lambda: tf.nest.map_structure(lambda ta: ta.read(next_time), self._input_tas),
            )
            return finished, next_inputs, state


def _sample_shaped(sample_n, sample_shape):
    """sample_n(n) for n the product of sample_shape, shaped [*sample_shape, ...]."""
    sample_shape = tf.reshape(tf.convert_to_tensor(sample_shape, dtype=tf.int32), [-1])
    samples = sample_n(tf.reduce_prod(sample_shape))
    return tf.reshape(samples, tf.concat([sample_shape, tf.shape(samples)[1:]], 0))


def _bernoulli_sample(probs, dtype, sample_shape, seed):
    probs = tf.convert_to_tensor(probs, name="probs")

    def sample_n(n):
        shape = tf.concat([[n], tf.shape(probs)], 0)
        uniform = _V1.random_uniform(shape, seed=seed, dtype=probs.dtype)
        return tf.cast(tf.less(uniform, probs), dtype)

    return _sample_shaped(sample_n, sample_shape)


def _categorical_sample(logits, seed):
    logits = tf.convert_to_tensor(logits, name="logits")

    def sample_n(n):
        flat = tf.reshape(logits, [-1, tf.shape(logits)[-1]])
        draws = _V1.multinomial(flat, n, seed=seed, output_dtype=tf.int32)
        return tf.reshape(tf.transpose(draws), tf.concat([[n], tf.shape(logits)[:-1]], 0))

    return _sample_shaped(sample_n, [])


class ScheduledEmbeddingTrainingHelper(TrainingHelper):
    """TrainingHelper that, with sampling_probability for each sequence and step, feeds the
    embedding of an id sampled from the outputs instead of the next true input (scheduled
    sampling); sample ids are -1 where the true input is fed."""

    def __init__(
        self,
        inputs,
        sequence_length,
        embedding,
        sampling_probability,
        time_major=False,
        seed=None,
        scheduling_seed=None,
        name=None,
    ):
        with tf.name_scope(name or "ScheduledEmbeddingSamplingWrapper"):
            if callable(embedding):
                self._embedding_fn = embedding
            else:
                self._embedding_fn = lambda ids: tf.nn.embedding_lookup(embedding, ids)
            self._sampling_probability = tf.convert_to_tensor(
                sampling_probability, name="sampling_probability"
            )
            if self._sampling_probability.get_shape().ndims not in (0, 1):
                raise ValueError(
                    "sampling_probability must be either a scalar or a vector. saw shape: "
                    f"{self._sampling_probability.get_shape()}"
                )
            self._seed = seed
            self._scheduling_seed = scheduling_seed
            super().__init__(inputs, sequence_length, time_major=time_major, name=name)

    def sample(self, time, outputs, state, name=None):
        with tf.name_scope(name or "ScheduledEmbeddingTrainingHelperSample"):
            chosen = _bernoulli_sample(
                self._sampling_probability, tf.bool, self.batch_size, self._scheduling_seed
            )
            return _V1.where(
                chosen,
                _categorical_sample(outputs, self._seed),
                tf.fill([self.batch_size], -1),
            )

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        with tf.name_scope(name or "ScheduledEmbeddingTrainingHelperNextInputs"):
            finished, base_next_inputs, state = super().next_inputs(
                time=time, outputs=outputs, state=state, sample_ids=sample_ids, name=name
            )

            def maybe_sample():
                where_sampling = tf.cast(_V1.where(sample_ids > -1), tf.int32)
                where_not_sampling = tf.cast(_V1.where(sample_ids <= -1), tf.int32)
                sampled = self._embedding_fn(tf.gather_nd(sample_ids, where_sampling))
                kept = tf.gather_nd(base_next_inputs, where_not_sampling)
                shape = tf.shape(base_next_inputs)
                return tf.scatter_nd(where_sampling, sampled, shape) + tf.scatter_nd(
                    where_not_sampling, kept, shape
                )

            next_inputs = _V1.cond(tf.reduce_all(finished), lambda: base_next_inputs, maybe_sample)
            return finished, next_inputs, state


class GreedyEmbeddingHelper(Helper):
    """Inference: each step's input is the embedding of the previous step's argmax, from
    start_tokens; a sequence is finished when it emits end_token."""

    def __init__(self, embedding, start_tokens, end_token):
        if callable(embedding):
            self._embedding_fn = embedding
        else:
            self._embedding_fn = lambda ids: tf.nn.embedding_lookup(embedding, ids)
        self._start_tokens = tf.convert_to_tensor(start_tokens, tf.int32, name="start_tokens")
        self._end_token = tf.convert_to_tensor(end_token, tf.int32, name="end_token")
        if self._start_tokens.get_shape().ndims != 1:
            raise ValueError("start_tokens must be a vector")
        self._batch_size = tf.size(start_tokens)
        if self._end_token.get_shape().ndims != 0:
            raise ValueError("end_token must be a scalar")
        self._start_inputs = self._embedding_fn(self._start_tokens)

    batch_size = property(lambda self: self._batch_size)
    sample_ids_shape = property(lambda self: tf.TensorShape([]))
    sample_ids_dtype = property(lambda self: tf.int32)

    def initialize(self, name=None):
        return tf.tile([False], [self._batch_size]), self._start_inputs

    def sample(self, time, outputs, state, name=None):
        if not isinstance(outputs, tf.Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")
        return tf.argmax(outputs, axis=-1, output_type=tf.int32)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        finished = tf.equal(sample_ids, self._end_token)
        next_inputs = _V1.cond(
            tf.reduce_all(finished),
            lambda: self._start_inputs,
            lambda: self._embedding_fn(sample_ids),
        )
        return finished, next_inputs, state


class SampleEmbeddingHelper(GreedyEmbeddingHelper):
    """GreedyEmbeddingHelper that samples each next id from the softmax of the outputs
    (divided by softmax_temperature) instead of taking the argmax."""

    def __init__(self, embedding, start_tokens, end_token, softmax_temperature=None, seed=None):
        super().__init__(embedding, start_tokens, end_token)
        self._softmax_temperature = softmax_temperature
        self._seed = seed

    def sample(self, time, outputs, state, name=None):
        if not isinstance(outputs, tf.Tensor):
            raise TypeError(f"Expected outputs to be a single Tensor, got: {type(outputs)}")
        logits = (
            outputs if self._softmax_temperature is None else outputs / self._softmax_temperature
        )
        flat = tf.reshape(logits, [-1, tf.shape(logits)[-1]])
        draws = _V1.multinomial(flat, 1, seed=self._seed, output_dtype=tf.int32)
        return tf.reshape(draws, tf.shape(logits)[:-1])


class CustomHelper(Helper):
    """A helper of the user's three functions: initialize_fn() -> (finished, inputs),
    sample_fn(time=, outputs=, state=), next_inputs_fn(time=, outputs=, state=,
    sample_ids=) -> (finished, next_inputs, next_state)."""

    def __init__(
        self,
        initialize_fn,
        sample_fn,
        next_inputs_fn,
        sample_ids_shape=None,
        sample_ids_dtype=None,
    ):
        self._initialize_fn = initialize_fn
        self._sample_fn = sample_fn
        self._next_inputs_fn = next_inputs_fn
        self._batch_size = None
        self._sample_ids_shape = tf.TensorShape(sample_ids_shape or [])
        self._sample_ids_dtype = sample_ids_dtype or tf.int32

    @property
    def batch_size(self):
        if self._batch_size is None:
            raise ValueError("batch_size accessed before initialize was called")
        return self._batch_size

    sample_ids_shape = property(lambda self: self._sample_ids_shape)
    sample_ids_dtype = property(lambda self: self._sample_ids_dtype)

    def initialize(self, name=None):
        with tf.name_scope(name or f"{type(self).__name__}Initialize"):
            finished, next_inputs = self._initialize_fn()
            if self._batch_size is None:
                self._batch_size = tf.size(finished)
        return finished, next_inputs

    def sample(self, time, outputs, state, name=None):
        with tf.name_scope(name or f"{type(self).__name__}Sample"):
            return self._sample_fn(time=time, outputs=outputs, state=state)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        with tf.name_scope(name or f"{type(self).__name__}NextInputs"):
            return self._next_inputs_fn(
                time=time, outputs=outputs, state=state, sample_ids=sample_ids
            )


class InferenceHelper(Helper):
    """Inference on the outputs themselves: sample_fn(outputs) gives the sample,
    next_inputs_fn(sample) (or the sample itself) the next input, end_fn(sample) whether
    a sequence is finished."""

    def __init__(
        self, sample_fn, sample_shape, sample_dtype, start_inputs, end_fn, next_inputs_fn=None
    ):
        self._sample_fn = sample_fn
        self._end_fn = end_fn
        self._sample_shape = tf.TensorShape(sample_shape)
        self._sample_dtype = sample_dtype
        self._next_inputs_fn = next_inputs_fn
        self._batch_size = tf.shape(start_inputs)[0]
        self._start_inputs = tf.convert_to_tensor(start_inputs, name="start_inputs")

    batch_size = property(lambda self: self._batch_size)
    sample_ids_shape = property(lambda self: self._sample_shape)
    sample_ids_dtype = property(lambda self: self._sample_dtype)

    def initialize(self, name=None):
        return tf.tile([False], [self._batch_size]), self._start_inputs

    def sample(self, time, outputs, state, name=None):
        return self._sample_fn(outputs)

    def next_inputs(self, time, outputs, state, sample_ids, name=None):
        if self._next_inputs_fn is None:
            next_inputs = sample_ids
        else:
            next_inputs = self._next_inputs_fn(sample_ids)
        return self._end_fn(sample_ids), next_inputs, state


def _layer_output_size(layer, input_size):
    """The width of `layer`'s output on rows of input_size: its `units` (Dense), else
    what its compute_output_shape says."""
    units = getattr(layer, "units", None)
    if units is not None:
        return units
    shape = layer.compute_output_shape(tf.TensorShape([None]).concatenate(input_size))
    return tf.TensorShape(shape)[1:]


class Decoder:
    """What dynamic_decode runs: initialize(), step(); finalize() optional."""

    tracks_own_finished = False

    def finalize(self, outputs, final_state, sequence_lengths):
        raise NotImplementedError


class BasicDecoderOutput(
    collections.namedtuple("BasicDecoderOutput", ("rnn_output", "sample_id"))
):
    """A BasicDecoder's step: the cell's (projected) output and the helper's sample id."""


class BasicDecoder(Decoder):
    """One cell step per decoding step, through output_layer (if any); the helper picks
    the sample ids and the next inputs."""

    def __init__(self, cell, helper, initial_state, output_layer=None):
        if not isinstance(helper, Helper):
            raise TypeError(f"helper must be a Helper, received: {type(helper)}")
        self._cell = cell
        self._helper = helper
        self._initial_state = initial_state
        self._output_layer = output_layer

    @property
    def batch_size(self):
        return self._helper.batch_size

    def _rnn_output_size(self):
        if self._output_layer is None:
            return self._cell.output_size
        return _layer_output_size(self._output_layer, self._cell.output_size)

    @property
    def output_size(self):
        return BasicDecoderOutput(self._rnn_output_size(), self._helper.sample_ids_shape)

    @property
    def output_dtype(self):
        dtype = tf.nest.flatten(self._initial_state)[0].dtype
        return BasicDecoderOutput(
            tf.nest.map_structure(lambda _: dtype, self._rnn_output_size()),
            self._helper.sample_ids_dtype,
        )

    def initialize(self, name=None):
        return self._helper.initialize() + (self._initial_state,)

    def step(self, time, inputs, state, name=None):
        with tf.name_scope(name or "BasicDecoderStep"):
            cell_outputs, cell_state = self._cell(inputs, state)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            sample_ids = self._helper.sample(time=time, outputs=cell_outputs, state=cell_state)
            finished, next_inputs, next_state = self._helper.next_inputs(
                time=time, outputs=cell_outputs, state=cell_state, sample_ids=sample_ids
            )
        return BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished


def _decoding_step(decoder, zero_outputs, impute_finished):
    """dynamic_decode's loop body: one decoder step, its outputs written at `time`; with
    impute_finished, zeros and the old state where a sequence had finished already."""

    def body(time, outputs_ta, state, inputs, finished, lengths):
        next_outputs, decoder_state, next_inputs, decoder_finished = decoder.step(
            time, inputs, state
        )
        if decoder.tracks_own_finished:
            next_finished = decoder_finished
        else:
            next_finished = tf.logical_or(decoder_finished, finished)
        next_lengths = _V1.where(
            tf.logical_not(finished), tf.fill(tf.shape(lengths), time + 1), lengths
        )
        tf.nest.assert_same_structure(state, decoder_state)
        if impute_finished:
            emit = tf.nest.map_structure(
                lambda out, zero: _V1.where(finished, zero, out), next_outputs, zero_outputs
            )

            def keep_finished(new, current):
                if isinstance(current, tf.TensorArray):
                    return new
                new.set_shape(current.shape)
                if new.shape.ndims == 0:
                    return new
                return _V1.where(finished, current, new)

            next_state = tf.nest.map_structure(keep_finished, decoder_state, state)
        else:
            emit = next_outputs
            next_state = decoder_state
        outputs_ta = tf.nest.map_structure(lambda ta, out: ta.write(time, out), outputs_ta, emit)
        return time + 1, outputs_ta, next_state, next_inputs, next_finished, next_lengths

    return body


def dynamic_decode(
    decoder,
    output_time_major=False,
    impute_finished=False,
    maximum_iterations=None,
    parallel_iterations=32,
    swap_memory=False,
    scope=None,
):
    """Runs decoder.step in a while loop (variable scope `decoder`) until every sequence
    is finished or maximum_iterations; returns (outputs [batch, time, ...], final state,
    lengths). impute_finished: zero outputs and a frozen state once a sequence is done."""
    if not isinstance(decoder, Decoder):
        raise TypeError(f"Expected decoder to be type Decoder, but saw: {type(decoder)}")
    with _V1.variable_scope(scope, "decoder"):
        if maximum_iterations is not None:
            maximum_iterations = tf.convert_to_tensor(
                maximum_iterations, dtype=tf.int32, name="maximum_iterations"
            )
            if maximum_iterations.get_shape().ndims != 0:
                raise ValueError("maximum_iterations must be a scalar")
        initial_finished, initial_inputs, initial_state = decoder.initialize()
        batch_size = decoder.batch_size
        zero_outputs = tf.nest.map_structure(
            lambda size, dtype: _zeros(size, batch_size, dtype),
            decoder.output_size,
            decoder.output_dtype,
        )
        if maximum_iterations is not None:
            initial_finished = tf.logical_or(initial_finished, 0 >= maximum_iterations)
        initial_lengths = tf.zeros_like(initial_finished, dtype=tf.int32)

        def element_shape(size):
            """As TF 1.15 gave it: known only for sizes given as a TensorShape of rank > 0."""
            if not isinstance(size, tf.TensorShape) or size.ndims == 0:
                return None
            static_batch = tf.get_static_value(tf.convert_to_tensor(batch_size))
            return tf.TensorShape([static_batch]).concatenate(size)

        outputs_ta = tf.nest.map_structure(
            lambda size, dtype: tf.TensorArray(
                dtype=dtype, size=0, dynamic_size=True, element_shape=element_shape(size)
            ),
            decoder.output_size,
            decoder.output_dtype,
        )

        def condition(unused_time, unused_outputs, unused_state, unused_inputs, finished, unused):
            return tf.logical_not(tf.reduce_all(finished))

        body = _decoding_step(decoder, zero_outputs, impute_finished)

        result = _V1.while_loop(
            condition,
            body,
            loop_vars=(
                tf.constant(0, dtype=tf.int32),
                outputs_ta,
                initial_state,
                initial_inputs,
                initial_finished,
                initial_lengths,
            ),
            parallel_iterations=parallel_iterations,
            maximum_iterations=maximum_iterations,
            swap_memory=swap_memory,
        )
        final_outputs = tf.nest.map_structure(lambda ta: ta.stack(), result[1])
        final_state, final_lengths = result[2], result[5]
        try:
            final_outputs, final_state = decoder.finalize(
                final_outputs, final_state, final_lengths
            )
        except NotImplementedError:
            pass
        if not output_time_major:
            final_outputs = tf.nest.map_structure(_transpose_batch_time, final_outputs)
    return final_outputs, final_state, final_lengths


# ---------------------------------------------------------------------------
# Beam search


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
    max_time = _static_or_dynamic(parent_ids, 0)
    batch_size = _static_or_dynamic(parent_ids, 1)
    beam_width = _static_or_dynamic(parent_ids, 2)
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
        return _layer_output_size(self._output_layer, self._cell.output_size)

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
        s = tf.TensorShape(s)
        static_batch = tf.get_static_value(self._batch_size)
        merged_batch = None if static_batch is None else static_batch * self._beam_width
        merged = tf.reshape(
            t, tf.concat(([self._batch_size * self._beam_width], tf.shape(t)[2:]), 0)
        )
        merged.set_shape(tf.TensorShape([merged_batch]).concatenate(s))
        return merged

    def _split_batch_beams(self, t, s=None):
        s = tf.TensorShape(s)
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
_NOT_PROVIDED = (
    "BahdanauMonotonicAttention LuongMonotonicAttention "
    "ScheduledOutputTrainingHelper "
    "monotonic_attention safe_cumprod"
).split()


def seq2seq_module():
    """tf.contrib.seq2seq, also under its TF 1.15 module paths (python.ops.attention_wrapper,
    ...); the pieces not provided are refused by name."""
    module = Namespace(
        "tf.contrib.seq2seq",
        None,
        {
            "sequence_loss": sequence_loss,
            "tile_batch": tile_batch,
            "AttentionMechanism": AttentionMechanism,
            "BahdanauAttention": BahdanauAttention,
            "LuongAttention": LuongAttention,
            "AttentionWrapper": AttentionWrapper,
            "AttentionWrapperState": AttentionWrapperState,
            "hardmax": hardmax,
            "Helper": Helper,
            "TrainingHelper": TrainingHelper,
            "GreedyEmbeddingHelper": GreedyEmbeddingHelper,
            "SampleEmbeddingHelper": SampleEmbeddingHelper,
            "ScheduledEmbeddingTrainingHelper": ScheduledEmbeddingTrainingHelper,
            "CustomHelper": CustomHelper,
            "InferenceHelper": InferenceHelper,
            "Decoder": Decoder,
            "BasicDecoder": BasicDecoder,
            "BasicDecoderOutput": BasicDecoderOutput,
            "dynamic_decode": dynamic_decode,
            "BeamSearchDecoder": BeamSearchDecoder,
            "BeamSearchDecoderState": BeamSearchDecoderState,
            "BeamSearchDecoderOutput": BeamSearchDecoderOutput,
            "FinalBeamSearchDecoderOutput": FinalBeamSearchDecoderOutput,
            "gather_tree": gather_tree,
            "gather_tree_from_array": gather_tree_from_array,
        },
        {
            name: "tf.contrib.seq2seq.BasicDecoder with a GreedyEmbeddingHelper"
            for name in _NOT_PROVIDED
        },
    )
    module.__dict__["python"] = Namespace(
        "tf.contrib.seq2seq.python",
        None,
        {
            "ops": Namespace(
                "tf.contrib.seq2seq.python.ops",
                None,
                {
                    name: module
                    for name in (
                        "loss",
                        "attention_wrapper",
                        "basic_decoder",
                        "decoder",
                        "helper",
                        "beam_search_decoder",
                    )
                },
            )
        },
    )
    return module
