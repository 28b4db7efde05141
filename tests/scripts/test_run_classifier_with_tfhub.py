"""run_classifier_with_tfhub.py, and convert_checkpoint.py's tf_to_hub and hub_to_tf as commands.

What is checked against what:
  * `convert_checkpoint.py --direction=tf_to_hub` then `--direction=hub_to_tf`
    against the source checkpoint: every value, the config and the
    vocabulary come back exactly, so run_classifier.py with the flags
    hub_to_tf printed is run_classifier.py on the source checkpoint;
  * the script on the exported encoder against that run, with the same
    flags and seed: eval_results.txt, test_results.tsv and every fine-tuned
    variable, within float32 round-off; its SavedModel export against its
    test_results.tsv;
  * an encoder TensorFlow Model Garden exported (tests/data/tfhub),
    fine-tuned by the script: its test predictions against the numpy BERT
    over the fine-tuned checkpoint, that checkpoint's encoder weights
    against the encoder's own (where training started), and a rerun of the
    same command resuming instead of training again;
  * create_model's logits against the numpy BERT over the source weights.
"""

import inspect
import os
import random
import re
import shlex
import subprocess
import tarfile

import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from classifier_helpers import VOCAB, read_eval_results, synthetic_rows, write_sst2_data
from helpers import (
    DATA,
    REPO,
    SUBPROCESS_TIMEOUT,
    checkpoint_values,
    error_line,
    load_script,
    start_python,
    tiny_bert_config,
    write_bert_config,
    write_checkpoint,
    write_lines,
    write_text,
)

import modeling
import tokenization

TFHUB_DATA = os.path.join(DATA, "tfhub")
# Dropout off in the encoder, so that the two scripts' runs are compared on
# arithmetic alone (the classifier head's own 0.1 dropout stays: it is
# seeded by --tf_random_seed in both runs alike).
NO_DROPOUT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
TRAIN_STEPS = 8  # 64 rows, batch 16, 2 epochs
RUN_FLAGS = (
    "--task_name=SST-2",
    "--do_train=true",
    "--do_eval=true",
    "--do_predict=true",
    "--max_seq_length=16",
    "--train_batch_size=16",
    "--eval_batch_size=8",
    "--predict_batch_size=8",
    "--learning_rate=2e-3",
    "--num_train_epochs=2",
    "--tf_random_seed=1",
)


class Process:
    """A script started in the background, its output going to files beside `name`."""

    def __init__(self, directory, name, script, *args, env=None):
        self.stdout_path = os.path.join(directory, f"{name}.stdout")
        self.stderr_path = os.path.join(directory, f"{name}.stderr")
        with open(self.stdout_path, "w") as out, open(self.stderr_path, "w") as err:
            self.process = start_python(
                os.path.join(REPO, script), *args, env=env, stdout=out, stderr=err
            )

    def finish(self):
        """Waits for the end; returns (exit status, stdout, stderr)."""
        status = self.process.wait(timeout=SUBPROCESS_TIMEOUT)
        with open(self.stdout_path) as out, open(self.stderr_path) as err:
            return status, out.read(), err.read()


def succeeded(process):
    status, stdout, stderr = process.finish()
    assert status == 0, stderr[-3000:]
    return stdout, stderr


def source_weights(config):
    """The encoder's and the masked LM head's variables, random (gammas 1 + noise)."""
    rng = np.random.default_rng(5)
    values = {}
    for name, shape in modeling.bert_variable_shapes(config).items():
        if name.startswith(("bert/", "cls/predictions/")):
            value = 0.05 * rng.standard_normal(shape)
            values[name] = (value + (1.0 if name.endswith("gamma") else 0.0)).astype(np.float32)
    return values


def unpack(archive, directory):
    """Unpacks tests/data/tfhub/<archive> into directory; returns the SavedModel's path."""
    with tarfile.open(os.path.join(TFHUB_DATA, archive), "r:xz") as tar:
        (top,) = {name.split("/")[0] for name in tar.getnames()}
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12+ / 3.11.4+
            tar.extractall(directory, filter="data")
        else:
            tar.extractall(directory)
    return os.path.join(directory, top)


