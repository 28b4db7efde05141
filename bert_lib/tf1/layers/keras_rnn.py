"""tf.keras.layers.LSTM, GRU, SimpleRNN and Bidirectional as TF 1.15 ran them in a graph.

TF 1.15's Keras recurrent layers (the "v1" ones a TF 1.x graph got) name
their variables after the layer, `lstm/kernel` [inputs, 4 units],
`lstm/recurrent_kernel` [units, 4 units], `lstm/bias` (gates i, f, c, o;
GRU z, r, h), `bidirectional/forward_lstm/...` and `.../backward_lstm/...`
inside Bidirectional; their defaults are TF 1.15's: hard_sigmoid gates,
an orthogonal recurrent kernel, LSTM's forget-gate bias starting at 1
(unit_forget_bias), GRU with reset_after=False, implementation 1 (one
product per gate). A Keras mask (Embedding(mask_zero=True)) holds the
previous output and state at masked steps, as Keras did.
"""

import tensorflow as tf

from ..machinery.namespaces import unsupported
from .keras_layers import Layer, get_activation, get_initializer, resolved_training
from .layer_base import static_dim

_V1 = tf.compat.v1


class _Recurrent(Layer):
    """The recurrent layers' shared loop; subclasses give `gates` and `step`."""

    gates = 1
    state_count = 1

    def __init__(
        self,
        units,
        activation="tanh",
        recurrent_activation="hard_sigmoid",
        use_bias=True,
        kernel_initializer="glorot_uniform",
        recurrent_initializer="orthogonal",
        bias_initializer="zeros",
        kernel_regularizer=None,
        recurrent_regularizer=None,
        bias_regularizer=None,
        activity_regularizer=None,
        kernel_constraint=None,
        recurrent_constraint=None,
        bias_constraint=None,
        dropout=0.0,
        recurrent_dropout=0.0,
        return_sequences=False,
        return_state=False,
        go_backwards=False,
        stateful=False,
        unroll=False,
        time_major=False,
        implementation=1,
        **kwargs,
    ):
        if stateful:
            raise unsupported(f"tf.keras.layers.{type(self).__name__}(stateful=True)")
        self._init_args = dict(
            units=units,
            activation=activation,
            recurrent_activation=recurrent_activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer,
            recurrent_initializer=recurrent_initializer,
            bias_initializer=bias_initializer,
            kernel_regularizer=kernel_regularizer,
            recurrent_regularizer=recurrent_regularizer,
            bias_regularizer=bias_regularizer,
            kernel_constraint=kernel_constraint,
            recurrent_constraint=recurrent_constraint,
            bias_constraint=bias_constraint,
            dropout=dropout,
            recurrent_dropout=recurrent_dropout,
            return_sequences=return_sequences,
            return_state=return_state,
            go_backwards=go_backwards,
            time_major=time_major,
            **self._extra_args(kwargs),
        )
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = units
        self.activation = get_activation(activation)
        self.recurrent_activation = get_activation(recurrent_activation)
        self.use_bias = use_bias
        self._initializers = [
            get_initializer(kernel_initializer),
            get_initializer(recurrent_initializer),
            get_initializer(bias_initializer),
        ]
        self._regularizers = (kernel_regularizer, recurrent_regularizer, bias_regularizer)
        self._constraints = (kernel_constraint, recurrent_constraint, bias_constraint)
        self.dropout = min(1.0, max(0.0, dropout))
        self.recurrent_dropout = min(1.0, max(0.0, recurrent_dropout))
        self.return_sequences = return_sequences
        self.return_state = return_state
        self.go_backwards = go_backwards
        self.time_major = time_major
        self.zero_output_for_mask = False

    def _extra_args(self, kwargs):
        return {}

    def copy(self, **changes):
        """A new layer built from the same arguments (Bidirectional's backward copy)."""
        return type(self)(**{**self._init_args, **changes})

    def _bias_initializer(self):
        return self._initializers[2]

    def _bias_shape(self):
        return [self.gates * self.units]

    def build(self, input_shape):
        depth = static_dim(tf.TensorShape(input_shape)[-1])
        width = self.gates * self.units
        shapes = ([depth, width], [self.units, width], self._bias_shape())
        names = ("kernel", "recurrent_kernel", "bias")
        initializers = (self._initializers[0], self._initializers[1], self._bias_initializer())
        weights = []
        for index in range(3 if self.use_bias else 2):
            weights.append(
                self.add_weight(
                    names[index],
                    shapes[index],
                    initializer=initializers[index],
                    regularizer=self._regularizers[index],
                    constraint=self._constraints[index],
                )
            )
        self.kernel, self.recurrent_kernel = weights[:2]
        self.bias = weights[2] if self.use_bias else None

    def _dropout_masks(self, like, rate, training):
        """One mask per gate for the whole sequence (Keras's), or None."""
        training = resolved_training(training)
        if not 0 < rate < 1 or (isinstance(training, (bool, int)) and not training):
            return None
        ones = tf.ones_like(like)
        if isinstance(training, (bool, int)):
            return [tf.nn.dropout(ones, rate=rate) for _ in range(self.gates)]
        training = tf.cast(training, tf.bool)
        return [
            _V1.cond(training, lambda: tf.nn.dropout(ones, rate=rate), lambda: ones)
            for _ in range(self.gates)
        ]

    def call(self, inputs, mask=None, training=None, initial_state=None):
        inputs = tf.convert_to_tensor(inputs)
        steps = inputs if self.time_major else tf.transpose(inputs, [1, 0, 2])
        if mask is not None:
            mask = tf.transpose(tf.cast(mask, tf.bool), [1, 0]) if not self.time_major else mask
        if self.go_backwards:
            steps = tf.reverse(steps, [0])
            mask = tf.reverse(mask, [0]) if mask is not None else None
        batch = tf.shape(steps)[1]
        if initial_state is None:
            zeros = tf.zeros(tf.stack([batch, self.units]), dtype=steps.dtype)
            states = [zeros] * self.state_count
        else:
            states = (
                list(initial_state)
                if isinstance(initial_state, (list, tuple))
                else [initial_state]
            )
        input_masks = self._dropout_masks(steps[0], self.dropout, training)
        state_masks = self._dropout_masks(states[0], self.recurrent_dropout, training)
        outputs, last_output, states = _keras_loop(
            lambda x, s: self.step(x, s, input_masks, state_masks),
            steps,
            states,
            mask,
            self.zero_output_for_mask,
        )
        outputs.set_shape([static_dim(inputs.shape[0 if self.time_major else 1]), None, None])
        if self.return_sequences:
            output = outputs if self.time_major else tf.transpose(outputs, [1, 0, 2])
        else:
            output = last_output
        if self.return_state:
            return [output, *states]
        return output

    def compute_mask(self, inputs, mask=None):
        if self.return_sequences:
            return mask
        return None

    def _gate_inputs(self, inputs, masks):
        """inputs @ kernel + bias, one product per gate (implementation 1)."""
        parts = []
        for gate in range(self.gates):
            x = inputs * masks[gate] if masks is not None else inputs
            value = tf.matmul(x, self.kernel[:, gate * self.units : (gate + 1) * self.units])
            if self.bias is not None:
                value = tf.nn.bias_add(
                    value, self._input_bias()[gate * self.units : (gate + 1) * self.units]
                )
            parts.append(value)
        return parts

    def _input_bias(self):
        return self.bias

    def _recurrent(self, state, gate, masks):
        state = state * masks[gate] if masks is not None else state
        u = self.units
        return tf.matmul(state, self.recurrent_kernel[:, gate * u : (gate + 1) * u])


