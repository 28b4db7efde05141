"""A sequence-to-sequence model with attention learning to reverse token sequences: an
LSTM encoder (tf.nn.dynamic_rnn), a decoder LSTM in a tf.contrib.seq2seq.AttentionWrapper
(Bahdanau attention, normalized; Luong attention, scaled, in a second model), trained with
a TrainingHelper and BasicDecoder under dynamic_decode and sequence_loss in a tf.Session
loop, then decoding greedily with a GreedyEmbeddingHelper on the same variables, and with
a BeamSearchDecoder (tile_batch) in a graph of its own given the trained values."""
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where results.json goes.")
flags.DEFINE_integer("num_steps", 8, "Training steps.")

VOCAB_SIZE, GO, EOS = 8, 1, 2
SOURCES = [[3, 4, 5, 6], [7, 3, 4, 0], [5, 6, 0, 0], [4, 7, 6, 3]]
LENGTHS = [4, 3, 2, 4]


def encode(embedding, source, lengths):
  encoder_inputs = tf.nn.embedding_lookup(embedding, source)
  encoder_cell = tf.nn.rnn_cell.LSTMCell(6)
  return tf.nn.dynamic_rnn(encoder_cell, encoder_inputs, sequence_length=lengths,
                           dtype=tf.float32, scope="encoder")


def beam_search(values, source, lengths, beam_width=3, coverage_penalty_weight=0.0,
                run_time_batch=False):
  """Beam search from the trained Bahdanau model's values, in a graph of its own; with
  run_time_batch, the batch and the source length are known only at run time (fed through
  placeholders, the batch size tf.size of the lengths, as NMT's input pipeline gives them)."""
  with tf.Graph().as_default():
    embedding = tf.get_variable("embedding", [VOCAB_SIZE, 5])
    if run_time_batch:
      source_in = tf.placeholder(tf.int32, [None, None])
      lengths_in = tf.placeholder(tf.int32, [None])
      feed = {source_in: source, lengths_in: lengths}
      batch_size = tf.size(lengths_in)
    else:
      source_in, lengths_in, feed = tf.constant(source), tf.constant(lengths), None
      batch_size = len(source)
    memory, encoder_state = encode(embedding, source_in, lengths_in)
    tiled_memory = tf.contrib.seq2seq.tile_batch(memory, multiplier=beam_width)
    tiled_lengths = tf.contrib.seq2seq.tile_batch(lengths_in, multiplier=beam_width)
    tiled_state = tf.contrib.seq2seq.tile_batch(encoder_state, multiplier=beam_width)
    mechanism = tf.contrib.seq2seq.BahdanauAttention(5, tiled_memory, memory_sequence_length=tiled_lengths,
                                                     normalize=True)
    cell = tf.contrib.seq2seq.AttentionWrapper(tf.nn.rnn_cell.LSTMCell(6), mechanism, attention_layer_size=4,
                                               alignment_history=True)
    initial_state = cell.zero_state(batch_size * beam_width, tf.float32).clone(cell_state=tiled_state)
    output_layer = tf.layers.Dense(VOCAB_SIZE, use_bias=False, name="output_projection")
    decoder = tf.contrib.seq2seq.BeamSearchDecoder(
        cell, embedding, tf.fill([batch_size], GO), EOS, initial_state, beam_width,
        output_layer=output_layer, length_penalty_weight=0.6,
        coverage_penalty_weight=coverage_penalty_weight)
    outputs, final_state, lengths_out = tf.contrib.seq2seq.dynamic_decode(decoder, maximum_iterations=6)
    history = final_state.cell_state.alignment_history
    if isinstance(history, tf.TensorArray):
      history = history.stack()
    with tf.Session() as sess:
      sess.run(tf.global_variables_initializer())
      for v in tf.global_variables():
        v.load(values[v.op.name], sess)
      got = sess.run({
          "predicted_ids": outputs.predicted_ids,
          "scores": outputs.beam_search_decoder_output.scores,
          "parent_ids": outputs.beam_search_decoder_output.parent_ids,
          "step_ids": outputs.beam_search_decoder_output.predicted_ids,
          "lengths": lengths_out,
          "beam_lengths": final_state.lengths,
          "log_probs": final_state.log_probs,
          "alignment_history": history,
      }, feed)
    return {key: value.tolist() for key, value in got.items()}


