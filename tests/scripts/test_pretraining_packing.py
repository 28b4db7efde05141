"""run_pretraining.py --pack_sequences: several instances to a row, computed as if alone.

The records are written for the tests (tests/support/pretraining_instances.py):
tf.train.Examples of random instances of 6 to 90 tokens at max_seq_length
128, laid out as create_pretraining_data.py writes them, so most rows hold
two or three. Packed rows are checked against
the records they came from, unpacked again in numpy; the packed model's
losses and gradients against the unpacked model's on the same instances in
one batch; the script's evaluation of one checkpoint packed against
unpacked; a packed run resumed from a checkpoint against one that was not.
"""

import os
import re
import shutil

import helpers
import numpy as np
import pretraining_instances
import pytest
import tensorflow as tf
from pretraining_runs import (
    TINY,
    assert_same_weights,
    pretraining_losses,
    read_eval_results,
    run_main,
)

import modeling
from bert_lib import engine
from bert_lib.plumbing.errors import UsageError
from bert_lib.task_data import pretraining_packing

SEQ = 128
PREDICTIONS = 20
INSTANCES = 24
METRICS = ["masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss"]


@pytest.fixture(scope="module")
def instances():
    return pretraining_instances.random_instances(INSTANCES)


@pytest.fixture(scope="module")
def records(instances, tmp_path_factory):
    return pretraining_instances.write_records(
        tmp_path_factory.mktemp("records") / "short.tfrecord", instances
    )


def _packed_rows(records, max_instances=8):
    """The packed rows of the records, as numpy, in order."""
    rows = pretraining_packing.pack(
        pretraining_packing.decoded_records([records], SEQ, PREDICTIONS),
        SEQ,
        pretraining_packing.max_predictions_per_row(PREDICTIONS, max_instances),
        max_instances,
    )
    return list(rows.as_numpy_iterator())


