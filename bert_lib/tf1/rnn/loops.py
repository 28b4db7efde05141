"""tf.nn's RNN loops of TF 1.x and the tf.nn.rnn_cell / tf.contrib.rnn modules, graph mode.

BiLSTM-CRF taggers and other research code on BERT build recurrent layers
with TF 1.x's cells (LSTMCell, GRUCell, LSTMBlockCell, ...: cells.py),
stack and wrap them (MultiRNNCell, DropoutWrapper) and run them with
tf.nn.dynamic_rnn or bidirectional_dynamic_rnn. TensorFlow 2 keeps none of
that under Keras 3, so the loops are here, on tf.compat.v1.while_loop,
with TF 1.x's variable scopes (`rnn`, `bidirectional_rnn/fw` and `/bw`,
`stack_bidirectional_rnn/cell_N/bidirectional_rnn/...`), so that a
checkpoint moves both ways between TF 1.15 and this code and the numbers
agree to float32 round-off.

A name TF 1.x had that is not here (NASCell, AttentionCellWrapper, raw_rnn,
...) fails when the code reaches it, with one ERROR line; importing the
module never fails.
"""

import tensorflow as tf

from ..layers.layer_base import Layer, static_dim
from ..machinery.namespaces import Namespace
from . import cells as rnn_cells
from .cells import LSTMStateTuple

_V1 = tf.compat.v1

# ---------------------------------------------------------------------------
# The loops


def _to_time_major(value):
    rank = value.shape.ndims
    if rank is not None and rank < 2:
        raise ValueError(f"Expected input tensor {value} to have rank at least 2")
    return tf.transpose(value, [1, 0, *range(2, rank)])


def _batch_size(flat_inputs, batch_axis):
    for value in flat_inputs:
        size = static_dim(value.shape[batch_axis])
        if size is not None:
            return size
    return tf.shape(flat_inputs[0])[batch_axis]


def _check_lengths(sequence_length):
    if sequence_length is None:
        return None
    sequence_length = tf.cast(sequence_length, tf.int32)
    if sequence_length.shape.ndims not in (None, 1):
        raise ValueError(
            "sequence_length must be a vector of length batch_size, but saw shape: "
            f"{sequence_length.shape}"
        )
    return tf.identity(sequence_length, name="sequence_length")


def _initial_state(cell, initial_state, dtype, batch_size):
    if initial_state is not None:
        return initial_state
    if not dtype:
        raise ValueError("If there is no initial_state, you must give a dtype.")
    if hasattr(cell, "get_initial_state"):
        return cell.get_initial_state(batch_size=batch_size, dtype=dtype)
    return cell.zero_state(batch_size, dtype)


def _run_loop(cell, inputs, state, sequence_length, parallel_iterations, swap_memory):
    """Steps `cell` over time-major `inputs`; returns (time-major outputs, final state).

    Past a sequence's length its outputs are zeros and its state is carried
    through unchanged, so the final state is the one at its last step.
    """
    flat_inputs = tf.nest.flatten(inputs)
    time_steps = static_dim(flat_inputs[0].shape[0])
    if time_steps is None:
        time_steps = tf.shape(flat_inputs[0])[0]
    batch_size = _batch_size(flat_inputs, 1)
    dtype = flat_inputs[0].dtype
    flat_output_size = tf.nest.flatten(cell.output_size)
    input_arrays = [
        tf.TensorArray(x.dtype, size=time_steps, element_shape=x.shape[1:]).unstack(x)
        for x in flat_inputs
    ]
    output_shapes = [
        tf.TensorShape([static_dim(flat_inputs[0].shape[1])]).concatenate(tf.TensorShape(size))
        for size in flat_output_size
    ]
    output_arrays = [
        tf.TensorArray(dtype, size=time_steps, element_shape=shape) for shape in output_shapes
    ]
    zero_outputs = [
        rnn_cells.zeros_for_state(size, batch_size, dtype) for size in flat_output_size
    ]

    # (time, outputs, state), TF 1.15's order: the loop's Enter / Identity / Exit tensors
    # take their numbers from it, and graph collections (Sonnet's) record their names.
    def body(time, arrays, state):
        step_inputs = [array.read(time) for array in input_arrays]
        for value, source in zip(step_inputs, flat_inputs):
            value.set_shape(source.shape[1:])
        output, new_state = cell(tf.nest.pack_sequence_as(inputs, step_inputs), state)
        tf.nest.assert_same_structure(state, new_state)
        flat_output = tf.nest.flatten(output)
        if sequence_length is not None:
            finished = time >= sequence_length
            flat_output = [
                _where_batch(finished, zero, value)
                for zero, value in zip(zero_outputs, flat_output)
            ]
            new_state = tf.nest.map_structure(
                lambda old, new: _where_batch(finished, old, new), state, new_state
            )
        arrays = [array.write(time, value) for array, value in zip(arrays, flat_output)]
        return time + 1, arrays, new_state

    _, output_arrays, final_state = _V1.while_loop(
        lambda time, *_: time < time_steps,
        body,
        (tf.constant(0, name="time"), output_arrays, state),
        parallel_iterations=parallel_iterations or 32,
        swap_memory=swap_memory,
        maximum_iterations=time_steps,
    )
    outputs = []
    for array, shape in zip(output_arrays, output_shapes):
        value = array.stack()
        value.set_shape(tf.TensorShape([static_dim(flat_inputs[0].shape[0])]).concatenate(shape))
        outputs.append(value)
    return tf.nest.pack_sequence_as(cell.output_size, outputs), final_state