def tmpdir_env(tmp):
    """TMPDIR for a run, so that a test sees what the run leaves there."""
    os.makedirs(tmp, exist_ok=True)
    return {"TMPDIR": str(tmp)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A checkpoint out as a TF Hub-format encoder and back in, and two runs on it.

    The script runs on the exported encoder while hub_to_tf and then
    run_classifier.py with the flags it printed run beside it (the tests'
    machine has two cores).
    """
    root = tmp_path_factory.mktemp("hub_runs")
    config_file = write_bert_config(root / "bert_config.json", len(VOCAB), **NO_DROPOUT)
    config = modeling.BertConfig.from_json_file(config_file)
    weights = source_weights(config)
    checkpoint = write_checkpoint(root / "source" / "model.ckpt", weights)
    vocab = write_lines(root / "vocab.txt", VOCAB)
    rng = random.Random(11)
    train, dev, test = (synthetic_rows(rng, n) for n in (64, 24, 16))
    data = write_sst2_data(root / "data", train, dev, test)
    flags = (*RUN_FLAGS, f"--data_dir={data}")
    hub = str(root / "hub")

    export_stdout, _ = succeeded(
        Process(
            root,
            "tf_to_hub",
            "convert_checkpoint.py",
            "--direction=tf_to_hub",
            f"--input={checkpoint}",
            f"--bert_config_file={config_file}",
            f"--vocab_file={vocab}",
            "--do_lower_case=True",
            "--with_mlm",
            f"--output_dir={hub}",
        )
    )
    hub_run = Process(
        root,
        "hub",
        "run_classifier_with_tfhub.py",
        *flags,
        f"--bert_hub_module_handle={hub}",
        f"--output_dir={root / 'out_hub'}",
        f"--export_dir={root / 'export'}",
        env=tmpdir_env(root / "tmp_hub"),
    )
    import_stdout, _ = succeeded(
        Process(
            root,
            "hub_to_tf",
            "convert_checkpoint.py",
            "--direction=hub_to_tf",
            f"--input={hub}",
            f"--output_dir={root / 'imported'}",
        )
    )
    printed = shlex.split(import_stdout.split("Use the model with:")[1])
    printed_run = Process(
        root,
        "printed",
        "run_classifier.py",
        *flags,
        *printed,
        f"--output_dir={root / 'out_printed'}",
    )
    succeeded(hub_run)
    succeeded(printed_run)
    return {
        "root": root,
        "config": config,
        "weights": weights,
        "hub": hub,
        "vocab": vocab,
        "export_stdout": export_stdout,
        "import_stdout": import_stdout,
        "printed": printed,
        "test": test,
    }


def assert_imported_is_the_source(runs):
    """hub_to_tf gave back the source checkpoint's values, config and vocabulary exactly."""
    imported = runs["root"] / "imported"
    values = checkpoint_values(str(imported / "bert_model.ckpt"))
    assert sorted(values) == sorted(runs["weights"])  # the masked LM head's too
    for name, value in runs["weights"].items():
        np.testing.assert_array_equal(values[name], value, err_msg=name)
    config = modeling.BertConfig.from_json_file(str(imported / "bert_config.json"))
    assert config.to_dict() == runs["config"].to_dict()
    with open(runs["vocab"], "rb") as f:
        assert (imported / "vocab.txt").read_bytes() == f.read()


def assert_same_run(out, reference):
    """Two run_classifier output directories hold the same results within float32 round-off."""
    ours, theirs = (
        read_eval_results(out / "eval_results.txt"),
        read_eval_results(reference / "eval_results.txt"),
    )
    assert sorted(ours) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
    assert ours["global_step"] == theirs["global_step"] == str(TRAIN_STEPS)
    for key in ("eval_accuracy", "eval_loss", "loss"):
        assert float(ours[key]) == pytest.approx(float(theirs[key]), rel=1e-6, abs=1e-7), key
    np.testing.assert_allclose(
        np.loadtxt(out / "test_results.tsv"),
        np.loadtxt(reference / "test_results.tsv"),
        rtol=1e-5,
        atol=1e-6,
    )
    trained = checkpoint_values(str(out / f"model.ckpt-{TRAIN_STEPS}"))
    expected = checkpoint_values(str(reference / f"model.ckpt-{TRAIN_STEPS}"))
    assert sorted(trained) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(trained[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    return trained


@pytest.mark.slow
def test_the_script_gives_run_classifiers_results_on_the_exported_checkpoint(runs):
    root = runs["root"]
    # The reference: run_classifier.py on the source checkpoint (the same values).
    assert_imported_is_the_source(runs)
    trained = assert_same_run(root / "out_hub", root / "out_printed")
    # Fine-tuning reached every encoder variable, and began at the checkpoint's values.
    # Except the keys' bias: it adds q.b to every score of a query alike, which the
    # softmax takes away, so its gradient is zero but for round-off (exactly zero
    # with the AVX-512 kernels); its value is still checked to start at the checkpoint's.
    for name, value in runs["weights"].items():
        if name.startswith("bert/"):
            moved = np.max(np.abs(trained[name] - value))
            assert moved < 0.1, (name, moved)
            if not name.endswith("/attention/self/key/bias"):
                assert moved > 0, (name, moved)


@pytest.mark.slow
def test_the_scripts_export_serves_its_predictions_with_the_encoders_vocabulary(runs):
    from bert_lib.export.predictor import Predictor

    export = runs["root"] / "export"
    assert (export / "assets.extra" / "vocab.txt").read_text().splitlines() == VOCAB
    predictor = Predictor(str(export))
    assert predictor.encode.tokenizer.basic_tokenizer.do_lower_case
    served = predictor.predict_arrays([text for text, _ in runs["test"]])
    predicted = np.loadtxt(runs["root"] / "out_hub" / "test_results.tsv")
    np.testing.assert_allclose(served, predicted, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_the_script_leaves_no_temporary_files(runs):
    assert os.listdir(runs["root"] / "tmp_hub") == []


@pytest.mark.slow
def test_tf_to_hub_and_hub_to_tf_give_back_the_checkpoint_and_print_its_flags(runs):
    imported = runs["root"] / "imported"
    assert "and its masked LM head (mlm)" in runs["export_stdout"]
    assert_imported_is_the_source(runs)
    assert "hidden_act=gelu (from its bert_config.json)" in runs["import_stdout"]
    assert runs["printed"] == [
        f"--bert_config_file={imported / 'bert_config.json'}",
        f"--vocab_file={imported / 'vocab.txt'}",
        f"--init_checkpoint={imported / 'bert_model.ckpt'}",
        "--do_lower_case=True",
    ]
    result = read_eval_results(runs["root"] / "out_printed" / "eval_results.txt")
    assert result["global_step"] == str(TRAIN_STEPS)


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["create_model", "model_fn_builder"])
def test_the_originals_model_functions_start_from_the_encoder_and_compute_bert(runs, builder):
    from bert_lib import engine

    hub_script = load_script("run_classifier_with_tfhub")
    config, weights = runs["config"], runs["weights"]
    ids = np.array([[2, 5, 6, 3, 0], [2, 9, 10, 3, 12]], np.int32)
    mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], np.int32)
    types = np.array([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]], np.int32)
    graph = tf.Graph()
    with graph.as_default():
        inputs = (tf.constant(ids), tf.constant(mask), tf.constant(types))
        if builder == "create_model":
            probabilities = hub_script.create_model(False, *inputs, None, 3, runs["hub"])[3]
        else:
            model_fn = hub_script.model_fn_builder(3, 1e-3, None, None, False, runs["hub"])
            features = dict(zip(("input_ids", "input_mask", "segment_ids"), inputs))
            spec = model_fn(features, None, engine.ModeKeys.PREDICT, {})
            probabilities = spec.predictions["probabilities"]
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            variables = {v.op.name: v for v in tf.compat.v1.global_variables()}
            values, probabilities = session.run([variables, probabilities])
    for name, value in weights.items():
        if name.startswith("bert/"):
            np.testing.assert_array_equal(values[name], value, err_msg=name)
    pooled = npr.bert(weights, config, ids, mask, types)["pooled_output"]
    logits = pooled @ values["output_weights"].T.astype(np.float64) + values["output_bias"]
    np.testing.assert_allclose(probabilities, npr.softmax(logits), atol=1e-6)


