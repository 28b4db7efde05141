"""run_pretraining.py run in-process by the tests of pre-training: the tiny BERT they
train (no dropout, so that runs compare number for number), main() run on a list of
flags, and eval_results.txt read back. The fixtures built on these are in
tests/scripts/conftest.py."""

import os

import helpers
from absl import flags

TINY = helpers.tiny_bert_config(
    30522, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=128
)


def run_main(rp, args):
    """run_pretraining's main on the flags `args`, none of an earlier run's left set."""
    flags.FLAGS.unparse_flags()
    flags.FLAGS(["run_pretraining", *args])
    rp.main(None)


def read_eval_results(output_dir):
    """eval_results.txt of `output_dir`: its text, its keys in order, and their values."""
    with open(os.path.join(output_dir, "eval_results.txt")) as f:
        text = f.read()
    pairs = [line.split(" = ") for line in text.splitlines()]
    return text, [key for key, _ in pairs], {key: float(value) for key, value in pairs}
