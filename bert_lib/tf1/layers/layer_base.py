"""tf.layers.Layer of TF 1.x: the base of its layer classes and RNN cells, and their names.

TF 1.x had two ways of naming a layer's variables, and a checkpoint keeps
the names, so both are reproduced exactly:

- tf.layers layers and the RNN cells (which were tf.layers layers) create
  their variables with tf.compat.v1.get_variable in a variable scope fixed
  at their first call: the scope given, else their base name (`dense`,
  `lstm_cell`) made unique among the scopes of the current variable scope
  (`dense_1`, ...). Variable-scope reuse applies, and on later calls the
  variables are reused wherever the layer is called. Layer is that.
- tf.keras.layers (keras_layers.py) take a name from a per-graph counter
  of each base name, shared with tf.layers: every tf.layers layer built
  without a name counts too, so a Keras Dense after seven tf.layers.dense
  calls is `dense_7`. unique_layer_name is that counter.

What the two kinds of layer share otherwise is here too: LayerBase (name,
dtype, weights, losses), KernelAndBias (Dense's and the convolutions'
variables and outputs) and Pooling; each API's classes keep their own
arguments and defaults, which differed in TF 1.15.
"""

import collections
import re
import weakref

import tensorflow as tf

_V1 = tf.compat.v1

# graph -> {base name: how many layers of the graph took it}; TF 1.x kept one per graph.
_NAME_COUNTS = weakref.WeakKeyDictionary()


# When tf.keras is Keras 2 (the tf_keras package, layers/__init__.py), its per-graph
# name counts: () -> {(namespace, base name): count} of the default graph.
_KERAS2_NAME_COUNTS = []


def share_names_with_keras2(graph_counts):
    """Makes the layers here take their numbers from Keras 2's counts (graph_counts() gives
    the default graph's), as TF 1.15's tf.layers and tf.keras layers shared one count;
    None: their own counts again."""
    _KERAS2_NAME_COUNTS[:] = [] if graph_counts is None else [graph_counts]


def unique_layer_name(base_name):
    """`base_name`, then `base_name_1`, `base_name_2`, ... within the default graph."""
    if _KERAS2_NAME_COUNTS:
        counts, key = _KERAS2_NAME_COUNTS[0](), ("", base_name)
    else:
        graph = _V1.get_default_graph()
        counts, key = _NAME_COUNTS.setdefault(graph, collections.Counter()), base_name
    index = counts[key]
    counts[key] += 1
    return base_name if index == 0 else f"{base_name}_{index}"


def reset_layer_names():
    """tf.keras.backend.clear_session / reset_uids: the counter starts again."""
    _NAME_COUNTS.pop(_V1.get_default_graph(), None)


def snake_case(class_name):
    """A class name as TF 1.x made a layer's base name of it: LSTMCell -> lstm_cell."""
    words = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", class_name)
    name = re.sub(r"([a-z])([A-Z])", r"\1_\2", words).lower()
    return name if not name.startswith("_") else "private" + name


def static_dim(dimension):
    """A dimension's int value (None when unknown), Dimension or int alike."""
    return tf.compat.dimension_value(dimension)


class LayerBase:
    """What tf.layers.Layer (Layer below) and tf.keras.layers.Layer share: a name, a dtype,
    weights and losses. A layer that is not trainable counts its trainable weights among the
    non-trainable ones. A Keras layer also counts those of the layers it holds (_sublayers);
    a tf.layers layer holds only its own.

    The subclass's __init__ sets trainable, built, _name, _dtype and the lists
    _trainable_weights, _non_trainable_weights and _losses.
    """

    name = property(lambda self: self._name)
    dtype = property(lambda self: self._dtype)

    def _sublayers(self):
        return []

    @property
    def trainable_weights(self):
        """The trainable variables made by the layer (and the layers it holds)."""
        own = list(self._trainable_weights) if self.trainable else []
        return own + [w for layer in self._sublayers() for w in layer.trainable_weights]

    @property
    def non_trainable_weights(self):
        """The variables made by the layer that training does not change."""
        own = list(self._non_trainable_weights)
        if not self.trainable:
            own = list(self._trainable_weights) + own
        return own + [w for layer in self._sublayers() for w in layer.non_trainable_weights]

    @property
    def weights(self):
        """The trainable weights, then the others."""
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = trainable_weights
    non_trainable_variables = non_trainable_weights
    variables = weights

    @property
    def losses(self):
        """The regularization and activity losses the layer added."""
        return list(self._losses) + [x for layer in self._sublayers() for x in layer.losses]

    def build(self, input_shape):
        """Makes the layer's variables for `input_shape`; a subclass overrides it."""
        del input_shape
        self.built = True


