"""Fine-tunes BERT on token classification: named entities in CoNLL files.

The original ships no such script, and the usual home-made ones put a word's
label on every WordPiece or score tokens instead of entities. Here each
word's label goes on its first piece only (the other pieces and [CLS]/[SEP]
carry no loss and no prediction), a sentence longer than the window is cut
into overlapping windows with each word predicted in exactly one of them
(the one where it has the most context on both sides), and evaluation
scores whole entities as conlleval does.

Same spine, flags, checkpoints and runner as run_classifier.py: CoNLL files
in --data_dir become output_dir/{train,eval,predict}.tf_record, training
writes the checkpoints, evaluation eval_results.txt, prediction
test_predictions.txt (test.txt with a predicted tag column) and
--export_dir a SavedModel with per-token tag probabilities.
"""

import os

import numpy as np
import tensorflow as tf
from absl import flags, logging

import atomic_write
import checkpoint_shapes
import eval_results
import features
import modeling
import optimization
import runner
import script_flags
import serving
import startup_checks
import tokenization
from errors import UsageError
from progress import Progress

FLAGS = flags.FLAGS

# Required parameters.
script_flags.define_model_flags()
script_flags.define_fine_tuning_flags()
script_flags.define_runner_flags()
script_flags.define_flags("data_dir", "labels", "window_stride")

# Other parameters (as run_classifier.py).

# Specific to tagging.
flags.DEFINE_integer(
    "tag_column",
    -1,
    "Which column of train.txt / dev.txt holds the tag: 0-based, negative counts from the "
    "end (default -1, the last). Column 0 is the word. test.txt needs no tags.",
)
flags.DEFINE_enum(
    "tag_scheme",
    "IOB2",
    ["IOB1", "IOB2", "IOBES"],
    "How tags mark entities: IOB1 (I- inside, B- only to split adjacent entities of one "
    "type, as the original CoNLL-2003 files), IOB2 (B- begins every entity) or IOBES "
    "(also E- ends one and S- is a single word). A tag with another prefix is an error.",
)

# Scripts imported later into the same process may redefine the shared names.

OUTSIDE = "O"
SCHEME_PREFIXES = {"IOB1": "BI", "IOB2": "BI", "IOBES": "BIES"}
DOCSTART = "-DOCSTART-"


class InputExample:
    """One sentence: its words, their tags (None for unlabelled test data) and lines."""

    def __init__(self, guid, words, labels=None, line_numbers=None):
        """Holds one sentence.

        Args:
          guid: unique id of the sentence (used in logs only).
          words: the words, as in the file's first column.
          labels: one tag per word, or None when the file has no tags.
          line_numbers: the 1-based file line of each word, to write
            predictions back next to it.
        """
        self.guid = guid
        self.words = words
        self.labels = labels
        self.line_numbers = line_numbers

    def __repr__(self):
        return f"InputExample(guid={self.guid!r}, words={self.words!r}, labels={self.labels!r})"


class InputFeatures:
    """One window of a sentence, padded to max_seq_length.

    label_mask is 1 on the positions scored in this window (the first piece
    of each word the window owns) and 0 elsewhere; word_ids gives, for those
    positions, the index of the word in its sentence (-1 elsewhere), and
    example_index the sentence. Padding windows have label_mask all 0.
    """

    def __init__(
        self, input_ids, input_mask, segment_ids, label_ids, label_mask, example_index, word_ids
    ):
        self.input_ids = input_ids
        self.input_mask = input_mask
        self.segment_ids = segment_ids
        self.label_ids = label_ids
        self.label_mask = label_mask
        self.example_index = example_index
        self.word_ids = word_ids


# ---------------------------------------------------------------------------
# CoNLL files.