def test_packed_rows_hold_every_instance_once_each_as_it_was(instances, records):
    for max_instances in (2, 8):
        rows = _packed_rows(records, max_instances)
        read_back = []
        for row in rows:
            slots = np.flatnonzero(row["next_sentence_weights"])
            assert 1 <= len(slots) <= max_instances
            assert (slots == np.arange(len(slots))).all()
            assert row["input_ids"].shape == (SEQ,)
            assert row["masked_lm_weights"].shape == (PREDICTIONS + max_instances // 2,)
            # Padding is no instance's and attends to nothing real.
            assert (row["instance_ids"][row["input_mask"] == 0] == 0).all()
            read_back += [pretraining_instances.unpacked(row, slot) for slot in slots]
        assert sorted(read_back) == sorted(pretraining_instances.as_tuples(i) for i in instances)
        assert len(rows) < len(instances)


def test_padding_shares_count_the_tokens_of_rows_unpacked_and_packed(instances, records):
    shares = pretraining_packing.padding_shares([records], SEQ, PREDICTIONS, 8)
    tokens = sum(int(i["input_mask"].sum()) for i in instances)
    rows = len(_packed_rows(records))
    assert shares["instances"] == INSTANCES and shares["tokens"] == tokens
    assert shares["padding"] == pytest.approx(1 - tokens / (INSTANCES * SEQ))
    assert shares["packed_rows"] == rows
    assert shares["packed_padding"] == pytest.approx(1 - tokens / (rows * SEQ))


def test_padding_command_prints_the_shares_and_refuses_mixed_lengths(
    instances, records, tmp_path, capsys
):
    pretraining_packing.main([records])
    printed = capsys.readouterr().out
    tokens = sum(int(i["input_mask"].sum()) for i in instances)
    rows = len(_packed_rows(records))
    assert f"{INSTANCES} instances of max_seq_length {SEQ}" in printed
    assert f"unpacked: {INSTANCES} rows, padding {1 - tokens / (INSTANCES * SEQ):.1%}" in printed
    assert f"{rows} rows, padding {1 - tokens / (rows * SEQ):.1%}" in printed

    other = str(tmp_path / "other.tfrecord")
    shutil.copy(os.path.join(helpers.GOLDEN, "pretraining", "wwm_a.tfrecord"), other)
    with pytest.raises(UsageError, match=f"{other} holds records of other lengths"):
        pretraining_packing.main([records, other])


def _losses_and_gradients(rp, features, compute_dtype):
    """(masked LM loss, next-sentence loss, gradients of their sum by variable name) of
    the script's heads over BertModel on `features` (numpy, packed or not)."""
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(3)
        tensors = {name: tf.constant(value) for name, value in features.items()}
        mlm_loss, nsp_loss = pretraining_losses(rp, tensors, True, compute_dtype)
        variables = tf.compat.v1.trainable_variables()
        gradients = tf.gradients(mlm_loss + nsp_loss, variables)
        gradients = [tf.convert_to_tensor(g) for g in gradients]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            # The same weights on both sides: set from a seeded numpy draw.
            rng = np.random.default_rng(7)
            for variable in variables:
                shape = variable.shape.as_list()
                variable.load(rng.normal(0, 0.05, shape).astype(np.float32), session)
            mlm, nsp, values = session.run([mlm_loss, nsp_loss, gradients])
    return mlm, nsp, {v.op.name: g for v, g in zip(variables, values)}


def _stacked(dicts):
    return {name: np.stack([d[name] for d in dicts]) for name in dicts[0]}


@pytest.mark.parametrize(
    "compute_dtype, tolerance",
    [(None, 1e-5), (tf.bfloat16, 2e-2), (tf.float16, 5e-3)],
    ids=["fp32", "bf16", "fp16"],
)
def test_packed_and_unpacked_give_the_same_losses_and_gradients(
    rp, instances, records, compute_dtype, tolerance
):
    unpacked = _stacked(instances)
    unpacked = {
        name: value.astype(np.float32 if value.dtype.kind == "f" else np.int32)
        for name, value in unpacked.items()
    }
    packed = _stacked(_packed_rows(records))
    assert len(packed["input_ids"]) < INSTANCES
    mlm, nsp, gradients = _losses_and_gradients(rp, unpacked, compute_dtype)
    packed_mlm, packed_nsp, packed_gradients = _losses_and_gradients(rp, packed, compute_dtype)
    # The unpacked losses recomputed from the heads' own definition: a mean over
    # masked positions and over instances; both must be well away from 0.
    assert mlm > 1.0 and nsp > 0.1
    assert packed_mlm == pytest.approx(mlm, rel=tolerance, abs=tolerance)
    assert packed_nsp == pytest.approx(nsp, rel=tolerance, abs=tolerance)
    assert sorted(packed_gradients) == sorted(gradients)
    for name, gradient in gradients.items():
        scale = max(np.abs(gradient).max(), 1e-3)
        np.testing.assert_allclose(
            packed_gradients[name], gradient, rtol=0, atol=tolerance * scale, err_msg=name
        )


def test_packed_rows_cut_to_their_longest_give_the_full_rows_outputs(records):
    """Packing composes with dynamic lengths (batches cut to their longest row): the
    sequence and pooled outputs at the real tokens are those of full-length rows."""
    rows = _stacked(_packed_rows(records))
    # The rows not full, cut to the longest of them.
    used = rows["input_mask"].sum(axis=1)
    rows = {name: value[used < SEQ] for name, value in rows.items()}
    length = int(used[used < SEQ].max())
    assert len(rows["input_ids"]) >= 2 and length < SEQ
    config = modeling.BertConfig.from_dict(TINY)
    names = ("input_ids", "input_mask", "segment_ids", "position_ids", "instance_ids")
    with tf.Graph().as_default():
        feeds = {name: tf.compat.v1.placeholder(tf.int32, [None, None]) for name in names}
        cls = tf.compat.v1.placeholder(tf.int32, [None, None])
        model = modeling.BertModel(
            config,
            False,
            feeds["input_ids"],
            feeds["input_mask"],
            feeds["segment_ids"],
            position_ids=feeds["position_ids"],
            instance_ids=feeds["instance_ids"],
            cls_positions=cls,
        )
        outputs = [model.get_sequence_output(), model.get_pooled_output()]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())

            def run(cut):
                feed = {feeds[name]: rows[name][:, :cut] for name in names}
                return session.run(outputs, {**feed, cls: rows["cls_positions"]})

            (full_sequence, full_pooled), (sequence, pooled) = run(SEQ), run(length)
    real = rows["input_mask"][:, :length] > 0
    np.testing.assert_allclose(sequence[real], full_sequence[:, :length][real], atol=1e-5)
    np.testing.assert_allclose(pooled, full_pooled, atol=1e-5)