def _carry_finished(finished, output, state, new_state):
    """Zeros for the outputs, the old state for the state, of the sequences `finished`."""
    output = tf.nest.map_structure(lambda v: _where_batch(finished, tf.zeros_like(v), v), output)
    new_state = tf.nest.map_structure(
        lambda old, new: _where_batch(finished, old, new), state, new_state
    )
    return output, new_state


def _where_batch(condition, when_true, when_false):
    """Per sequence of the batch (condition [batch]) one or the other value (rows)."""
    return _V1.where(condition, when_true, when_false)


def dynamic_rnn(
    cell,
    inputs,
    sequence_length=None,
    initial_state=None,
    dtype=None,
    parallel_iterations=None,
    swap_memory=False,
    time_major=False,
    scope=None,
):
    """Runs `cell` over `inputs` ([batch, time, ...], or [time, batch, ...] if time_major)
    in a while loop, in variable scope `scope` (default "rnn"); returns (outputs, state)."""
    with _V1.variable_scope(scope or "rnn"):
        flat_inputs = [tf.convert_to_tensor(x) for x in tf.nest.flatten(inputs)]
        if not time_major:
            flat_inputs = [_to_time_major(x) for x in flat_inputs]
        time_major_inputs = tf.nest.pack_sequence_as(inputs, flat_inputs)
        sequence_length = _check_lengths(sequence_length)
        batch_size = _batch_size(flat_inputs, 1)
        state = _initial_state(cell, initial_state, dtype, batch_size)
        outputs, final_state = _run_loop(
            cell, time_major_inputs, state, sequence_length, parallel_iterations, swap_memory
        )
        if not time_major:
            outputs = tf.nest.map_structure(_to_time_major, outputs)
        return outputs, final_state


def _reverse(value, sequence_length, time_axis, batch_axis):
    if sequence_length is None:
        return tf.reverse(value, axis=[time_axis])
    return tf.reverse_sequence(value, sequence_length, seq_axis=time_axis, batch_axis=batch_axis)


def bidirectional_dynamic_rnn(
    cell_fw,
    cell_bw,
    inputs,
    sequence_length=None,
    initial_state_fw=None,
    initial_state_bw=None,
    dtype=None,
    parallel_iterations=None,
    swap_memory=False,
    time_major=False,
    scope=None,
):
    """Forward and backward dynamic_rnn in scopes `fw` and `bw` of `scope` (default
    "bidirectional_rnn"): ((output_fw, output_bw), (state_fw, state_bw)). The backward
    cell reads each sequence reversed within its length; its outputs are put back in order."""
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)
    with _V1.variable_scope(scope or "bidirectional_rnn"):
        with _V1.variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(
                cell_fw,
                inputs,
                sequence_length,
                initial_state_fw,
                dtype,
                parallel_iterations,
                swap_memory,
                time_major,
                scope=fw_scope,
            )
        with _V1.variable_scope("bw") as bw_scope:
            reversed_inputs = tf.nest.map_structure(
                lambda x: _reverse(x, sequence_length, time_axis, batch_axis), inputs
            )
            reversed_output, state_bw = dynamic_rnn(
                cell_bw,
                reversed_inputs,
                sequence_length,
                initial_state_bw,
                dtype,
                parallel_iterations,
                swap_memory,
                time_major,
                scope=bw_scope,
            )
    output_bw = tf.nest.map_structure(
        lambda x: _reverse(x, sequence_length, time_axis, batch_axis), reversed_output
    )
    return (output_fw, output_bw), (state_fw, state_bw)