def read_conll(path, tag_column=-1, with_tags=True):
    """Reads a CoNLL file into one InputExample per sentence.

    Every word line must have as many whitespace-separated columns as the
    file's first word line; -DOCSTART- lines and blank lines end a sentence.
    With `with_tags` the tag is read from `tag_column` (which may not be the
    word column 0); without, labels are None. A missing file, a line with
    the wrong number of columns or a file without words is a ValueError
    naming the file (and line).
    """
    if not tf.io.gfile.exists(path):
        raise UsageError(f"{path}: no such file")
    with tf.io.gfile.GFile(path, "r") as f:
        lines = f.read().splitlines()
    examples = []
    words, tags, numbers = [], [], []
    num_columns = None

    def end_sentence():
        if words:
            examples.append(
                InputExample(
                    f"{os.path.basename(path)}-{len(examples)}",
                    list(words),
                    list(tags) if with_tags else None,
                    list(numbers),
                )
            )
        words.clear()
        tags.clear()
        numbers.clear()

    for line_number, line in enumerate(lines, start=1):
        columns = tokenization.convert_to_unicode(line).split()
        if not columns or columns[0] == DOCSTART:
            end_sentence()
            continue
        if num_columns is None:
            num_columns = len(columns)
            if with_tags:
                _check_tag_column(path, line_number, num_columns, tag_column)
        if len(columns) != num_columns:
            raise UsageError(
                f"{path}, line {line_number}: {len(columns)} columns where the file's first "
                f"word line has {num_columns}"
            )
        words.append(columns[0])
        numbers.append(line_number)
        if with_tags:
            tags.append(columns[tag_column])
    end_sentence()
    if not examples:
        raise UsageError(f"{path}: no sentences (the file holds no word lines)")
    return examples


def _check_tag_column(path, line_number, num_columns, tag_column):
    index = tag_column if tag_column >= 0 else num_columns + tag_column
    if not 0 < index < num_columns:
        raise UsageError(
            f"{path}, line {line_number}: --tag_column={tag_column} does not name a tag "
            f"column of a line with {num_columns} columns (column 0 is the word)"
        )


def check_tag(tag, scheme):
    """Raises ValueError unless `tag` is O or <prefix>-<TYPE> with a prefix of `scheme`."""
    prefix, _, entity_type = tag.partition("-")
    if tag != OUTSIDE and not (len(prefix) == 1 and prefix in SCHEME_PREFIXES[scheme]):
        allowed = ", ".join(f"{p}-" for p in SCHEME_PREFIXES[scheme])
        raise UsageError(f"tag {tag!r} is not O or {allowed}<TYPE> (--tag_scheme={scheme})")
    if tag != OUTSIDE and not entity_type:
        raise UsageError(f"tag {tag!r} has no entity type after its prefix")


def check_example_tags(examples, path, scheme, label_list=None):
    """Checks every tag against the scheme and, if given, the label set.

    A bad tag is a ValueError naming the file and line.
    """
    known = set(label_list) if label_list is not None else None
    for example in examples:
        for tag, line_number in zip(example.labels, example.line_numbers):
            try:
                check_tag(tag, scheme)
            except ValueError as e:
                raise UsageError(f"{path}, line {line_number}: {e}") from None
            if known is not None and tag not in known:
                raise UsageError(
                    f"{path}, line {line_number}: tag {tag!r} is not in the label set "
                    f"({', '.join(label_list)})"
                )


def labels_from_examples(examples):
    """The tag set of `examples`: O first (whether seen or not), then the others sorted."""
    seen = {tag for example in examples for tag in example.labels}
    return [OUTSIDE] + sorted(seen - {OUTSIDE})


def read_label_file(path):
    """Reads labels.txt (one tag a line) into a list."""
    with tf.io.gfile.GFile(path, "r") as f:
        return [line.strip() for line in f if line.strip()]


def parse_labels_flag(value, scheme):
    """Splits --labels into a list, checking each tag and that none repeats."""
    labels = [label.strip() for label in value.split(",") if label.strip()]
    if not labels:
        raise UsageError(f"--labels={value!r}: no labels")
    for label in labels:
        try:
            check_tag(label, scheme)
        except ValueError as e:
            raise UsageError(f"--labels: {e}") from None
    if len(set(labels)) != len(labels):
        raise UsageError(f"--labels={value!r}: a tag is given twice")
    return labels


# ---------------------------------------------------------------------------
# Entity scoring, as conlleval.


def _split_tag(tag):
    """('O', '') for O, else (prefix, type) of 'B-PER'."""
    if tag == OUTSIDE:
        return OUTSIDE, ""
    prefix, _, entity_type = tag.partition("-")
    return prefix, entity_type


def _starts(prev_prefix, prefix, prev_type, entity_type):
    if prefix in ("B", "S"):
        return True
    if prefix in ("I", "E") and prev_prefix in ("O", "E", "S"):
        return True  # conlleval's rule: an I- (or E-) after O or after a closed entity
    return prefix != OUTSIDE and prev_type != entity_type


