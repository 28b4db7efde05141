"""The RNN cells of TF 1.x (tf.nn.rnn_cell, tf.contrib.rnn), for loops.py.

Each cell is a tf.layers layer (layer_base.Layer): its variables are made
by get_variable in its own scope, its name (`lstm_cell`, `gru_cell`, ...),
under the scope it is first called in (the loop's `rnn`,
`bidirectional_rnn/fw`, ...). MultiRNNCell puts cell i in `cell_i`;
wrappers (DropoutWrapper, ResidualWrapper, DeviceWrapper) add no scope.
Kernels are laid out as TF 1.x's: rows [inputs; state], the gates' columns
in its order (LSTM i, j, f, o; GRU r, u), with its initializers (the
scope's default for kernels, zeros for LSTM biases, 1.0 for the GRU gates'
bias) and forget_bias (1.0) added to the forget gate's input; the
arithmetic is TF 1.x's op for op, so the numbers agree to float32 round-off.
"""

import collections
import hashlib

import tensorflow as tf

from ..layers import tf_layers
from ..layers.layer_base import Layer, static_dim

_V1 = tf.compat.v1


class LSTMStateTuple(collections.namedtuple("LSTMStateTuple", ("c", "h"))):
    """An LSTM's state: the memory cell c and the output h, each [batch, units]."""

    __slots__ = ()

    @property
    def dtype(self):
        """The dtype of c (and h), as TF 1.x's LSTMStateTuple gave it."""
        if self.c.dtype != self.h.dtype:
            raise TypeError(f"Inconsistent internal state: {self.c.dtype} vs {self.h.dtype}")
        return self.c.dtype


_ACTIVATIONS = {
    "tanh": tf.tanh,
    "sigmoid": tf.sigmoid,
    "relu": tf.nn.relu,
    "relu6": tf.nn.relu6,
    "elu": tf.nn.elu,
    "selu": tf.nn.selu,
    "softplus": tf.nn.softplus,
    "softsign": tf.nn.softsign,
    "linear": lambda x: x,
}


def _activation(activation):
    """None is tanh; a name as Keras spelled it; else the callable itself."""
    if activation is None:
        return tf.tanh
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"Unknown activation function: {activation}")
        return _ACTIVATIONS[activation]
    return activation


def _input_depth(input_shape, cell):
    depth = static_dim(tf.TensorShape(input_shape)[-1])
    if depth is None:
        raise ValueError(
            f"{type(cell).__name__}: expected inputs.shape[-1] to be known, saw shape: "
            f"{input_shape}"
        )
    return depth


def zeros_for_state(state_size, batch_size, dtype):
    """Zeros [batch_size, *size] for each size of the (nested) state_size."""

    def zeros(size):
        size = tf.TensorShape(size)
        shape = tf.concat([[batch_size], size.as_list()], 0)
        value = tf.zeros(shape, dtype=dtype)
        static_batch = tf.get_static_value(batch_size)
        value.set_shape(tf.TensorShape([static_batch]).concatenate(size))
        return value

    return tf.nest.map_structure(zeros, state_size, check_types=False)


# ---------------------------------------------------------------------------
# Cells


class RNNCell(Layer):
    """tf.nn.rnn_cell.RNNCell: (output, new_state) = cell(inputs, state).

    Subclasses give state_size, output_size and call(inputs, state) (and
    build, for variables made there); code written against TF 1.x that
    defines its own __call__ works too, as the loops call the cell itself.
    """

    def __call__(self, inputs, state, scope=None, **kwargs):
        if scope is not None:
            with _V1.variable_scope(scope) as entered:
                return super().__call__(inputs, state, scope=entered, **kwargs)
        return super().__call__(inputs, state, **kwargs)

    @property
    def state_size(self):
        """The size (or nested sizes) of the state; a subclass gives it."""
        raise NotImplementedError("Abstract method")

    @property
    def output_size(self):
        """The size of one step's output; a subclass gives it."""
        raise NotImplementedError("Abstract method")

    def zero_state(self, batch_size, dtype):
        """Zero-filled state: a tensor [batch_size, state_size], or a tuple of them."""
        with _V1.name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return zeros_for_state(self.state_size, batch_size, dtype)

    def get_initial_state(self, inputs=None, batch_size=None, dtype=None):
        """Zeros of the state's shape for `batch_size` (or the batch of `inputs`)."""
        if inputs is not None:
            inputs = tf.convert_to_tensor(inputs)
            batch_size = static_dim(inputs.shape[0]) or tf.shape(inputs)[0]
            dtype = inputs.dtype
        if batch_size is None or dtype is None:
            raise ValueError(
                "batch_size and dtype cannot be None while constructing initial state: "
                f"batch_size={batch_size}, dtype={dtype}"
            )
        return self.zero_state(batch_size, dtype)


