"""run_pretraining.py on a tiny BERT over the golden pre-training TFRecords.

Numbers are checked against numpy recomputations, against the checkpoint
names the original checkpoints use, and against an uninterrupted run; the
script runs in-process through its flags and main(), and as a command for
the kill-and-resume and error-exit checks.
"""

import os
import signal
import subprocess
import time

import helpers
import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from absl import flags
from pretraining_runs import TINY, assert_same_weights, read_eval_results, run_main

import modeling
from bert_lib import engine

DEFAULT_RECORDS = os.path.join(helpers.GOLDEN, "pretraining", "default.tfrecord")
WWM_RECORDS = os.path.join(helpers.GOLDEN, "pretraining", "wwm_*.tfrecord")
SCRIPT = os.path.join(helpers.REPO, "run_pretraining.py")
EVAL_KEYS = [
    "global_step",
    "loss",
    "masked_lm_accuracy",
    "masked_lm_loss",
    "next_sentence_accuracy",
    "next_sentence_loss",
]
TRAIN_STEPS = 30


def _train_args(tiny_config_file, output_dir, *extra):
    """The flags of the reference training run (also the kill-and-resume command)."""
    return [
        f"--bert_config_file={tiny_config_file}",
        f"--input_file={DEFAULT_RECORDS}",
        f"--output_dir={output_dir}",
        "--train_batch_size=4",
        "--eval_batch_size=4",
        f"--num_train_steps={TRAIN_STEPS}",
        "--num_warmup_steps=3",
        "--learning_rate=2e-3",
        "--save_checkpoints_steps=5",
        "--max_eval_steps=6",
        "--tf_random_seed=11",
        *extra,
    ]


@pytest.fixture(scope="module")
def trained(rp, tiny_config_file, tmp_path_factory):
    """Eval of the untrained model, then 30 training steps and eval, in one output_dir."""
    before_dir = str(tmp_path_factory.mktemp("untrained"))
    run_main(rp, _train_args(tiny_config_file, before_dir, "--do_eval"))
    output_dir = str(tmp_path_factory.mktemp("trained"))
    run_main(rp, _train_args(tiny_config_file, output_dir, "--do_train", "--do_eval"))
    return before_dir, output_dir


@pytest.mark.slow
def test_loss_falls_and_eval_results_hold_the_six_keys_sorted(trained):
    before_dir, output_dir = trained
    _, keys, before = read_eval_results(before_dir)
    text, keys, after = read_eval_results(output_dir)
    assert keys == EVAL_KEYS
    assert after["global_step"] == TRAIN_STEPS and before["global_step"] == 0
    # Untrained: about ln(30522) for the masked LM plus ln(2) for next sentence.
    assert before["masked_lm_loss"] == pytest.approx(np.log(30522), abs=0.3)
    assert after["masked_lm_loss"] < before["masked_lm_loss"] - 1.5
    assert after["loss"] < before["loss"] - 1.5
    assert 0.0 <= after["masked_lm_accuracy"] <= 1.0
    assert 0.0 <= after["next_sentence_accuracy"] <= 1.0
    # The eval loss is the mean of the batch losses of both heads; with
    # near-equal mask counts per batch it is close to the sum of the two.
    assert after["loss"] == pytest.approx(
        after["masked_lm_loss"] + after["next_sentence_loss"], rel=0.05
    )
    # Values print as float32, as the original's numpy results did.
    assert f"loss = {str(np.float32(after['loss']))}\n" in text


@pytest.mark.slow
def test_eval_of_the_same_checkpoint_twice_gives_identical_numbers(rp, tiny_config_file, trained):
    _, output_dir = trained
    first, _, _ = read_eval_results(output_dir)
    run_main(rp, _train_args(tiny_config_file, output_dir, "--do_eval"))
    second, _, _ = read_eval_results(output_dir)
    assert first == second


