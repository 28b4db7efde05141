"""The BERT model: configuration, the Transformer encoder and its building blocks.

Graph-mode TensorFlow through `tf.compat.v1` (variable scopes and
`get_variable`), so that variable names match Google's released checkpoints
exactly (see `bert/encoder/layer_0/attention/self/query/kernel` and friends).
Works with ref variables (after `tf.compat.v1.disable_v2_behavior()`) and with
resource variables (a `tf.Graph` built with TF2 behaviour on).

Read top to bottom: `BertConfig`, `BertModel`, then the pieces it is made of
in the order the data flows through them - activations, dense and layer
norm, embeddings, attention, the layer stack - then shape helpers and
checkpoint loading.

Numeric choices, named where they are made:
  * weights start as a truncated normal with stddev `initializer_range`,
    biases and LayerNorm beta at 0, gamma at 1;
  * GELU ("gelu") is the tanh approximation; "gelu_erf" is the exact erf
    form, for models trained with it (Hugging Face's "gelu");
  * LayerNorm uses epsilon 1e-12 over the last axis;
  * masked attention positions get -10000 added to their scores;
  * dropout is tf.nn.dropout's, or with `DropoutKeys` a 32-bit hash of the
    example's key and each value's coordinates, so that an example draws
    the same masks in any batch.

Like the original's, the file imports nothing but TensorFlow, six, absl and
the standard library, so it works copied alone into another project. A
config or checkpoint that does not fit raises `InputError`, a ValueError
defined here for that reason (the scripts report it in one ERROR line).
"""

import collections
import copy
import functools
import json
import math
import random
import re
import zlib

import six
import tensorflow as tf
from absl import logging as absl_logging

LAYER_NORM_EPSILON = 1e-12
# Added to the attention scores of padding positions: large enough that
# softmax gives them ~0 weight, small enough to stay finite in float16.
ATTENTION_MASK_ADDER = -10000.0
# Constants of the tanh approximation of GELU.
GELU_TANH_SCALE = math.sqrt(2.0 / math.pi)
GELU_CUBIC_COEFF = 0.044715
# 1/sqrt(2): the exact GELU is x * Phi(x) = 0.5*x*(1 + erf(x/sqrt(2))).
GELU_ERF_SCALE = 1.0 / math.sqrt(2.0)

# The dtypes BertModel may compute its Transformer layers in besides float32.
MIXED_PRECISION_DTYPES = (tf.bfloat16, tf.float16)


def _checked_compute_dtype(compute_dtype):
    """BertModel's compute_dtype as a DType (float32 for None), if it is one it computes in."""
    dtype = tf.as_dtype(compute_dtype or tf.float32)
    if dtype != tf.float32 and dtype not in MIXED_PRECISION_DTYPES:
        raise ValueError(f"compute dtype must be float32, bfloat16 or float16, got {dtype.name}")
    return dtype


# Keys of bert_config.json that BertConfig's constructor takes; the first group
# must be positive integers.
_CONFIG_SIZES = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)
_CONFIG_KEYS = _CONFIG_SIZES + (
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "initializer_range",
)


class InputError(ValueError):
    """A config or a checkpoint that does not fit: the user's mistake, which the scripts
    report in one ERROR line. A ValueError, as the original raised."""