def per_dimension(value, rank):
    """Sizes for `rank` dimensions as a list: an int for each, else the sizes given."""
    return [value] * rank if isinstance(value, int) else list(value)


class KernelAndBias:
    """What Dense and the convolutions of both APIs share: `kernel`, then with use_bias a
    `bias` as wide as the kernel's last dimension, each from the layer's kernel_* or bias_*
    initializer, regularizer and constraint; outputs + bias, then the activation (none when
    it is None). The host class stores those arguments, with its API's defaults, and gives
    add_weight."""

    def _add_kernel_and_bias(self, kernel_shape, bias_width=None):
        """`bias` is as wide as the kernel's last dimension unless bias_width is given (a
        transposed convolution's kernel ends with its input channels)."""
        self.kernel = self.add_weight(
            "kernel",
            kernel_shape,
            initializer=self.kernel_initializer,
            regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint,
        )
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias",
                kernel_shape[-1:] if bias_width is None else [bias_width],
                initializer=self.bias_initializer,
                regularizer=self.bias_regularizer,
                constraint=self.bias_constraint,
            )

    def _add_bias_and_activate(self, outputs):
        if self.use_bias:
            outputs = tf.nn.bias_add(outputs, self.bias)
        return self.activation(outputs) if self.activation is not None else outputs

    # The convolutions of both APIs (`rank` spatial dimensions, channels last).

    def _set_convolution(self, filters, kernel_size, strides, dilation_rate):
        self.filters = filters
        self.kernel_size = per_dimension(kernel_size, self.rank)
        self.strides = per_dimension(strides, self.rank)
        self.dilation_rate = per_dimension(dilation_rate, self.rank)

    def _add_convolution_kernel(self, channels):
        self._add_kernel_and_bias([*self.kernel_size, channels, self.filters])

    def _convolve(self, inputs, padding):
        """The convolution alone (no bias, no activation); padding VALID or SAME."""
        return tf.nn.convolution(
            inputs,
            self.kernel,
            padding=padding.upper(),
            strides=self.strides,
            dilations=self.dilation_rate,
        )


def activity_losses(regularizer, outputs):
    """TF 1.x's activity regularization: for each output, the regularizer's value divided
    by the output's batch size (its first dimension)."""
    losses = []
    with _V1.name_scope("ActivityRegularizer"):
        for output in tf.nest.flatten(outputs):
            loss = regularizer(output)
            losses.append(loss / tf.cast(tf.shape(output)[0], loss.dtype))
    return losses


def channels_first(data_format, api):
    """Whether `data_format` puts the channels before the steps (None: channels_last)."""
    if data_format in (None, "channels_last"):
        return False
    if data_format == "channels_first":
        return True
    raise ValueError(f"{api}: data_format must be channels_last or channels_first")


class Pooling:
    """What the pooling classes of both APIs share: the maximum or the average (`kind` MAX
    or AVG) over windows of `rank` dimensions; no variables. The host class's __init__
    calls _set_windows with its API's arguments (each API has its own defaults)."""

    rank = None
    kind = None
    channels_first = False

    def _set_windows(self, pool_size, strides, padding, data_format, api):
        """pool_size and strides as lists of rank ints, padding as VALID or SAME, and
        channels_first (inputs [batch, channels, steps...], pooled as channels-last)."""
        self.channels_first = channels_first(data_format, api)
        self.pool_size = per_dimension(pool_size, self.rank)
        self.strides = per_dimension(strides, self.rank)
        self.padding = padding.upper()

    def call(self, inputs):
        if self.channels_first:
            inputs = tf.transpose(inputs, [0, *range(2, self.rank + 2), 1])
        outputs = tf.nn.pool(
            inputs,
            window_shape=self.pool_size,
            pooling_type=self.kind,
            strides=self.strides,
            padding=self.padding,
        )
        if self.channels_first:
            outputs = tf.transpose(outputs, [0, self.rank + 1, *range(1, self.rank + 1)])
        return outputs