def test_cls_positions_with_pooled_output_only_is_refused():
    config = modeling.BertConfig.from_dict(TINY)
    with tf.Graph().as_default():
        ids = tf.zeros([2, 16], tf.int32)
        with pytest.raises(ValueError, match="cls_positions"):
            modeling.BertModel(
                config,
                False,
                ids,
                pooled_output_only=True,
                cls_positions=tf.zeros([2, 2], tf.int32),
            )


# ---------------------------------------------------------------------------
# The script


def _args(tiny_config_file, records, output_dir, *extra):
    return [
        f"--bert_config_file={tiny_config_file}",
        f"--input_file={records}",
        f"--output_dir={output_dir}",
        "--num_warmup_steps=2",
        "--learning_rate=2e-3",
        "--tf_random_seed=5",
        *extra,
    ]


@pytest.fixture(scope="module")
def checkpoint(rp, tiny_config_file, records, tmp_path_factory):
    """A checkpoint three unpacked training steps away from the initial weights."""
    output_dir = str(tmp_path_factory.mktemp("trained"))
    run_main(
        rp,
        _args(
            tiny_config_file,
            records,
            output_dir,
            "--do_train",
            "--train_batch_size=4",
            "--num_train_steps=3",
        ),
    )
    return engine.newest_checkpoint(output_dir)


@pytest.mark.slow
def test_eval_of_one_checkpoint_is_the_same_packed_and_unpacked(
    rp, tiny_config_file, records, checkpoint, tmp_path
):
    unpacked_dir, packed_dir = str(tmp_path / "unpacked"), str(tmp_path / "packed")
    common = ["--do_eval", f"--init_checkpoint={checkpoint}"]
    # Unpacked, as the original: batches of 4 instances, each evaluated once.
    run_main(
        rp,
        _args(
            tiny_config_file,
            records,
            unpacked_dir,
            *common,
            "--eval_batch_size=4",
            f"--max_eval_steps={INSTANCES // 4}",
        ),
    )
    # Packed: batches of 3 rows, more steps than there are; the last batch is
    # filled with empty rows and evaluation ends with the records.
    run_main(
        rp,
        _args(
            tiny_config_file,
            records,
            packed_dir,
            *common,
            "--pack_sequences",
            "--eval_batch_size=3",
            "--max_eval_steps=100",
        ),
    )
    _, _, unpacked = read_eval_results(unpacked_dir)
    _, _, packed = read_eval_results(packed_dir)
    assert packed["instances"] == INSTANCES
    for name in METRICS:
        assert packed[name] == pytest.approx(unpacked[name], rel=1e-5, abs=1e-5), name
    assert packed["loss"] == pytest.approx(
        unpacked["masked_lm_loss"] + unpacked["next_sentence_loss"], rel=1e-5
    )
    # The checkpoint learned something, so the comparison is not of chance values.
    assert unpacked["masked_lm_loss"] < np.log(30522)


def _stop_at(output_dir, step):
    """Makes output_dir look as if training had been killed after saving `step`: the
    newer checkpoints and their input positions gone."""
    for name in os.listdir(output_dir):
        found = re.match(r"model\.ckpt-(\d+)\.", name)
        if found and int(found.group(1)) > step:
            os.remove(os.path.join(output_dir, name))
    with open(os.path.join(output_dir, "checkpoint"), "w") as f:
        f.write(f'model_checkpoint_path: "model.ckpt-{step}"\n')