class BertConfig:
    """Hyperparameters of a `BertModel` (the contents of `bert_config.json`)."""

    def __init__(
        self,
        vocab_size,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=16,
        initializer_range=0.02,
    ):
        """Stores the hyperparameters.

        Args:
          vocab_size: number of WordPiece ids `input_ids` may hold.
          hidden_size: width of the embeddings, every encoder layer and the pooler.
          num_hidden_layers: number of Transformer layers.
          num_attention_heads: attention heads per layer; must divide hidden_size.
          intermediate_size: width of the feed-forward layer inside each block.
          hidden_act: activation of the feed-forward layer: a name known to
            `get_activation` or a callable.
          hidden_dropout_prob: dropout on embeddings and every dense output.
          attention_probs_dropout_prob: dropout on the attention probabilities.
          max_position_embeddings: rows of the position table, the longest
            sequence the model can take.
          type_vocab_size: number of token type (segment) ids.
          initializer_range: stddev of the truncated normal weight initializer.
        """
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.hidden_act = hidden_act
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range

    @classmethod
    def from_dict(cls, json_object):
        """Builds a config from a dict; every key becomes an attribute.

        Keys the constructor does not know (Google's multilingual and Chinese
        configs carry `directionality`, `pooler_fc_size`, ...) are kept as
        attributes too, so `to_dict` gives them back.
        """
        config = cls(vocab_size=None)
        for key, value in six.iteritems(json_object):
            config.__dict__[key] = value
        return config

    @classmethod
    def from_json_file(cls, json_file):
        """Reads a config from a JSON file (any path `tf.io.gfile` can open).

        Raises:
          InputError (a ValueError): the file is not valid JSON, does not hold
            an object or fails `validate`; the message names the file (and the
            line for a syntax error).
        """
        with tf.io.gfile.GFile(json_file, "r") as reader:
            text = reader.read()
        try:
            json_object = json.loads(text)
        except ValueError as e:
            line = getattr(e, "lineno", None)
            where = f"{json_file}:{line}" if line else json_file
            raise InputError(f"{where}: not a valid JSON BERT config ({e})") from None
        if not isinstance(json_object, dict):
            raise InputError(
                f"{json_file}: a BERT config must be a JSON object, "
                f"got {type(json_object).__name__}"
            )
        config = cls.from_dict(json_object)
        config.validate(json_file)
        return config

    def validate(self, source="BertConfig"):
        """Checks that the values can build a model; `source` names the config.

        vocab_size must be given; sizes are positive integers, dropout
        probabilities in [0, 1), initializer_range a positive number,
        hidden_act a name `get_activation` knows, and hidden_size a multiple
        of num_attention_heads. Keys the constructor does not know are kept
        and logged. `from_json_file` calls this; `from_dict` and the
        constructor do not, as in the original.

        Raises:
          InputError (a ValueError): naming `source` and the offending key.
        """
        if self.vocab_size is None:
            raise InputError(f"{source}: vocab_size is missing")
        for key in _CONFIG_SIZES:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InputError(f"{source}: {key} must be a positive integer, got {value!r}")
        for key in ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"{source}: {key} must be a number, got {value!r}")
            if key == "initializer_range" and value <= 0:
                raise InputError(f"{source}: {key} must be positive, got {value!r}")
            if key != "initializer_range" and not 0 <= value < 1:
                raise InputError(f"{source}: {key} must be in [0, 1), got {value!r}")
        try:
            if not (isinstance(self.hidden_act, six.string_types) or callable(self.hidden_act)):
                raise ValueError(self.hidden_act)
            get_activation(self.hidden_act)
        except ValueError:
            raise InputError(
                f"{source}: hidden_act {self.hidden_act!r} is not one of "
                "gelu, gelu_erf, relu, tanh, linear"
            ) from None
        if self.hidden_size % self.num_attention_heads:
            raise InputError(
                f"{source}: hidden_size ({self.hidden_size}) is not a multiple of "
                f"num_attention_heads ({self.num_attention_heads})"
            )
        unknown = sorted(set(self.__dict__) - set(_CONFIG_KEYS))
        if unknown:
            absl_logging.info(
                "%s: keeping keys BertModel does not use: %s", source, ", ".join(unknown)
            )

    def to_dict(self):
        """Returns a deep copy of all attributes as a dict."""
        return copy.deepcopy(self.__dict__)

    def to_json_string(self):
        """Returns the config as JSON, keys sorted, indent 2, trailing newline."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"


class BertModel:
    """The BERT encoder: embeddings, a stack of Transformer layers and a pooler.

    Example:

        config = modeling.BertConfig(vocab_size=30522)
        model = modeling.BertModel(config, is_training=True, input_ids=ids,
                                   input_mask=mask, token_type_ids=segments)
        logits = tf.matmul(model.get_pooled_output(), output_weights,
                           transpose_b=True)

    All variables live under the variable scope `scope` (default "bert").
    """

    def __init__(
        self,
        config,
        is_training,
        input_ids,
        input_mask=None,
        token_type_ids=None,
        use_one_hot_embeddings=False,
        scope=None,
        compute_dtype=None,
        pooled_output_only=False,
        position_ids=None,
        instance_ids=None,
        cls_positions=None,
        dropout_keys=None,
    ):
        """Builds the model graph.

        Args:
          config: a `BertConfig`. Not modified.
          is_training: if False, both dropout probabilities are set to 0, and
            the graph is one of inference: in 16 bits, its dense layers'
            bias adds are plain ops, without the custom gradient that sums
            their bias gradients in float32 (see `dense`).
          input_ids: int32 Tensor [batch_size, seq_length] of WordPiece ids.
          input_mask: optional int32 Tensor [batch_size, seq_length], 1 for real
            tokens and 0 for padding; all ones if omitted.
          token_type_ids: optional int32 Tensor [batch_size, seq_length] of
            segment ids; all zeros if omitted.
          use_one_hot_embeddings: look word ids up by a one-hot matmul instead
            of a gather (faster on TPUs, identical result).
          scope: optional variable scope name; "bert" by default.
          compute_dtype: the dtype the Transformer layers compute in: None or
            tf.float32 (the original arithmetic, the default), tf.bfloat16 or
            tf.float16 (mixed precision). The variables stay float32 (the
            master weights, saved under their usual names) and are cast where
            they are used; LayerNorm statistics, the attention softmax and
            every output of the model (sequence, pooled, all layers,
            embedding output) are float32, so task heads and losses built on
            them stay float32.
          pooled_output_only: build only what get_pooled_output reads: the
            last layer is computed at the first ([CLS]) position alone, its
            keys and values still from every position: the same pooled
            output to float32 round-off, for 14% less matmul work in a
            6-layer model (7% in a 12-layer one). The last layer
            (get_sequence_output and the last of get_all_encoder_layers) is
            then [batch_size, 1, hidden_size]. For graphs that read nothing
            else, such as a sentence classifier's evaluation and prediction.

          position_ids, instance_ids, cls_positions: optional int32 Tensors
            packing several instances into each row, each as if alone (None:
            without them). The first two [batch_size, seq_length]: each token's
            position in its instance, and its instance (it attends only within
            it); cls_positions [batch_size, n]: each instance's [CLS], for the
            pooler: get_pooled_output is then [batch_size * n, hidden_size].
          dropout_keys: optional DropoutKeys of the batch's examples: every
            dropout of the model then keys its masks by example, the same in
            any batch and at any cut length. Only read in training.

        Raises:
          ValueError: the config is inconsistent (hidden_size not divisible by
            num_attention_heads, a static seq_length above
            max_position_embeddings), input_ids is not rank 2 or
            compute_dtype is not one of those above, or cls_positions comes
            with pooled_output_only.
        """
        compute_dtype = _checked_compute_dtype(compute_dtype)
        if cls_positions is not None and pooled_output_only:
            raise ValueError("cls_positions needs every position: not with pooled_output_only")
        config = copy.deepcopy(config)
        if not is_training:
            config.hidden_dropout_prob = 0.0
            config.attention_probs_dropout_prob = 0.0

        assert_rank(input_ids, 2)
        if input_mask is None:
            input_mask = tf.ones_like(input_ids, dtype=tf.int32)
        if token_type_ids is None:
            token_type_ids = tf.zeros_like(input_ids, dtype=tf.int32)

        with tf.compat.v1.variable_scope(scope, default_name="bert"):
            with tf.compat.v1.variable_scope("embeddings"):
                embedding_args = (input_ids, token_type_ids, use_one_hot_embeddings, position_ids)
                self._build_embeddings(config, *embedding_args, dropout_keys)

            with tf.compat.v1.variable_scope("encoder"):
                inputs = (config, input_ids, input_mask, compute_dtype, pooled_output_only)
                self._build_encoder(*inputs, instance_ids, is_training, dropout_keys)
            self.sequence_output = self.all_encoder_layers[-1]

            # The pooler summarizes the sequence for sentence-level tasks: a
            # tanh dense layer over the hidden state of the first ([CLS]) token.
            with tf.compat.v1.variable_scope("pooler"):
                first_token_tensor = _first_tokens(self.sequence_output, cls_positions)
                self.pooled_output = dense(
                    first_token_tensor,
                    config.hidden_size,
                    activation=tf.tanh,
                    kernel_initializer=create_initializer(config.initializer_range),
                )

    def _build_encoder(
        self,
        config,
        input_ids,
        input_mask,
        compute_dtype,
        pooled_output_only,
        instance_ids=None,
        training=True,
        dropout_keys=None,
    ):
        """The Transformer layers over the embedding output, as float32 outputs."""
        attention_mask = create_attention_mask_from_input_mask(input_ids, input_mask)
        if instance_ids is not None:
            # Block-diagonal: a token attends only within its own instance.
            same_instance = tf.equal(instance_ids[:, :, None], instance_ids[:, None, :])
            attention_mask *= tf.cast(same_instance, attention_mask.dtype)
        self.all_encoder_layers = transformer_model(
            input_tensor=self.embedding_output,
            attention_mask=attention_mask,
            hidden_size=config.hidden_size,
            num_hidden_layers=config.num_hidden_layers,
            num_attention_heads=config.num_attention_heads,
            intermediate_size=config.intermediate_size,
            intermediate_act_fn=get_activation(config.hidden_act),
            hidden_dropout_prob=config.hidden_dropout_prob,
            attention_probs_dropout_prob=config.attention_probs_dropout_prob,
            initializer_range=config.initializer_range,
            do_return_all_layers=True,
            last_layer_first_token_only=pooled_output_only,
            compute_dtype=compute_dtype,
            training=training,
            dropout_keys=dropout_keys,
        )

    def _build_embeddings(
        self,
        config,
        input_ids,
        token_type_ids,
        use_one_hot_embeddings,
        position_ids=None,
        dropout_keys=None,
    ):
        """Word, token-type and position embeddings, LayerNorm and dropout."""
        self.embedding_output, self.embedding_table = embedding_lookup(
            input_ids=input_ids,
            vocab_size=config.vocab_size,
            embedding_size=config.hidden_size,
            initializer_range=config.initializer_range,
            word_embedding_name="word_embeddings",
            use_one_hot_embeddings=use_one_hot_embeddings,
        )
        self.embedding_output = embedding_postprocessor(
            input_tensor=self.embedding_output,
            use_token_type=True,
            token_type_ids=token_type_ids,
            token_type_vocab_size=config.type_vocab_size,
            token_type_embedding_name="token_type_embeddings",
            use_position_embeddings=True,
            position_embedding_name="position_embeddings",
            initializer_range=config.initializer_range,
            max_position_embeddings=config.max_position_embeddings,
            dropout_prob=config.hidden_dropout_prob,
            position_ids=position_ids,
            dropout_keys=dropout_keys,
        )

    def get_pooled_output(self):
        """float Tensor [batch_size, hidden_size]: the pooler output ([batch_size *
        num_instances, hidden_size] with cls_positions)."""
        return self.pooled_output

    def get_sequence_output(self):
        """float Tensor [batch_size, seq_length, hidden_size]: the last layer."""
        return self.sequence_output

    def get_all_encoder_layers(self):
        """List of num_hidden_layers float Tensors [batch_size, seq_length, hidden_size]."""
        return self.all_encoder_layers

    def get_embedding_output(self):
        """float Tensor [batch_size, seq_length, hidden_size]: the encoder input.

        Word + token type + position embeddings, layer-normalized, after
        dropout.
        """
        return self.embedding_output

    def get_embedding_table(self):
        """The word embedding variable [vocab_size, hidden_size]."""
        return self.embedding_table


def _first_tokens(sequence_output, cls_positions=None):
    """[batch_size, hidden_size] at each row's first position, or [batch_size * n,
    hidden_size] at cls_positions [batch_size, n] (row b * n + i at cls_positions[b, i])."""
    if cls_positions is None:
        return sequence_output[:, 0, :]
    gathered = tf.gather(sequence_output, cls_positions, batch_dims=1)
    return tf.reshape(gathered, [-1, sequence_output.shape[-1]])


# ---------------------------------------------------------------------------
# Activations


def gelu(x):
    """GELU, tanh approximation: 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))).

    The original's ops, in its order (a 16-bit graph of inference uses
    `_fused_inference_activation` instead).
    """
    cdf = 0.5 * (1.0 + tf.tanh(GELU_TANH_SCALE * (x + GELU_CUBIC_COEFF * tf.pow(x, 3))))
    return x * cdf


def gelu_erf(x):
    """GELU, exact: 0.5*x*(1 + erf(x/sqrt(2))).

    Not what "gelu" means here (that stays the tanh approximation, as in
    every existing bert_config.json); models trained with the exact form,
    such as most Hugging Face BERTs, name it "gelu_erf" so that they compute
    what they were trained to.
    """
    return 0.5 * x * (1.0 + tf.math.erf(x * GELU_ERF_SCALE))


def _fused_inference_activation(activation, dtype):
    """The activation a dense layer of a 16-bit graph of inference applies.

    `gelu` and `gelu_erf` become tf.nn.gelu's ops: the same function, in
    the op pattern TensorFlow's oneDNN remapper fuses into the preceding
    MatMul+BiasAdd (one kernel instead of eight elementwise ops per layer).
    Training graphs and float32 keep the original's ops, and so their numbers.
    """
    if dtype not in MIXED_PRECISION_DTYPES:
        return activation
    if activation is gelu:
        return functools.partial(tf.nn.gelu, approximate=True)
    if activation is gelu_erf:
        return functools.partial(tf.nn.gelu, approximate=False)
    return activation


def get_activation(activation_string):
    """Maps an activation name to a function.

    Returns:
      None for None, "" and "linear"; `tf.nn.relu`, `gelu`, `gelu_erf` or
      `tf.tanh` for "relu", "gelu", "gelu_erf", "tanh" (any case). Anything
      that is not a string (for example a callable) is returned unchanged.

    Raises:
      ValueError: an unknown name.
    """
    if not isinstance(activation_string, six.string_types):
        return activation_string
    if not activation_string:
        return None

    act = activation_string.lower()
    if act == "linear":
        return None
    if act == "relu":
        return tf.nn.relu
    if act == "gelu":
        return gelu
    if act == "gelu_erf":
        return gelu_erf
    if act == "tanh":
        return tf.tanh
    raise ValueError(f"Unsupported activation: {act}")


# ---------------------------------------------------------------------------
# Layers built from get_variable, so variable names are ours to choose


def create_initializer(initializer_range=0.02):
    """Truncated normal initializer with stddev `initializer_range`."""
    return tf.compat.v1.truncated_normal_initializer(stddev=initializer_range)


def dense(input_tensor, units, activation=None, kernel_initializer=None, name=None, training=True):
    """Fully connected layer: activation(input @ kernel + bias).

    Creates `<scope>/kernel` [in, units] and `<scope>/bias` [units] (zeros),
    where the scope is `name`, or "dense" (uniquified) when name is None - the
    names tf.compat.v1.layers.dense would give.

    Args:
      input_tensor: float Tensor of rank >= 2 with a static last dimension.
      units: output width.
      activation: optional callable applied last.
      kernel_initializer: defaults to `create_initializer()`.
      name: optional variable scope name.
      training: whether gradients may be taken. In bfloat16 the bias add
        then sums its bias gradient in float32 (`_bias_add_summed_in_float32`);
        False builds a plain BiasAdd, the graph of an inference: the custom
        gradient's IdentityN wrapper reads the MatMul's output and so keeps
        TensorFlow's CPU remapper from fusing MatMul, BiasAdd and activation.
        float16 on a machine without a GPU adds its bias in float32 either
        way (`_float16_bias_add`).

    Returns:
      Tensor of the input's shape with the last dimension replaced by units, in
      the input's dtype (the float32 variables are cast to it).
    """
    if kernel_initializer is None:
        kernel_initializer = create_initializer()
    input_width = input_tensor.shape.as_list()[-1]
    if input_width is None:
        raise ValueError(
            f"dense needs a static last dimension, got shape {input_tensor.shape} "
            f"for {input_tensor.name}"
        )
    with tf.compat.v1.variable_scope(name, default_name="dense"):
        kernel = tf.compat.v1.get_variable(
            "kernel", shape=[input_width, units], initializer=kernel_initializer
        )
        bias = tf.compat.v1.get_variable(
            "bias", shape=[units], initializer=tf.compat.v1.zeros_initializer()
        )
        input_2d = reshape_to_matrix(input_tensor)
        output = tf.matmul(input_2d, tf.cast(kernel, input_2d.dtype))
        if output.dtype == tf.float32:
            output = tf.nn.bias_add(output, bias)
        elif output.dtype == tf.float16 and _float16_bias_added_in_float32():
            output = _float16_bias_add(output, bias)
        elif not training:
            output = tf.nn.bias_add(output, tf.cast(bias, output.dtype))
            activation = _fused_inference_activation(activation, output.dtype)
        else:
            output = _bias_add_summed_in_float32(output, tf.cast(bias, output.dtype))
        if activation is not None:
            output = activation(output)
        if input_tensor.shape.ndims > 2:
            output = reshape_from_matrix(output, get_shape_list(input_tensor))
    return output


def _float16_bias_added_in_float32():
    """Whether float16 dense layers add their bias with `_float16_bias_add`: where no GPU
    is visible as the graph is built. A GPU runs the float16 BiasAdd (fused or not) at
    its speed, and the two Casts would cost it memory traffic of the size of the bias
    add's, twice."""
    return not tf.config.list_physical_devices("GPU")