def _keras_loop(step, steps, states, mask, zero_output_for_mask):
    """Keras's loop over time-major `steps`: (outputs [time, batch, units], last output,
    final states); a masked step keeps the previous output (zeros with
    zero_output_for_mask) and the previous states."""
    time_steps = tf.shape(steps)[0]
    outputs_array = tf.TensorArray(steps.dtype, size=time_steps, element_shape=states[0].shape)
    previous_output = tf.zeros_like(states[0])

    def body(time, previous, states, array):
        output, new_states = step(steps[time], states)
        if mask is not None:
            keep = mask[time]
            fallback = tf.zeros_like(output) if zero_output_for_mask else previous
            output = _V1.where(keep, output, fallback)
            new_states = [_V1.where(keep, new, old) for new, old in zip(new_states, states)]
        return time + 1, output, new_states, array.write(time, output)

    _, last_output, states, outputs_array = _V1.while_loop(
        lambda time, *_: time < time_steps,
        body,
        (tf.constant(0), previous_output, list(states), outputs_array),
        maximum_iterations=time_steps,
    )
    return outputs_array.stack(), last_output, states


class SimpleRNN(_Recurrent):
    """output = activation(x @ kernel + bias + previous @ recurrent_kernel)."""

    def __init__(self, units, activation="tanh", **kwargs):
        kwargs.pop("recurrent_activation", None)
        super().__init__(units, activation=activation, **kwargs)

    def step(self, inputs, states, input_masks, state_masks):
        x = self._gate_inputs(inputs, input_masks)[0]
        output = self.activation(x + self._recurrent(states[0], 0, state_masks))
        return output, [output]


