"""Small fixtures shared by the SQuAD tests: a tiny vocabulary and SQuAD files."""

import json
import random

from helpers import (
    load_script,
    run_script,
    tiny_bert_config,
    write_bert_config,
    write_lines,
)

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


# A toy task a tiny model learns: the answer is the word after "marker".

FILLERS = [f"w{i}" for i in range(20)]
TOY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "what", "follows", "marker", "?"]
TOY_VOCAB += FILLERS
QUESTION = "what follows marker ?"
TOY_CONFIG = tiny_bert_config(
    len(TOY_VOCAB),
    hidden_size=64,
    num_attention_heads=4,
    intermediate_size=128,
    hidden_dropout_prob=0.0,
    attention_probs_dropout_prob=0.0,
    max_position_embeddings=32,
)


def toy_squad(num_questions, seed, impossible_fraction=0.0):
    """Contexts of filler words; the answer is the word after "marker".

    With impossible_fraction, some contexts have no marker and no answer
    (SQuAD 2.0 style). Returns (squad json, {id: gold text or ""}).
    """
    rng = random.Random(seed)
    paragraphs = []
    golds = {}
    for i in range(num_questions):
        words = [rng.choice(FILLERS) for _ in range(rng.randint(6, 10))]
        qid = f"q{i}"
        if rng.random() < impossible_fraction:
            paragraphs.append((" ".join(words), [qa(qid, QUESTION, is_impossible=True)]))
            golds[qid] = ""
            continue
        pos = rng.randint(0, len(words) - 1)
        words.insert(pos, "marker")
        answer = words[pos + 1]
        start = len(" ".join(words[: pos + 1])) + 1
        item = qa(qid, QUESTION, [(answer, start)], is_impossible=False)
        paragraphs.append((" ".join(words), [item]))
        golds[qid] = answer
    return squad_json(paragraphs), golds


def toy_model_flags(tmp_path):
    """--vocab_file and --bert_config_file flags of the toy task's model files."""
    vocab = write_lines(tmp_path / "vocab.txt", TOY_VOCAB)
    config = write_bert_config(tmp_path / "bert_config.json", **TOY_CONFIG)
    return [f"--vocab_file={vocab}", f"--bert_config_file={config}"]


def run_squad_script(args):
    return run_script("run_squad.py", *args)