def _float16_bias_add(matrix, bias):
    """A float16 [rows, units] matmul output plus its float32 bias, added in float32.

    TensorFlow's CPU remapper fuses a float16 MatMul with the BiasAdd (or Add)
    that reads it into one oneDNN kernel, and that fused float16 kernel is
    slow: a MiniLM training step at batch 32 x 64 took 6 minutes instead of
    1.4 s, 99% of it in those kernels (the MatMul alone runs at float32's
    speed). A Cast between them is no pattern the remapper fuses. The sum is
    float16's up to one rounding: the float16 product plus the bias, rounded
    to float16 once; and its gradient, BiasAdd's own, sums the rows in
    float32 as `_bias_add_summed_in_float32` does for bfloat16.
    """
    return tf.cast(tf.nn.bias_add(tf.cast(matrix, tf.float32), bias), tf.float16)


@tf.custom_gradient
def _bias_add_summed_in_float32(matrix, bias):
    """A 16-bit [rows, units] matrix plus a bias of its dtype.

    The bias's gradient, the sum of the output's gradient over the rows, is
    taken in float32. TensorFlow's own gradient of BiasAdd (BiasAddGrad)
    sums a bfloat16 gradient in bfloat16: once the sum outgrows the terms
    it stops growing (4,096 ones sum to 256), and real bias gradients came
    out 4-9% off float32's and 1-2% short, where every other kind of
    weight's is about 1% off and not short.
    """
    output = tf.nn.bias_add(matrix, bias)

    def gradient(output_gradient):
        bias_gradient = tf.reduce_sum(tf.cast(output_gradient, tf.float32), axis=0)
        return output_gradient, tf.cast(bias_gradient, bias.dtype)

    return output, gradient