def _ends(prev_prefix, prefix, prev_type, entity_type):
    if prev_prefix in ("E", "S"):
        return True
    if prev_prefix in ("B", "I") and prefix in ("B", "S", OUTSIDE):
        return True
    return prev_prefix != OUTSIDE and prev_type != entity_type


def get_entities(tags):
    """The entities of one sentence's tags as (type, start, end) spans, end exclusive.

    Decoded by conlleval's rules, which read IOB1, IOB2 and IOBES alike: B-
    and S- always start an entity, and so does an I- or E- after O, after an
    E- / S-, or after a tag of another type; an entity ends before O, B-,
    S-, a change of type, after E- or S-, and at the end of the sentence.
    """
    entities = []
    start = None
    prev_prefix, prev_type = OUTSIDE, ""
    for i, tag in enumerate(list(tags) + [OUTSIDE]):
        prefix, entity_type = _split_tag(tag)
        if start is not None and _ends(prev_prefix, prefix, prev_type, entity_type):
            entities.append((prev_type, start, i))
            start = None
        if _starts(prev_prefix, prefix, prev_type, entity_type):
            start = i
        prev_prefix, prev_type = prefix, entity_type
    return entities


def _f1(correct, guessed, gold):
    precision = correct / guessed if guessed else 0.0
    recall = correct / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def conll_scores(gold_sentences, predicted_sentences, entity_types=()):
    """Entity-level precision, recall and F1 and token accuracy, as conlleval counts.

    An entity counts as correct when a predicted one has the same type,
    start and end as a gold one. Returns fractions (0-1) under the keys
    eval_precision, eval_recall, eval_f1, eval_f1_<TYPE> (for every type in
    `entity_types` and every type seen) and eval_token_accuracy (words whose
    whole tag is right); a ratio with a zero denominator is 0.
    """
    counts = {}  # type -> [correct, guessed, gold]
    for entity_type in entity_types:
        counts.setdefault(entity_type, [0, 0, 0])
    right_words = total_words = 0
    for gold_tags, predicted_tags in zip(gold_sentences, predicted_sentences):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(f"{len(gold_tags)} gold tags but {len(predicted_tags)} predicted")
        gold = set(get_entities(gold_tags))
        guessed = set(get_entities(predicted_tags))
        for entity_type, *_ in gold:
            counts.setdefault(entity_type, [0, 0, 0])[2] += 1
        for entity_type, *_ in guessed:
            counts.setdefault(entity_type, [0, 0, 0])[1] += 1
        for entity_type, *_ in gold & guessed:
            counts[entity_type][0] += 1
        right_words += sum(g == p for g, p in zip(gold_tags, predicted_tags))
        total_words += len(gold_tags)
    totals = [sum(c[i] for c in counts.values()) for i in range(3)]
    precision, recall, f1 = _f1(*totals)
    result = {
        "eval_precision": precision,
        "eval_recall": recall,
        "eval_f1": f1,
        "eval_token_accuracy": right_words / total_words if total_words else 0.0,
    }
    for entity_type, (correct, guessed, gold) in counts.items():
        result[f"eval_f1_{entity_type}"] = _f1(correct, guessed, gold)[2]
    return result


def entity_types(label_list):
    """The entity types named by a tag set, sorted."""
    return sorted({_split_tag(label)[1] for label in label_list if label != OUTSIDE})


# ---------------------------------------------------------------------------
# Windows and records.


def sentence_windows(word_starts, num_pieces, max_pieces, stride):
    """The (start, end) piece ranges of the windows covering one sentence.

    Each window holds up to `max_pieces` pieces and starts at a word's first
    piece; the next one starts at the first word beginning at least
    `stride` pieces later (stride <= max_pieces, so no word's first piece
    is skipped). One window when the sentence fits.
    """
    windows = []
    start = 0
    while True:
        end = min(start + max_pieces, num_pieces)
        windows.append((start, end))
        if end >= num_pieces:
            return windows
        later = [s for s in word_starts if s >= start + stride]
        if not later:
            return windows  # the rest belongs to a word already begun
        start = later[0]


def owning_windows(word_starts, windows):
    """For each word, the index of the window it is predicted in.

    Of the windows holding a word's first piece, the one where it has the
    most context: the largest min(pieces left of it, pieces right of it),
    plus a hundredth of the window's length to break ties; the earliest on
    equal scores.
    """
    owners = []
    for piece in word_starts:
        best, best_score = None, None
        for index, (start, end) in enumerate(windows):
            if start <= piece < end:
                score = min(piece - start, end - 1 - piece) + 0.01 * (end - start)
                if best_score is None or score > best_score:
                    best, best_score = index, score
        owners.append(best)
    return owners