@pytest.mark.slow
def test_packed_training_resumes_to_the_weights_and_count_of_an_uninterrupted_run(
    tiny_config_file, records, tmp_path
):
    whole_dir = str(tmp_path / "whole")
    args = [
        "--do_train",
        "--pack_sequences",
        "--max_instances_per_row=3",
        "--train_batch_size=2",
        "--num_train_steps=6",
        "--save_checkpoints_steps=2",
    ]
    whole = helpers.run_script(
        "run_pretraining.py", *_args(tiny_config_file, records, whole_dir, *args)
    )
    assert whole.returncode == 0, whole.stderr[-3000:]
    # The progress lines count instances, more than rows.
    counts = [int(c.replace(",", "")) for c in re.findall(r", ([\d,]+) examples", whole.stderr)]
    assert counts and counts[-1] > 6 * 2
    assert re.search(r"[\d.,]+ examples/s", whole.stderr)

    resumed_dir = str(tmp_path / "resumed")
    shutil.copytree(whole_dir, resumed_dir)
    _stop_at(resumed_dir, 2)
    resumed = helpers.run_script(
        "run_pretraining.py", *_args(tiny_config_file, records, resumed_dir, *args)
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "Restoring parameters from" in resumed.stderr
    final, reference = (engine.newest_checkpoint(d) for d in (resumed_dir, whole_dir))
    assert engine.checkpoint_step(final) == engine.checkpoint_step(reference) == 6
    assert tf.train.load_variable(final, "examples_trained") == counts[-1]
    assert_same_weights(final, reference)


def _train_two_packed_steps_and_eval(rp, config_file, records, output_dir, *flags):
    """run_pretraining: two packed training steps of 2 rows, then evaluation in rows of 4."""
    run_main(
        rp,
        _args(
            config_file,
            records,
            output_dir,
            "--do_train",
            "--do_eval",
            "--pack_sequences",
            "--train_batch_size=2",
            "--eval_batch_size=4",
            "--num_train_steps=2",
            *flags,
        ),
    )


@pytest.mark.slow
def test_packed_training_and_eval_at_bf16_under_xla(rp, tiny_config_file, records, tmp_path):
    output_dir = str(tmp_path / "bf16")
    _train_two_packed_steps_and_eval(
        rp, tiny_config_file, records, output_dir, "--precision=bf16", "--use_xla"
    )
    _, _, result = read_eval_results(output_dir)
    assert result["instances"] == INSTANCES and result["global_step"] == 2
    assert all(np.isfinite(result[name]) for name in METRICS)
    assert result["masked_lm_loss"] == pytest.approx(np.log(30522), abs=1.0)


@pytest.mark.slow
def test_packed_training_and_eval_at_fp16_follow_float32(
    rp, tiny_config_file, records, checkpoint, tmp_path
):
    """fp16 (dynamic loss scaling) trains and evaluates packed rows as float32 does: from
    one checkpoint, two steps move the weights where float32's move them, to a tenth of
    the move, and evaluation counts the same instances, its losses within 1e-2."""
    results, weights = {}, {}
    for precision in ("fp32", "fp16"):
        output_dir = str(tmp_path / precision)
        _train_two_packed_steps_and_eval(
            rp,
            tiny_config_file,
            records,
            output_dir,
            f"--precision={precision}",
            f"--init_checkpoint={checkpoint}",
        )
        _, _, results[precision] = read_eval_results(output_dir)
        weights[precision] = engine.newest_checkpoint(output_dir)
    fp16, fp32 = results["fp16"], results["fp32"]
    assert fp16["instances"] == fp32["instances"] == INSTANCES
    assert fp16["global_step"] == fp32["global_step"] == 2
    for name in ("masked_lm_loss", "next_sentence_loss"):
        assert fp16[name] == pytest.approx(fp32[name], rel=1e-2), name
    # Both steps were taken at fp16 (none skipped for an overflow), in float32's direction.
    assert tf.train.load_variable(weights["fp16"], "examples_trained") == tf.train.load_variable(
        weights["fp32"], "examples_trained"
    )
    for name in ("bert/embeddings/word_embeddings", "bert/encoder/layer_1/output/dense/kernel"):
        start = tf.train.load_variable(checkpoint, name)
        moved = tf.train.load_variable(weights["fp32"], name) - start
        apart = tf.train.load_variable(weights["fp16"], name) - start - moved
        assert np.linalg.norm(moved) > 0
        assert np.linalg.norm(apart) < 0.1 * np.linalg.norm(moved), name