def layer_norm(input_tensor, name=None):
    """Layer normalization over the last axis, epsilon 1e-12.

    Creates `<scope>/beta` (zeros) and `<scope>/gamma` (ones) of the last
    dimension's size; the scope is `name`, or "LayerNorm" (uniquified).
    Statistics are taken in float32 and the result has the input's dtype.
    The arithmetic is that of tf.nn.moments + tf.nn.batch_normalization, so
    results agree with the original to the last bit.
    """
    width = input_tensor.shape.as_list()[-1]
    if width is None:
        raise ValueError(
            f"layer_norm needs a static last dimension, got shape {input_tensor.shape} "
            f"for {input_tensor.name}"
        )
    with tf.compat.v1.variable_scope(name, default_name="LayerNorm"):
        beta = tf.compat.v1.get_variable(
            "beta", shape=[width], initializer=tf.compat.v1.zeros_initializer()
        )
        gamma = tf.compat.v1.get_variable(
            "gamma", shape=[width], initializer=tf.compat.v1.ones_initializer()
        )
        x = tf.cast(input_tensor, tf.float32)
        mean = tf.reduce_mean(x, axis=-1, keepdims=True)
        variance = tf.reduce_mean(
            tf.math.squared_difference(x, tf.stop_gradient(mean)), axis=-1, keepdims=True
        )
        # (x - mean) / sqrt(variance + eps) * gamma + beta, factored so that
        # only one multiply and one add touch the full-size tensor.
        scale = tf.math.rsqrt(variance + LAYER_NORM_EPSILON) * gamma
        output = x * scale + (beta - mean * scale)
    return tf.cast(output, input_tensor.dtype)


def dropout(input_tensor, dropout_prob, keys=None, site="dropout"):
    """Drops each value with probability `dropout_prob` (not a keep probability).

    Returns the input unchanged when dropout_prob is None or 0. With `keys`
    (a DropoutKeys) the masks are keyed by example at `site`, a name unique
    in the current variable scope; without, tf.nn.dropout draws them.
    """
    if dropout_prob is None or dropout_prob == 0.0:
        return input_tensor
    if keys is not None:
        return keys.dropout(input_tensor, dropout_prob, site)
    return tf.nn.dropout(input_tensor, rate=dropout_prob)


def layer_norm_and_dropout(input_tensor, dropout_prob, name=None, keys=None):
    """`layer_norm` followed by `dropout` (keyed by example with `keys`)."""
    output_tensor = layer_norm(input_tensor, name)
    return dropout(output_tensor, dropout_prob, keys)


# Constants of the 32-bit integer hash of DropoutKeys ("lowbias32": two
# multiply-xorshift rounds; each round is a bijection of the 32-bit integers).
_HASH_MULTIPLIERS = (0x7FEB352D, 0x846CA68B)
_HASH_SHIFTS = (16, 15, 16)
# Odd, about 2**32 / golden ratio: spreads consecutive row numbers over the integers.
_ROW_SPREAD = 0x9E3779B9
# Row numbers of a tensor with two middle axes (attention: head, query
# position) are head * _ROW_STRIDE + position; positions stay below it.
_ROW_STRIDE = 1 << 16


def _hash32(value):
    """The 32-bit hash of a uint32 Tensor, elementwise (wrapping arithmetic)."""
    first, second = (tf.constant(m, tf.uint32) for m in _HASH_MULTIPLIERS)
    value = tf.bitwise.bitwise_xor(value, tf.bitwise.right_shift(value, _HASH_SHIFTS[0]))
    value *= first
    value = tf.bitwise.bitwise_xor(value, tf.bitwise.right_shift(value, _HASH_SHIFTS[1]))
    value *= second
    return tf.bitwise.bitwise_xor(value, tf.bitwise.right_shift(value, _HASH_SHIFTS[2]))


def _hash32_int(value):
    """_hash32 of one Python integer (its low 32 bits)."""
    value &= 0xFFFFFFFF
    for shift, multiplier in zip(_HASH_SHIFTS, _HASH_MULTIPLIERS + (None,)):
        value ^= value >> shift
        if multiplier is not None:
            value = (value * multiplier) & 0xFFFFFFFF
    return value


class DropoutKeys:
    """Dropout whose masks are keyed by example, not drawn in turn for a batch.

    tf.nn.dropout draws a batch's masks in one go for its whole shape, so an
    example gets other masks in a batch of another size, another cut length
    or another place in the run. Here a value is kept or dropped by a hash of
    (the seed, the dropout's site, the example's key, the value's coordinates
    within its example: position, feature, attention head). An example then
    draws the same masks wherever it is computed: in a batch of 32 cut to
    its longest, or sorted into a micro-batch of 8 cut to its own
    (--group_by_length), whose accumulated update is then the unsorted
    batch's to float32 round-off, dropout included; and at [CLS] only (the
    last layer of a classifier) the masks of the full layer's first position.

    Keys are the examples' numbers in the training input (dynamic_padding
    numbers them), unique within a run; the low 32 bits are used. The hash is
    a 32-bit integer hash, not a cryptographic generator: about one pair of
    rows in 2**31 / width (5.6 million at width 384) shares its values,
    shifted by a few columns.
    """

    def __init__(self, example_keys, seed=None):
        """example_keys: integer Tensor [batch]; seed: an integer, by default the
        graph-level seed (tf.compat.v1.set_random_seed), or a random one without."""
        if seed is None:
            seed = tf.compat.v1.get_default_graph().seed
        if seed is None:
            seed = random.getrandbits(64)
        self.example_keys = tf.cast(example_keys, tf.uint32)
        self.seed = _hash32_int(_hash32_int(seed) ^ (seed >> 32))

    def mask(self, shape, dropout_prob, site):
        """Boolean Tensor of `shape` ([batch, rows..., features], at most two row
        axes), True where a value is kept at `site` (a name in the current
        variable scope)."""
        name = f"{tf.compat.v1.get_variable_scope().name}/{site}"
        site_key = _hash32_int(zlib.crc32(name.encode("utf-8")) ^ self.seed)
        per_example = _hash32(
            tf.bitwise.bitwise_xor(self.example_keys, tf.constant(site_key, tf.uint32))
        )
        row_sizes = [shape[i] for i in range(1, len(shape) - 1)]
        if len(row_sizes) not in (1, 2):
            raise ValueError(f"DropoutKeys masks [batch, rows..., width], not rank {len(shape)}")
        rows = tf.range(row_sizes[-1])
        if len(row_sizes) == 2:
            rows = tf.range(row_sizes[0])[:, None] * _ROW_STRIDE + rows[None, :]
        rows = tf.cast(rows, tf.uint32) * tf.constant(_ROW_SPREAD, tf.uint32)
        per_example = tf.reshape(per_example, [-1] + [1] * len(row_sizes))
        per_row = _hash32(per_example + rows[None])
        features = tf.cast(tf.range(shape[-1]), tf.uint32)
        values = _hash32(per_row[..., None] + features)
        threshold = min(int(round(dropout_prob * 2.0**32)), 0xFFFFFFFF)
        return values >= tf.constant(threshold, tf.uint32)

    def dropout(self, input_tensor, dropout_prob, site):
        """`input_tensor` with each value dropped by `mask` and the rest scaled by
        1 / (1 - dropout_prob). Its first axis is the batch, or, for a
        [batch * seq_length, width] matrix, its rows are the batch's positions."""
        shape = get_shape_list(input_tensor)
        batch_size = tf.shape(self.example_keys)[0]
        keyed = input_tensor
        if len(shape) == 2:
            keyed = tf.reshape(input_tensor, [batch_size, -1, shape[-1]])
        keep = self.mask(get_shape_list(keyed), dropout_prob, site)
        scale = tf.constant(1.0 / (1.0 - dropout_prob), keyed.dtype)
        dropped = tf.where(keep, keyed * scale, tf.zeros([], keyed.dtype))
        return tf.reshape(dropped, tf.shape(input_tensor)) if len(shape) == 2 else dropped