@pytest.mark.slow
def test_training_writes_tensorboard_loss_and_learning_rate(trained):
    _, output_dir = trained
    scalars = {}
    for name in os.listdir(output_dir):
        if name.startswith("events.out.tfevents"):
            for event in tf.compat.v1.train.summary_iterator(os.path.join(output_dir, name)):
                for value in event.summary.value:
                    scalars.setdefault(value.tag, {})[event.step] = value.simple_value
    assert sorted(scalars["loss"]) == [1, TRAIN_STEPS]
    assert scalars["loss"][TRAIN_STEPS] < scalars["loss"][1]
    # Warmup over 3 steps of 2e-3: step 1 trains with 0 * 2e-3 / 3; linear decay after.
    assert scalars["learning_rate"][1] == pytest.approx(0.0)
    assert scalars["learning_rate"][TRAIN_STEPS] == pytest.approx(2e-3 * (1 - 29 / 30), rel=1e-4)
    assert os.listdir(os.path.join(output_dir, "eval"))


@pytest.mark.slow
def test_killed_run_resumes_to_the_weights_of_an_uninterrupted_run(
    tiny_config_file, trained, tmp_path
):
    _, reference_dir = trained
    output_dir = str(tmp_path / "resumed")
    command = [SCRIPT, *_train_args(tiny_config_file, output_dir, "--do_train")]
    process = helpers.start_python(*command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 240
        while engine.newest_checkpoint(output_dir) is None:
            assert process.poll() is None, "training ended before its first checkpoint"
            assert time.time() < deadline, "no checkpoint within 240 s"
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    killed_at = engine.checkpoint_step(engine.newest_checkpoint(output_dir))
    assert killed_at < TRAIN_STEPS

    done = helpers.run_python(*command)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Restoring parameters from" in done.stderr
    final = engine.newest_checkpoint(output_dir)
    reference = engine.newest_checkpoint(reference_dir)
    assert engine.checkpoint_step(final) == engine.checkpoint_step(reference) == TRAIN_STEPS
    # Equal to float32 round-off (seen on an AVX2 machine: one element of the 976,704 word
    # embeddings off by 2.2e-6); a step lost or taken twice would move the weights by about
    # an Adam step, the learning rate (at least 6.7e-5 here, at the last step).
    assert_same_weights(final, reference)


def test_masked_lm_loss_equals_numpy_from_the_head_weights(rp):
    config = modeling.BertConfig.from_dict(TINY)
    input_fn = rp.input_fn_builder([DEFAULT_RECORDS], 128, 20, is_training=False)
    with tf.Graph().as_default():
        batch = tf.compat.v1.data.make_one_shot_iterator(input_fn({"batch_size": 3})).get_next()
        with tf.compat.v1.Session() as session:
            batch = session.run(batch)
    with tf.Graph().as_default():
        model = modeling.BertModel(
            config,
            is_training=False,
            input_ids=tf.constant(batch["input_ids"]),
            input_mask=tf.constant(batch["input_mask"]),
            token_type_ids=tf.constant(batch["segment_ids"]),
        )
        sequence_output = model.get_sequence_output()
        loss, per_example_loss, log_probs = rp.get_masked_lm_output(
            config,
            sequence_output,
            model.get_embedding_table(),
            tf.constant(batch["masked_lm_positions"]),
            tf.constant(batch["masked_lm_ids"]),
            tf.constant(batch["masked_lm_weights"]),
        )
        variables = {v.op.name: v for v in tf.compat.v1.global_variables()}
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            # A non-zero output bias, so that it is tested too.
            bias = variables["cls/predictions/output_bias"]
            session.run(bias.assign(tf.random.normal(bias.shape, seed=1)))
            got = session.run(
                {
                    "loss": loss,
                    "per_example": per_example_loss,
                    "log_probs": log_probs,
                    "sequence": sequence_output,
                    "vars": variables,
                }
            )
    v = {name: value.astype(np.float64) for name, value in got["vars"].items()}
    positions = batch["masked_lm_positions"]
    hidden = got["sequence"].astype(np.float64)[np.arange(3)[:, None], positions].reshape(60, 32)
    hidden = npr.gelu(
        hidden @ v["cls/predictions/transform/dense/kernel"]
        + v["cls/predictions/transform/dense/bias"]
    )
    hidden = npr.layer_norm(
        hidden,
        v["cls/predictions/transform/LayerNorm/beta"],
        v["cls/predictions/transform/LayerNorm/gamma"],
    )
    logits = hidden @ v["bert/embeddings/word_embeddings"].T + v["cls/predictions/output_bias"]
    expected_log_probs = npr.log_softmax(logits)
    labels = batch["masked_lm_ids"].reshape(-1)
    weights = batch["masked_lm_weights"].reshape(-1).astype(np.float64)
    nll = -expected_log_probs[np.arange(60), labels]
    expected_loss = np.sum(weights * nll) / (np.sum(weights) + 1e-5)

    assert 0 < weights.sum() < 60  # real predictions and padding in the batch
    np.testing.assert_allclose(got["log_probs"], expected_log_probs, atol=2e-4)
    np.testing.assert_allclose(got["per_example"], nll, rtol=1e-4)
    np.testing.assert_allclose(got["loss"], expected_loss, rtol=1e-5)


def test_gather_indexes_picks_each_sequences_positions(rp):
    values = np.arange(2 * 5 * 3, dtype=np.float32).reshape(2, 5, 3)
    positions = np.array([[4, 0], [1, 1]], dtype=np.int32)
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        got = session.run(rp.gather_indexes(tf.constant(values), tf.constant(positions)))
    np.testing.assert_array_equal(got, [values[0, 4], values[0, 0], values[1, 1], values[1, 1]])


def _spec_variable_shapes(c):
    """Every trainable variable of pre-training, named and shaped as the original names them."""
    h, inter = c["hidden_size"], c["intermediate_size"]
    shapes = {
        "bert/embeddings/word_embeddings": [c["vocab_size"], h],
        "bert/embeddings/token_type_embeddings": [c["type_vocab_size"], h],
        "bert/embeddings/position_embeddings": [c["max_position_embeddings"], h],
        "bert/embeddings/LayerNorm/beta": [h],
        "bert/embeddings/LayerNorm/gamma": [h],
        "bert/pooler/dense/kernel": [h, h],
        "bert/pooler/dense/bias": [h],
        "cls/predictions/transform/dense/kernel": [h, h],
        "cls/predictions/transform/dense/bias": [h],
        "cls/predictions/transform/LayerNorm/beta": [h],
        "cls/predictions/transform/LayerNorm/gamma": [h],
        "cls/predictions/output_bias": [c["vocab_size"]],
        "cls/seq_relationship/output_weights": [2, h],
        "cls/seq_relationship/output_bias": [2],
    }
    for layer in range(c["num_hidden_layers"]):
        prefix = f"bert/encoder/layer_{layer}"
        for part in ("query", "key", "value"):
            shapes[f"{prefix}/attention/self/{part}/kernel"] = [h, h]
            shapes[f"{prefix}/attention/self/{part}/bias"] = [h]
        shapes[f"{prefix}/attention/output/dense/kernel"] = [h, h]
        shapes[f"{prefix}/attention/output/dense/bias"] = [h]
        shapes[f"{prefix}/intermediate/dense/kernel"] = [h, inter]
        shapes[f"{prefix}/intermediate/dense/bias"] = [inter]
        shapes[f"{prefix}/output/dense/kernel"] = [inter, h]
        shapes[f"{prefix}/output/dense/bias"] = [h]
        for norm in ("attention/output/LayerNorm", "output/LayerNorm"):
            shapes[f"{prefix}/{norm}/beta"] = [h]
            shapes[f"{prefix}/{norm}/gamma"] = [h]
    return shapes


@pytest.mark.slow
def test_checkpoint_with_the_original_names_and_adam_slots_resumes(rp, tiny_config_file, tmp_path):
    rng = np.random.RandomState(0)
    saved = {}
    for name, shape in _spec_variable_shapes(TINY).items():
        saved[name] = rng.normal(0.0, 0.02, shape).astype(np.float32)
        saved[f"{name}/adam_m"] = rng.normal(0.0, 1.0, shape).astype(np.float32)
        saved[f"{name}/adam_v"] = rng.uniform(1.0, 2.0, shape).astype(np.float32)
    helpers.write_checkpoint(
        tmp_path / "model.ckpt", {**saved, "global_step": np.int64(7)}, global_step=7
    )

    run_main(
        rp,
        [
            f"--bert_config_file={tiny_config_file}",
            f"--input_file={DEFAULT_RECORDS}",
            f"--output_dir={tmp_path}",
            "--do_train",
            "--train_batch_size=2",
            "--num_train_steps=8",
            "--num_warmup_steps=0",
            "--learning_rate=1e-4",
        ],
    )
    final = engine.newest_checkpoint(str(tmp_path))
    assert engine.checkpoint_step(final) == 8
    assert {name for name, _ in tf.train.list_variables(final)} == set(saved) | {"global_step"}
    # One step from the saved state: each weight moves by at most
    # lr * (|m| / sqrt(v) + decay), and each m is 0.9 * saved m plus a tenth of
    # a clipped gradient. Weights or slots started afresh would break both.
    for name in _spec_variable_shapes(TINY):
        weight = tf.train.load_variable(final, name)
        assert np.max(np.abs(weight - saved[name])) < 1e-3, name
        m = tf.train.load_variable(final, f"{name}/adam_m")
        assert np.max(np.abs(m - 0.9 * saved[f"{name}/adam_m"])) <= 0.1 + 1e-6, name


@pytest.mark.slow
def test_init_checkpoint_initializes_eval_and_is_logged(
    rp, tiny_config_file, trained, tmp_path, caplog
):
    _, trained_dir = trained
    checkpoint = engine.newest_checkpoint(trained_dir)
    output_dir = str(tmp_path / "from_init")
    with caplog.at_level("INFO"):
        run_main(
            rp,
            _train_args(
                tiny_config_file, output_dir, "--do_eval", f"--init_checkpoint={checkpoint}"
            ),
        )
    _, _, from_init = read_eval_results(output_dir)
    _, _, reference = read_eval_results(trained_dir)
    assert from_init.pop("global_step") == 0
    reference.pop("global_step")
    assert from_init == pytest.approx(reference, rel=1e-6)
    logged = caplog.text
    assert (
        "name = bert/embeddings/word_embeddings:0, shape = (30522, 32), *INIT_FROM_CKPT*" in logged
    )


@pytest.mark.slow
def test_whole_word_mask_records_of_seq_64_train(rp, tmp_path):
    config_path = helpers.write_bert_config(
        tmp_path / "config.json", **dict(TINY, max_position_embeddings=64)
    )
    run_main(
        rp,
        [
            f"--bert_config_file={config_path}",
            f"--input_file={WWM_RECORDS}",
            f"--output_dir={tmp_path / 'out'}",
            "--do_train",
            "--max_seq_length=64",
            "--max_predictions_per_seq=10",
            "--train_batch_size=4",
            "--num_train_steps=2",
        ],
    )
    assert engine.checkpoint_step(engine.newest_checkpoint(str(tmp_path / "out"))) == 2


@pytest.mark.parametrize(
    "extra, message",
    [
        ([], "At least one of `do_train` or `do_eval` must be True"),
        (["--do_train", "--max_seq_length=256"], "Cannot use sequence length 256"),
        (["--do_train", "--input_file=/nonexistent/*.tfrecord"], "no file matches /nonexistent"),
        (["--do_eval", "--eval_batch_size=0"], "--eval_batch_size must be positive"),
        (["--do_train", "--init_checkpoint=/nonexistent/model.ckpt"], "no checkpoint at"),
        (
            ["--do_eval", "--max_seq_length=64"],
            "has 128 values of input_ids per record, but --max_seq_length asks for 64",
        ),
        (
            ["--do_eval", "--max_predictions_per_seq=10"],
            "has 20 values of masked_lm_positions per record, but --max_predictions_per_seq",
        ),
    ],
)
def test_bad_flags_fail_before_any_work(rp, tiny_config_file, tmp_path, extra, message):
    output_dir = tmp_path / "out"
    args = [
        f"--bert_config_file={tiny_config_file}",
        f"--input_file={DEFAULT_RECORDS}",
        f"--output_dir={output_dir}",
        *extra,
    ]
    # A number its flag's rule refuses is refused as the flags are parsed (an absl
    # IllegalFlagValueError, which run_main reports in one line); the rest by main.
    with pytest.raises((ValueError, flags.IllegalFlagValueError), match=message):
        run_main(rp, args)
    assert not output_dir.exists()


@pytest.mark.slow
def test_output_dir_that_is_a_file_fails_in_one_line_without_traceback(tiny_config_file, tmp_path):
    output_file = tmp_path / "a_file"
    output_file.write_text("keep me")
    done = helpers.run_python(
        SCRIPT,
        f"--bert_config_file={tiny_config_file}",
        f"--input_file={DEFAULT_RECORDS}",
        f"--output_dir={output_file}",
        "--do_train",
    )
    assert (
        helpers.error_line(done)
        == f"ERROR: --output_dir: {output_file} is a file, not a directory"
    )
    assert output_file.read_text() == "keep me"