def static_rnn(cell, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
    """The cell unrolled over a list of [batch, ...] inputs: (list of outputs, final state)."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with _V1.variable_scope(scope or "rnn") as varscope:
        first = [tf.convert_to_tensor(x) for x in tf.nest.flatten(inputs[0])]
        batch_size = _batch_size(first, 0)
        state = _initial_state(cell, initial_state, dtype, batch_size)
        sequence_length = _check_lengths(sequence_length)
        outputs = []
        for time, step_input in enumerate(inputs):
            if time > 0:
                varscope.reuse_variables()
            output, new_state = cell(step_input, state)
            if sequence_length is not None:
                output, new_state = _carry_finished(
                    time >= sequence_length, output, state, new_state
                )
            outputs.append(output)
            state = new_state
        return outputs, state


def static_bidirectional_rnn(
    cell_fw,
    cell_bw,
    inputs,
    initial_state_fw=None,
    initial_state_bw=None,
    dtype=None,
    sequence_length=None,
    scope=None,
):
    """static_rnn forward and backward (scopes `fw`, `bw` of "bidirectional_rnn"); each
    output is [forward, backward] concatenated: (outputs, state_fw, state_bw)."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("inputs must be a sequence")
    if not inputs:
        raise ValueError("inputs must not be empty")
    with _V1.variable_scope(scope or "bidirectional_rnn"):
        with _V1.variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(
                cell_fw, inputs, initial_state_fw, dtype, sequence_length, scope=fw_scope
            )
        with _V1.variable_scope("bw") as bw_scope:
            reversed_inputs = _reverse_list(inputs, sequence_length)
            tmp, state_bw = static_rnn(
                cell_bw, reversed_inputs, initial_state_bw, dtype, sequence_length, scope=bw_scope
            )
    output_bw = _reverse_list(tmp, sequence_length)
    flat_fw = [tf.nest.flatten(x) for x in output_fw]
    flat_bw = [tf.nest.flatten(x) for x in output_bw]
    outputs = [
        tf.nest.pack_sequence_as(output_fw[0], [tf.concat([a, b], 1) for a, b in zip(fw, bw)])
        for fw, bw in zip(flat_fw, flat_bw)
    ]
    return outputs, state_fw, state_bw


def _reverse_list(values, sequence_length):
    """A list of [batch, ...] steps reversed, within each sequence's length if given."""
    if sequence_length is None:
        return list(reversed(values))
    flat = [tf.nest.flatten(v) for v in values]
    reversed_flat = []
    for parts in zip(*flat):
        stacked = tf.stack(parts)
        lengths = tf.cast(sequence_length, tf.int64)
        reversed_flat.append(
            tf.unstack(tf.reverse_sequence(stacked, lengths, seq_axis=0, batch_axis=1))
        )
    return [
        tf.nest.pack_sequence_as(values[0], [parts[t] for parts in reversed_flat])
        for t in range(len(values))
    ]


def stack_bidirectional_dynamic_rnn(
    cells_fw,
    cells_bw,
    inputs,
    initial_states_fw=None,
    initial_states_bw=None,
    dtype=None,
    sequence_length=None,
    parallel_iterations=None,
    time_major=False,
    scope=None,
    swap_memory=False,
):
    """Bidirectional layers one above the other, layer i in `cell_i/bidirectional_rnn` of
    `scope` (default "stack_bidirectional_rnn"), each reading the previous one's outputs
    concatenated: (outputs, states_fw, states_bw)."""
    if not cells_fw or not cells_bw:
        raise ValueError("Must specify at least one fw cell and one bw cell.")
    if len(cells_fw) != len(cells_bw):
        raise ValueError("Forward and Backward cells must have the same depth.")
    states_fw, states_bw = [], []
    layer_input = inputs
    with _V1.variable_scope(scope or "stack_bidirectional_rnn"):
        for index, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            with _V1.variable_scope(f"cell_{index}"):
                (output_fw, output_bw), (state_fw, state_bw) = bidirectional_dynamic_rnn(
                    cell_fw,
                    cell_bw,
                    layer_input,
                    sequence_length=sequence_length,
                    initial_state_fw=initial_states_fw[index] if initial_states_fw else None,
                    initial_state_bw=initial_states_bw[index] if initial_states_bw else None,
                    dtype=dtype,
                    parallel_iterations=parallel_iterations,
                    swap_memory=swap_memory,
                    time_major=time_major,
                )
                layer_input = tf.concat([output_fw, output_bw], 2)
            states_fw.append(state_fw)
            states_bw.append(state_bw)
    return layer_input, tuple(states_fw), tuple(states_bw)


class LSTMBlockFusedCell(rnn_cells.LSTMBlockMath, Layer):
    """tf.contrib.rnn.LSTMBlockFusedCell: the whole sequence at once, time-major.

    cell(inputs [time, batch, depth], initial_state=None, dtype=None,
    sequence_length=None) -> (outputs [time, batch, units], LSTMStateTuple);
    variables `lstm_fused_cell/kernel`, `bias` (and peepholes), LSTMBlockCell's.
    """

    def __init__(
        self,
        num_units,
        forget_bias=1.0,
        cell_clip=None,
        use_peephole=False,
        reuse=None,
        dtype=None,
        name="lstm_fused_cell",
    ):
        super().__init__(_reuse=reuse, name=name, dtype=dtype)
        self._setup(num_units, forget_bias, cell_clip, use_peephole)

    num_units = property(lambda self: self._num_units)

    def call(self, inputs, initial_state=None, dtype=None, sequence_length=None):
        step = _StepCell(self._num_units, self._block_step)
        batch_size = _batch_size([inputs], 1)
        state = _initial_state(step, initial_state, dtype or inputs.dtype, batch_size)
        return _run_loop(step, inputs, state, _check_lengths(sequence_length), None, False)


class _StepCell:
    """LSTMBlockFusedCell's block step on its built weights as a cell for _run_loop:
    no variables or scope of its own."""

    def __init__(self, num_units, block_step):
        self.state_size = LSTMStateTuple(num_units, num_units)
        self.output_size = num_units
        self._block_step = block_step

    def zero_state(self, batch_size, dtype):
        return rnn_cells.zeros_for_state(self.state_size, batch_size, dtype)

    def __call__(self, inputs, state):
        return self._block_step(inputs, LSTMStateTuple(*state))


class FusedRNNCell:
    """tf.contrib.rnn.FusedRNNCell: a cell run over a whole time-major sequence at once,
    cell(inputs, initial_state=None, dtype=None, sequence_length=None, scope=None)
    -> (outputs, final state)."""

    def __call__(self, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
        raise NotImplementedError


class FusedRNNCellAdaptor(FusedRNNCell):
    """tf.contrib.rnn.FusedRNNCellAdaptor: a step cell run as a fused one, through
    dynamic_rnn (use_dynamic_rnn=True) or static_rnn over the time steps, time-major."""

    def __init__(self, cell, use_dynamic_rnn=False):
        self._cell = cell
        self._use_dynamic_rnn = use_dynamic_rnn

    def __call__(self, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
        is_list = isinstance(inputs, list)
        if self._use_dynamic_rnn:
            if is_list:
                inputs = tf.stack(inputs)
            outputs, state = dynamic_rnn(
                self._cell,
                inputs,
                sequence_length=sequence_length,
                initial_state=initial_state,
                dtype=dtype,
                time_major=True,
                scope=scope,
            )
            return (tf.unstack(outputs) if is_list else outputs), state
        steps = inputs if is_list else tf.unstack(inputs)
        outputs, state = static_rnn(
            self._cell,
            steps,
            initial_state=initial_state,
            dtype=dtype,
            sequence_length=sequence_length,
            scope=scope,
        )
        return (outputs if is_list else tf.stack(outputs)), state


class TimeReversedFusedRNN(FusedRNNCell):
    """tf.contrib.rnn.TimeReversedFusedRNN: a fused cell run backwards in time.

    Each sequence is reversed within its length (reverse_sequence; the whole
    time axis when sequence_length is None, the order of a list of steps), the
    cell runs on it, and its outputs are reversed back, so output t holds what
    the cell saw from the sequence's end down to t: the backward half of a
    bidirectional LSTM of LSTMBlockFusedCells. The variables are the wrapped
    cell's (`lstm_fused_cell_1/kernel` for a second LSTMBlockFusedCell).
    """

    def __init__(self, cell):
        self._cell = cell

    @staticmethod
    def _reverse(values, lengths):
        if isinstance(values, list):
            return list(reversed(values))
        if lengths is None:
            return tf.reverse(values, [0])
        return tf.reverse_sequence(values, lengths, seq_axis=0, batch_axis=1)

    def __call__(self, inputs, initial_state=None, dtype=None, sequence_length=None, scope=None):
        inputs = self._reverse(inputs, sequence_length)
        extra = {} if scope is None else {"scope": scope}
        outputs, state = self._cell(
            inputs,
            initial_state=initial_state,
            dtype=dtype,
            sequence_length=sequence_length,
            **extra,
        )
        return self._reverse(outputs, sequence_length), state


def linear(args, output_size, bias, bias_initializer=None, kernel_initializer=None):
    """core_rnn_cell._linear: [args] @ `kernel` (+ `bias`, 0.0 by default) in the current scope."""
    args = list(args) if isinstance(args, (list, tuple)) else [args]
    depth = sum(static_dim(a.shape[1]) for a in args)
    dtype = args[0].dtype
    kernel = _V1.get_variable(
        "kernel", [depth, output_size], dtype=dtype, initializer=kernel_initializer
    )
    result = tf.matmul(args[0] if len(args) == 1 else tf.concat(args, 1), kernel)
    if not bias:
        return result
    biases = _V1.get_variable(
        "bias",
        [output_size],
        dtype=dtype,
        initializer=bias_initializer or _V1.constant_initializer(0.0, dtype=dtype),
    )
    return tf.nn.bias_add(result, biases)


# ---------------------------------------------------------------------------
# The namespaces

_RNN_CELL = {
    name: getattr(rnn_cells, name)
    for name in (
        "RNNCell",
        "LayerRNNCell",
        "BasicRNNCell",
        "BasicLSTMCell",
        "LSTMCell",
        "GRUCell",
        "LSTMStateTuple",
        "MultiRNNCell",
        "DropoutWrapper",
        "ResidualWrapper",
        "DeviceWrapper",
    )
}

_LOOPS = {
    "dynamic_rnn": dynamic_rnn,
    "bidirectional_dynamic_rnn": bidirectional_dynamic_rnn,
    "static_rnn": static_rnn,
    "static_bidirectional_rnn": static_bidirectional_rnn,
}


def rnn_cell_module(api="tf.nn.rnn_cell"):
    """tf.nn.rnn_cell (also tf.compat.v1.nn.rnn_cell)."""
    return Namespace(api, None, dict(_RNN_CELL))


def nn_names():
    """What tf.nn of TF 1.x had of RNNs: the loops and the rnn_cell module."""
    return {**_LOOPS, "rnn_cell": rnn_cell_module()}


def contrib_rnn_module(api="tf.contrib.rnn"):
    """tf.contrib.rnn: tf.nn.rnn_cell's cells and loops, the block (fused) cells,
    LayerNormBasicLSTMCell and stack_bidirectional_dynamic_rnn."""
    return Namespace(
        api,
        None,
        {
            **_RNN_CELL,
            **_LOOPS,
            "LSTMBlockCell": rnn_cells.LSTMBlockCell,
            "LSTMBlockFusedCell": LSTMBlockFusedCell,
            "FusedRNNCell": FusedRNNCell,
            "FusedRNNCellAdaptor": FusedRNNCellAdaptor,
            "TimeReversedFusedRNN": TimeReversedFusedRNN,
            "GRUBlockCell": rnn_cells.GRUBlockCell,
            "GRUBlockCellV2": rnn_cells.GRUBlockCellV2,
            "LayerNormBasicLSTMCell": rnn_cells.LayerNormBasicLSTMCell,
            "stack_bidirectional_dynamic_rnn": stack_bidirectional_dynamic_rnn,
            "_linear": linear,
        },
        {"CudnnLSTM": "tf.contrib.rnn.LSTMBlockFusedCell", "static_state_saving_rnn": None},
    )