# ---------------------------------------------------------------------------
# Embeddings


def embedding_lookup(
    input_ids,
    vocab_size,
    embedding_size=128,
    initializer_range=0.02,
    word_embedding_name="word_embeddings",
    use_one_hot_embeddings=False,
):
    """Looks word ids up in a new embedding table.

    Args:
      input_ids: int32 Tensor [batch_size, seq_length] (or [batch_size,
        seq_length, num_inputs], whose embeddings are concatenated).
      vocab_size: rows of the table.
      embedding_size: width of the table.
      initializer_range: stddev of the table's initializer.
      word_embedding_name: variable name of the table.
      use_one_hot_embeddings: one-hot matmul instead of gather.

    Returns:
      (float Tensor [batch_size, seq_length, num_inputs * embedding_size], the
      table variable [vocab_size, embedding_size]).
    """
    if input_ids.shape.ndims == 2:
        input_ids = tf.expand_dims(input_ids, axis=-1)

    embedding_table = tf.compat.v1.get_variable(
        name=word_embedding_name,
        shape=[vocab_size, embedding_size],
        initializer=create_initializer(initializer_range),
    )

    flat_input_ids = tf.reshape(input_ids, [-1])
    if use_one_hot_embeddings:
        one_hot_input_ids = tf.one_hot(flat_input_ids, depth=vocab_size)
        output = tf.matmul(one_hot_input_ids, embedding_table)
    else:
        output = tf.gather(embedding_table, flat_input_ids)

    input_shape = get_shape_list(input_ids)
    output = tf.reshape(output, input_shape[0:-1] + [input_shape[-1] * embedding_size])
    return output, embedding_table


def embedding_postprocessor(
    input_tensor,
    use_token_type=False,
    token_type_ids=None,
    token_type_vocab_size=16,
    token_type_embedding_name="token_type_embeddings",
    use_position_embeddings=True,
    position_embedding_name="position_embeddings",
    initializer_range=0.02,
    max_position_embeddings=512,
    dropout_prob=0.1,
    position_ids=None,
    dropout_keys=None,
):
    """Adds token type and position embeddings, then layer norm and dropout.

    Token type ids are embedded by a one-hot matmul (the table is tiny).
    Position i gets row i of a [max_position_embeddings, width] table.

    Args:
      input_tensor: float Tensor [batch_size, seq_length, width].
      use_token_type: add embeddings of `token_type_ids`.
      token_type_ids: int32 Tensor [batch_size, seq_length]; required if
        use_token_type.
      token_type_vocab_size: rows of the token type table.
      token_type_embedding_name: variable name of the token type table.
      use_position_embeddings: add position embeddings.
      position_embedding_name: variable name of the position table.
      initializer_range: stddev of the tables' initializer.
      max_position_embeddings: rows of the position table; at least seq_length.
      dropout_prob: dropout applied to the result.
      position_ids: optional int32 Tensor [batch_size, seq_length], the row
        of the position table each token gets (packed instances restart
        at 0); 0..seq_length-1 if omitted.
      dropout_keys: optional DropoutKeys of the batch's examples (see BertModel).

    Returns:
      float Tensor of the input's shape.

    Raises:
      ValueError: input not rank 3, use_token_type without token_type_ids, or a
        static seq_length above max_position_embeddings (a dynamic one fails
        an assertion when run).
    """
    assert_rank(input_tensor, 3)
    seq_length = _dimension(input_tensor, 1)
    width = _dimension(input_tensor, 2)

    output = input_tensor

    if use_token_type:
        if token_type_ids is None:
            raise ValueError("`token_type_ids` must be specified if `use_token_type` is True.")
        token_type_table = tf.compat.v1.get_variable(
            name=token_type_embedding_name,
            shape=[token_type_vocab_size, width],
            initializer=create_initializer(initializer_range),
        )
        flat_token_type_ids = tf.reshape(token_type_ids, [-1])
        one_hot_ids = tf.one_hot(flat_token_type_ids, depth=token_type_vocab_size)
        token_type_embeddings = tf.matmul(one_hot_ids, token_type_table)
        output += tf.reshape(token_type_embeddings, [-1, seq_length, width])

    if use_position_embeddings:
        if isinstance(seq_length, int) and seq_length > max_position_embeddings:
            raise ValueError(
                f"The sequence length ({seq_length}) is longer than "
                f"max_position_embeddings ({max_position_embeddings})"
            )
        full_position_embeddings = tf.compat.v1.get_variable(
            name=position_embedding_name,
            shape=[max_position_embeddings, width],
            initializer=create_initializer(initializer_range),
        )
        dependencies = []
        if not isinstance(seq_length, int):
            dependencies.append(
                tf.debugging.Assert(
                    seq_length <= max_position_embeddings,
                    [
                        tf.constant("The sequence length is longer than max_position_embeddings:"),
                        seq_length,
                        tf.constant(max_position_embeddings),
                    ],
                )
            )
        with tf.control_dependencies(dependencies):
            # The table covers the longest sequence the model may ever see;
            # this batch uses its first seq_length rows, broadcast over batch.
            position_embeddings = tf.slice(full_position_embeddings, [0, 0], [seq_length, -1])
        if position_ids is None:
            output += tf.expand_dims(position_embeddings, axis=0)
        else:
            output += tf.gather(full_position_embeddings, position_ids)

    return layer_norm_and_dropout(output, dropout_prob, keys=dropout_keys)


# ---------------------------------------------------------------------------
# Attention and the Transformer


def create_attention_mask_from_input_mask(from_tensor, to_mask):
    """Expands a 2D padding mask into a 3D attention mask.

    Args:
      from_tensor: Tensor [batch_size, from_seq_length, ...] (rank 2 or 3);
        only its shape is used.
      to_mask: int32 Tensor [batch_size, to_seq_length], 1 = attend.

    Returns:
      float32 Tensor [batch_size, from_seq_length, to_seq_length] with
      mask[b, i, j] = to_mask[b, j].
    """
    assert_rank(from_tensor, [2, 3])
    assert_rank(to_mask, 2)
    batch_size = _dimension(from_tensor, 0)
    from_seq_length = _dimension(from_tensor, 1)
    to_seq_length = _dimension(to_mask, 1)

    to_mask = tf.cast(tf.reshape(to_mask, [batch_size, 1, to_seq_length]), tf.float32)
    # Padding only matters on the attended-to side, so every "from" row
    # gets the same mask.
    broadcast_ones = tf.ones(shape=[batch_size, from_seq_length, 1], dtype=tf.float32)
    return broadcast_ones * to_mask


