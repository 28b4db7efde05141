"""The TF 1.x API on TensorFlow 2 (bert_lib/tf1, run_tf1.py): layers, CRF, metrics, errors.

In-process tests build plain tf.compat.v1 graphs with the pieces (they never
call tf1.install(), which would switch this whole test process to TF1
behaviour); the slow tests run the TF 1.x-style scripts of
tests/data/tf1_scripts through run_tf1.py as a user would, and recompute
their results with numpy from the checkpoints they wrote.
"""

import itertools
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import pytest
import tensorflow as tf
from helpers import DATA, HAS_TF_KERAS, REPO, error_line, run_code, run_script

from bert_lib.tf1.contrib import crf as tf1_crf
from bert_lib.tf1.contrib import metrics as tf1_metrics
from bert_lib.tf1.estimator import estimators as tf1_estimator
from bert_lib.tf1.layers import tf_layers as tf1_layers
from bert_lib.tf1.machinery import namespaces as tf1_api

V1 = tf.compat.v1
SCRIPTS = os.path.join(DATA, "tf1_scripts")


def run_tf1(script, *args, cwd=REPO):
    return run_script("run_tf1.py", script, *args, cwd=cwd)


def run_tf1_source(directory, name, source):
    """`source` saved as directory/name and run by run_tf1.py from `directory`, which
    must end well; returns the run."""
    script = directory / name
    script.write_text(source)
    result = run_tf1(str(script), cwd=str(directory))
    assert result.returncode == 0, result.stderr[-3000:]
    return result


# ---------------------------------------------------------------------------
# Layers


def test_dense_names_its_variables_per_graph_as_tf1_did():
    names = []
    for _ in range(2):
        with tf.Graph().as_default():
            x = V1.placeholder(tf.float32, [None, 3])
            tf1_layers.dense(x, 4)
            with V1.variable_scope("head"):
                tf1_layers.dense(x, 2, use_bias=False)
                tf1_layers.dense(x, 2, name="named")
            tf1_layers.dense(x, 5)
            names.append([v.op.name for v in V1.global_variables()])
    assert (
        names[0]
        == names[1]
        == [
            "dense/kernel",
            "dense/bias",
            "head/dense/kernel",
            "head/named/kernel",
            "head/named/bias",
            "dense_1/kernel",
            "dense_1/bias",
        ]
    )


def test_dense_on_rank_3_and_layer_norm_equal_numpy():
    rng = np.random.RandomState(0)
    x = rng.randn(2, 3, 4).astype(np.float32)
    with tf.Graph().as_default(), V1.Session() as session:
        y = tf1_layers.dense(tf.constant(x), 5, activation=tf.tanh)
        normed = tf1_layers.layer_norm(y, begin_norm_axis=-1, begin_params_axis=-1)
        session.run(V1.global_variables_initializer())
        variables = {v.op.name: v for v in V1.global_variables()}
        kernel, bias = session.run([variables["dense/kernel"], variables["dense/bias"]])
        gamma = variables["LayerNorm/gamma"]
        session.run(gamma.assign(np.arange(5.0, dtype=np.float32)))
        got_y, got_normed = session.run([y, normed])
    want_y = np.tanh(x.astype(np.float64) @ kernel + bias)
    np.testing.assert_allclose(got_y, want_y, atol=1e-6)
    mean = want_y.mean(-1, keepdims=True)
    var = ((want_y - mean) ** 2).mean(-1, keepdims=True)
    want = (want_y - mean) / np.sqrt(var + 1e-12) * np.arange(5.0)
    np.testing.assert_allclose(got_normed, want, atol=1e-5)


def test_dropout_drops_only_in_training():
    with tf.Graph().as_default(), V1.Session() as session:
        x = tf.ones([1000])
        training = V1.placeholder(tf.bool, [])
        kept = session.run(tf1_layers.dropout(x, rate=0.5, training=False))
        dropped = session.run(tf1_layers.dropout(x, rate=0.5, training=training), {training: True})
    np.testing.assert_array_equal(kept, np.ones(1000))
    assert 350 < np.sum(dropped == 0) < 650
    assert set(np.unique(dropped)) <= {0.0, 2.0}