class Layer(LayerBase):
    """tf.layers.Layer: variables by get_variable in the scope fixed at the first call.

    Subclasses define build(input_shape), which creates variables with
    add_weight / add_variable, and call(inputs, ...). A layer called again
    reuses its variables.
    """

    def __init__(self, trainable=True, name=None, dtype=None, _reuse=None, **kwargs):
        # tf.layers' functions pass their `name` as the scope: used as given, not uniquified.
        self._scope_name = kwargs.pop("_scope", None)
        self.trainable = trainable
        self._reuse = _reuse
        self._dtype = tf.as_dtype(dtype).name if dtype is not None else None
        base_name = snake_case(type(self).__name__)
        if name:
            self._name, self._base_name = name, name
        else:
            self._name, self._base_name = unique_layer_name(base_name), base_name
        self._scope = None
        self.built = False
        self._trainable_weights = []
        self._non_trainable_weights = []
        self._losses = []

    @property
    def scope_name(self):
        """The variable scope the layer's variables are in (known after its first call)."""
        if self._scope is None:
            raise ValueError(f'layer "{self._name}" has no scope before its first call')
        return self._scope.name

    def call(self, inputs, *args, **kwargs):
        """The layer's computation; a subclass overrides it."""
        return inputs

    def add_weight(
        self,
        name,
        shape,
        dtype=None,
        initializer=None,
        regularizer=None,
        trainable=True,
        constraint=None,
        partitioner=None,
        **unused,
    ):
        """A variable of this layer: get_variable(name) in the layer's scope (inside build).
        A regularizer's loss goes, as in TF 1.x, to the graph's collection and this layer's
        losses."""
        collected = len(_V1.get_collection(_V1.GraphKeys.REGULARIZATION_LOSSES))
        variable = _V1.get_variable(
            name,
            shape,
            dtype=dtype or self._dtype or tf.float32,
            initializer=initializer,
            regularizer=regularizer,
            trainable=trainable and self.trainable,
            constraint=constraint,
            partitioner=partitioner,
        )
        self._losses += _V1.get_collection(_V1.GraphKeys.REGULARIZATION_LOSSES)[collected:]
        self._track(variable, trainable and self.trainable)
        return variable

    add_variable = add_weight

    def _track(self, variable, trainable):
        if any(variable is v for v in self._trainable_weights + self._non_trainable_weights):
            return
        (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)

    def _tracking_getter(self, getter, *args, **kwargs):
        """Variables made by get_variable inside call() (user cells do that) count as ours."""
        variable = getter(*args, **kwargs)
        self._track(variable, variable in _V1.trainable_variables())
        return variable

    def _set_scope(self, scope):
        if self._scope is not None:
            return
        if scope is None and self._scope_name is not None:
            with _V1.variable_scope(self._scope_name) as captured:
                self._scope = captured
        elif self._reuse:
            with _V1.variable_scope(scope if scope is not None else self._base_name) as captured:
                self._scope = captured
        else:
            with _V1.variable_scope(scope, default_name=self._base_name) as captured:
                self._scope = captured

    def __call__(self, inputs, *args, **kwargs):
        scope = kwargs.pop("scope", None)
        self._set_scope(scope)
        reuse = True if self.built else self._reuse
        with _V1.variable_scope(
            self._scope,
            reuse=reuse,
            auxiliary_name_scope=False,
            custom_getter=self._tracking_getter,
        ):
            with _V1.name_scope(self._scope.original_name_scope):
                if not self.built:
                    first = tf.nest.flatten(inputs)[0]
                    first = tf.convert_to_tensor(first)
                    if self._dtype is None and first.dtype.is_floating:
                        self._dtype = first.dtype.base_dtype.name
                    self.build(tf.nest.map_structure(lambda x: _shape_of(x), inputs))
                    self.built = True
                return self.call(inputs, *args, **kwargs)

    apply = __call__


def _shape_of(value):
    return tf.convert_to_tensor(value).shape