def _attention_sizes(from_tensor, to_tensor, batch_size, from_seq_length, to_seq_length):
    """(batch_size, from_seq_length, to_seq_length) of attention_layer's inputs: read from
    rank-3 tensors, as given for rank-2 ones (which must come with all three)."""
    assert_rank(from_tensor, [2, 3])
    assert_rank(to_tensor, [2, 3])
    if from_tensor.shape.ndims != to_tensor.shape.ndims:
        raise ValueError("The rank of `from_tensor` must match the rank of `to_tensor`.")

    if from_tensor.shape.ndims == 3:
        return _dimension(from_tensor, 0), _dimension(from_tensor, 1), _dimension(to_tensor, 1)
    if batch_size is None or from_seq_length is None or to_seq_length is None:
        raise ValueError(
            "When passing in rank 2 tensors to attention_layer, the values "
            "for `batch_size`, `from_seq_length`, and `to_seq_length` "
            "must all be specified."
        )
    return batch_size, from_seq_length, to_seq_length


def attention_layer(
    from_tensor,
    to_tensor,
    attention_mask=None,
    num_attention_heads=1,
    size_per_head=512,
    query_act=None,
    key_act=None,
    value_act=None,
    attention_probs_dropout_prob=0.0,
    initializer_range=0.02,
    do_return_2d_tensor=False,
    batch_size=None,
    from_seq_length=None,
    to_seq_length=None,
    training=True,
    dropout_keys=None,
):
    """Multi-headed scaled dot-product attention from `from_tensor` to `to_tensor`.

    Projects from_tensor to queries and to_tensor to keys and values (dense
    layers "query", "key", "value" in the current scope), splits them into
    heads, and for each head computes softmax(Q K^T / sqrt(size_per_head) +
    (1 - mask) * -10000) V. Heads are batched into one matmul each way.

    Shapes: B = batch size, F = from length, T = to length, N = heads,
    H = size_per_head.

    Args:
      from_tensor: float Tensor [B, F, from_width], or [B*F, from_width] with
        batch_size and from_seq_length given.
      to_tensor: float Tensor [B, T, to_width], or [B*T, to_width] with
        batch_size and to_seq_length given.
      attention_mask: optional Tensor [B, F, T], 1 = may attend, 0 = may not.
      num_attention_heads: N.
      size_per_head: H.
      query_act, key_act, value_act: optional activations of the projections.
      attention_probs_dropout_prob: dropout on the attention probabilities.
      initializer_range: stddev of the projection kernels' initializer.
      do_return_2d_tensor: return [B*F, N*H] instead of [B, F, N*H].
      batch_size, from_seq_length, to_seq_length: needed for rank-2 inputs.
      training: False for a graph of inference (see `dense`).
      dropout_keys: optional DropoutKeys of the B examples (see BertModel);
        its masks take the query position from the first (with F 1, the
        [CLS] row of a full-length layer).

    Returns:
      float Tensor [B, F, N*H], or [B*F, N*H] if do_return_2d_tensor.

    Raises:
      ValueError: from_tensor and to_tensor differ in rank, or rank-2 inputs
        come without the three sizes.
    """
    batch_size, from_seq_length, to_seq_length = _attention_sizes(
        from_tensor, to_tensor, batch_size, from_seq_length, to_seq_length
    )

    def split_heads(tensor_2d, seq_length):
        """[B*S, N*H] -> [B, N, S, H]."""
        tensor_4d = tf.reshape(
            tensor_2d, [batch_size, seq_length, num_attention_heads, size_per_head]
        )
        return tf.transpose(tensor_4d, [0, 2, 1, 3])

    from_tensor_2d = reshape_to_matrix(from_tensor)
    to_tensor_2d = reshape_to_matrix(to_tensor)
    width = num_attention_heads * size_per_head
    # The three projections: dense layers of one width, initializer and mode.
    project = functools.partial(
        dense,
        units=width,
        kernel_initializer=create_initializer(initializer_range),
        training=training,
    )
    query_layer = project(from_tensor_2d, activation=query_act, name="query")
    key_layer = project(to_tensor_2d, activation=key_act, name="key")
    value_layer = project(to_tensor_2d, activation=value_act, name="value")

    query_layer = split_heads(query_layer, from_seq_length)  # [B, N, F, H]
    key_layer = split_heads(key_layer, to_seq_length)  # [B, N, T, H]
    value_layer = split_heads(value_layer, to_seq_length)  # [B, N, T, H]

    context_layer = _scaled_dot_product_attention(
        query_layer,
        key_layer,
        value_layer,
        attention_mask,
        size_per_head,
        attention_probs_dropout_prob,
        dropout_keys,
    )
    context_layer = tf.transpose(context_layer, [0, 2, 1, 3])  # [B, F, N, H]

    if do_return_2d_tensor:
        return tf.reshape(context_layer, [batch_size * from_seq_length, width])
    return tf.reshape(context_layer, [batch_size, from_seq_length, width])


def _scaled_dot_product_attention(
    query_layer, key_layer, value_layer, attention_mask, size_per_head, dropout_prob, keys=None
):
    """softmax(Q K^T / sqrt(H) + (1 - mask) * -10000) V, per head: [B, N, F, H].

    Q [B, N, F, H], K and V [B, N, T, H], attention_mask [B, F, T] or None.
    """
    # Scores [B, N, F, T]; scaled so their variance does not grow with H.
    attention_scores = tf.matmul(query_layer, key_layer, transpose_b=True)
    attention_scores = tf.multiply(attention_scores, 1.0 / math.sqrt(float(size_per_head)))
    if attention_scores.dtype in (tf.bfloat16, tf.float16):
        attention_scores = tf.cast(attention_scores, tf.float32)

    if attention_mask is not None:
        # [B, 1, F, T], broadcast over heads: 0 where attending is allowed,
        # -10000 where not, so those positions vanish in the softmax.
        attention_mask = tf.expand_dims(attention_mask, axis=1)
        adder = (1.0 - tf.cast(attention_mask, attention_scores.dtype)) * ATTENTION_MASK_ADDER
        attention_scores += adder

    # The softmax and its dropout are taken in float32 whatever the compute
    # dtype: dropping whole attended-to positions, as in the Transformer paper.
    attention_probs = tf.nn.softmax(attention_scores)
    attention_probs = dropout(attention_probs, dropout_prob, keys, site="attention_probs")
    return tf.matmul(tf.cast(attention_probs, value_layer.dtype), value_layer)