LayerRNNCell = RNNCell


def _matmul_bias(parts, kernel, bias):
    """[parts...] @ kernel + bias, the concatenation first, as TF 1.x's cells computed it."""
    value = tf.matmul(tf.concat(parts, 1), kernel)
    return tf.nn.bias_add(value, bias) if bias is not None else value


class BasicRNNCell(RNNCell):
    """output = new_state = activation([inputs, state] @ kernel + bias)."""

    def __init__(self, num_units, activation=None, reuse=None, name=None, dtype=None, **kwargs):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = _activation(activation)

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, input_shape):
        depth = _input_depth(input_shape, self)
        self._kernel = self.add_variable("kernel", [depth + self._num_units, self._num_units])
        self._bias = self.add_variable(
            "bias", [self._num_units], initializer=_V1.zeros_initializer()
        )

    def call(self, inputs, state):
        output = self._activation(_matmul_bias([inputs, state], self._kernel, self._bias))
        return output, output


class GRUCell(RNNCell):
    """Gated recurrent unit: `gates/{kernel,bias}` (r, u) and `candidate/{kernel,bias}`.

    The gates' bias starts at 1.0 (bias_initializer, if given, for both).
    """

    def __init__(
        self,
        num_units,
        activation=None,
        reuse=None,
        kernel_initializer=None,
        bias_initializer=None,
        name=None,
        dtype=None,
        **kwargs,
    ):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._activation = _activation(activation)
        self._kernel_initializer = kernel_initializer
        self._bias_initializer = bias_initializer

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, input_shape):
        depth = _input_depth(input_shape, self) + self._num_units
        units = self._num_units
        self._gate_kernel = self.add_variable(
            "gates/kernel", [depth, 2 * units], initializer=self._kernel_initializer
        )
        self._gate_bias = self.add_variable(
            "gates/bias",
            [2 * units],
            initializer=self._bias_initializer or _V1.constant_initializer(1.0),
        )
        self._candidate_kernel = self.add_variable(
            "candidate/kernel", [depth, units], initializer=self._kernel_initializer
        )
        self._candidate_bias = self.add_variable(
            "candidate/bias",
            [units],
            initializer=self._bias_initializer or _V1.zeros_initializer(),
        )

    def call(self, inputs, state):
        return _gru_step(
            inputs,
            state,
            (self._gate_kernel, self._gate_bias, self._candidate_kernel, self._candidate_bias),
            self._activation,
        )


def _gru_step(inputs, state, weights, activation):
    gate_kernel, gate_bias, candidate_kernel, candidate_bias = weights
    gates = tf.sigmoid(_matmul_bias([inputs, state], gate_kernel, gate_bias))
    r, u = tf.split(gates, 2, axis=1)
    candidate = _matmul_bias([inputs, r * state], candidate_kernel, candidate_bias)
    new_h = u * state + (1 - u) * activation(candidate)
    return new_h, new_h


def _split_lstm_state(state, state_is_tuple, num_units, h_units):
    if state_is_tuple:
        c, h = state
        return c, h
    return state[:, :num_units], state[:, num_units : num_units + h_units]


def _join_lstm_state(c, h, state_is_tuple):
    return LSTMStateTuple(c, h) if state_is_tuple else tf.concat([c, h], 1)


class BasicLSTMCell(RNNCell):
    """LSTM without peepholes, clipping or projection: `kernel` and `bias` for i, j, f, o."""

    def __init__(
        self,
        num_units,
        forget_bias=1.0,
        state_is_tuple=True,
        activation=None,
        reuse=None,
        name=None,
        dtype=None,
        **kwargs,
    ):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self):
        n = self._num_units
        return LSTMStateTuple(n, n) if self._state_is_tuple else 2 * n

    output_size = property(lambda self: self._num_units)

    def build(self, input_shape):
        depth = _input_depth(input_shape, self)
        n = self._num_units
        self._kernel = self.add_variable("kernel", [depth + n, 4 * n])
        self._bias = self.add_variable("bias", [4 * n], initializer=_V1.zeros_initializer())

    def call(self, inputs, state):
        if self._state_is_tuple:
            c, h = state
        else:
            c, h = tf.split(state, 2, axis=1)
        i, j, f, o = tf.split(_matmul_bias([inputs, h], self._kernel, self._bias), 4, axis=1)
        forget_bias = tf.constant(self._forget_bias, dtype=f.dtype)
        new_c = c * tf.sigmoid(f + forget_bias) + tf.sigmoid(i) * self._activation(j)
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, _join_lstm_state(new_c, new_h, self._state_is_tuple)