def test_conv_and_pooling_layers_equal_numpy():
    rng = np.random.RandomState(5)
    x1 = rng.randn(2, 7, 3).astype(np.float32)
    x2 = rng.randn(1, 5, 6, 2).astype(np.float32)
    with tf.Graph().as_default(), V1.Session() as session:
        y1 = tf1_layers.conv1d(tf.constant(x1), 4, 3, activation=tf.nn.relu)
        p1 = tf1_layers.max_pooling1d(y1, 2, 2)
        y2 = tf1_layers.conv2d(tf.constant(x2), 3, (2, 3), padding="same")
        p2 = tf1_layers.average_pooling2d(y2, 2, 1)
        session.run(V1.global_variables_initializer())
        v = {var.op.name: session.run(var) for var in V1.global_variables()}
        got = session.run([y1, p1, y2, p2])
    assert sorted(v) == ["conv1d/bias", "conv1d/kernel", "conv2d/bias", "conv2d/kernel"]
    k1 = v["conv1d/kernel"]
    want1 = np.stack([np.einsum("bkc,kcf->bf", x1[:, t : t + 3], k1) for t in range(5)], axis=1)
    want1 = np.maximum(want1 + v["conv1d/bias"], 0)
    np.testing.assert_allclose(got[0], want1, atol=1e-5)
    np.testing.assert_allclose(got[1], np.maximum(want1[:, 0:4:2], want1[:, 1:5:2]), atol=1e-6)
    # "same" with a 2x3 kernel pads 0 rows above, 1 below, 1 column each side.
    padded = np.pad(x2, [(0, 0), (0, 1), (1, 1), (0, 0)])
    k2 = v["conv2d/kernel"]
    want2 = np.zeros((1, 5, 6, 3))
    for i in range(5):
        for j in range(6):
            want2[:, i, j] = np.einsum("bhwc,hwcf->bf", padded[:, i : i + 2, j : j + 3], k2)
    np.testing.assert_allclose(got[2], want2, atol=1e-5)
    want_pool = (want2[:, :-1, :-1] + want2[:, 1:, :-1] + want2[:, :-1, 1:] + want2[:, 1:, 1:]) / 4
    np.testing.assert_allclose(got[3], want_pool, atol=1e-5)


def test_regularizers_of_dense_land_in_the_regularization_losses():
    w = np.array([[1.0, -2.0], [0.5, 3.0]], np.float32)
    with tf.Graph().as_default(), V1.Session() as session:
        x = tf.ones([1, 2])
        tf1_layers.dense(
            x,
            2,
            kernel_initializer=V1.constant_initializer(w),
            kernel_regularizer=tf1_layers.l2_regularizer(0.1),
            bias_regularizer=tf1_layers.l1_regularizer(0.5),
            bias_initializer=V1.constant_initializer([1.0, -4.0]),
        )
        session.run(V1.global_variables_initializer())
        losses = session.run(V1.get_collection(V1.GraphKeys.REGULARIZATION_LOSSES))
    np.testing.assert_allclose(losses, [0.1 * (w**2).sum() / 2, 0.5 * 5.0], rtol=1e-6)


# ---------------------------------------------------------------------------
# CRF, against enumerating every tag sequence


def _brute_force(emissions, transitions, length):
    """(log of the sum of exp(score) over all sequences, best sequence, its score)."""
    scores = {}
    for tags in itertools.product(range(emissions.shape[1]), repeat=length):
        score = sum(emissions[t, tag] for t, tag in enumerate(tags))
        score += sum(transitions[a, b] for a, b in zip(tags[:-1], tags[1:]))
        scores[tags] = score
    values = np.array(list(scores.values()))
    log_norm = values.max() + np.log(np.exp(values - values.max()).sum())
    best = max(scores, key=scores.get)
    return log_norm, list(best), scores


