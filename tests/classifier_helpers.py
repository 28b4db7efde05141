"""A tiny classifier vocabulary and model, and running run_classifier.py on them."""

import re

from conftest import run_script, write_bert_config, write_lines

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "dog", "is", "hairy", "cat",
         "##s", "run", "good", "bad", "movie", "a", "very", "not", "."]  # fmt: skip

FILLER = ["the", "dog", "is", "hairy", "cat", "run", "movie", "a", "very", "not", "bad", "."]


def model_files(directory):
    vocab = write_lines(directory / "vocab.txt", VOCAB)
    return vocab, write_bert_config(directory / "bert_config.json", len(VOCAB))


def run_classifier_script(*args):
    return run_script("run_classifier.py", *args)


def read_eval_results(path):
    result = {}
    with open(path) as f:
        for line in f:
            match = re.fullmatch(r"(\w+) = (\S+)\n", line)
            assert match, line
            result[match.group(1)] = match.group(2)
    assert list(result) == sorted(result)
    return result
