"""tf.contrib.seq2seq's decoding of TF 1.x: the helpers (teacher forcing, greedy and
sampled feedback, custom), BasicDecoder and dynamic_decode's while loop."""

import collections

import tensorflow as tf

from . import shapes

_V1 = tf.compat.v1


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
        return shapes.layer_output_size(self._output_layer, self._cell.output_size)

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
            lambda size, dtype: shapes.zeros(size, batch_size, dtype),
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
