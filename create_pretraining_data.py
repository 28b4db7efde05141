"""Creates the masked-LM / next-sentence TFRecords that BERT pre-trains on.

Input: text files with one sentence per line and a blank line between
documents. Output: tf.train.Examples with input_ids, input_mask,
segment_ids, masked_lm_positions, masked_lm_ids, masked_lm_weights and
next_sentence_labels, dealt round-robin over the output files.

For the same files, vocabulary, flags and seed the Examples are exactly the
2018 script's, in the same order and files. What differs is cost:

- TensorFlow is not loaded for local files: the TFRecord framing is written
  directly (bert_lib/plumbing/tfrecord_format.py), byte for byte what
  tf.io.TFRecordWriter writes. Paths with a scheme (gs://, ...) go through
  tf.io.gfile.
- The corpus is tokenized in `--num_workers` forked processes, memoised per
  word, into documents of token ids (bert_lib/task_data/pretraining_text.py).
- The instances are planned from sentence lengths alone, with the
  original's draws in the original's order, and each is serialized as soon
  as it is made (bert_lib/task_data/pretraining_data.py and, for the
  record's bytes, pretraining_records.py); its bytes equal
  `tf.train.Example.SerializeToString(deterministic=True)` (features sorted
  by name; protobuf's default map order changes from one process to the
  next, so the original's files differ in byte order between runs while
  parsing to the same Examples).

The original's functions (create_training_instances, ...) keep their
names, signatures and draws, as adapters over that engine.

    python create_pretraining_data.py --input_file=corpus/*.txt \\
        --output_file=out.tfrecord --vocab_file=vocab.txt
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections
import os
import random
import time

from absl import flags, logging

import tokenization
from bert_lib import script_flags
from bert_lib.bert_runs import checks
from bert_lib.plumbing import errors, fileio, startup_checks
from bert_lib.plumbing.errors import UsageError
from bert_lib.task_data import (
    pretraining_data,
    pretraining_records,
    pretraining_text,
    text_pairs,
)
from bert_lib.task_data.pretraining_data import Recipe

FLAGS = flags.FLAGS

script_flags.define_flags(
    "input_file",
    "output_file",
    "vocab_file",
    "do_lower_case",
    "max_seq_length",
    "max_predictions_per_seq",
    module=__name__,
)
flags.DEFINE_bool(
    "do_whole_word_mask",
    False,
    "Whether to mask all the WordPiece pieces of a word together (whole word masking).",
)
script_flags.define_integer(
    "random_seed",
    12345,
    "Random seed for data generation.",
    script_flags.ANY_NUMBER,
    module=__name__,
)
script_flags.define_integer(
    "dupe_factor",
    10,
    "Number of times to duplicate the input data (with different masks).",
    script_flags.POSITIVE,
    module=__name__,
)
script_flags.define_float(
    "masked_lm_prob",
    0.15,
    "Masked LM probability.",
    script_flags.Valid("in (0, 1]", lambda value: 0 < value <= 1),
    module=__name__,
)
script_flags.define_float(
    "short_seq_prob",
    0.1,
    "Probability of creating sequences which are shorter than the maximum length.",
    script_flags.FRACTION,
    module=__name__,
)
script_flags.define_integer(
    "num_workers",
    None,
    "Processes that tokenize the input in parallel (default: all CPU cores). "
    "The output does not depend on it.",
    script_flags.POSITIVE,
    module=__name__,
)


class TrainingInstance:
    """A single training instance (sentence pair), as token strings."""

    def __init__(self, tokens, segment_ids, masked_lm_positions, masked_lm_labels, is_random_next):
        self.tokens = tokens
        self.segment_ids = segment_ids
        self.is_random_next = is_random_next
        self.masked_lm_positions = masked_lm_positions
        self.masked_lm_labels = masked_lm_labels

    def __str__(self):
        lines = [
            "tokens: " + " ".join(tokenization.printable_text(x) for x in self.tokens),
            "segment_ids: " + " ".join(str(x) for x in self.segment_ids),
            f"is_random_next: {self.is_random_next}",
            "masked_lm_positions: " + " ".join(str(x) for x in self.masked_lm_positions),
            "masked_lm_labels: "
            + " ".join(tokenization.printable_text(x) for x in self.masked_lm_labels),
        ]
        return "\n".join(lines) + "\n\n"

    def __repr__(self):
        return self.__str__()


def write_instance_to_example_files(
    instances, tokenizer, max_seq_length, max_predictions_per_seq, output_files
):
    """Writes `TrainingInstance`s round-robin to `output_files`; logs the first 20.

    Files appear under their names only once complete.
    """
    vocab = tokenizer.vocab
    encoder = pretraining_records.PretrainingExampleEncoder(
        len(vocab), max_seq_length, max_predictions_per_seq
    )
    records = []
    for instance in instances:
        num_a = instance.segment_ids.count(0) - 2
        ids = [vocab[t] for t in instance.tokens]
        records.append(
            encoder.encode(
                ids,
                num_a,
                len(ids) - num_a - 3,
                list(instance.masked_lm_positions),
                [vocab[t] for t in instance.masked_lm_labels],
                instance.is_random_next,
            )
        )
    pretraining_data.write_records(records, tokenizer.inv_vocab, output_files)


def create_int_feature(values):
    """The original's helper: an int64 tf.train.Feature of `values`.

    Records are written here without TensorFlow (tfrecord_format); this is
    for code that imports the helper, and imports TensorFlow when called.
    """
    from bert_lib.task_data import features

    return features.create_int_feature(values)


def create_float_feature(values):
    """The original's helper: a float tf.train.Feature of `values` (see create_int_feature)."""
    from bert_lib.task_data import features

    return features.create_float_feature(values)


