"""run_pretraining.py takes --max_seq_length and --max_predictions_per_seq from the records
when they are left out, and holds the records to them when they are given.

create_pretraining_data.py pads every record to its two lengths, so its output says them;
the golden whole-word-mask records were made by the original with 64 and 10, the default
records with 128 and 20 (the flags' defaults).
"""

import os

import helpers
import pytest
import tensorflow as tf
from absl import flags

from bert_lib import engine
from bert_lib.task_data import pretraining_records

WWM_RECORDS = os.path.join(helpers.GOLDEN, "pretraining", "wwm_*.tfrecord")
DEFAULT_RECORDS = os.path.join(helpers.GOLDEN, "pretraining", "default.tfrecord")


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
    tiny = helpers.tiny_bert_config(30522, max_position_embeddings=64)
    return helpers.write_bert_config(tmp_path_factory.mktemp("config") / "config.json", **tiny)


def _checked(rp, config_file, output_dir, *extra):
    """The settings run_pretraining's _check_flags returns for these flags."""
    flags.FLAGS.unparse_flags()
    flags.FLAGS(
        [
            "run_pretraining",
            f"--bert_config_file={config_file}",
            f"--input_file={WWM_RECORDS}",
            f"--output_dir={output_dir}",
            "--do_train",
            "--train_batch_size=4",
            "--num_train_steps=2",
            *extra,
        ]
    )
    settings, *_ = rp._check_flags(rp.settings_from_flags())
    return settings


def test_the_record_schema_is_the_written_features_in_order():
    record = pretraining_records.record_features(7, 3)
    assert tuple(record) == pretraining_records.FEATURE_NAMES
    assert {name: length for name, (length, _, _) in record.items()} == {
        "input_ids": 7,
        "input_mask": 7,
        "segment_ids": 7,
        "masked_lm_positions": 3,
        "masked_lm_ids": 3,
        "masked_lm_weights": 3,
        "next_sentence_labels": 1,
    }


@pytest.mark.parametrize("path, lengths", [(DEFAULT_RECORDS, (128, 20)), (WWM_RECORDS, (64, 10))])
def test_a_records_lengths_are_the_ones_it_was_made_with(path, lengths):
    (first,) = tf.io.gfile.glob(path)[:1]
    record = next(iter(tf.compat.v1.io.tf_record_iterator(first)))
    feature = tf.train.Example.FromString(record).features.feature
    assert pretraining_records.lengths_of_record(feature) == dict(
        zip(("max_seq_length", "max_predictions_per_seq"), lengths)
    )


def test_lengths_left_out_come_from_the_records(rp, config_file, tmp_path):
    settings = _checked(rp, config_file, tmp_path / "out")
    assert (settings.model.max_seq_length, settings.max_predictions_per_seq) == (64, 10)


def test_lengths_given_that_match_the_records_are_kept(rp, config_file, tmp_path):
    settings = _checked(
        rp, config_file, tmp_path / "out", "--max_seq_length=64", "--max_predictions_per_seq=10"
    )
    assert (settings.model.max_seq_length, settings.max_predictions_per_seq) == (64, 10)


@pytest.mark.parametrize(
    "flag, message",
    [
        (
            "--max_seq_length=32",
            r"wwm_a.tfrecord has 64 values of input_ids per record, but --max_seq_length "
            r"asks for 32",
        ),
        (
            "--max_predictions_per_seq=20",
            r"wwm_a.tfrecord has 10 values of masked_lm_positions per record, but "
            r"--max_predictions_per_seq asks for 20",
        ),
    ],
)
def test_a_length_given_that_the_records_do_not_have_is_refused(
    rp, config_file, tmp_path, flag, message
):
    with pytest.raises(ValueError, match=message):
        _checked(rp, config_file, tmp_path / "out", flag)
    assert not (tmp_path / "out").exists()


def test_records_longer_than_the_model_takes_are_refused(rp, tmp_path):
    tiny = helpers.tiny_bert_config(30522, max_position_embeddings=32)
    config = helpers.write_bert_config(tmp_path / "config.json", **tiny)
    with pytest.raises(ValueError, match="Cannot use sequence length 64"):
        _checked(rp, config, tmp_path / "out")


@pytest.mark.slow
def test_pretraining_on_records_of_64_without_the_length_flags_trains(rp, config_file, tmp_path):
    flags.FLAGS.unparse_flags()
    flags.FLAGS(
        [
            "run_pretraining",
            f"--bert_config_file={config_file}",
            f"--input_file={WWM_RECORDS}",
            f"--output_dir={tmp_path / 'out'}",
            "--do_train",
            "--train_batch_size=4",
            "--num_train_steps=2",
        ]
    )
    rp.main(None)
    assert engine.checkpoint_step(engine.newest_checkpoint(str(tmp_path / "out"))) == 2