class LSTMCell(RNNCell):
    """LSTM with optional peepholes (`w_f_diag`, `w_i_diag`, `w_o_diag`), cell clipping and
    a projection of the output (`projection/kernel`, num_proj wide)."""

    def __init__(
        self,
        num_units,
        use_peepholes=False,
        cell_clip=None,
        initializer=None,
        num_proj=None,
        proj_clip=None,
        num_unit_shards=None,
        num_proj_shards=None,
        forget_bias=1.0,
        state_is_tuple=True,
        activation=None,
        reuse=None,
        name=None,
        dtype=None,
        **kwargs,
    ):
        super().__init__(_reuse=reuse, name=name, dtype=dtype, **kwargs)
        self._num_units = num_units
        self._use_peepholes = use_peepholes
        self._cell_clip = cell_clip
        self._initializer = initializer
        self._num_proj = num_proj
        self._proj_clip = proj_clip
        self._num_unit_shards = num_unit_shards
        self._num_proj_shards = num_proj_shards
        self._forget_bias = forget_bias
        self._state_is_tuple = state_is_tuple
        self._activation = _activation(activation)

    @property
    def state_size(self):
        h = self._num_proj or self._num_units
        return LSTMStateTuple(self._num_units, h) if self._state_is_tuple else self._num_units + h

    output_size = property(lambda self: self._num_proj or self._num_units)

    def build(self, input_shape):
        depth = _input_depth(input_shape, self)
        n = self._num_units
        h = self._num_proj or n
        self._kernel = self.add_variable(
            "kernel",
            [depth + h, 4 * n],
            initializer=self._initializer,
            partitioner=_shards(self._num_unit_shards),
        )
        self._bias = self.add_variable("bias", [4 * n], initializer=_V1.zeros_initializer())
        if self._use_peepholes:
            self._w_f_diag = self.add_variable("w_f_diag", [n], initializer=self._initializer)
            self._w_i_diag = self.add_variable("w_i_diag", [n], initializer=self._initializer)
            self._w_o_diag = self.add_variable("w_o_diag", [n], initializer=self._initializer)
        if self._num_proj is not None:
            self._proj_kernel = self.add_variable(
                "projection/kernel",
                [n, self._num_proj],
                initializer=self._initializer,
                partitioner=_shards(self._num_proj_shards),
            )

    def call(self, inputs, state):
        n = self._num_units
        c_prev, m_prev = _split_lstm_state(state, self._state_is_tuple, n, self._num_proj or n)
        i, j, f, o = tf.split(_matmul_bias([inputs, m_prev], self._kernel, self._bias), 4, axis=1)
        if self._use_peepholes:
            c = tf.sigmoid(f + self._forget_bias + self._w_f_diag * c_prev) * c_prev + tf.sigmoid(
                i + self._w_i_diag * c_prev
            ) * self._activation(j)
        else:
            c = tf.sigmoid(f + self._forget_bias) * c_prev + tf.sigmoid(i) * self._activation(j)
        if self._cell_clip is not None:
            c = tf.clip_by_value(c, -self._cell_clip, self._cell_clip)
        if self._use_peepholes:
            m = tf.sigmoid(o + self._w_o_diag * c) * self._activation(c)
        else:
            m = tf.sigmoid(o) * self._activation(c)
        if self._num_proj is not None:
            m = tf.matmul(m, self._proj_kernel)
            if self._proj_clip is not None:
                m = tf.clip_by_value(m, -self._proj_clip, self._proj_clip)
        return m, _join_lstm_state(c, m, self._state_is_tuple)


def _shards(count):
    return _V1.fixed_size_partitioner(count) if count is not None else None