def create_training_instances(
    input_files,
    tokenizer,
    max_seq_length,
    dupe_factor,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    rng,
    do_whole_word_mask=False,
    num_workers=1,
):
    """Creates `TrainingInstance`s from raw text files, in the original's order.

    `do_whole_word_mask` is --do_whole_word_mask's value (False when not
    given, as for create_instances_from_document); `num_workers` processes
    tokenize in parallel.
    """
    documents = pretraining_text.read_documents(input_files, tokenizer, num_workers)
    recipe = Recipe(
        max_seq_length,
        dupe_factor,
        short_seq_prob,
        masked_lm_prob,
        max_predictions_per_seq,
        do_whole_word_mask,
    )
    inv_vocab = tokenizer.inv_vocab
    instances = []
    for instance in pretraining_data.id_instances(documents, tokenizer, recipe, rng):
        tokens = [inv_vocab[i] for i in instance.tokens]
        labels = [inv_vocab[i] for i in instance.masked_labels]
        instances.append(
            _training_instance(instance._replace(tokens=tokens, masked_labels=labels))
        )
    return instances


def create_instances_from_document(
    all_documents,
    document_index,
    max_seq_length,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    vocab_words,
    rng,
    do_whole_word_mask=False,
):
    """Creates `TrainingInstance`s for one document of token-string lists.

    Draws from `rng` exactly as the original does. `do_whole_word_mask` is
    --do_whole_word_mask's value (the original read the flag here; main
    passes it down): False, the flag's default, when not given.
    """
    recipe = Recipe(
        max_seq_length,
        1,
        short_seq_prob,
        masked_lm_prob,
        max_predictions_per_seq,
        do_whole_word_mask,
    )
    instances = pretraining_data.string_instances(
        all_documents, document_index, recipe, vocab_words, rng
    )
    return [_training_instance(instance) for instance in instances]


def _training_instance(instance):
    """The TrainingInstance of a pretraining_data.Instance of token strings."""
    segment_ids = [0] * (instance.num_a + 2) + [1] * (instance.num_b + 1)
    return TrainingInstance(
        instance.tokens,
        segment_ids,
        instance.masked_positions,
        instance.masked_labels,
        instance.is_random_next,
    )


MaskedLmInstance = collections.namedtuple("MaskedLmInstance", ["index", "label"])


