"""SQuAD data without flags: the examples and the readers of SQuAD and plain question files.

run_squad.py is the script that fine-tunes and predicts; the task's data
steps are split by job, each usable from a notebook or another script with
every setting passed as an argument: this module reads a SQuAD (or plain
question) file into SquadExamples; squad_features.py cuts them into the
model's windows and writes their TFRecords; squad_answers.py turns logits
back into answer text (predictions.json, nbest_predictions.json,
null_odds.json, byte for byte the original script's); squad_scoring.py
scores answers by the official v1.1 / v2.0 rules.
"""

import collections
import json

import tensorflow as tf
from absl import logging

import tokenization

from ..plumbing import startup_checks
from ..plumbing.errors import UsageError

# Characters that separate words in a SQuAD context (the narrow no-break space
# U+202F shows up in the data and must split words like a space does).
_SQUAD_WHITESPACE = frozenset([" ", "\t", "\r", "\n", "\u202f"])


class SquadExample:
    """One question about one paragraph.

    `doc_tokens` are the paragraph's whitespace-separated words;
    `start_position` / `end_position` index them (inclusive). Questions
    without an answer (SQuAD 2.0) have positions -1 and `is_impossible`.
    """

    def __init__(
        self,
        qas_id,
        question_text,
        doc_tokens,
        orig_answer_text=None,
        start_position=None,
        end_position=None,
        is_impossible=False,
    ):
        self.qas_id = qas_id
        self.question_text = question_text
        self.doc_tokens = doc_tokens
        self.orig_answer_text = orig_answer_text
        self.start_position = start_position
        self.end_position = end_position
        self.is_impossible = is_impossible

    def __str__(self):
        return self.__repr__()

    def __repr__(self):
        parts = [
            f"qas_id: {tokenization.printable_text(self.qas_id)}",
            f"question_text: {tokenization.printable_text(self.question_text)}",
            "doc_tokens: [{}]".format(" ".join(self.doc_tokens)),
        ]
        # As before, positions are shown only when the start is a true value.
        if self.start_position:
            parts.append(f"start_position: {self.start_position}")
            parts.append(f"end_position: {self.end_position}")
            parts.append(f"is_impossible: {self.is_impossible!r}")
        return ", ".join(parts)


def load_squad_json(input_file):
    """Returns the parsed SQuAD file; bad JSON is a UsageError naming the file."""
    try:
        text = startup_checks.read_text(input_file)
    except tf.errors.OpError as err:
        raise UsageError(f"{input_file}: cannot read the SQuAD file ({err.message})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UsageError(
            f"{input_file}: not a valid SQuAD JSON file ({err.msg} at line {err.lineno} "
            f"column {err.colno})"
        ) from None


_JSON_KIND = {dict: "object", list: "list", str: "string", int: "number"}


def _require(container, key, input_file, where, kind=None):
    """Returns container[key], or raises a UsageError naming the file and the key."""
    if not isinstance(container, dict):
        raise UsageError(f"{input_file}: {where} should be a JSON object")
    if key not in container:
        raise UsageError(f"{input_file}: missing key '{key}' in {where}")
    value = container[key]
    if kind is not None and not isinstance(value, kind):
        raise UsageError(f"{input_file}: '{key}' in {where} should be a JSON {_JSON_KIND[kind]}")
    return value


def _squad_paragraphs(input_data, input_file):
    """Yields (where, context, qas) for every paragraph, checking the layout."""
    data = _require(input_data, "data", input_file, "the top level", list)
    for i, entry in enumerate(data):
        paragraphs = _require(entry, "paragraphs", input_file, f"data[{i}]", list)
        for j, paragraph in enumerate(paragraphs):
            where = f"data[{i}].paragraphs[{j}]"
            context = _require(paragraph, "context", input_file, where, str)
            qas = _require(paragraph, "qas", input_file, where, list)
            yield where, context, qas