def convert_single_example(ex_index, example, label_map, max_seq_length, window_stride, tokenizer):
    """Converts one sentence into the InputFeatures of its windows.

    Layout "[CLS] pieces [SEP]", segment ids 0, zero-padded. A word's label
    goes on its first piece, in the one window that owns the word (see
    owning_windows); a word the tokenizer drops entirely becomes [UNK] so
    it is still predicted. Sentences without labels get label id 0.
    """
    pieces, word_starts = [], []
    for word in example.words:
        word_starts.append(len(pieces))
        pieces.extend(tokenizer.tokenize(word) or ["[UNK]"])
    windows = sentence_windows(word_starts, len(pieces), max_seq_length - 2, window_stride)
    owners = owning_windows(word_starts, windows)

    result = []
    for window_index, (start, end) in enumerate(windows):
        tokens = ["[CLS]"] + pieces[start:end] + ["[SEP]"]
        input_ids = tokenizer.convert_tokens_to_ids(tokens)
        padding = [0] * (max_seq_length - len(input_ids))
        input_mask = [1] * len(input_ids) + padding
        label_ids = [0] * max_seq_length
        label_mask = [0] * max_seq_length
        word_ids = [-1] * max_seq_length
        for word_index, (piece, owner) in enumerate(zip(word_starts, owners)):
            if owner != window_index:
                continue
            position = 1 + piece - start
            label_mask[position] = 1
            word_ids[position] = word_index
            if example.labels is not None:
                label_ids[position] = label_map[example.labels[word_index]]
        feature = InputFeatures(
            input_ids=input_ids + padding,
            input_mask=input_mask,
            segment_ids=[0] * max_seq_length,
            label_ids=label_ids,
            label_mask=label_mask,
            example_index=ex_index,
            word_ids=word_ids,
        )
        if ex_index < 5:
            logging.info("*** Example ***")
            logging.info(
                "guid: %s (window %d of %d)", example.guid, window_index + 1, len(windows)
            )
            logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in tokens))
            logging.info("input_ids: %s", " ".join(map(str, feature.input_ids)))
            logging.info("label_ids: %s", " ".join(map(str, label_ids)))
            logging.info("label_mask: %s", " ".join(map(str, label_mask)))
        result.append(feature)
    return result


def padding_features(max_seq_length):
    """An all-zero window scored nowhere, to fill a TPU's last batch."""
    zeros = [0] * max_seq_length
    return InputFeatures(zeros, zeros, zeros, zeros, zeros, -1, [-1] * max_seq_length)


def convert_examples_to_features(examples, label_list, max_seq_length, window_stride, tokenizer):
    """Converts every sentence into windows (InputFeatures), in order."""
    label_map = {label: i for i, label in enumerate(label_list)}
    progress = Progress("Converting", len(examples), "sentences")
    result = []
    for ex_index, example in enumerate(examples):
        progress.update(ex_index)
        result.extend(
            convert_single_example(
                ex_index, example, label_map, max_seq_length, window_stride, tokenizer
            )
        )
    return result


def file_based_write_features(feature_list, output_file):
    """Writes windows as tf.train.Examples: input_ids, input_mask, segment_ids,
    label_ids, label_mask (int64 [max_seq_length] each). The file appears only complete."""
    with features.atomic_record_writers([output_file]) as (writer,):
        for feature in feature_list:
            tf_example = features.make_example(
                [
                    ("input_ids", features.create_int_feature(feature.input_ids)),
                    ("input_mask", features.create_int_feature(feature.input_mask)),
                    ("segment_ids", features.create_int_feature(feature.segment_ids)),
                    ("label_ids", features.create_int_feature(feature.label_ids)),
                    ("label_mask", features.create_int_feature(feature.label_mask)),
                ]
            )
            writer.write(tf_example.SerializeToString())


def file_based_input_fn_builder(input_file, seq_length, is_training, drop_remainder):
    """Returns an input_fn(params) reading `input_file` in batches of params["batch_size"].

    Training repeats and shuffles the records (buffer 100); eval and predict
    read them once, in order. Every feature comes out int32 [seq_length].
    """
    name_to_features = {
        name: tf.io.FixedLenFeature([seq_length], tf.int64)
        for name in ("input_ids", "input_mask", "segment_ids", "label_ids", "label_mask")
    }
    return features.record_input_fn_builder(
        input_file, name_to_features, is_training, drop_remainder
    )