@pytest.mark.slow
def test_the_tokenizer_comes_from_the_encoder(runs):
    hub_script = load_script("run_classifier_with_tfhub")
    tokenizer = hub_script.create_tokenizer_from_hub_module(runs["hub"])
    assert list(tokenizer.vocab) == VOCAB and tokenizer.basic_tokenizer.do_lower_case


# ---------------------------------------------------------------------------
# An encoder TensorFlow Model Garden exported

# Its settings, as tests/data/README.md records them.
MODEL_GARDEN_CONFIG = tiny_bert_config(
    100,
    hidden_size=16,
    num_attention_heads=4,
    intermediate_size=24,
    max_position_embeddings=24,
    type_vocab_size=3,
)


@pytest.mark.slow
def test_a_model_garden_encoder_fine_tunes_and_a_rerun_resumes(tmp_path):
    hub = unpack("model_garden_bert_mlm.tar.xz", str(tmp_path))
    vocab_file = os.path.join(hub, "assets", "vocab.txt")
    with open(vocab_file, encoding="utf-8") as f:
        words = [w for w in f.read().split() if w.isalpha() and w != "school"]
    rng = random.Random(2)

    def rows(count):
        out = []
        for _ in range(count):
            text = [rng.choice(words) for _ in range(rng.randint(3, 8))]
            label = rng.randint(0, 1)
            if label:
                text.insert(rng.randint(0, len(text)), "school")
            out.append((" ".join(text), label))
        return out

    test = rows(8)
    data = write_sst2_data(tmp_path / "data", rows(32), rows(12), test)
    out = tmp_path / "out"
    command = (
        "run_classifier_with_tfhub.py",
        "--task_name=sst-2",
        "--do_train=true",
        "--do_eval=true",
        "--do_predict=true",
        f"--data_dir={data}",
        f"--bert_hub_module_handle={hub}",
        "--max_seq_length=16",
        "--train_batch_size=8",
        "--learning_rate=1e-3",
        "--num_train_epochs=1",
        f"--output_dir={out}",
    )
    succeeded(Process(tmp_path, "first", *command))
    first_results = (out / "eval_results.txt").read_text()
    first_predictions = np.loadtxt(out / "test_results.tsv")
    _, stderr = succeeded(Process(tmp_path, "again", *command))
    assert "model.ckpt-4 is already at step 4 >= max_steps 4; nothing to train" in stderr
    assert (out / "eval_results.txt").read_text() == first_results
    np.testing.assert_array_equal(np.loadtxt(out / "test_results.tsv"), first_predictions)

    trained = checkpoint_values(str(out / "model.ckpt-4"))
    from bert_lib.export import tfhub_import

    encoder = tfhub_import.read_encoder(hub)
    for name, value in encoder.variables.items():
        if name.startswith("bert/"):
            # 4 Adam steps of at most ~3e-3 each: started from the encoder's weights.
            assert 0 < np.max(np.abs(trained[name] - value)) < 0.05, name

    config = modeling.BertConfig.from_dict(MODEL_GARDEN_CONFIG)
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    rc = load_script("run_classifier")
    features = [
        rc.convert_single_example(
            i, rc.InputExample(f"t-{i}", text, None, "0"), ["0", "1"], 16, tokenizer
        )
        for i, (text, _) in enumerate(test)
    ]
    ids, mask, types = (
        np.array([getattr(f, k) for f in features])
        for k in ("input_ids", "input_mask", "segment_ids")
    )
    pooled = npr.bert(trained, config, ids, mask, types)["pooled_output"]
    logits = pooled @ trained["output_weights"].T.astype(np.float64) + trained["output_bias"]
    np.testing.assert_allclose(first_predictions, npr.softmax(logits), atol=1e-5)