def test_crf_log_likelihood_and_decode_equal_brute_force():
    rng = np.random.RandomState(3)
    batch, time, num_tags = 4, 5, 3
    emissions = rng.randn(batch, time, num_tags).astype(np.float32)
    transitions = rng.randn(num_tags, num_tags).astype(np.float32)
    lengths = np.array([5, 3, 1, 4], np.int32)
    tags = rng.randint(0, num_tags, size=(batch, time)).astype(np.int32)
    with tf.Graph().as_default(), V1.Session() as session:
        log_likelihood, _ = tf1_crf.crf_log_likelihood(
            tf.constant(emissions),
            tf.constant(tags),
            tf.constant(lengths),
            tf.constant(transitions),
        )
        decoded, best_score = tf1_crf.crf_decode(
            tf.constant(emissions), tf.constant(transitions), tf.constant(lengths)
        )
        got_ll, got_tags, got_score = session.run([log_likelihood, decoded, best_score])
    for i in range(batch):
        n = lengths[i]
        log_norm, best, scores = _brute_force(
            emissions[i].astype(np.float64), transitions.astype(np.float64), n
        )
        assert got_ll[i] == pytest.approx(scores[tuple(tags[i, :n])] - log_norm, abs=1e-4)
        assert got_tags[i, :n].tolist() == best
        assert got_score[i] == pytest.approx(scores[tuple(best)], abs=1e-4)
        assert tf1_crf.viterbi_decode(emissions[i, :n], transitions)[0] == best


def test_crf_log_likelihood_makes_its_transitions_variable():
    with tf.Graph().as_default():
        inputs = tf.zeros([2, 3, 4])
        _, transitions = tf1_crf.crf_log_likelihood(
            inputs, tf.zeros([2, 3], tf.int32), tf.constant([3, 2])
        )
        assert transitions.op.name == "transitions"
        assert transitions.shape.as_list() == [4, 4]


# ---------------------------------------------------------------------------
# Metrics


def test_streaming_pearson_correlation_equals_numpy_over_batches():
    rng = np.random.RandomState(1)
    x = rng.randn(3, 7)
    y = x + rng.randn(3, 7)
    with tf.Graph().as_default(), V1.Session() as session:
        px = V1.placeholder(tf.float32, [7])
        py = V1.placeholder(tf.float32, [7])
        value, update = tf1_metrics.streaming_pearson_correlation(px, py)
        session.run(V1.local_variables_initializer())
        for i in range(3):
            session.run(update, {px: x[i], py: y[i]})
        got = session.run(value)
    assert got == pytest.approx(np.corrcoef(x.ravel(), y.ravel())[0, 1], abs=1e-5)


def test_streaming_concat_holds_every_batch_in_order():
    batches = [np.arange(6.0).reshape(2, 3), np.arange(6.0, 15.0).reshape(3, 3)]
    with tf.Graph().as_default(), V1.Session() as session:
        values = V1.placeholder(tf.float64, [None, 3])
        value, update = tf1_metrics.streaming_concat(values)
        session.run(V1.local_variables_initializer())
        for batch in batches:
            session.run(update, {values: batch})
        got = session.run(value)
    np.testing.assert_array_equal(got, np.concatenate(batches))


# ---------------------------------------------------------------------------
# Estimator semantics


def test_evaluate_values_print_as_tf1s_float32():
    assert str(tf1_estimator.numpy_value("eval_accuracy", 0.44999998807907104)) == "0.45"
    assert str(tf1_estimator.numpy_value("global_step", 12)) == "12"
    assert isinstance(tf1_estimator.numpy_value("global_step", 12), np.int64)


def test_an_estimator_without_model_dir_works_in_a_new_temporary_one():
    estimator = tf1_estimator.Estimator(lambda features: None)
    try:
        assert os.path.isdir(estimator.model_dir)
        assert os.listdir(estimator.model_dir) == []
        assert estimator.model_dir.startswith(tempfile.gettempdir())
    finally:
        shutil.rmtree(estimator.model_dir)


def test_run_config_settings_reach_the_engine():
    config = tf1_estimator.RunConfig(
        model_dir="out",
        save_checkpoints_steps=7,
        keep_checkpoint_max=2,
        tf_random_seed=3,
        log_step_count_steps=5,
        tpu_config=tf1_estimator.TPUConfig(iterations_per_loop=1000, num_shards=4),
    ).engine_config("out", use_tpu=False)
    assert (config.save_checkpoints_steps, config.keep_checkpoint_max) == (7, 2)
    assert (config.tf_random_seed, config.log_step_count_steps) == (3, 5)
    assert (config.num_tpu_cores, config.use_tpu) == (4, False)
    assert tf1_estimator.RunConfig().engine_config("out", False).save_checkpoints_steps == 1000