# ---------------------------------------------------------------------------
# Model.


def create_model(
    bert_config,
    is_training,
    input_ids,
    input_mask,
    segment_ids,
    labels,
    label_mask,
    num_labels,
    use_one_hot_embeddings,
):
    """Builds BERT plus a linear tag head on every position of the sequence output.

    The head is `output_weights` [num_labels, hidden] and `output_bias`
    [num_labels] at no variable scope (the classifier's names and shapes),
    with 0.1 dropout on its input while training.

    Returns:
      (loss, per_token_loss, logits, probabilities): logits and
      probabilities [batch, seq, num_labels]; per_token_loss [batch, seq]
      the cross entropy (0 where label_mask is 0); loss its mean over the
      positions where label_mask is 1. The losses are None without labels.
    """
    model = modeling.BertModel(
        config=bert_config,
        is_training=is_training,
        input_ids=input_ids,
        input_mask=input_mask,
        token_type_ids=segment_ids,
        use_one_hot_embeddings=use_one_hot_embeddings,
    )
    output_layer = tf.cast(model.get_sequence_output(), tf.float32)
    hidden_size = tf.compat.v1.dimension_value(output_layer.shape[-1])

    output_weights = tf.compat.v1.get_variable(
        "output_weights",
        [num_labels, hidden_size],
        initializer=tf.compat.v1.truncated_normal_initializer(stddev=0.02),
    )
    output_bias = tf.compat.v1.get_variable(
        "output_bias", [num_labels], initializer=tf.compat.v1.zeros_initializer()
    )

    with tf.compat.v1.variable_scope("loss"):
        if is_training:
            output_layer = tf.nn.dropout(output_layer, rate=0.1)
        logits = tf.einsum("bsh,lh->bsl", output_layer, output_weights)
        logits = tf.nn.bias_add(logits, output_bias)
        probabilities = tf.nn.softmax(logits, axis=-1)
        if labels is None:
            return None, None, logits, probabilities

        mask = tf.cast(label_mask, tf.float32)
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        one_hot_labels = tf.one_hot(labels, depth=num_labels, dtype=tf.float32)
        per_token_loss = -tf.reduce_sum(one_hot_labels * log_probs, axis=-1) * mask
        loss = tf.reduce_sum(per_token_loss) / tf.maximum(tf.reduce_sum(mask), 1.0)
        return loss, per_token_loss, logits, probabilities


def model_fn_builder(
    bert_config,
    num_labels,
    init_checkpoint,
    learning_rate,
    num_train_steps,
    num_warmup_steps,
    use_tpu,
    use_one_hot_embeddings,
):
    """Returns the model_fn(features, labels, mode, params) for runner.Estimator.

    Train: Adam with weight decay via optimization.create_optimizer. Eval:
    eval_loss, the mean cross entropy over scored positions. Predict:
    {"probabilities": [seq, num_labels]}.
    """

    def model_fn(features, labels, mode, params):
        del labels, params  # Labels travel inside `features`.
        logging.info("*** Features ***")
        for name in sorted(features.keys()):
            logging.info("  name = %s, shape = %s", name, features[name].shape)

        is_training = mode == runner.ModeKeys.TRAIN
        total_loss, per_token_loss, _, probabilities = create_model(
            bert_config,
            is_training,
            features["input_ids"],
            features["input_mask"],
            features["segment_ids"],
            features.get("label_ids"),  # absent, as label_mask, in an export's serving graph
            features.get("label_mask"),
            num_labels,
            use_one_hot_embeddings,
        )
        scaffold_fn = runner.warm_start_from_checkpoint(init_checkpoint, use_tpu)

        if mode == runner.ModeKeys.TRAIN:
            train_op = optimization.create_optimizer(
                total_loss, learning_rate, num_train_steps, num_warmup_steps, use_tpu
            )
            return runner.EstimatorSpec(
                mode=mode, loss=total_loss, train_op=train_op, scaffold_fn=scaffold_fn
            )

        if mode == runner.ModeKeys.EVAL:

            def metric_fn(per_token_loss, label_mask):
                weights = tf.cast(label_mask, tf.float32)
                return {"eval_loss": tf.compat.v1.metrics.mean(per_token_loss, weights=weights)}

            return runner.EstimatorSpec(
                mode=mode,
                loss=total_loss,
                eval_metrics=(metric_fn, [per_token_loss, features["label_mask"]]),
                scaffold_fn=scaffold_fn,
            )

        return runner.EstimatorSpec(
            mode=mode, predictions={"probabilities": probabilities}, scaffold_fn=scaffold_fn
        )

    return model_fn