class LSTMBlockMath:
    """What LSTMBlockCell and LSTMBlockFusedCell (loops.py) share: their settings, their
    variables `kernel`, `bias` (0.0) and with use_peephole `w_i_diag`, `w_f_diag`,
    `w_o_diag`, made in that order, and the block's step on them."""

    def _setup(self, num_units, forget_bias, cell_clip, use_peephole):
        self._num_units = num_units
        self._forget_bias = forget_bias
        self._cell_clip = cell_clip if cell_clip is not None else -1
        self._use_peephole = use_peephole

    def build(self, input_shape):
        depth = _input_depth(input_shape, self)
        n = self._num_units
        kernel = self.add_variable("kernel", [depth + n, 4 * n])
        bias = self.add_variable("bias", [4 * n], initializer=_V1.constant_initializer(0.0))
        peepholes = (None, None, None)
        if self._use_peephole:
            peepholes = tuple(
                self.add_variable(name, [n]) for name in ("w_i_diag", "w_f_diag", "w_o_diag")
            )
        self._weights = (kernel, bias, *peepholes)

    def _block_step(self, inputs, state):
        """One step of TF 1.x's fused LSTM block.

        [i, ci, f, o] = [x, h] @ w + b; f += forget_bias; peepholes (wci, wcf, wco)
        look at the old memory for i and f and at the new one for o; the memory
        is clipped to +-cell_clip when cell_clip > 0.
        """
        cs_prev, h_prev = state
        kernel, bias, wci, wcf, wco = self._weights
        i, ci, f, o = tf.split(_matmul_bias([inputs, h_prev], kernel, bias), 4, axis=1)
        f = f + self._forget_bias
        if wci is not None:
            i = cs_prev * wci + i
            f = cs_prev * wcf + f
        i = tf.sigmoid(i)
        f = tf.sigmoid(f)
        cs = tf.tanh(ci) * i + cs_prev * f
        if self._cell_clip > 0:
            # The fused op's gradient ignores the clip: the clipped memory's gradient
            # flows to the unclipped one unchanged.
            clip = self._cell_clip
            cs = cs + tf.stop_gradient(tf.clip_by_value(cs, -clip, clip) - cs)
        if wco is not None:
            o = cs * wco + o
        h = tf.tanh(cs) * tf.sigmoid(o)
        return h, LSTMStateTuple(cs, h)


class LSTMBlockCell(LSTMBlockMath, RNNCell):
    """tf.contrib.rnn.LSTMBlockCell: TF 1.x's fused LSTM step, named `lstm_cell` like LSTMCell
    (`kernel`, `bias`; peepholes `w_i_diag`, `w_f_diag`, `w_o_diag`)."""

    def __init__(
        self,
        num_units,
        forget_bias=1.0,
        cell_clip=None,
        use_peephole=False,
        dtype=None,
        reuse=None,
        name="lstm_cell",
    ):
        super().__init__(_reuse=reuse, dtype=dtype, name=name)
        self._setup(num_units, forget_bias, cell_clip, use_peephole)

    state_size = property(lambda self: LSTMStateTuple(self._num_units, self._num_units))
    output_size = property(lambda self: self._num_units)

    def call(self, inputs, state):
        return self._block_step(inputs, state)


class GRUBlockCell(RNNCell):
    """tf.contrib.rnn.GRUBlockCell: GRUCell's arithmetic, variables `w_ru`, `b_ru` (1.0),
    `w_c`, `b_c` (0.0)."""

    _NAMES = ("w_ru", "b_ru", "w_c", "b_c")

    def __init__(self, num_units=None, cell_size=None, reuse=None, name="gru_cell"):
        super().__init__(_reuse=reuse, name=name)
        if num_units is None and cell_size is None:
            raise ValueError("num_units must be given")
        self._num_units = num_units if num_units is not None else cell_size

    state_size = property(lambda self: self._num_units)
    output_size = property(lambda self: self._num_units)

    def build(self, input_shape):
        depth = _input_depth(input_shape, self) + self._num_units
        n = self._num_units
        w_ru, b_ru, w_c, b_c = self._NAMES
        self._weights = (
            self.add_variable(w_ru, [depth, 2 * n]),
            self.add_variable(b_ru, [2 * n], initializer=_V1.constant_initializer(1.0)),
            self.add_variable(w_c, [depth, n]),
            self.add_variable(b_c, [n], initializer=_V1.constant_initializer(0.0)),
        )

    def call(self, inputs, state):
        return _gru_step(inputs, state, self._weights, tf.tanh)


