"""tf.contrib.seq2seq's attention of TF 1.x: BahdanauAttention and LuongAttention over
an encoder's outputs, and AttentionWrapper around a decoder cell (its state
AttentionWrapperState), with TF 1.15's variable names (`memory_layer/kernel`,
`.../bahdanau_attention/attention_v`, `.../attention_layer/kernel`)."""

import collections
import math

import numpy as np
import tensorflow as tf

from ...layers import tf_layers as tf1_layers
from ...rnn import cells as tf1_rnn_cells
from . import shapes

_V1 = tf.compat.v1


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
            self._batch_size = shapes.static_or_dynamic(self._keys, 0)
            self._alignments_size = shapes.static_or_dynamic(self._keys, 1)

    memory_layer = property(lambda self: self._memory_layer)
    query_layer = property(lambda self: self._query_layer)
    values = property(lambda self: self._values)
    keys = property(lambda self: self._keys)
    batch_size = property(lambda self: self._batch_size)
    alignments_size = property(lambda self: self._alignments_size)
    state_size = property(lambda self: self._alignments_size)

    def initial_alignments(self, batch_size, dtype):
        return shapes.zeros(self._alignments_size, batch_size, dtype)

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
            tf.argmax(logits, -1), shapes.static_or_dynamic(logits, -1), dtype=logits.dtype
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
                    self._batch_size_checks(shapes.static_or_dynamic(last, 0), message)
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
                attention=shapes.zeros(self._attention_layer_size, batch_size, dtype),
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
            self._batch_size_checks(shapes.static_or_dynamic(cell_output, 0), message)
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