def split_context(paragraph_text):
    """Splits a context on SQuAD whitespace.

    Returns (doc_tokens, char_to_word_offset): the words, and for every
    character the index of the word it belongs to (whitespace belongs to the
    word before it, -1 before the first word).
    """
    doc_tokens = []
    char_to_word_offset = []
    prev_is_whitespace = True
    for char in paragraph_text:
        if char in _SQUAD_WHITESPACE:
            prev_is_whitespace = True
        else:
            if prev_is_whitespace:
                doc_tokens.append(char)
            else:
                doc_tokens[-1] += char
            prev_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def read_squad_examples(input_file, is_training, version_2_with_negative):
    """Reads a SQuAD json file (or a plain question file) into a list of SquadExample.

    For training, every answerable question needs exactly one answer (with
    `version_2_with_negative`, every question an "is_impossible" key); an
    answer whose text cannot be found in the words its character offsets
    cover is logged and the question skipped, unless most of them are, or
    more than MAX_MISSED_SHARE and at least MANY_MISSED (the offsets are
    wrong then). Questions
    to predict need ids of their own. A malformed file raises UsageError
    naming the file and the missing key (or the question id).
    """
    records = read_simple_questions(input_file)
    if records is not None:
        if is_training:
            raise UsageError(
                f"{input_file}: a plain list of questions has no answers to train on; "
                "training needs SQuAD's layout"
            )
        examples = [
            _simple_example(record, where, str(i), input_file)
            for i, (where, record) in enumerate(records)
        ]
        _check_unique_ids(examples, [where for where, _ in records], input_file)
        return examples
    input_data = load_squad_json(input_file)

    examples, wheres, misses = [], [], []
    for paragraph_where, paragraph_text, qas in _squad_paragraphs(input_data, input_file):
        doc_tokens, char_to_word_offset = split_context(paragraph_text)
        for k, qa in enumerate(qas):
            where = f"{paragraph_where}.qas[{k}]"
            example = _read_question(
                qa,
                where,
                doc_tokens,
                char_to_word_offset,
                input_file,
                is_training,
                version_2_with_negative,
            )
            if isinstance(example, _Miss):
                misses.append(example)
            else:
                examples.append(example)
                wheres.append(where)
    if is_training:
        _check_answer_offsets(misses, examples, input_file)
    else:
        _check_unique_ids(examples, wheres, input_file)
    return examples


# A training question whose answer text is not at its answer_start: its id,
# the text there and the answer's.
_Miss = collections.namedtuple("_Miss", "qas_id actual_text answer_text")

# Training answers not at their answer_start: most of them, or more than
# this share and at least this many, make a file whose offsets are wrong
# (bytes counted instead of characters, another version of the contexts),
# not the odd unicode the original skips an answer for (a few in SQuAD).
MAX_MISSED_SHARE, MANY_MISSED = 0.1, 10


def _check_answer_offsets(misses, examples, input_file):
    """Refuses training data whose answers are mostly not where answer_start says."""
    answerable = len(misses) + sum(1 for e in examples if not e.is_impossible)
    if not misses:
        return
    first = misses[0]
    detail = (
        f"question id {first.qas_id}: {first.actual_text!r} at its answer_start, not "
        f"{first.answer_text!r}"
    )
    missed = len(misses)
    if 2 * missed > answerable or (
        missed >= MANY_MISSED and missed > MAX_MISSED_SHARE * answerable
    ):
        raise UsageError(
            f"{input_file}: the answer text is not at answer_start for {len(misses)} of "
            f"{answerable} answerable questions (first: {detail}); answer_start must count "
            "characters of the context as given"
        )
    logging.warning(
        "%s: %d of %d answers are not at their answer_start and are skipped (first: %s)",
        input_file,
        len(misses),
        answerable,
        detail,
    )


def _check_unique_ids(examples, wheres, input_file):
    """Each question to predict needs its own id: predictions.json and the scores key
    answers by id, so a repeated id would keep one of the answers."""
    first = {}
    for example, where in zip(examples, wheres):
        qas_id = example.qas_id
        if qas_id in first:
            raise UsageError(
                f"{input_file}: question id {qas_id!r} is used twice ({first[qas_id]} and "
                f"{where}); predictions.json keys answers by id, so each question needs its own"
            )
        first[qas_id] = where