def transformer_model(
    input_tensor,
    attention_mask=None,
    hidden_size=768,
    num_hidden_layers=12,
    num_attention_heads=12,
    intermediate_size=3072,
    intermediate_act_fn=gelu,
    hidden_dropout_prob=0.1,
    attention_probs_dropout_prob=0.1,
    initializer_range=0.02,
    do_return_all_layers=False,
    last_layer_first_token_only=False,
    compute_dtype=None,
    training=True,
    dropout_keys=None,
):
    """The Transformer encoder stack ("Attention is All You Need", post-norm).

    Each layer `layer_L`:
      attention = LayerNorm(dropout(dense(self_attention(x))) + x)
      output = LayerNorm(dropout(dense(act(dense(attention)))) + attention)

    In a 16-bit compute dtype the matmuls, bias adds and activation run in
    16 bits; the softmax, every dropout, the residual sums and LayerNorm in
    float32, and the hidden states go from layer to layer in float32 (16-bit
    dropout kept too many values and scaled them by a rounded 1/0.9).

    Args:
      input_tensor: float Tensor [batch_size, seq_length, hidden_size].
      attention_mask: optional Tensor [batch_size, seq_length, seq_length],
        1 = may attend.
      hidden_size: width of every layer; must equal the input width.
      num_hidden_layers: number of layers.
      num_attention_heads: heads per layer; must divide hidden_size.
      intermediate_size: width of the feed-forward layer.
      intermediate_act_fn: activation of the feed-forward layer.
      hidden_dropout_prob: dropout after each dense output.
      attention_probs_dropout_prob: dropout on attention probabilities.
      initializer_range: stddev of the weight initializer.
      do_return_all_layers: return every layer's output instead of the last.
      last_layer_first_token_only: compute the last layer's output at the
        first position only (attending to every position): [batch_size, 1,
        hidden_size], all a pooler over the first token needs.
      compute_dtype: the dtype of the matmuls: tf.bfloat16 or tf.float16 for
        mixed precision; None (the default) computes in the input's dtype.
      training: False for a graph of inference (see `dense`).
      dropout_keys: optional DropoutKeys of the batch's examples (see BertModel).

    Returns:
      float Tensor [batch_size, seq_length, hidden_size] (the last layer), or
      a list of num_hidden_layers of them (with last_layer_first_token_only,
      the last layer's seq_length is 1); float32 when computing in 16 bits.

    Raises:
      ValueError: hidden_size not a multiple of num_attention_heads, or the
        input width differs from hidden_size.
    """
    input_shape, prev_output, compute_dtype = _encoder_input(
        input_tensor, hidden_size, num_attention_heads, compute_dtype
    )
    batch_size, seq_length, _ = input_shape
    all_layer_outputs = []
    for layer_idx in range(num_hidden_layers):
        first_token_only = last_layer_first_token_only and layer_idx == num_hidden_layers - 1
        with tf.compat.v1.variable_scope(f"layer_{layer_idx}"):
            prev_output = _transformer_layer(
                prev_output,
                attention_mask,
                hidden_size=hidden_size,
                num_attention_heads=num_attention_heads,
                intermediate_size=intermediate_size,
                intermediate_act_fn=intermediate_act_fn,
                hidden_dropout_prob=hidden_dropout_prob,
                attention_probs_dropout_prob=attention_probs_dropout_prob,
                initializer_range=initializer_range,
                batch_size=batch_size,
                seq_length=seq_length,
                first_token_only=first_token_only,
                compute_dtype=compute_dtype,
                training=training,
                dropout_keys=dropout_keys,
            )
            all_layer_outputs.append(prev_output)

    last_layer_shape = input_shape
    if last_layer_first_token_only:
        last_layer_shape = [batch_size, 1, hidden_size]
    if do_return_all_layers:
        shapes = [input_shape] * (num_hidden_layers - 1) + [last_layer_shape]
        return [
            reshape_from_matrix(output, shape) for output, shape in zip(all_layer_outputs, shapes)
        ]
    return reshape_from_matrix(prev_output, last_layer_shape)


def _encoder_input(input_tensor, hidden_size, num_attention_heads, compute_dtype):
    """(input shape, the input as the first layer reads it, the compute dtype) of
    transformer_model's arguments, which it checks.

    Layers work on [batch_size * seq_length, hidden_size] matrices, so there
    is no reshaping back and forth between them; in a 16-bit compute dtype
    that matrix is float32, the dtype of the hidden states between layers.
    """
    if hidden_size % num_attention_heads != 0:
        raise ValueError(
            f"The hidden size ({hidden_size}) is not a multiple of the number of "
            f"attention heads ({num_attention_heads})"
        )
    input_shape = get_shape_list(input_tensor, expected_rank=3)
    input_width = input_shape[2]
    # Residual connections need the input to be hidden_size wide already.
    if input_width != hidden_size:
        raise ValueError(
            f"The width of the input tensor ({input_width}) != hidden size ({hidden_size})"
        )
    compute_dtype = tf.as_dtype(compute_dtype or input_tensor.dtype)
    matrix = reshape_to_matrix(input_tensor)
    if compute_dtype in MIXED_PRECISION_DTYPES:
        matrix = tf.cast(matrix, tf.float32)
    return input_shape, matrix, compute_dtype


def _transformer_layer(
    layer_input,
    attention_mask,
    hidden_size,
    num_attention_heads,
    intermediate_size,
    intermediate_act_fn,
    hidden_dropout_prob,
    attention_probs_dropout_prob,
    initializer_range,
    batch_size,
    seq_length,
    first_token_only=False,
    compute_dtype=tf.float32,
    training=True,
    dropout_keys=None,
):
    """One layer of transformer_model on a [batch * seq, hidden] matrix (see there).

    With `first_token_only` the output is computed at each sequence's first
    position only ([batch, hidden]): its queries and residual come from that
    row, its keys and values from every row. `layer_input` is the residual
    stream (float32 when `compute_dtype` is 16-bit); the matmuls read it
    cast to `compute_dtype`.
    """
    initializer = create_initializer(initializer_range)
    matmul_input = tf.cast(layer_input, compute_dtype)
    from_rows, from_matmul_rows, from_seq_length = layer_input, matmul_input, seq_length
    if first_token_only:
        from_rows = tf.reshape(layer_input, [batch_size, seq_length, hidden_size])[:, 0, :]
        from_matmul_rows = tf.cast(from_rows, compute_dtype)
        from_seq_length = 1
        if attention_mask is not None:
            attention_mask = attention_mask[:, 0:1, :]
    with tf.compat.v1.variable_scope("attention"):
        with tf.compat.v1.variable_scope("self"):
            attention_output = attention_layer(
                from_tensor=from_matmul_rows,
                to_tensor=matmul_input,
                attention_mask=attention_mask,
                num_attention_heads=num_attention_heads,
                size_per_head=hidden_size // num_attention_heads,
                attention_probs_dropout_prob=attention_probs_dropout_prob,
                initializer_range=initializer_range,
                do_return_2d_tensor=True,
                batch_size=batch_size,
                from_seq_length=from_seq_length,
                to_seq_length=seq_length,
                training=training,
                dropout_keys=dropout_keys,
            )
        with tf.compat.v1.variable_scope("output"):
            attention_output = dense(
                attention_output, hidden_size, kernel_initializer=initializer, training=training
            )
            attention_output = _residual_sum(
                attention_output, from_rows, hidden_dropout_prob, dropout_keys
            )
            attention_output = layer_norm(attention_output)

    with tf.compat.v1.variable_scope("intermediate"):
        intermediate_output = dense(
            tf.cast(attention_output, compute_dtype),
            intermediate_size,
            activation=intermediate_act_fn,
            kernel_initializer=initializer,
            training=training,
        )

    with tf.compat.v1.variable_scope("output"):
        layer_output = dense(
            intermediate_output, hidden_size, kernel_initializer=initializer, training=training
        )
        layer_output = _residual_sum(
            layer_output, attention_output, hidden_dropout_prob, dropout_keys
        )
        return layer_norm(layer_output)


def _residual_sum(sublayer_output, residual, dropout_prob, dropout_keys=None):
    """dropout(sublayer_output) + residual, in the residual's dtype (mixed precision: float32)."""
    return dropout(tf.cast(sublayer_output, residual.dtype), dropout_prob, dropout_keys) + residual


# ---------------------------------------------------------------------------
# Shape helpers