# ---------------------------------------------------------------------------
# Predictions back onto words.


def word_predictions(examples, feature_list, outputs, label_list):
    """Each sentence's predicted tags, one per word, from the windows' outputs.

    `outputs` are the probabilities [seq, num_labels] of `feature_list`, in
    order. Every word must be scored in exactly one window; anything else is
    a RuntimeError (a bug, not bad input).
    """
    predicted = [[None] * len(example.words) for example in examples]
    for feature, output in zip(feature_list, outputs):
        if feature.example_index < 0:
            continue
        tags = predicted[feature.example_index]
        ids = np.argmax(np.asarray(output), axis=-1)
        for position, word_index in enumerate(feature.word_ids):
            if word_index < 0:
                continue
            if tags[word_index] is not None:
                raise RuntimeError(f"word {word_index} of {feature.example_index} scored twice")
            tags[word_index] = label_list[int(ids[position])]
    for example, tags in zip(examples, predicted):
        if None in tags:
            raise RuntimeError(f"sentence {example.guid}: a word got no prediction")
    return predicted


def format_predictions(path, examples, predicted):
    """test_predictions.txt text: every line of `path` with a tag column appended.

    Word lines get their predicted tag, -DOCSTART- lines O (so conlleval
    reads the file), blank lines stay blank; the separator is a tab if the
    line holds one, else a space.
    """
    tag_of_line = {}
    for example, tags in zip(examples, predicted):
        tag_of_line.update(zip(example.line_numbers, tags))
    with tf.io.gfile.GFile(path, "r") as f:
        lines = f.read().splitlines()
    out = []
    for line_number, line in enumerate(lines, start=1):
        line = line.rstrip()
        if not line.strip():
            out.append("\n")
            continue
        separator = "\t" if "\t" in line else " "
        out.append(f"{line}{separator}{tag_of_line.get(line_number, OUTSIDE)}\n")
    return "".join(out)


# ---------------------------------------------------------------------------
# SavedModel export.


def export_saved_model(
    export_dir, checkpoint_path, bert_config, num_labels, max_seq_length, precision="fp32"
):
    """Exports the tagger in `checkpoint_path` as a SavedModel for serving.

    The "serving_default" signature takes input_ids, input_mask and
    segment_ids (int32 [batch, length], any length up to the model's
    max_position_embeddings; the script's windows are max_seq_length long)
    and returns "probabilities" ([batch, length, num_labels]). The graph is
    model_fn_builder's in PREDICT mode, computing in `precision`, exported
    through runner.Estimator.export_saved_model as main does. Written under
    a temporary name and renamed when complete; `export_dir` must not exist,
    and a checkpoint without the tagger's variables in their shapes is a
    UsageError.
    """
    del max_seq_length  # The graph takes any length.
    model_fn = model_fn_builder(bert_config, num_labels, None, 0.0, None, None, False, False)
    config = runner.RunConfig(
        model_dir=os.path.dirname(os.path.abspath(checkpoint_path)), precision=precision
    )
    runner.Estimator(model_fn, config).export_saved_model(
        export_dir, serving.id_inputs, checkpoint_path
    )


# ---------------------------------------------------------------------------
# main


def _choose_labels(train_examples, train_path):
    """The tag set: --labels, else output_dir/labels.txt, else the training file's.

    Returns (label_list, write_file): whether labels.txt must be written.
    --labels contradicting an existing labels.txt is a ValueError, as is
    having no source at all.
    """
    label_file = os.path.join(FLAGS.output_dir, "labels.txt")
    saved = read_label_file(label_file) if tf.io.gfile.exists(label_file) else None
    if FLAGS.labels:
        label_list = parse_labels_flag(FLAGS.labels, FLAGS.tag_scheme)
        if saved is not None and saved != label_list:
            raise UsageError(
                f"--labels={FLAGS.labels} differs from {label_file} ({','.join(saved)}), "
                "which the checkpoints in --output_dir were trained with"
            )
        return label_list, saved is None
    if saved is not None:
        for label in saved:
            try:
                check_tag(label, FLAGS.tag_scheme)
            except ValueError as e:
                raise UsageError(f"{label_file}: {e}") from None
        return saved, False
    if train_examples is None:
        raise UsageError(
            f"no tag set: --output_dir={FLAGS.output_dir} has no labels.txt; train there "
            "first (--do_train) or give --labels"
        )
    check_example_tags(train_examples, train_path, FLAGS.tag_scheme)
    return labels_from_examples(train_examples), True