def read_simple_questions(input_file):
    """The (where, record) pairs of a plain question file, or None for a SQuAD file.

    Plain files are .jsonl (one {"context", "question"[, "id"]} object a
    line) or JSON holding a list of such objects, or one object with a
    "question" key. Anything else is read as SQuAD's nesting.
    """
    if input_file.endswith(".jsonl"):
        records = []
        for line_number, line in enumerate(startup_checks.text_lines(input_file), start=1):
            if not line.strip():
                continue
            try:
                records.append((f"line {line_number}", json.loads(line)))
            except json.JSONDecodeError as err:
                raise UsageError(
                    f"{input_file}: line {line_number} is not JSON ({err.msg})"
                ) from None
        return records
    input_data = load_squad_json(input_file)
    if isinstance(input_data, list):
        return [(f"item {i}", record) for i, record in enumerate(input_data)]
    if isinstance(input_data, dict) and "data" not in input_data and "question" in input_data:
        return [("the top level", input_data)]
    return None


def _simple_example(record, where, position, input_file):
    """The SquadExample of one plain {"context", "question"[, "id"]} record.

    Without an "id" the question is named by its position: "0", "1", ...
    """
    context = _require(record, "context", input_file, where, str)
    question = _require(record, "question", input_file, where, str)
    qas_id = str(record["id"]) if "id" in record else position
    doc_tokens, _ = split_context(context)
    return SquadExample(qas_id=qas_id, question_text=question, doc_tokens=doc_tokens)


def _read_question(
    qa, where, doc_tokens, char_to_word_offset, input_file, is_training, version_2_with_negative
):
    """Returns the SquadExample of one question, or a _Miss when its answer is not at
    its answer_start."""
    qas_id = _require(qa, "id", input_file, where)
    question_text = _require(qa, "question", input_file, where, str)
    if not is_training:
        return SquadExample(qas_id=qas_id, question_text=question_text, doc_tokens=doc_tokens)

    is_impossible = False
    if version_2_with_negative:
        is_impossible = _require(qa, "is_impossible", input_file, where)
    elif qa.get("is_impossible") is True:
        raise UsageError(
            f"{input_file}: question id {qas_id} is_impossible (SQuAD 2.0 data); train on it "
            "with --version_2_with_negative"
        )
    answers = _require(qa, "answers", input_file, where, list)
    if len(answers) != 1 and not is_impossible:
        raise UsageError(
            f"{input_file}: question id {qas_id} has {len(answers)} answers; for "
            "training, each question should have exactly 1 answer"
        )
    if is_impossible:
        return SquadExample(
            qas_id=qas_id,
            question_text=question_text,
            doc_tokens=doc_tokens,
            orig_answer_text="",
            start_position=-1,
            end_position=-1,
            is_impossible=True,
        )

    answer_where = f"{where}.answers[0] (question id {qas_id})"
    orig_answer_text = _require(answers[0], "text", input_file, answer_where, str)
    answer_offset = _require(answers[0], "answer_start", input_file, answer_where, int)
    answer_end = answer_offset + len(orig_answer_text) - 1
    if not 0 <= answer_offset < len(char_to_word_offset) or answer_end >= len(char_to_word_offset):
        raise UsageError(
            f"{input_file}: question id {qas_id}: answer_start {answer_offset} with an "
            f"answer of {len(orig_answer_text)} characters does not fit the context of "
            f"{len(char_to_word_offset)} characters"
        )
    start_position = char_to_word_offset[answer_offset]
    end_position = char_to_word_offset[answer_end]
    # Keep only answers whose text really is in the words its offsets cover; a
    # miss usually means odd unicode, and the question is dropped from training.
    actual_text = " ".join(doc_tokens[start_position : end_position + 1])
    cleaned_answer_text = " ".join(tokenization.whitespace_tokenize(orig_answer_text))
    if actual_text.find(cleaned_answer_text) == -1:
        logging.warning("Could not find answer: '%s' vs. '%s'", actual_text, cleaned_answer_text)
        return _Miss(qas_id, actual_text, cleaned_answer_text)
    return SquadExample(
        qas_id=qas_id,
        question_text=question_text,
        doc_tokens=doc_tokens,
        orig_answer_text=orig_answer_text,
        start_position=start_position,
        end_position=end_position,
        is_impossible=False,
    )