# ---------------------------------------------------------------------------
# Bad input: one ERROR line, exit status 1, nothing written


@pytest.mark.slow
def test_bad_handles_and_flags_are_one_line_errors_and_leave_nothing(tmp_path):
    albert = unpack("model_garden_albert.tar.xz", str(tmp_path / "albert"))
    data = write_sst2_data(tmp_path / "data", [("the dog", 1)], [("a cat", 0)], [])
    # An importable tensorflow_hub that fails as a missing one does, wherever it is installed.
    no_hub = tmp_path / "no_hub"
    no_hub.mkdir()
    write_text(
        no_hub / "tensorflow_hub.py", "raise ImportError('No module named tensorflow_hub')\n"
    )
    missing = str(tmp_path / "nowhere")
    remote = "https://tfhub.dev/tensorflow/bert_en_uncased_L-12_H-768_A-12/4"
    cases = {
        "missing": ([f"--bert_hub_module_handle={missing}"], missing, "no such directory"),
        "albert": ([f"--bert_hub_module_handle={albert}"], albert, "as in ALBERT"),
        "remote": ([f"--bert_hub_module_handle={remote}"], remote, "tensorflow_hub package"),
        "init_checkpoint": (
            [f"--bert_hub_module_handle={albert}", f"--init_checkpoint={tmp_path}/x.ckpt"],
            "--init_checkpoint",
            "cannot be given with --bert_hub_module_handle",
        ),
    }
    env = {"PYTHONPATH": str(no_hub), **tmpdir_env(tmp_path / "tmp")}
    logs = tmp_path / "logs"
    logs.mkdir()
    before = sorted(os.listdir(tmp_path))
    started = {
        name: Process(
            logs,
            name,
            "run_classifier_with_tfhub.py",
            "--task_name=sst-2",
            "--do_train=true",
            f"--data_dir={data}",
            f"--output_dir={tmp_path / 'out'}",
            *args,
            env=env,
        )
        for name, (args, _, _) in cases.items()
    }
    for name, (_, culprit, reason) in cases.items():
        status, _, stderr = started[name].finish()
        last = error_line(subprocess.CompletedProcess(name, status, stderr=stderr))
        assert culprit in last and reason in last, last
    assert sorted(os.listdir(tmp_path)) == before
    assert os.listdir(tmp_path / "tmp") == []