def _read_split(name, with_tags):
    path = os.path.join(FLAGS.data_dir, name)
    return path, read_conll(path, FLAGS.tag_column, with_tags=with_tags)


def _pad_for_tpu(feature_list, batch_size):
    if FLAGS.use_tpu:
        while len(feature_list) % batch_size != 0:
            feature_list.append(padding_features(FLAGS.max_seq_length))
    return feature_list


def _window_stride():
    """--window_stride, or half a window; more than a window would skip words."""
    max_pieces = FLAGS.max_seq_length - 2
    stride = FLAGS.window_stride
    if stride is None:
        stride = max(1, max_pieces // 2)
    if not 1 <= stride <= max_pieces:
        raise UsageError(
            f"--window_stride={FLAGS.window_stride} must be between 1 and max_seq_length - 2 "
            f"= {max_pieces}, or windows would skip words"
        )
    return stride


def _tag_sentences(estimator, examples, convert, record_name, batch_size, label_list):
    """Writes the windows of `examples` to output_dir/<record_name>.tf_record and tags them.

    Returns (input_fn, steps, tags): the input_fn over those records, the
    number of batches for evaluate (None but on TPU, where the last batch
    is padded) and each sentence's predicted tags, one per word.
    """
    feature_list = convert(examples)
    num_actual = len(feature_list)
    _pad_for_tpu(feature_list, batch_size)
    record_file = os.path.join(FLAGS.output_dir, f"{record_name}.tf_record")
    file_based_write_features(feature_list, record_file)
    logging.info("  Num sentences = %d", len(examples))
    logging.info("  Num windows = %d (%d padding)", num_actual, len(feature_list) - num_actual)
    logging.info("  Batch size = %d", batch_size)
    input_fn = file_based_input_fn_builder(
        input_file=record_file,
        seq_length=FLAGS.max_seq_length,
        is_training=False,
        drop_remainder=bool(FLAGS.use_tpu),
    )
    outputs = runner.first_predictions(
        estimator.predict(input_fn=input_fn), "probabilities", num_actual
    )
    steps = len(feature_list) // batch_size if FLAGS.use_tpu else None
    return input_fn, steps, word_predictions(examples, feature_list, outputs, label_list)


def _export(estimator):
    """As predict: the newest checkpoint in output_dir, else --init_checkpoint."""
    checkpoint_path = runner.newest_checkpoint(FLAGS.output_dir) or FLAGS.init_checkpoint
    if not checkpoint_path:
        raise UsageError(
            f"--export_dir: no checkpoint in --output_dir={FLAGS.output_dir} and no "
            "--init_checkpoint to export"
        )
    estimator.export_saved_model(FLAGS.export_dir, serving.id_inputs, checkpoint_path)


def _check_flags():
    """Checks the flags and the config before any work; returns (bert_config, window_stride)."""
    tokenization.validate_case_matches_checkpoint(FLAGS.do_lower_case, FLAGS.init_checkpoint)

    if not (FLAGS.do_train or FLAGS.do_eval or FLAGS.do_predict or FLAGS.export_dir):
        raise UsageError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True "
            "(or --export_dir set)."
        )

    startup_checks.check_input_file(FLAGS.bert_config_file, "--bert_config_file")
    bert_config = modeling.BertConfig.from_json_file(FLAGS.bert_config_file)
    startup_checks.check_seq_length(FLAGS.max_seq_length, bert_config)
    if FLAGS.max_seq_length < 3:
        raise UsageError(f"--max_seq_length={FLAGS.max_seq_length}: needs room for [CLS] x [SEP]")
    if FLAGS.init_checkpoint:
        modeling.check_checkpoint_shapes(FLAGS.init_checkpoint, bert_config)
    startup_checks.check_output_dir(FLAGS.output_dir)
    if FLAGS.export_dir and tf.io.gfile.exists(FLAGS.export_dir):
        raise UsageError(f"--export_dir={FLAGS.export_dir} already exists; choose a new directory")
    return bert_config, _window_stride()


