"""Small fixtures shared by the SQuAD tests: a tiny vocabulary and SQuAD files."""

import json

from conftest import load_script, write_lines

# Every word the hand-built documents use, so word pieces can be worked out by eye.
VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "who",
    "what",
    "when",
    "is",
    "was",
    "the",
    "born",
    "?",
    ".",
    ",",
    "(",
    ")",
    "-",
    "'",
    "s",
    "1895",
    "1943",
    "play",
    "##ing",
    "##ed",
    "cafe",
    "steve",
    "smith",
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "g",
    "h",
]


def write_vocab(tmp_path, words=VOCAB):
    return write_lines(tmp_path / "vocab.txt", words)


def squad_json(paragraphs, version="1.1"):
    """A SQuAD document holding `paragraphs` ([(context, [qa, ...]), ...]) in one article."""
    return {
        "version": version,
        "data": [
            {
                "title": "test",
                "paragraphs": [{"context": c, "qas": qas} for c, qas in paragraphs],
            }
        ],
    }


def qa(qid, question, answers=(), is_impossible=None):
    """One question; `answers` are (text, answer_start) pairs."""
    item = {
        "id": qid,
        "question": question,
        "answers": [{"text": t, "answer_start": s} for t, s in answers],
    }
    if is_impossible is not None:
        item["is_impossible"] = is_impossible
    return item


def write_json(path, obj):
    path.write_text(json.dumps(obj), encoding="utf-8")
    return str(path)


def load_run_squad():
    return load_script("run_squad")
