"""A next-word tagger trained in a plain tf.Session loop: words to ids through
tf.contrib.lookup tables (from a vocabulary file with out-of-vocabulary buckets, from
tensors, a HashTable of labels), tf.tables_initializer(), and the loss of
tf.contrib.seq2seq.sequence_loss over padded sentences."""
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where the vocabulary and results.json go.")
flags.DEFINE_integer("num_steps", 15, "Training steps.")

VOCAB = ["<pad>", "the", "cat", "sat", "on", "mat", "dog", "ran"]
SENTENCES = ["the cat sat on the mat", "the dog ran", "a cat ran on the rug", "the mat sat"]
TAGS = {"the": 1, "cat": 2, "dog": 2, "mat": 2, "sat": 3, "ran": 3, "on": 4}


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  vocab_file = os.path.join(FLAGS.output_dir, "vocab.txt")
  with open(vocab_file, "w") as f:
    f.write("\n".join(VOCAB) + "\n")
  sentences = tf.constant(SENTENCES)
  words = tf.string_split(sentences, " ")
  dense_words = tf.sparse_tensor_to_dense(words, default_value="<pad>")
  word_table = tf.contrib.lookup.index_table_from_file(vocab_file, num_oov_buckets=3)
  word_ids = word_table.lookup(dense_words)
  small_table = tf.contrib.lookup.index_table_from_tensor(tf.constant(["cat", "dog"]), default_value=-1)
  small_ids = small_table.lookup(dense_words)
  names = tf.contrib.lookup.index_to_string_table_from_file(vocab_file, default_value="<unk>")
  names_back = names.lookup(word_ids)
  reverse = tf.contrib.lookup.index_to_string_table_from_tensor(tf.constant(VOCAB[:4]))
  tag_table = tf.contrib.lookup.HashTable(
      tf.contrib.lookup.KeyValueTensorInitializer(list(TAGS.keys()), list(TAGS.values()),
                                                  value_dtype=tf.int64), 0)
  line_numbers = tf.contrib.lookup.HashTable(
      tf.contrib.lookup.TextFileInitializer(
          vocab_file, tf.string, tf.contrib.lookup.TextFileIndex.WHOLE_LINE,
          tf.int64, tf.contrib.lookup.TextFileIndex.LINE_NUMBER), -1)
  tags = tag_table.lookup(dense_words)
  mask = tf.cast(tf.not_equal(dense_words, "<pad>"), tf.float32)

  rng = np.random.RandomState(5)
  vocab_size, dim, num_tags = len(VOCAB) + 3, 5, 5
  embedding = tf.get_variable("embedding", [vocab_size, dim],
                              initializer=tf.constant_initializer(rng.normal(0, 0.5, (vocab_size, dim))))
  output = tf.get_variable("output", [dim, num_tags],
                           initializer=tf.constant_initializer(rng.normal(0, 0.5, (dim, num_tags))))
  hidden = tf.tanh(tf.nn.embedding_lookup(embedding, word_ids))
  logits = tf.einsum("btd,dk->btk", hidden, output)
  loss = tf.contrib.seq2seq.sequence_loss(logits, tf.cast(tags, tf.int32), mask)
  per_step = tf.contrib.seq2seq.sequence_loss(
      logits, tf.cast(tags, tf.int32), mask, average_across_timesteps=False)
  per_sentence = tf.contrib.seq2seq.sequence_loss(
      logits, tf.cast(tags, tf.int32), mask, average_across_batch=False)
  summed = tf.contrib.seq2seq.sequence_loss(
      logits, tf.cast(tags, tf.int32), mask, average_across_timesteps=False,
      average_across_batch=False, sum_over_timesteps=True, sum_over_batch=True)
  train_op = tf.train.GradientDescentOptimizer(0.5).minimize(loss)

  results = {"losses": []}
  with tf.Session() as sess:
    sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
    fetched = sess.run({
        "word_ids": word_ids, "small_ids": small_ids, "names_back": names_back,
        "reverse": reverse.lookup(tf.constant([0, 3, 9], tf.int64)),
        "tags": tags, "line_numbers": line_numbers.lookup(tf.constant(["mat", "rug", "the"])),
        "table_size": word_table.size(), "tag_table_size": tag_table.size(),
        "per_step": per_step, "per_sentence": per_sentence, "summed": summed,
    })
    for step in range(FLAGS.num_steps):
      results["losses"].append(float(sess.run(loss)))
      sess.run(train_op)
    results["final_logits"] = sess.run(logits).tolist()
  for key, value in fetched.items():
    if isinstance(value, np.ndarray) and value.dtype == object:
      value = [[w.decode() for w in row] if isinstance(row, np.ndarray) else row.decode() for row in value]
    elif isinstance(value, np.ndarray):
      value = value.tolist()
    else:
      value = value.item()
    results[key] = value
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