def main(_):
    logging.set_verbosity(logging.INFO)

    bert_config, window_stride = _check_flags()

    # Read every needed set and settle the tag set before any work, so that a
    # bad line stops the run before training rather than after.
    train_examples = eval_examples = predict_examples = None
    train_path = eval_path = predict_path = None
    if FLAGS.do_train:
        train_path, train_examples = _read_split("train.txt", with_tags=True)
    if FLAGS.do_eval:
        eval_path, eval_examples = _read_split("dev.txt", with_tags=True)
    if FLAGS.do_predict:
        predict_path, predict_examples = _read_split("test.txt", with_tags=False)
    label_list, write_label_file = _choose_labels(train_examples, train_path)
    for path, examples in ((train_path, train_examples), (eval_path, eval_examples)):
        if examples is not None:
            check_example_tags(examples, path, FLAGS.tag_scheme, label_list)
    num_labels = len(label_list)

    checkpoint_shapes.check_head_of_newest_checkpoint(
        FLAGS.output_dir, num_labels, bert_config.hidden_size
    )
    tokenizer = startup_checks.load_tokenizer(FLAGS.vocab_file, FLAGS.do_lower_case)

    run_config = script_flags.run_config_from_flags()

    def convert(examples):
        return convert_examples_to_features(
            examples, label_list, FLAGS.max_seq_length, window_stride, tokenizer
        )

    train_features = convert(train_examples) if FLAGS.do_train else None

    tf.io.gfile.makedirs(FLAGS.output_dir)
    if write_label_file:
        atomic_write.write_text(
            os.path.join(FLAGS.output_dir, "labels.txt"), "".join(f"{x}\n" for x in label_list)
        )

    num_train_steps = None
    num_warmup_steps = None
    if FLAGS.do_train:
        num_train_steps = int(
            len(train_features) / FLAGS.train_batch_size * FLAGS.num_train_epochs
        )
        num_warmup_steps = int(num_train_steps * FLAGS.warmup_proportion)

    model_fn = model_fn_builder(
        bert_config=bert_config,
        num_labels=num_labels,
        init_checkpoint=FLAGS.init_checkpoint,
        learning_rate=FLAGS.learning_rate,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        use_tpu=FLAGS.use_tpu,
        use_one_hot_embeddings=FLAGS.use_tpu,
    )
    estimator = runner.Estimator(
        model_fn=model_fn,
        config=run_config,
        train_batch_size=FLAGS.train_batch_size,
        eval_batch_size=FLAGS.eval_batch_size,
        predict_batch_size=FLAGS.predict_batch_size,
    )

    if FLAGS.do_train:
        train_file = os.path.join(FLAGS.output_dir, "train.tf_record")
        file_based_write_features(train_features, train_file)
        logging.info("***** Running training *****")
        logging.info("  Num sentences = %d", len(train_examples))
        logging.info("  Num windows = %d", len(train_features))
        logging.info("  Batch size = %d", FLAGS.train_batch_size)
        logging.info("  Num steps = %d", num_train_steps)
        train_input_fn = file_based_input_fn_builder(
            input_file=train_file,
            seq_length=FLAGS.max_seq_length,
            is_training=True,
            drop_remainder=True,
        )
        estimator.train(input_fn=train_input_fn, max_steps=num_train_steps)

    if FLAGS.do_eval:
        logging.info("***** Running evaluation *****")
        eval_input_fn, eval_steps, predicted = _tag_sentences(
            estimator, eval_examples, convert, "eval", FLAGS.eval_batch_size, label_list
        )
        # Entities need every word's tag at once, so they are scored from the
        # dev predictions; evaluate gives the loss.
        result = conll_scores(
            [example.labels for example in eval_examples], predicted, entity_types(label_list)
        )
        evaluated = estimator.evaluate(input_fn=eval_input_fn, steps=eval_steps)
        result["eval_loss"] = evaluated["eval_loss"]
        result["global_step"] = evaluated["global_step"]
        eval_results.write_eval_results(os.path.join(FLAGS.output_dir, "eval_results.txt"), result)

    if FLAGS.do_predict:
        logging.info("***** Running prediction*****")
        _, _, predicted = _tag_sentences(
            estimator, predict_examples, convert, "predict", FLAGS.predict_batch_size, label_list
        )
        atomic_write.write_text(
            os.path.join(FLAGS.output_dir, "test_predictions.txt"),
            format_predictions(predict_path, predict_examples, predicted),
        )

    if FLAGS.export_dir:
        _export(estimator)


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