def test_launcher_devices_reach_every_estimator_of_the_modules():
    classes = tf1_estimator.estimator_classes(tf1_estimator.Devices("mirrored", 2))
    assert tf1_estimator.estimator_module(classes).Estimator is classes["Estimator"]
    assert tf1_estimator.tpu_module(classes).TPUEstimator is classes["TPUEstimator"]
    estimators = [
        classes["Estimator"](lambda features: None, model_dir="out"),
        classes["TPUEstimator"](lambda features: None, model_dir="out", use_tpu=False),
    ]
    for estimator in estimators:
        config = estimator._engine.config
        assert (config.distribution_strategy, config.num_gpus) == ("mirrored", 2)
    # As in TF 1.x, a TPUEstimator is a tf.estimator.Estimator.
    assert isinstance(estimators[1], classes["Estimator"])
    # Nothing is left behind for classes built without the launcher's devices.
    for cls in (tf1_estimator.Estimator, tf1_estimator.estimator_classes()["Estimator"]):
        config = cls(lambda features: None, model_dir="out")._engine.config
        assert (config.distribution_strategy, config.num_gpus) == ("one_device", None)


def test_model_fn_and_input_fn_get_only_the_arguments_they_name():
    seen = []

    def input_fn():
        seen.append("no params")

    def input_fn_params(params):
        seen.append(params)

    tf1_estimator.call_with_named(input_fn, {"params": {"a": 1}, "mode": "train"})
    tf1_estimator.call_with_named(input_fn_params, {"params": {"a": 1}, "mode": "train"})
    assert seen == ["no params", {"a": 1}]


def test_a_missing_api_names_itself_and_the_line_that_used_it():
    module = tf1_api.Namespace("tf.contrib", None, {}, {"slim": "tf.layers"})
    with pytest.raises(tf1_api.UnsupportedAPIError) as raised:
        module.slim  # noqa: B018
    line = sys._getframe().f_lineno - 1
    assert str(raised.value).startswith(f"{__file__}:{line}: tf.contrib.slim is not provided")
    assert str(raised.value).endswith("use tf.layers instead")
    assert not hasattr(module, "rnn")
    wrapped = tf1_api.Namespace("tf", V1)
    assert wrapped.nn.relu is V1.nn.relu
    with pytest.raises(tf1_api.UnsupportedAPIError, match="tf.nn.no_such_op is not provided"):
        wrapped.nn.no_such_op  # noqa: B018


class _RunContext:
    stopped = False

    def request_stop(self):
        self.stopped = True


def test_stop_if_no_decrease_hook_reads_the_evaluations_and_stops_after_its_patience(tmp_path):
    class Estimator:
        def eval_dir(self):
            return str(tmp_path / "eval")

    losses = {100: 0.9, 200: 0.5, 300: 0.6, 400: 0.55}
    with tf.Graph().as_default():
        writer = V1.summary.FileWriter(str(tmp_path / "eval"))
        for step, loss in losses.items():
            writer.add_summary(
                V1.Summary(value=[V1.Summary.Value(tag="loss", simple_value=loss)]), step
            )
        writer.close()
        V1.train.get_or_create_global_step()
        hook = tf1_estimator.stop_if_no_decrease_hook(Estimator(), "loss", 200, run_every_steps=1)
        hook.begin()
        assert hook.evaluations() == pytest.approx(losses)
        context = _RunContext()
        hook.after_run(context, V1.train.SessionRunValues(400, None, None))
        assert context.stopped  # best at 200, newest at 400
        hook = tf1_estimator.stop_if_no_decrease_hook(Estimator(), "loss", 300)
        context = _RunContext()
        hook.after_run(context, V1.train.SessionRunValues(400, None, None))
        assert not context.stopped


# ---------------------------------------------------------------------------
# The name clash: the user's modules win for the user's code, the project keeps its own