class GRUBlockCellV2(GRUBlockCell):
    """GRUBlockCell with GRUCell's variable names (`gates/kernel`, ..., `candidate/bias`)."""

    _NAMES = ("gates/kernel", "gates/bias", "candidate/kernel", "candidate/bias")


class LayerNormBasicLSTMCell(RNNCell):
    """tf.contrib.rnn.LayerNormBasicLSTMCell: BasicLSTMCell with layer normalization of the
    gates (`input`, `transform`, `forget`, `output`) and the memory (`state`), each with
    `gamma` (norm_gain) and `beta` (norm_shift), and recurrent dropout of the candidate."""

    def __init__(
        self,
        num_units,
        forget_bias=1.0,
        input_size=None,
        activation=tf.tanh,
        layer_norm=True,
        norm_gain=1.0,
        norm_shift=0.0,
        dropout_keep_prob=1.0,
        dropout_prob_seed=None,
        reuse=None,
    ):
        del input_size
        super().__init__(_reuse=reuse)
        self._num_units = num_units
        self._activation = _activation(activation)
        self._forget_bias = forget_bias
        self._keep_prob = dropout_keep_prob
        self._seed = dropout_prob_seed
        self._layer_norm = layer_norm
        self._norm_gain = norm_gain
        self._norm_shift = norm_shift

    state_size = property(lambda self: LSTMStateTuple(self._num_units, self._num_units))
    output_size = property(lambda self: self._num_units)

    def _norm(self, value, scope, dtype):
        shape = value.shape[-1:]
        with _V1.variable_scope(scope):
            _V1.get_variable(
                "gamma", shape, dtype, initializer=_V1.constant_initializer(self._norm_gain)
            )
            _V1.get_variable(
                "beta", shape, dtype, initializer=_V1.constant_initializer(self._norm_shift)
            )
        return tf_layers.layer_norm(value, reuse=True, scope=scope)

    def call(self, inputs, state):
        c, h = state
        args = tf.concat([inputs, h], 1)
        dtype = args.dtype
        kernel = _V1.get_variable("kernel", [args.shape[-1], 4 * self._num_units], dtype)
        gates = tf.matmul(args, kernel)
        if not self._layer_norm:
            gates = tf.nn.bias_add(gates, _V1.get_variable("bias", [4 * self._num_units], dtype))
        i, j, f, o = tf.split(gates, 4, axis=1)
        if self._layer_norm:
            i = self._norm(i, "input", dtype)
            j = self._norm(j, "transform", dtype)
            f = self._norm(f, "forget", dtype)
            o = self._norm(o, "output", dtype)
        g = self._activation(j)
        if not isinstance(self._keep_prob, float) or self._keep_prob < 1:
            g = tf.nn.dropout(g, rate=1 - self._keep_prob, seed=self._seed)
        new_c = c * tf.sigmoid(f + self._forget_bias) + tf.sigmoid(i) * g
        if self._layer_norm:
            new_c = self._norm(new_c, "state", dtype)
        new_h = self._activation(new_c) * tf.sigmoid(o)
        return new_h, LSTMStateTuple(new_c, new_h)