# ---------------------------------------------------------------------------
# The original's names, and flags checked before any work


ORIGINAL_PARAMETERS = {
    "create_model": (
        "is_training",
        "input_ids",
        "input_mask",
        "segment_ids",
        "labels",
        "num_labels",
        "bert_hub_module_handle",
    ),
    "model_fn_builder": (
        "num_labels",
        "learning_rate",
        "num_train_steps",
        "num_warmup_steps",
        "use_tpu",
        "bert_hub_module_handle",
    ),
    "create_tokenizer_from_hub_module": ("bert_hub_module_handle",),
    "main": ("argv",),
}


def test_the_originals_names_and_parameters_are_there():
    hub_script = load_script("run_classifier_with_tfhub")
    for function, parameters in ORIGINAL_PARAMETERS.items():
        signature = inspect.signature(getattr(hub_script, function))
        assert tuple(signature.parameters)[: len(parameters)] == parameters, function
    from absl import flags

    rc = load_script("run_classifier")
    classifier_flags = {f.name for f in flags.FLAGS.get_key_flags_for_module(rc)}
    assert "bert_hub_module_handle" in flags.FLAGS
    assert {"data_dir", "task_name", "output_dir", "do_train", "use_tpu"} <= classifier_flags
    own = {f.name for f in flags.FLAGS.get_key_flags_for_module(hub_script)}
    assert classifier_flags | {"bert_hub_module_handle"} <= own


@pytest.fixture
def parsed_flags(tmp_path):
    """Parses the script's flags in-process; undone after the test."""
    from absl import flags

    hub_script = load_script("run_classifier_with_tfhub")

    def parse(*args):
        flags.FLAGS.unparse_flags()
        flags.FLAGS(
            [
                "run_classifier_with_tfhub.py",
                "--task_name=sst-2",
                "--do_train",
                f"--data_dir={tmp_path}",
                f"--output_dir={tmp_path / 'out'}",
                *args,
            ]
        )
        return hub_script

    yield parse
    flags.FLAGS.unparse_flags()


@pytest.mark.parametrize("name", ["init_checkpoint", "bert_config_file", "vocab_file"])
def test_a_model_flag_beside_the_handle_is_refused_before_any_work(parsed_flags, tmp_path, name):
    from bert_lib.plumbing.errors import UsageError

    hub_script = parsed_flags(f"--bert_hub_module_handle={tmp_path}", f"--{name}=x")
    with pytest.raises(UsageError, match=f"^--{name} cannot be given with --bert_hub_mod"):
        hub_script.main([])
    assert os.listdir(tmp_path) == []


def test_a_missing_handle_is_named(parsed_flags, tmp_path):
    from bert_lib.plumbing.errors import UsageError

    missing = str(tmp_path / "nowhere")
    hub_script = parsed_flags(f"--bert_hub_module_handle={missing}")
    with pytest.raises(UsageError, match=f"^--bert_hub_module_handle={re.escape(missing)}: no"):
        hub_script.main([])
    assert os.listdir(tmp_path) == []


@pytest.mark.slow
def test_a_do_lower_case_the_encoder_contradicts_is_refused(runs, parsed_flags, tmp_path):
    from bert_lib.plumbing.errors import UsageError

    hub_script = parsed_flags(f"--bert_hub_module_handle={runs['hub']}", "--do_lower_case=False")
    with pytest.raises(UsageError, match="^--do_lower_case=False, but the encoder .* has do_lo"):
        hub_script.main([])
    assert os.listdir(tmp_path) == []