def build(attention, embedding, source, lengths, target_in, target_out, target_lengths):
  memory, encoder_state = encode(embedding, source, lengths)
  if attention == "bahdanau":
    mechanism = tf.contrib.seq2seq.BahdanauAttention(5, memory, memory_sequence_length=lengths, normalize=True)
  elif attention == "luong":
    mechanism = tf.contrib.seq2seq.LuongAttention(6, memory, memory_sequence_length=lengths, scale=True)
  if attention == "both":  # two mechanisms, each with its own attention layer; the cell's output out
    mechanism = [tf.contrib.seq2seq.BahdanauAttention(5, memory, memory_sequence_length=lengths),
                 tf.contrib.seq2seq.LuongAttention(6, memory, memory_sequence_length=lengths)]
    cell = tf.contrib.seq2seq.AttentionWrapper(tf.nn.rnn_cell.LSTMCell(6), mechanism, attention_layer_size=[3, 2],
                                               alignment_history=True, output_attention=False)
  else:
    cell = tf.contrib.seq2seq.AttentionWrapper(tf.nn.rnn_cell.LSTMCell(6), mechanism, attention_layer_size=4,
                                               alignment_history=True)
  batch_size = tf.shape(source)[0]
  initial_state = cell.zero_state(batch_size, tf.float32).clone(cell_state=encoder_state)
  output_layer = tf.layers.Dense(VOCAB_SIZE, use_bias=False, name="output_projection")
  helper = tf.contrib.seq2seq.TrainingHelper(tf.nn.embedding_lookup(embedding, target_in), target_lengths)
  decoder = tf.contrib.seq2seq.BasicDecoder(cell, helper, initial_state, output_layer=output_layer)
  outputs, final_state, _ = tf.contrib.seq2seq.dynamic_decode(
      decoder, impute_finished=True, output_time_major=attention == "both")
  logits = outputs.rnn_output
  if attention == "both":
    logits = tf.transpose(logits, [1, 0, 2])
  weights = tf.sequence_mask(target_lengths, tf.shape(target_out)[1], dtype=tf.float32)
  loss = tf.contrib.seq2seq.sequence_loss(logits, target_out, weights)
  history = final_state.alignment_history
  if isinstance(history, tuple):
    history = history[0]
  alignments = tf.transpose(history.stack(), [1, 0, 2])
  greedy = tf.contrib.seq2seq.GreedyEmbeddingHelper(embedding, tf.fill([batch_size], GO), EOS)
  infer_decoder = tf.contrib.seq2seq.BasicDecoder(cell, greedy, initial_state, output_layer=output_layer)
  with tf.variable_scope(tf.get_variable_scope(), reuse=True):
    infer_outputs, _, infer_lengths = tf.contrib.seq2seq.dynamic_decode(
        infer_decoder, maximum_iterations=6)
  extra = {}
  if attention == "luong":  # other helpers on the same variables
    sampling = tf.contrib.seq2seq.SampleEmbeddingHelper(
        embedding, tf.fill([batch_size], GO), EOS, softmax_temperature=0.5, seed=7)
    by_outputs = tf.contrib.seq2seq.InferenceHelper(
        sample_fn=lambda outputs: tf.argmax(outputs, -1, output_type=tf.int32), sample_shape=[],
        sample_dtype=tf.int32, start_inputs=tf.nn.embedding_lookup(embedding, tf.fill([batch_size], GO)),
        end_fn=lambda ids: tf.equal(ids, EOS), next_inputs_fn=lambda ids: tf.nn.embedding_lookup(embedding, ids))
    with tf.variable_scope(tf.get_variable_scope(), reuse=True):
      scheduled = tf.contrib.seq2seq.ScheduledEmbeddingTrainingHelper(
          tf.nn.embedding_lookup(embedding, target_in), target_lengths, embedding, 0.5, seed=11,
          scheduling_seed=12)
      for name, other in (("sampled", sampling), ("by_outputs", by_outputs), ("scheduled", scheduled)):
        other_decoder = tf.contrib.seq2seq.BasicDecoder(cell, other, initial_state, output_layer=output_layer)
        # One iteration at a time: the scheduled helper's coin flips do not depend on the
        # previous step, so parallel iterations could draw them in any order.
        other_outputs, _, _ = tf.contrib.seq2seq.dynamic_decode(other_decoder, maximum_iterations=5,
                                                                parallel_iterations=1)
        extra[name] = other_outputs.sample_id
  return loss, alignments, infer_outputs, infer_lengths, extra


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  source = np.array(SOURCES, np.int32)
  lengths = np.array(LENGTHS, np.int32)
  reversed_ = [list(reversed(s[:n])) for s, n in zip(SOURCES, LENGTHS)]
  target_in = np.array([[GO] + r + [0] * (4 - len(r)) for r in reversed_], np.int32)
  target_out = np.array([r + [EOS] + [0] * (4 - len(r)) for r in reversed_], np.int32)
  results = {}
  for attention in ("bahdanau", "luong", "both"):
    with tf.Graph().as_default():
      tf.set_random_seed(3)
      embedding = tf.get_variable("embedding", [VOCAB_SIZE, 5])
      loss, alignments, infer_outputs, infer_lengths, extra = build(
          attention, embedding, tf.constant(source), tf.constant(lengths), tf.constant(target_in),
          tf.constant(target_out), tf.constant(lengths + 1))
      train_op = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
      variables = sorted(tf.global_variables(), key=lambda v: v.op.name)
      rng = np.random.RandomState(4)
      with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for v in variables:
          shape = v.shape.as_list()
          v.load(rng.normal(0, 0.4, shape).astype(np.float32), sess)
        got = {"variables": [[v.op.name, v.shape.as_list()] for v in variables], "losses": []}
        got["alignments"] = sess.run(alignments).tolist()
        for _ in range(FLAGS.num_steps):
          got["losses"].append(float(sess.run(loss)))
          sess.run(train_op)
        outputs, lengths_out = sess.run([infer_outputs, infer_lengths])
        got["infer_logits"] = outputs.rnn_output.tolist()
        got["infer_ids"] = outputs.sample_id.tolist()
        got["infer_lengths"] = lengths_out.tolist()
        for name, ids in sorted(extra.items()):
          got[name] = sess.run(ids).tolist()
        trained = {v.op.name: sess.run(v) for v in variables}
      if attention == "bahdanau":
        results["beam_search"] = beam_search(trained, source, lengths)
        results["beam_search_coverage"] = beam_search(trained, source, lengths, coverage_penalty_weight=0.4)
        results["beam_search_run_time_batch"] = beam_search(trained, source, lengths, run_time_batch=True)
      results[attention] = got
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