def create_masked_lm_predictions(
    tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng, do_whole_word_mask=False
):
    """Returns (output_tokens, masked_lm_positions, masked_lm_labels) for `tokens`.

    Every token except [CLS] and [SEP] is a candidate (with whole word
    masking, a "##" piece joins the candidate before it); candidates are
    shuffled and taken until min(max_predictions_per_seq,
    max(1, round(len(tokens) * masked_lm_prob))) tokens are chosen; each
    becomes [MASK] (80%), stays (10%) or a random vocabulary word (10%).
    `do_whole_word_mask` is --do_whole_word_mask's value (False when not
    given), as for create_instances_from_document.
    """
    recipe = Recipe(3, 1, 0.0, masked_lm_prob, max_predictions_per_seq, do_whole_word_mask)
    return pretraining_data.mask_string_tokens(tokens, recipe, vocab_words, rng)


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Trims the longer list, from the front or back at random, until both fit.

    Lists are changed in place; one rng.random() per removed token, as in
    the original.
    """
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


# The flags this script reads, read once by settings_from_flags: the files,
# the tokenizer's casing, the seed, the worker count and the Recipe.
Settings = collections.namedtuple(
    "Settings", "input_file output_file vocab_file do_lower_case random_seed num_workers recipe"
)


def settings_from_flags():
    recipe = Recipe(
        FLAGS.max_seq_length,
        FLAGS.dupe_factor,
        FLAGS.short_seq_prob,
        FLAGS.masked_lm_prob,
        FLAGS.max_predictions_per_seq,
        FLAGS.do_whole_word_mask,
    )
    return Settings(
        input_file=FLAGS.input_file,
        output_file=FLAGS.output_file,
        vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case,
        random_seed=FLAGS.random_seed,
        num_workers=FLAGS.num_workers,
        recipe=recipe,
    )


def _check_flags(settings):
    """Raises UsageError for settings the recipe cannot work with.

    The ranges each numeric flag's definition allows are checked when the
    command line is read; what is left is what they do not say.
    """
    for name in ("input_file", "output_file", "vocab_file"):
        if not getattr(settings, name):
            raise UsageError(f"--{name} is required")
    max_seq_length = settings.recipe.max_seq_length
    if max_seq_length < text_pairs.PAIR_MINIMUM_LENGTH:
        raise UsageError(
            f"--max_seq_length={max_seq_length} is too small: [CLS], two [SEP] and "
            f"a token from each segment need at least {text_pairs.PAIR_MINIMUM_LENGTH}"
        )


def _output_files(names, inputs):
    """The files of --output_file: in existing, writable directories, each named once, and
    none of them one of the `inputs` ((flag, path) pairs: the corpus, the vocabulary)."""
    files = names.split(",")
    for path in files:
        if not path:
            raise UsageError(f"--output_file: empty entry in {names!r}")
        directory = os.path.dirname(path) or "."
        if not fileio.isdir(directory):
            raise UsageError(f"--output_file: no such directory: {directory}")
        startup_checks.check_output_file(path)
    if len(set(files)) != len(files):
        raise UsageError(f"--output_file: a file is named twice in {names}")
    startup_checks.check_outputs_are_not_inputs([("--output_file", f) for f in files], inputs)
    return files


def _default_num_workers():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def run(settings):
    """Creates the output files the settings ask for; raises UsageError on bad input."""
    _check_flags(settings)
    recipe = settings.recipe
    tokenizer = checks.load_tokenizer(settings.vocab_file, settings.do_lower_case)
    input_files = startup_checks.expand_input_files(settings.input_file)
    inputs = [("--input_file", f) for f in input_files] + [("--vocab_file", settings.vocab_file)]
    output_files = _output_files(settings.output_file, inputs)
    num_workers = settings.num_workers or _default_num_workers()
    logging.info("*** Reading from input files ***")
    for input_file in input_files:
        logging.info("  %s", input_file)
    start = time.monotonic()
    documents = pretraining_text.read_documents(input_files, tokenizer, num_workers)
    if not documents:
        raise UsageError(f"--input_file: no text in {settings.input_file} (every line is blank)")
    logging.info("Tokenized in %.1fs with %d worker(s)", time.monotonic() - start, num_workers)

    encoder = pretraining_records.PretrainingExampleEncoder(
        max(tokenizer.vocab.values()) + 1,
        recipe.max_seq_length,
        recipe.max_predictions_per_seq,
    )
    start = time.monotonic()
    rng = random.Random(settings.random_seed)
    records = pretraining_data.create_records(documents, tokenizer, recipe, rng, encoder)
    del documents
    logging.info("Instances created in %.1fs", time.monotonic() - start)

    logging.info("*** Writing to output files ***")
    for output_file in output_files:
        logging.info("  %s", output_file)
    pretraining_data.write_records(records, tokenizer.inv_vocab, output_files)


def main(_):
    errors.call(run, settings_from_flags())


if __name__ == "__main__":
    script_flags.run_main(main)
