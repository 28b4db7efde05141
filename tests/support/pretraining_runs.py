"""run_pretraining.py run in-process by the tests of pre-training: the tiny BERT they
train (no dropout, so that runs compare number for number), main() run on a list of
flags, eval_results.txt read back, the script's two losses over BertModel
on a batch of features, and two checkpoints' weights compared. The fixtures built on these are in
tests/scripts/conftest.py."""

import os

import helpers
import numpy as np
from absl import flags

import modeling

# The features of a packed row that BertModel takes as keyword arguments.
PACKING_FEATURES = ("position_ids", "instance_ids", "cls_positions")

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


def pretraining_losses(rp, features, is_training, compute_dtype=None):
    """(masked LM loss, next-sentence loss) tensors of run_pretraining's heads (module
    `rp`) over a TINY BertModel on `features` (tensors of a batch, packed rows or not)."""
    config = modeling.BertConfig.from_dict(TINY)
    model = modeling.BertModel(
        config,
        is_training=is_training,
        input_ids=features["input_ids"],
        input_mask=features["input_mask"],
        token_type_ids=features["segment_ids"],
        compute_dtype=compute_dtype,
        **{name: features[name] for name in PACKING_FEATURES if name in features},
    )
    mlm_loss, _, _ = rp.get_masked_lm_output(
        config,
        model.get_sequence_output(),
        model.get_embedding_table(),
        features["masked_lm_positions"],
        features["masked_lm_ids"],
        features["masked_lm_weights"],
    )
    nsp_loss, _, _ = rp.get_next_sentence_output(
        config,
        model.get_pooled_output(),
        features["next_sentence_labels"],
        features.get("next_sentence_weights"),
    )
    return mlm_loss, nsp_loss


def assert_same_weights(checkpoint, reference):
    """`checkpoint` holds the variables of `reference`, each equal to float32 round-off
    (1e-5); a training step lost or taken twice moves them by about an Adam step."""
    got, want = helpers.checkpoint_values(checkpoint), helpers.checkpoint_values(reference)
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