@pytest.mark.slow
def test_user_code_imports_the_users_modeling_and_the_project_keeps_its_own(tmp_path):
    """What run_tf1.py sets up before the user's script: user code gets the user's
    modeling (and features), while the layer and the engine it runs on never import
    this project's modeling, tokenization or optimization, so no name of the user's can
    be taken already (and nothing needs taking out of sys.modules)."""
    (tmp_path / "modeling.py").write_text("WHOSE = 'user'\n")
    (tmp_path / "features.py").write_text("WHOSE = 'user'\n")
    (tmp_path / "user_code.py").write_text(
        "import tensorflow as tf\nimport modeling\nimport features\n"
        "WHOSE = (modeling.WHOSE, features.WHOSE, tf.contrib.crf.__name__)\n"
    )
    result = run_code(
        f"""
        import run_tf1  # the launcher's own imports, as `python run_tf1.py` makes them
        from bert_lib import tf1
        before = sorted(set(sys.modules) & {{"modeling", "tokenization", "optimization"}})
        tf1.install()
        tf1.put_user_dir_first({str(tmp_path)!r})
        import user_code
        print(before)
        print(user_code.WHOSE)
        print(sys.modules["modeling"].__file__)
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[-3] == "[]"
    assert lines[-2] == "('user', 'user', 'tf.contrib.crf')"
    assert lines[-1] == str(tmp_path / "modeling.py")


# ---------------------------------------------------------------------------
# Scripts through run_tf1.py


def _sentiment_data(directory):
    positive, negative = ["good", "great", "fine", "happy"], ["bad", "awful", "poor", "sad"]
    neutral = ["the", "movie", "was", "a", "plot", "very", "and", "it"]
    rng = np.random.RandomState(7)
    os.makedirs(directory)
    for name, count in (("train", 64), ("dev", 20), ("test", 10)):
        with open(os.path.join(directory, f"{name}.tsv"), "w", encoding="utf-8") as f:
            for _ in range(count):
                label = rng.randint(2)
                words = list(rng.choice(neutral, rng.randint(2, 6)))
                words.insert(rng.randint(len(words) + 1), rng.choice([negative, positive][label]))
                f.write(" ".join(words) + f"\t{label}\n")
    with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(positive + negative + neutral[:-2]) + "\n")  # "and", "it": [UNK]


def _bow_forward(reader, sentences, max_len=8):
    """The user's modeling.BowModel and head in float64 numpy, from a checkpoint."""
    v = {
        name: reader.get_tensor(name).astype(np.float64)
        for name in reader.get_variable_to_shape_map()
    }
    words = ["[PAD]", "[UNK]"] + [
        line.strip() for line in open(sentences[1], encoding="utf-8") if line.strip()
    ]
    vocab = {w: i for i, w in enumerate(words)}
    logits, labels = [], []
    for line in open(sentences[0], encoding="utf-8"):
        text, label = line.rstrip("\n").split("\t")
        ids = [vocab.get(w, 1) for w in text.split()][:max_len]
        pooled = v["bow/word_embeddings"][ids].mean(0)
        hidden = np.tanh(pooled @ v["bow/dense/kernel"] + v["bow/dense/bias"])
        mean, var = hidden.mean(), hidden.var()
        hidden = (hidden - mean) / np.sqrt(var + 1e-12) * v["bow/LayerNorm/gamma"]
        hidden += v["bow/LayerNorm/beta"]
        logits.append(hidden @ v["dense/kernel"] + v["dense/bias"])
        labels.append(int(label))
    return np.array(logits), np.array(labels)


def _key_values(path):
    with open(path, encoding="utf-8") as f:
        return dict(line.strip().split(" = ") for line in f)


@pytest.mark.slow
def test_a_derived_classifier_with_its_own_modeling_trains_evaluates_and_predicts(tmp_path):
    data = str(tmp_path / "data")
    _sentiment_data(data)
    out = str(tmp_path / "out")
    script = os.path.join(SCRIPTS, "classifier", "run_sentiment.py")
    result = run_tf1(
        script,
        f"--data_dir={data}",
        f"--output_dir={out}",
        "--do_train",
        "--do_eval",
        "--do_predict",
        cwd=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    reader = tf.train.load_checkpoint(out)
    assert reader.get_tensor("global_step") == 32
    # The per-graph names: the head is `dense` in the training and the eval graph.
    assert "dense/kernel" in reader.get_variable_to_shape_map()
    assert "dense_1/kernel" not in reader.get_variable_to_shape_map()
    logits, labels = _bow_forward(
        reader, (os.path.join(data, "dev.tsv"), os.path.join(data, "vocab.txt"))
    )
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    results = _key_values(os.path.join(out, "eval_results.txt"))
    assert float(results["eval_accuracy"]) == pytest.approx(np.mean(logits.argmax(-1) == labels))
    assert float(results["eval_loss"]) == pytest.approx(
        -log_probs[np.arange(len(labels)), labels].mean(), abs=1e-5
    )
    # float32 values print as TF 1.x printed them.
    for key in ("eval_accuracy", "eval_loss", "loss"):
        assert results[key] == str(np.float32(results[key]))
    # The user's script sets no seed, so each run starts from other weights:
    # 0.7 (14 of 20) is above chance by a margin and below what runs reach.
    assert float(results["eval_accuracy"]) >= 0.7
    test_logits, _ = _bow_forward(
        reader, (os.path.join(data, "test.tsv"), os.path.join(data, "vocab.txt"))
    )
    probabilities = np.exp(test_logits) / np.exp(test_logits).sum(-1, keepdims=True)
    with open(os.path.join(out, "test_results.tsv"), encoding="utf-8") as f:
        written = np.array([[float(x) for x in line.split("\t")] for line in f])
    np.testing.assert_allclose(written, probabilities, atol=1e-5)


@pytest.mark.slow
def test_a_crf_tagger_on_tf_estimator_trains_evaluates_and_predicts(tmp_path):
    out = str(tmp_path / "out")
    script = os.path.join(SCRIPTS, "tagger", "run_tagger.py")
    result = run_tf1(script, f"--output_dir={out}", "--train_steps=40")
    assert result.returncode == 0, result.stderr[-3000:]
    reader = tf.train.load_checkpoint(out)
    v = {
        name: reader.get_tensor(name).astype(np.float64)
        for name in reader.get_variable_to_shape_map()
    }
    assert v["global_step"] == 40
    # The script's eval set, remade here (token t's tag is (id + previous id) % 3).
    rng = np.random.RandomState(2)
    ids = rng.randint(1, 12, size=(24, 6))
    lengths = rng.randint(2, 7, size=24)
    tags_all = np.zeros_like(ids)
    for i in range(24):
        for t in range(6):
            tags_all[i, t] = (ids[i, t] + (ids[i, t - 1] if t else 0)) % 3
        ids[i, lengths[i] :] = 0
        tags_all[i, lengths[i] :] = 0
    with open(os.path.join(out, "predictions.jsonl"), encoding="utf-8") as f:
        predicted = [json.loads(line) for line in f]
    correct = total = 0
    for i in range(24):
        hidden = v["embeddings"][ids[i]]
        previous = np.vstack([np.zeros((1, hidden.shape[1])), hidden[:-1]])
        emissions = np.hstack([hidden, previous]) @ v["emissions/kernel"] + v["emissions/bias"]
        n = lengths[i]
        _, best, _ = _brute_force(emissions[:n], v["crf/transitions"], n)
        assert predicted[i][:n] == best
        correct += sum(a == b for a, b in zip(best, tags_all[i, :n]))
        total += n
    results = _key_values(os.path.join(out, "eval_results.txt"))
    assert float(results["tag_accuracy"]) == pytest.approx(correct / total, abs=1e-6)
    assert results["global_step"] == "40"
    with open(os.path.join(out, "hook_steps.txt"), encoding="utf-8") as f:
        assert f.read().split() == ["40"]


@pytest.mark.slow
def test_an_api_not_provided_is_one_error_line_naming_it_and_the_users_line(tmp_path):
    script = tmp_path / "uses_slim.py"
    script.write_text(
        "import tensorflow as tf\n\n\ndef main(_):\n"
        "    return tf.contrib.slim.fully_connected(tf.zeros([1, 2]), 3)\n\n\n"
        "if __name__ == '__main__':\n    tf.app.run()\n"
    )
    result = run_tf1(str(script))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ERROR: {script}:5: tf.contrib.slim.fully_connected is not provided")
    assert last.endswith("; use tf.layers and tf.contrib.layers instead")
    result = run_script("run_tf1.py")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("ERROR: usage: python run_tf1.py")
    result = run_tf1(str(tmp_path / "missing.py"))
    assert (
        result.stderr.strip().splitlines()[-1] == f"ERROR: {tmp_path}/missing.py: no such script"
    )
    # A part of a provided module that is not: refused where it is used, with the full
    # sentence, and the name where it is provided under another module.
    script.write_text(
        "import tensorflow as tf\nfrom tensorflow.contrib import rnn\n\ncell = rnn.NASCell(4)\n"
    )
    assert error_line(run_tf1(str(script))) == (
        f"ERROR: {script}:4: tf.contrib.rnn.NASCell is not provided by the TF 1.x API on "
        f"TensorFlow 2 (run_tf1.py); {tf1_api.WHAT_IS_PROVIDED} lists what is provided"
    )
    script.write_text("import tensorflow as tf\n\ncell = tf.nn.rnn_cell.LSTMBlockCell(4)\n")
    assert error_line(run_tf1(str(script))).endswith("; use tf.contrib.rnn.LSTMBlockCell instead")
    # At import time, as `from ... import`.
    script.write_text("from tensorflow.contrib import cudnn_rnn\n")
    assert error_line(run_tf1(str(script))).startswith(
        f"ERROR: {script}:1: tf.contrib.cudnn_rnn is not provided"
    )


@pytest.mark.slow
def test_launcher_options_choose_the_engines_devices(tmp_path):
    script = os.path.join(SCRIPTS, "tagger", "run_tagger.py")
    out = f"--output_dir={tmp_path / 'out'}"

    def last_error(*args):
        result = run_script("run_tf1.py", *args)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
        return result.stderr.strip().splitlines()[-1]

    # The engine gets them: it refuses GPUs this machine does not show, one line.
    line = last_error("--distribution_strategy=mirrored", "--num_gpus=3", script, out)
    assert line.startswith("ERROR: ") and "--num_gpus=3" in line
    line = last_error("--distribution_strategy=everywhere", script, out)
    assert line.startswith("ERROR: --distribution_strategy must be one_device, mirrored")
    assert last_error("--output_dir=x", script).startswith(
        "ERROR: --output_dir: run_tf1.py's own options are --distribution_strategy, "
        "--num_gpus and --tf1_packages"
    )
    assert last_error("--num_gpus=two", script) == (
        "ERROR: --num_gpus must be a whole number, got two"
    )
    assert not os.path.exists(tmp_path / "out" / "checkpoint")


@pytest.mark.slow
def test_install_returns_the_module_that_user_code_imports():
    result = run_code(
        """
        from bert_lib import tf1
        tf = tf1.install()
        import tensorflow
        from tensorflow.contrib import crf
        import tensorflow.compat.v1 as v1
        from tensorflow.python.framework import ops  # TensorFlow's, with TF 1.15's names
        real = sys.modules["tensorflow"]
        print(tensorflow is tf, crf is tf.contrib.crf, v1 is tf, real is not tf,
              tf.estimator.ModeKeys.PREDICT, tf.executing_eagerly(), hasattr(tf, "no_such_api"),
              tf1.is_user_file(real.__file__), ops.__name__)
        """
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.splitlines()[-1] == (
        "True True True True infer False False False tensorflow.python.framework.ops"
    )


@pytest.mark.slow
def test_failures_of_user_code_are_one_error_line_at_the_users_line(tmp_path):
    script = tmp_path / "train.py"
    # A syntax error in a module the script imports from beside itself.
    (tmp_path / "helper.py").write_text("def f(:\n    pass\n")
    script.write_text("import tensorflow as tf\nimport helper\n")
    assert error_line(run_tf1(str(script), cwd=str(tmp_path))) == (
        f"ERROR: {tmp_path}/helper.py:1: SyntaxError: invalid syntax"
    )
    # A package the script needs that is not installed.
    script.write_text("import tensorflow as tf\nimport no_such_package_here\n")
    assert error_line(run_tf1(str(script), cwd=str(tmp_path))) == (
        f"ERROR: {script}:2: ModuleNotFoundError: No module named 'no_such_package_here'"
    )
    # An OSError in main (an output directory the script expects to exist).
    script.write_text(
        "import tensorflow as tf\n\n\ndef main(_):\n"
        "    with open('./output/result.txt', 'w') as f:\n        f.write('x')\n\n\n"
        "if __name__ == '__main__':\n    tf.app.run()\n"
    )
    assert error_line(run_tf1(str(script), cwd=str(tmp_path))) == (
        f"ERROR: {script}:5: [Errno 2] No such file or directory: './output/result.txt'"
    )
    # A model_fn whose eval_metric_ops hold a plain tensor: TF 1.15's message and key,
    # at the line that made the spec, before the engine touches it.
    script.write_text(
        "import numpy as np\nimport tensorflow as tf\n\n\n"
        "def model_fn(features, labels, mode):\n"
        "    loss = tf.reduce_mean(tf.layers.dense(features, 1))\n"
        "    return tf.estimator.EstimatorSpec(\n"
        "        mode, loss=loss, eval_metric_ops={'mean_loss': tf.reduce_mean(loss)})\n\n\n"
        "def input_fn():\n"
        "    return tf.data.Dataset.from_tensor_slices(np.ones([4, 2], np.float32)).batch(2)\n\n\n"
        "estimator = tf.estimator.Estimator(model_fn, model_dir='model')\n"
        "estimator.evaluate(input_fn)\n"
    )
    line = error_line(run_tf1(str(script), cwd=str(tmp_path)))
    assert line.startswith(
        f"ERROR: {script}:7: Values of eval_metric_ops must be (metric_value, update_op) "
        "tuples, given: Tensor("
    )
    assert line.endswith("for key: mean_loss")


@pytest.mark.slow
def test_export_saved_model_signs_the_receiver_tensors_and_predicts_as_predict(tmp_path):
    run_tf1_source(
        tmp_path,
        "export_it.py",
        "import json\nimport numpy as np\nimport tensorflow as tf\n\n\n"
        "def model_fn(features, labels, mode):\n"
        "    logits = tf.layers.dense(features['x'], 2)\n"
        "    if mode == tf.estimator.ModeKeys.PREDICT:\n"
        "        probs = tf.nn.softmax(logits)\n"
        "        return tf.estimator.EstimatorSpec(mode, predictions={'probs': probs})\n"
        "    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits)\n"
        "    step = tf.train.get_or_create_global_step()\n"
        "    return tf.estimator.EstimatorSpec(\n"
        "        mode, loss=loss, train_op=tf.train.AdamOptimizer(0.1).minimize(loss, step))\n\n\n"
        "x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10\n"
        "estimator = tf.estimator.Estimator(model_fn, model_dir='model')\n"
        "estimator.train(lambda: tf.data.Dataset.from_tensor_slices(\n"
        "    ({'x': x}, np.array([0, 1, 0, 1]))).batch(2), max_steps=3)\n"
        "predicted = [p['probs'].tolist() for p in estimator.predict(\n"
        "    lambda: tf.data.Dataset.from_tensor_slices({'x': x}).batch(2))]\n"
        "spec = {'x': tf.FixedLenFeature([3], tf.float32)}\n"
        "fn = tf.estimator.export.build_parsing_serving_input_receiver_fn(spec)\n"
        "path = estimator.export_saved_model('export', fn)\n"
        "json.dump({'path': path.decode(), 'predicted': predicted}, open('out.json', 'w'))\n",
    )
    out = json.loads((tmp_path / "out.json").read_text())
    assert os.path.dirname(out["path"]) == "export" and os.path.basename(out["path"]).isdigit()
    serve = tf.saved_model.load(str(tmp_path / out["path"])).signatures["serving_default"]
    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    examples = [
        tf.train.Example(
            features=tf.train.Features(
                feature={"x": tf.train.Feature(float_list=tf.train.FloatList(value=row))}
            )
        ).SerializeToString()
        for row in x
    ]
    probs = serve(examples=tf.constant(examples))["probs"].numpy()
    np.testing.assert_allclose(probs, out["predicted"], atol=1e-6)


@pytest.mark.slow
def test_a_keras_layer_not_provided_is_keras_3s_with_one_warning_line(tmp_path):
    result = run_tf1_source(
        tmp_path,
        "uses_keras.py",
        "import tensorflow as tf\n"
        "x = tf.zeros([2, 3, 4])\n"
        "a = tf.keras.layers.Dense(2)(x)\n"
        "b = tf.keras.layers.RepeatVector(2)\n"
        "c = tf.keras.layers.RepeatVector(3)\n"
        "print('NAMES', sorted(v.op.name for v in tf.global_variables()))\n",
    )
    warnings = [line for line in result.stderr.splitlines() if "Keras 3's" in line]
    warning = (
        "WARNING: tf.keras.layers.RepeatVector is Keras 3's here, not TF 1.15's: its variables "
        "are not named as TF 1.15 named them (checkpoints holding them do not move between "
        "TF 1.15 and run_tf1.py)"
    )
    # Where the tf_keras package is installed, tf.keras is it, whole: nothing to warn of.
    assert warnings == ([] if HAS_TF_KERAS else [warning])
    assert result.stdout.splitlines()[-1] == "NAMES ['dense/bias', 'dense/kernel']"