class MultiRNNCell(RNNCell):
    """Cells one above the other, cell i in scope `cell_i`; the state is a tuple of theirs
    (or, state_is_tuple=False, their concatenation)."""

    def __init__(self, cells, state_is_tuple=True):
        super().__init__()
        if not cells:
            raise ValueError("Must specify at least one cell for MultiRNNCell.")
        if not isinstance(cells, (list, tuple)):
            raise TypeError(f"cells must be a list or tuple, but saw: {cells}.")
        self._cells = list(cells)
        self._state_is_tuple = state_is_tuple
        if not state_is_tuple and any(tf.nest.is_nested(c.state_size) for c in self._cells):
            raise ValueError(
                "Some cells return tuples of states, but the flag state_is_tuple is not set.  "
                f"State sizes are: {[c.state_size for c in self._cells]}"
            )

    @property
    def state_size(self):
        """The cells' state sizes, as a tuple (or concatenated, state_is_tuple=False)."""
        if self._state_is_tuple:
            return tuple(cell.state_size for cell in self._cells)
        return sum(cell.state_size for cell in self._cells)

    output_size = property(lambda self: self._cells[-1].output_size)

    def zero_state(self, batch_size, dtype):
        """The cells' zero states, as a tuple (or concatenated, state_is_tuple=False)."""
        with _V1.name_scope("MultiRNNCellZeroState", values=[batch_size]):
            if self._state_is_tuple:
                return tuple(cell.zero_state(batch_size, dtype) for cell in self._cells)
            return zeros_for_state(self.state_size, batch_size, dtype)

    @property
    def trainable_weights(self):
        """The trainable variables of every cell."""
        return [w for cell in self._cells for w in getattr(cell, "trainable_weights", [])]

    @property
    def non_trainable_weights(self):
        """The variables of every cell that training does not change."""
        return [w for cell in self._cells for w in getattr(cell, "non_trainable_weights", [])]

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def call(self, inputs, state):
        position = 0
        output = inputs
        new_states = []
        for index, cell in enumerate(self._cells):
            with _V1.variable_scope(f"cell_{index}"):
                if self._state_is_tuple:
                    if not tf.nest.is_nested(state):
                        raise ValueError(
                            f"Expected state to be a tuple of length {len(self.state_size)}, "
                            f"but received: {state}"
                        )
                    cell_state = state[index]
                else:
                    cell_state = state[:, position : position + cell.state_size]
                    position += cell.state_size
                output, new_state = cell(output, cell_state)
                new_states.append(new_state)
        if self._state_is_tuple:
            return output, tuple(new_states)
        return output, tf.concat(new_states, 1)


# ---------------------------------------------------------------------------
# Wrappers: no scope of their own, the wrapped cell's variables are the cell's


class _Wrapper(RNNCell):
    def __init__(self, cell, **kwargs):
        super().__init__(**kwargs)
        if not callable(cell) or not hasattr(cell, "state_size"):
            raise TypeError(f"The argument 'cell' ({cell}) is not an RNNCell")
        self.cell = cell

    wrapped_cell = property(lambda self: self.cell)
    state_size = property(lambda self: self.cell.state_size)
    output_size = property(lambda self: self.cell.output_size)
    trainable_weights = property(lambda self: list(getattr(self.cell, "trainable_weights", [])))
    non_trainable_weights = property(
        lambda self: list(getattr(self.cell, "non_trainable_weights", []))
    )
    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights

    def zero_state(self, batch_size, dtype):
        with _V1.name_scope(type(self).__name__ + "ZeroState", values=[batch_size]):
            return self.cell.zero_state(batch_size, dtype)

    def __call__(self, inputs, state, scope=None):
        return self._wrap(inputs, state, scope)


def _keep_probability(value, what):
    """A float when the keep probability is a constant (1.0 then means no dropout)."""
    constant = tf.get_static_value(tf.convert_to_tensor(value))
    if constant is None:
        return tf.convert_to_tensor(value)
    if constant < 0 or constant > 1:
        raise ValueError(f"Parameter {what} must be between 0 and 1: {constant}")
    return float(constant)


def _drops(keep_prob):
    return not isinstance(keep_prob, float) or keep_prob < 1