class GRU(_Recurrent):
    """TF 1.15's Keras GRU (reset_after=False): gates z, r, h."""

    gates = 3

    def __init__(self, units, reset_after=False, **kwargs):
        if reset_after:
            raise unsupported("tf.keras.layers.GRU(reset_after=True)", "reset_after=False")
        super().__init__(units, **kwargs)

    def step(self, inputs, states, input_masks, state_masks):
        h_tm1 = states[0]
        x_z, x_r, x_h = self._gate_inputs(inputs, input_masks)
        z = self.recurrent_activation(x_z + self._recurrent(h_tm1, 0, state_masks))
        r = self.recurrent_activation(x_r + self._recurrent(h_tm1, 1, state_masks))
        h_in = h_tm1 * state_masks[2] if state_masks is not None else h_tm1
        recurrent_h = tf.matmul(r * h_in, self.recurrent_kernel[:, 2 * self.units :])
        hh = self.activation(x_h + recurrent_h)
        h = z * h_tm1 + (1 - z) * hh
        return h, [h]


class LSTM(_Recurrent):
    """TF 1.15's Keras LSTM: gates i, f, c, o; states [h, c]; the forget gate's bias
    starts at 1 (unit_forget_bias)."""

    gates = 4
    state_count = 2

    def __init__(self, units, unit_forget_bias=True, **kwargs):
        self.unit_forget_bias = unit_forget_bias
        super().__init__(units, **kwargs)

    def _extra_args(self, kwargs):
        return {"unit_forget_bias": self.unit_forget_bias}

    def _bias_initializer(self):
        initializer = self._initializers[2]
        if not self.unit_forget_bias:
            return initializer
        units = self.units

        def forget_gate_ones(shape, dtype=None, partition_info=None):
            del shape, partition_info
            return tf.concat(
                [
                    initializer([units], dtype=dtype),
                    tf.ones([units], dtype=dtype),
                    initializer([units * 2], dtype=dtype),
                ],
                0,
            )

        return forget_gate_ones

    def step(self, inputs, states, input_masks, state_masks):
        h_tm1, c_tm1 = states
        x_i, x_f, x_c, x_o = self._gate_inputs(inputs, input_masks)
        i = self.recurrent_activation(x_i + self._recurrent(h_tm1, 0, state_masks))
        f = self.recurrent_activation(x_f + self._recurrent(h_tm1, 1, state_masks))
        c = f * c_tm1 + i * self.activation(x_c + self._recurrent(h_tm1, 2, state_masks))
        o = self.recurrent_activation(x_o + self._recurrent(h_tm1, 3, state_masks))
        h = o * self.activation(c)
        return h, [h, c]


class Bidirectional(Layer):
    """The layer forward (`forward_<name>`) and a copy of it backward (`backward_<name>`),
    their outputs merged (concat by default, along the last axis)."""

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        if not isinstance(layer, _Recurrent):
            raise unsupported(
                f"tf.keras.layers.Bidirectional of {type(layer).__name__}",
                "Bidirectional of LSTM, GRU or SimpleRNN",
            )
        if merge_mode not in ("sum", "mul", "ave", "concat", None):
            raise ValueError(f"merge_mode must be sum, mul, ave, concat or None, got {merge_mode}")
        super().__init__(**kwargs)
        name = layer.name
        self.forward_layer = layer
        self.forward_layer._name = "forward_" + name  # noqa: SLF001
        self.backward_layer = backward_layer or layer.copy(
            go_backwards=not layer.go_backwards, name="backward_" + name
        )
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        for each in (self.forward_layer, self.backward_layer):
            each.zero_output_for_mask = each.return_sequences

    def call(self, inputs, mask=None, training=None, initial_state=None):
        kwargs = {"mask": mask, "training": training}
        forward = self.forward_layer(inputs, **kwargs)
        backward = self.backward_layer(inputs, **kwargs)
        states = []
        if self.return_state:
            forward, states = forward[0], forward[1:] + backward[1:]
            backward = backward[0]
        if self.return_sequences:
            time_axis = 0 if self.forward_layer.time_major else 1
            backward = tf.reverse(backward, [time_axis])
        if self.merge_mode == "concat":
            output = tf.concat([forward, backward], -1)
        elif self.merge_mode == "sum":
            output = forward + backward
        elif self.merge_mode == "ave":
            output = (forward + backward) / 2
        elif self.merge_mode == "mul":
            output = forward * backward
        else:
            output = [forward, backward]
        if self.return_state:
            return ([output] if self.merge_mode else output) + list(states)
        return output

    def compute_mask(self, inputs, mask=None):
        return mask if self.return_sequences else None


def layers_names():
    """{name: class} of the recurrent layers, for tf.keras.layers."""
    return {"SimpleRNN": SimpleRNN, "GRU": GRU, "LSTM": LSTM, "Bidirectional": Bidirectional}