def get_shape_list(tensor, expected_rank=None, name=None):
    """Returns the shape of `tensor` as a list, static dimensions preferred.

    Args:
      tensor: a graph Tensor.
      expected_rank: optional int or list of ints; checked with `assert_rank`.
      name: name for error messages; the tensor's name by default.

    Returns:
      A list with a Python int for each static dimension and a scalar int32
      Tensor for each dynamic one.

    Raises:
      ValueError: the rank is not an expected one.
    """
    if name is None:
        name = tensor.name
    if expected_rank is not None:
        assert_rank(tensor, expected_rank, name)

    shape = tensor.shape.as_list()
    dynamic_indexes = [index for index, dim in enumerate(shape) if dim is None]
    if not dynamic_indexes:
        return shape

    dynamic_shape = tf.shape(tensor)
    for index in dynamic_indexes:
        shape[index] = dynamic_shape[index]
    return shape


def _dimension(tensor, index):
    """One entry of `get_shape_list`, without building ops for the others."""
    size = tensor.shape.as_list()[index]
    if size is not None:
        return size
    return tf.shape(tensor)[index]


def reshape_to_matrix(input_tensor):
    """Folds all but the last dimension: [..., width] -> [-1, width].

    Raises:
      ValueError: the input has rank below 2.
    """
    ndims = input_tensor.shape.ndims
    if ndims < 2:
        raise ValueError(f"Input tensor must have at least rank 2. Shape = {input_tensor.shape}")
    if ndims == 2:
        return input_tensor
    width = input_tensor.shape.as_list()[-1]
    return tf.reshape(input_tensor, [-1, width])


def reshape_from_matrix(output_tensor, orig_shape_list):
    """Inverse of `reshape_to_matrix`: [N, width] -> orig_shape_list[:-1] + [width].

    `orig_shape_list` is a `get_shape_list` result; a rank-2 one means no
    reshape at all.
    """
    if len(orig_shape_list) == 2:
        return output_tensor
    width = _dimension(output_tensor, -1)
    return tf.reshape(output_tensor, list(orig_shape_list[0:-1]) + [width])


def assert_rank(tensor, expected_rank, name=None):
    """Checks the static rank of `tensor`.

    Args:
      tensor: a Tensor.
      expected_rank: int, or a list/tuple of accepted ints.
      name: name for the error message; the tensor's name by default.

    Raises:
      ValueError: the rank is not accepted (message names the tensor, the
        variable scope, the actual and the expected rank).
    """
    if name is None:
        name = tensor.name

    if isinstance(expected_rank, six.integer_types):
        accepted = {expected_rank}
    else:
        accepted = set(expected_rank)

    actual_rank = tensor.shape.ndims
    if actual_rank not in accepted:
        scope_name = tf.compat.v1.get_variable_scope().name
        raise ValueError(
            f"For the tensor `{name}` in scope `{scope_name}`, the actual rank "
            f"`{actual_rank}` (shape = {tensor.shape}) is not equal to the expected "
            f"rank `{expected_rank}`"
        )


# ---------------------------------------------------------------------------
# Checkpoints


def _strip_output_index(tensor_name):
    """Drops the output index of a tensor name: "a/kernel:0" -> "a/kernel"."""
    m = re.match(r"^(.*):\d+$", tensor_name)
    return m.group(1) if m is not None else tensor_name


def bert_variable_shapes(config):
    """{variable name: shape} of every variable BertModel and the pretraining heads make."""
    h, v = config.hidden_size, config.vocab_size
    i = config.intermediate_size
    shapes = {
        "bert/embeddings/word_embeddings": [v, h],
        "bert/embeddings/token_type_embeddings": [config.type_vocab_size, h],
        "bert/embeddings/position_embeddings": [config.max_position_embeddings, h],
        "bert/pooler/dense/kernel": [h, h],
        "bert/pooler/dense/bias": [h],
        "cls/predictions/transform/dense/kernel": [h, h],
        "cls/predictions/transform/dense/bias": [h],
        "cls/predictions/output_bias": [v],
        "cls/seq_relationship/output_weights": [2, h],
        "cls/seq_relationship/output_bias": [2],
    }
    dense = {
        "attention/output/dense": (h, h),
        "intermediate/dense": (h, i),
        "output/dense": (i, h),
    }
    dense.update({f"attention/self/{name}": (h, h) for name in ("query", "key", "value")})
    norms = ["bert/embeddings/LayerNorm", "cls/predictions/transform/LayerNorm"]
    for layer in range(config.num_hidden_layers):
        prefix = f"bert/encoder/layer_{layer}/"
        for name, (n_in, n_out) in dense.items():
            shapes[prefix + name + "/kernel"] = [n_in, n_out]
            shapes[prefix + name + "/bias"] = [n_out]
        norms += [prefix + "attention/output/LayerNorm", prefix + "output/LayerNorm"]
    for norm in norms:
        shapes[norm + "/beta"] = [h]
        shapes[norm + "/gamma"] = [h]
    return shapes


def _as_list(shape):
    return shape.as_list() if isinstance(shape, tf.TensorShape) else list(shape)


def find_shape_mismatches(expected, in_checkpoint):
    """[(name, model shape, checkpoint shape)] for names in both whose shapes do not fit.

    `expected` maps names to shape lists or tf.TensorShapes (a partly
    unknown TensorShape fits any shape it is compatible with);
    `in_checkpoint` maps names to shape lists, as `tf.train.list_variables`
    gives them.
    """
    found = []
    for name, shape in expected.items():
        if name not in in_checkpoint:
            continue
        saved = in_checkpoint[name]
        if isinstance(shape, tf.TensorShape):
            fits = shape.is_compatible_with(saved)
        else:
            fits = list(shape) == list(saved)
        if not fits:
            found.append((name, _as_list(shape), list(saved)))
    return found


def check_variable_shapes(expected, checkpoint_path, in_checkpoint, hint=""):
    """Raises InputError for the first variable whose shape differs from the checkpoint's.

    The one message for it, wherever a checkpoint is matched to a model:

        checkpoint <path> does not match the model: variable <name> has shape
        [a, b] in the model but [c, d] in the checkpoint<hint>

    Variables the checkpoint lacks are not looked at (see
    `find_shape_mismatches` for the arguments).
    """
    mismatches = find_shape_mismatches(expected, in_checkpoint)
    if not mismatches:
        return
    name, model_shape, checkpoint_shape = mismatches[0]
    raise InputError(
        f"checkpoint {checkpoint_path} does not match the model: variable {name} has shape "
        f"{model_shape} in the model but {checkpoint_shape} in the checkpoint{hint}"
    )


def get_assignment_map_from_checkpoint(tvars, init_checkpoint):
    """Pairs graph variables with the checkpoint variables of the same name.

    Args:
      tvars: the graph variables to initialize (usually the trainable ones).
      init_checkpoint: checkpoint path prefix (or a directory with a
        `checkpoint` file).

    Returns:
      (assignment_map, initialized_variable_names): an OrderedDict mapping each
      checkpoint name that is also a variable in tvars to itself, in checkpoint
      order, ready for `tf.compat.v1.train.init_from_checkpoint`; and a dict
      with both "name" and "name:0" keys (value 1) for every such variable.

    Raises:
      InputError (a ValueError): a variable's shape in the graph differs from
        its shape in the checkpoint; the message names the variable and both
        shapes (`check_variable_shapes`).
    """
    name_to_variable = collections.OrderedDict()
    for var in tvars:
        name_to_variable[_strip_output_index(var.name)] = var

    assignment_map = collections.OrderedDict()
    initialized_variable_names = {}
    in_checkpoint = tf.train.list_variables(init_checkpoint)
    check_variable_shapes(
        {name: var.shape for name, var in name_to_variable.items()},
        init_checkpoint,
        dict(in_checkpoint),
    )
    for name, _ in in_checkpoint:
        if name not in name_to_variable:
            continue
        assignment_map[name] = name
        initialized_variable_names[name] = 1
        initialized_variable_names[name + ":0"] = 1

    return assignment_map, initialized_variable_names