class DropoutWrapper(_Wrapper):
    """Dropout on the cell's inputs, outputs and state (not an LSTM's memory c).

    variational_recurrent=True keeps one mask per sequence for all its steps.
    """

    def __init__(
        self,
        cell,
        input_keep_prob=1.0,
        output_keep_prob=1.0,
        state_keep_prob=1.0,
        variational_recurrent=False,
        input_size=None,
        dtype=None,
        seed=None,
        dropout_state_filter_visitor=None,
        **kwargs,
    ):
        super().__init__(cell, **kwargs)
        if dropout_state_filter_visitor is not None and not callable(dropout_state_filter_visitor):
            raise TypeError("dropout_state_filter_visitor must be callable")
        self._state_filter = dropout_state_filter_visitor or _dropout_lstm_h_only
        with _V1.name_scope("DropoutWrapperInit"):
            self._input_keep_prob = _keep_probability(input_keep_prob, "input_keep_prob")
            self._state_keep_prob = _keep_probability(state_keep_prob, "state_keep_prob")
            self._output_keep_prob = _keep_probability(output_keep_prob, "output_keep_prob")
        self._seed = seed
        self._noise = {}
        if variational_recurrent:
            if dtype is None:
                raise ValueError("When variational_recurrent=True, dtype must be provided")
            if _drops(self._input_keep_prob):
                if input_size is None:
                    raise ValueError(
                        "When variational_recurrent=True and input_keep_prob < 1.0 or is "
                        "unknown, input_size must be provided"
                    )
                self._noise["input"] = _batch_noise(input_size, dtype, seed, "input")
            self._noise["state"] = _batch_noise(cell.state_size, dtype, seed, "state")
            self._noise["output"] = _batch_noise(cell.output_size, dtype, seed, "output")

    def _dropout(self, values, kind, keep_prob, filtered=None):
        flat = tf.nest.flatten(values)
        wanted = tf.nest.flatten(filtered) if filtered is not None else [True] * len(flat)
        noise = tf.nest.flatten(self._noise[kind]) if kind in self._noise else None
        dropped = []
        for index, (value, wanted_here) in enumerate(zip(flat, wanted)):
            if not wanted_here:
                dropped.append(value)
            elif noise is not None:
                mask = tf.floor(keep_prob + noise[index])
                result = tf.math.divide(value, keep_prob) * mask
                result.set_shape(value.shape)
                dropped.append(result)
            else:
                seed = _salted_seed(self._seed, kind, index)
                dropped.append(tf.nn.dropout(value, rate=1.0 - keep_prob, seed=seed))
        return tf.nest.pack_sequence_as(values, dropped)

    def _wrap(self, inputs, state, scope):
        if _drops(self._input_keep_prob):
            inputs = self._dropout(inputs, "input", self._input_keep_prob)
        output, new_state = self.cell(inputs, state, scope=scope)
        if _drops(self._state_keep_prob):
            filtered = _state_filter(self._state_filter, new_state)
            new_state = self._dropout(new_state, "state", self._state_keep_prob, filtered)
        if _drops(self._output_keep_prob):
            output = self._dropout(output, "output", self._output_keep_prob)
        return output, new_state


def _dropout_lstm_h_only(substate):
    if isinstance(substate, LSTMStateTuple):
        return LSTMStateTuple(c=False, h=True)
    return True


def _state_filter(visitor, state):
    """For each tensor of `state`, whether dropout applies (the visitor decides per part)."""

    def visit(part):
        decision = visitor(part)
        if isinstance(decision, bool):
            return tf.nest.map_structure(lambda _: decision, part)
        return tf.nest.map_structure(
            lambda d, p: tf.nest.map_structure(lambda _: d, p) if isinstance(d, bool) else d,
            decision,
            part,
        )

    if isinstance(state, (tuple, list)) and not isinstance(state, LSTMStateTuple):
        return type(state)(visit(part) for part in state)
    return visit(state)


def _salted_seed(seed, kind, index):
    """TF 1.x's per-tensor seeds of DropoutWrapper: md5 of the seed and `kind_index`."""
    if seed is None:
        return None
    digest = hashlib.md5(f"{seed}{kind}_{index}".encode()).hexdigest()
    return int(digest[:8], 16) & 0x7FFFFFFF


def _batch_noise(sizes, dtype, seed, kind):
    flat = tf.nest.flatten(sizes)
    noise = [
        tf.random.uniform(
            [1, *tf.TensorShape(size).as_list()], seed=_salted_seed(seed, kind, index), dtype=dtype
        )
        for index, size in enumerate(flat)
    ]
    return tf.nest.pack_sequence_as(sizes, noise)


class ResidualWrapper(_Wrapper):
    """output = inputs + the cell's output (residual_fn(inputs, output) if given)."""

    def __init__(self, cell, residual_fn=None, **kwargs):
        super().__init__(cell, **kwargs)
        self._residual_fn = residual_fn

    def _wrap(self, inputs, state, scope):
        output, new_state = self.cell(inputs, state, scope=scope)
        if self._residual_fn is not None:
            return self._residual_fn(inputs, output), new_state

        def add(x, y):
            x.shape.assert_is_compatible_with(y.shape)
            return x + y

        return tf.nest.map_structure(add, inputs, output), new_state


class DeviceWrapper(_Wrapper):
    """Runs the cell on `device`."""

    def __init__(self, cell, device, **kwargs):
        super().__init__(cell, **kwargs)
        self._device = device

    def zero_state(self, batch_size, dtype):
        """The wrapped cell's zero state, made on the wrapper's device."""
        with tf.device(self._device):
            return super().zero_state(batch_size, dtype)

    def _wrap(self, inputs, state, scope):
        with tf.device(self._device):
            return self.cell(inputs, state, scope=scope)
