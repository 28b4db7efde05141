"""What the bad-input tests (tests/scripts/test_bad_input_*.py) start from: a small BERT's
files, vocabularies large enough to tell their casing, trained runs, and the refusal check.

A refusal is checked as the one-line error contract says: exit status 1, no
traceback, an ERROR line naming what is at fault, and the directory the run
would write to holding exactly what it held before.
"""

import csv
import json
import os
import shutil

from helpers import (
    REPO,
    VOCAB_UNCASED,
    error_line,
    flag_args,
    run_script,
    tiny_bert_config,
    write_lines,
)

SENTIMENT = os.path.join(REPO, "demo_data", "sentiment")
NER = os.path.join(REPO, "demo_data", "ner")
CORPUS = os.path.join(REPO, "demo_data", "corpus", "science.txt")
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
HIDDEN = 32


def uncased_tokens():
    """[PAD] [UNK] [CLS] [SEP] [MASK] and 1000 lower-case words of BERT's uncased vocabulary."""
    with open(VOCAB_UNCASED, encoding="utf-8") as f:
        tokens = f.read().split("\n")
    words = [t for t in tokens[1996:] if t.isalpha() and t.islower()][:1000]
    return SPECIAL + words


def cased_tokens():
    """uncased_tokens() with a capitalised copy of every other word: a cased vocabulary."""
    tokens = uncased_tokens()
    return tokens + [t.capitalize() for t in tokens[len(SPECIAL) :: 2]]


def write_model_files(directory, tokens=None, **config_overrides):
    """vocab.txt and bert_config.json (2 layers, 32 wide, 64 positions) in `directory`."""
    os.makedirs(directory, exist_ok=True)
    tokens = tokens or uncased_tokens()
    vocab = write_lines(os.path.join(directory, "vocab.txt"), tokens)
    config = os.path.join(directory, "bert_config.json")
    with open(config, "w", encoding="utf-8") as f:
        json.dump(tiny_bert_config(len(tokens), **config_overrides), f)
    return vocab, config


def listing(directory):
    """Every path under `directory`, relative to it."""
    found = set()
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(root, name), directory))
    return found


def assert_refused(workdir, script, args, *names, env=None):
    """Runs `script`; asserts the one-line error naming every one of `names` and that
    nothing changed in `workdir`. Returns the ERROR line."""
    before = listing(workdir)
    result = run_script(script, *args, env=env)
    last = error_line(result)
    for name in names:
        assert name in last, f"{name!r} not in {last!r}"
    assert listing(workdir) == before, "output left behind"
    return last


def assert_runs(script, *args, env=None):
    """Runs `script` to a successful end; returns its stderr (the log)."""
    result = run_script(script, *args, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stderr


def classifier_args(vocab, config, output_dir, **flags):
    """run_classifier.py on demo_data/sentiment (SST-2 layout), training a few steps."""
    defaults = {
        "task_name": "sst-2",
        "do_train": "true",
        "data_dir": SENTIMENT,
        "vocab_file": vocab,
        "bert_config_file": config,
        "max_seq_length": "32",
        "train_batch_size": "16",
        "num_train_epochs": "0.1",
        "output_dir": str(output_dir),
    }
    return flag_args(defaults, **flags)


def pretraining_args(config, records, output_dir, **flags):
    """run_pretraining.py training the small model 2 steps on records of length 32 (5
    predictions each)."""
    defaults = {
        "input_file": records,
        "output_dir": str(output_dir),
        "bert_config_file": config,
        "do_train": "true",
        "max_seq_length": "32",
        "max_predictions_per_seq": "5",
        "train_batch_size": "4",
        "num_train_steps": "2",
        "num_warmup_steps": "0",
    }
    return flag_args(defaults, **flags)


def write_custom_data(directory, names=("ham", "spam")):
    """train.csv and dev.csv of demo_data/sentiment's sentences, labels renamed to `names`."""
    os.makedirs(directory, exist_ok=True)
    for split in ("train", "dev"):
        with open(os.path.join(SENTIMENT, f"{split}.tsv"), encoding="utf-8") as f:
            rows = [line.rstrip("\n").split("\t") for line in f][1:]
        with open(os.path.join(directory, f"{split}.csv"), "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["text", "label"])
            writer.writerows((text, names[int(label)]) for text, label in rows)
    return str(directory)


def copy_run(source, target):
    """A copy of a run's output directory, to resume or mistreat."""
    shutil.copytree(source, target)
    return str(target)
