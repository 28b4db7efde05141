"""tf.contrib.learn, lookup, predictor, graph_editor and seq2seq of the TF 1.x layer
(bert_lib/tf1/contrib), tf.estimator's queue-based input_fns, and every form of input_fn
result and serving receiver TF 1.15's Estimator took or refused, against what TensorFlow
1.15 computed.

tests/data/golden/tf1_15/apis holds TF 1.15.5's outputs of the scripts of
tests/data/tf1_scripts (text_cnn, lookup_session, serving,
grad_checkpointing, seq2seq_attention, queue_input, input_forms, keras_stacked_cells;
make_golden.py --only=apis
remakes them): the slow
tests run the same scripts unchanged through run_tf1.py and compare. The
in-process tests take TF 1.15's files (a VocabularyProcessor pickle, a
SavedModel) directly, and check sequence_loss and the graph edits against
numpy and against tf.gradients; they build plain tf.compat.v1 graphs and
never call tf1.install().
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from helpers import (
    DATA,
    GOLDEN,
    REPO,
    TF_KERAS_ENV,
    assert_nested_close,
    needs_tf_keras,
    run_script,
)

from bert_lib import tf1
from bert_lib.tf1.contrib import graph_editor, learn, predictor, seq2seq
from bert_lib.tf1.machinery import namespaces as tf1_api

V1 = tf.compat.v1
SCRIPTS = os.path.join(DATA, "tf1_scripts")
APIS_GOLDEN = os.path.join(GOLDEN, "tf1_15", "apis")
# float32 values TF 1.15 computed against run_tf1.py's (other kernels, same arithmetic).
TOLERANCE = 1e-5

# The sentences of text_cnn/train_text_cnn.py.
TEXTS = [
    "the film was a joy , truly wonderful",
    "a dull and lifeless film",
    "wonderful acting , a joy to watch",
    "the plot was dull , the acting worse",
    "I loved it ; a warm , funny story",
    "NOT worth the ticket - a mess",
    "funny and warm from start to end",
    "lifeless , dull , a mess of a film",
]
HELD_OUT = [
    "a truly warm film",
    "the ticket was wasted on a mess",
    "Spectacular!! HTMLParser don't re-use it",
]


def _golden_json(name, file_name):
    with open(os.path.join(APIS_GOLDEN, name, file_name), encoding="utf-8") as f:
        return json.load(f)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def tf1_module():
    return tf1.build_module(tf1.tf1_estimator.ONE_DEVICE)


# ---------------------------------------------------------------------------
# contrib.learn: VocabularyProcessor


def test_vocabulary_processor_maps_words_and_saves_tf115s_pickle_bytes(tmp_path):
    want = _golden_json("text_cnn", "results.json")
    everything = learn.VocabularyProcessor(7)
    assert np.array(list(everything.fit_transform(TEXTS))).tolist() == want["all_ids"]
    trimmed = learn.VocabularyProcessor(7, min_frequency=1)
    assert np.array(list(trimmed.fit_transform(TEXTS))).tolist() == want["x"]
    assert len(trimmed.vocabulary_) == want["vocab_size"]
    assert [list(words) for words in learn.tokenizer(HELD_OUT + TEXTS)] == want["tokens"]
    # Saved, the same bytes TF 1.15 wrote for the same vocabulary: TF 1.15 reads ours.
    for processor, name in ((trimmed, "vocab"), (everything, "vocab_all")):
        path = tmp_path / name
        processor.save(str(path))
        assert _read(path) == _read(os.path.join(APIS_GOLDEN, "text_cnn", name)), name


def test_vocabulary_processor_restores_tf115s_file():
    restored = learn.VocabularyProcessor.restore(os.path.join(APIS_GOLDEN, "text_cnn", "vocab"))
    want = _golden_json("text_cnn", "results.json")
    assert isinstance(restored, learn.VocabularyProcessor)
    assert isinstance(restored.vocabulary_, learn.CategoricalVocabulary)
    ids = np.array(list(restored.transform(HELD_OUT)))
    assert ids.dtype == np.int64
    assert ids.tolist() == want["held_out"]
    assert list(restored.reverse(ids)) == want["reversed"]


def test_learn_namespace_has_tf115s_mode_keys_and_module_paths(tf1_module):
    learn_module = tf1_module.contrib.learn
    keys = learn_module.ModeKeys
    assert (keys.TRAIN, keys.EVAL, keys.INFER) == ("train", "eval", "infer")
    assert keys.INFER == tf1_module.estimator.ModeKeys.PREDICT
    text = learn_module.python.learn.preprocessing.text
    assert text.VocabularyProcessor is learn.VocabularyProcessor
    with pytest.raises(tf1_api.UnsupportedAPIError) as refused:
        _ = learn_module.Estimator
    assert "tf.contrib.learn.Estimator is not provided" in str(refused.value)
    assert "use tf.estimator.Estimator instead" in str(refused.value)


# ---------------------------------------------------------------------------
# contrib.predictor


def test_predictor_serves_tf115s_saved_model_as_tf115_did():
    """TF 1.15's export (a lookup table with an out-of-vocabulary bucket, filled at load)."""
    requests = np.array(
        [
            ["good", "fine", "great", "nice"],
            ["awful", "bad", "bad", "poor"],
            ["meh", "fine", "poor", "zzz"],
        ]
    )
    predict_fn = predictor.from_saved_model(os.path.join(APIS_GOLDEN, "serving", "saved_model"))
    got = predict_fn({"words": requests})
    want = _golden_json("serving", "predictions.json")["from_saved_model"]
    assert sorted(got) == sorted(want)
    np.testing.assert_allclose(got["probabilities"], want["probabilities"], atol=TOLERANCE)
    assert got["classes"].tolist() == want["classes"]
    with pytest.raises(ValueError, match="unexpected keys"):
        predict_fn({"words": requests, "extra": requests})
    # The same tensors named directly, under keys of one's own.
    named = predictor.from_saved_model(
        os.path.join(APIS_GOLDEN, "serving", "saved_model"),
        input_names={"text": predict_fn.feed_tensors["words"].name},
        output_names={"p": predict_fn.fetch_tensors["probabilities"].name},
    )
    np.testing.assert_allclose(
        named({"text": requests})["p"], want["probabilities"], atol=TOLERANCE
    )
    with pytest.raises(ValueError, match="both be specified"):
        predictor.from_saved_model("unused", input_names={"text": "words:0"})


# ---------------------------------------------------------------------------
# contrib.seq2seq.sequence_loss against numpy


def _numpy_sequence_losses(logits, targets):
    shifted = logits - logits.max(axis=2, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=2, keepdims=True))
    return -np.take_along_axis(log_probs, targets[..., None], axis=2)[..., 0]


@pytest.mark.parametrize(
    "switches",
    [
        {},
        {"average_across_timesteps": False},
        {"average_across_batch": False},
        {"average_across_timesteps": False, "average_across_batch": False},
        {
            "average_across_timesteps": False,
            "average_across_batch": False,
            "sum_over_timesteps": True,
            "sum_over_batch": True,
        },
        {"average_across_timesteps": False, "sum_over_timesteps": True},
    ],
)
def test_sequence_loss_weights_and_averages_as_tf115(switches):
    rng = np.random.RandomState(0)
    logits = rng.normal(size=(3, 4, 5)).astype(np.float32)
    targets = rng.randint(0, 5, size=(3, 4)).astype(np.int32)
    weights = np.array([[1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], np.float32)
    losses = _numpy_sequence_losses(logits, targets) * weights
    average_time = switches.get("average_across_timesteps", True)
    average_batch = switches.get("average_across_batch", True)
    sum_time = switches.get("sum_over_timesteps", False)
    sum_batch = switches.get("sum_over_batch", False)

    def ratio(numerator, denominator):
        return np.where(
            denominator == 0, 0.0, numerator / np.where(denominator == 0, 1, denominator)
        )

    if average_time and average_batch:
        want = ratio(losses.sum(), weights.sum())
    elif sum_time and sum_batch:
        want = ratio(losses.sum(), np.count_nonzero(weights))
    elif average_batch:  # an average wins over the other axis's sum switch (TF 1.15)
        want = ratio(losses.sum(0), weights.sum(0))
    elif average_time:
        want = ratio(losses.sum(1), weights.sum(1))
    elif sum_time or sum_batch:
        axis = 0 if sum_batch else 1
        want = ratio(losses.sum(axis), np.count_nonzero(weights, axis=axis))
    else:
        want = losses
    with tf.Graph().as_default():
        got = seq2seq.sequence_loss(
            tf.constant(logits), tf.constant(targets), tf.constant(weights), **switches
        )
        with V1.Session() as session:
            got = session.run(got)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_tile_batch_repeats_each_entry_in_a_row():
    with tf.Graph().as_default():
        tiled = seq2seq.tile_batch({"a": tf.constant([[1, 2], [3, 4]])}, 3)
        assert tiled["a"].shape.as_list() == [6, 2]
        with V1.Session() as session:
            got = session.run(tiled)["a"]
    assert got.tolist() == [[1, 2]] * 3 + [[3, 4]] * 3


def test_seq2seq_scheduled_sampling_is_refused_by_name(tf1_module):
    with pytest.raises(tf1_api.UnsupportedAPIError) as refused:
        _ = tf1_module.contrib.seq2seq.ScheduledOutputTrainingHelper
    assert "tf.contrib.seq2seq.ScheduledOutputTrainingHelper is not provided" in str(refused.value)
    assert "use tf.contrib.seq2seq.BasicDecoder with a GreedyEmbeddingHelper" in str(refused.value)
    assert tf1_module.contrib.seq2seq.python.ops.attention_wrapper.AttentionWrapper is (
        seq2seq.AttentionWrapper
    )


def _numpy_gather_tree(step_ids, parent_ids, max_lengths, end_token):
    """Each beam followed back from its batch's last step; end_token after the first one."""
    steps, batch, beams = step_ids.shape
    out = np.full_like(step_ids, end_token)
    for b in range(batch):
        length = max_lengths[b]
        for k in range(beams):
            parent = k
            for t in range(length - 1, -1, -1):
                out[t, b, k] = step_ids[t, b, parent]
                parent = parent_ids[t, b, parent]
            ended = False
            for t in range(length):
                if ended:
                    out[t, b, k] = end_token
                elif out[t, b, k] == end_token:
                    ended = True
    return out


def test_gather_tree_follows_parents_back_as_numpy_does():
    rng = np.random.RandomState(7)
    step_ids = rng.randint(0, 6, size=(7, 3, 4)).astype(np.int32)
    parent_ids = rng.randint(0, 4, size=(7, 3, 4)).astype(np.int32)
    max_lengths = np.array([7, 4, 0], np.int32)
    with tf.Graph().as_default():
        got = seq2seq.gather_tree(step_ids, parent_ids, max_lengths, end_token=5)
        with V1.Session() as session:
            got = session.run(got)
    np.testing.assert_array_equal(got, _numpy_gather_tree(step_ids, parent_ids, max_lengths, 5))


# ---------------------------------------------------------------------------
# contrib.graph_editor


def _chain():
    """x -> a -> b -> c -> loss, with a weight w."""
    x = V1.placeholder(tf.float32, [2], name="x")
    w = tf.constant([1.5, -0.5], name="w")
    a = tf.tanh(x * w, name="a")
    b = tf.sin(a, name="b")
    c = tf.square(b, name="c")
    return x, w, a, b, c


def test_forward_walk_goes_wave_by_wave_and_stops_at_tensors():
    with tf.Graph().as_default():
        x, w, a, b, c = _chain()
        names = [op.name for op in graph_editor.get_forward_walk_ops([x.op])]
        assert names == ["x", "mul", "a", "b", "c"]
        stopped = graph_editor.get_forward_walk_ops([x.op], inclusive=False, stop_at_ts=[a])
        assert [op.name for op in stopped] == ["mul", "a"]
        backward = graph_editor.get_backward_walk_ops([c.op], stop_at_ts=[a])
        assert sorted(op.name for op in backward) == ["b", "c"]
        assert [t.name for t in graph_editor.filter_ts_from_regex([a.op, b.op], "^b")] == ["b:0"]
        assert graph_editor.select_ops("^[bc]$", graph=x.graph) == [b.op, c.op]
        assert graph_editor.select_ts("^a", w) == [a, w]


def test_copied_segment_rerouted_to_a_stop_gradient_gives_tf_gradients_values():
    """What gradient checkpointing does with one checkpoint `a`: the ops after it copied,
    the copies fed from stop_gradient(a), backpropagated in two pieces."""
    with tf.Graph().as_default() as graph:
        x, w, a, b, c = _chain()
        V1.add_to_collection("checkpoints", b)
        plain = tf.gradients(c, [x])[0]
        a_stopped = tf.stop_gradient(a, name="a_sg")
        _, info = graph_editor.copy_with_input_replacements(graph_editor.sgv([b.op, c.op]), {})
        copied_c = info._transformed_ops[c.op]._outputs[0]  # noqa: SLF001
        assert copied_c.op.name == "c_1" and info.original(copied_c) is c
        changed = graph_editor.reroute_ts(
            [a_stopped], [a], can_modify=info._transformed_ops.values()
        )  # noqa: SLF001
        assert changed == 1
        assert info.transformed(b).op.inputs[0] is a_stopped
        assert b.op.inputs[0] is a  # the original is untouched
        # The copy of b joined the collection of b, as TF 1.15's copies did.
        assert V1.get_collection("checkpoints") == [b, info.transformed(b)]
        d_a = tf.gradients(copied_c, [a_stopped])[0]
        piecewise = tf.gradients(a, [x], grad_ys=[d_a])[0]
        graph_editor.add_control_inputs(copied_c.op, [plain.op])
        assert plain.op in copied_c.op.control_inputs
        with pytest.raises(ValueError, match="already exist"):
            graph_editor.add_control_inputs(copied_c.op, [plain.op])
        graph_editor.remove_control_inputs(copied_c.op, [plain.op])
        assert plain.op not in copied_c.op.control_inputs
        graph_editor.add_control_inputs(copied_c.op, [plain.op])
        feed = {x: np.array([0.3, -1.2], np.float32)}
        with V1.Session(graph=graph) as session:
            want, got, original, copy = session.run([plain, piecewise, c, copied_c], feed)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(copy, original, rtol=1e-6)
    # Against numpy: d/dx sin(tanh(x w))^2.
    xs, ws = feed[x], np.array([1.5, -0.5])
    inner = np.tanh(xs * ws)
    expected = 2 * np.sin(inner) * np.cos(inner) * (1 - inner**2) * ws
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_swap_ts_exchanges_the_consumers_of_two_tensors():
    with tf.Graph().as_default() as graph:
        p = tf.constant(2.0, name="p")
        q = tf.constant(5.0, name="q")
        from_p = tf.square(p, name="from_p")
        from_q = tf.negative(q, name="from_q")
        assert graph_editor.swap_ts([p], [q]) == 2
        with V1.Session(graph=graph) as session:
            assert session.run([from_p, from_q]) == [25.0, -2.0]


# ---------------------------------------------------------------------------
# The scripts through run_tf1.py, against TF 1.15's outputs


def _run_tf1(script, *args, env=None):
    result = run_script("run_tf1.py", os.path.join(SCRIPTS, script), *args, env=env, cwd=REPO)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _run_tf1_json(script, output_dir, file_name="results.json", env=None):
    """Runs a script of SCRIPTS through run_tf1.py with --output_dir (and `env`); the JSON
    it wrote there."""
    _run_tf1(script, f"--output_dir={output_dir}", env=env)
    with open(os.path.join(output_dir, file_name), encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.slow
def test_text_cnn_with_vocabulary_processor_and_experiment_matches_tf115(tmp_path):
    got = _run_tf1_json("text_cnn/train_text_cnn.py", tmp_path)
    assert_nested_close(got, _golden_json("text_cnn", "results.json"), TOLERANCE)
    for name in ("vocab", "vocab_all"):
        assert _read(tmp_path / name) == _read(os.path.join(APIS_GOLDEN, "text_cnn", name))


@pytest.mark.slow
def test_text_cnn_restores_tf115s_vocabulary_file(tmp_path):
    vocab = os.path.join(APIS_GOLDEN, "text_cnn", "vocab")
    _run_tf1("text_cnn/train_text_cnn.py", f"--output_dir={tmp_path}", f"--vocab_file={vocab}")
    with open(tmp_path / "restored_ids.json", encoding="utf-8") as f:
        got = json.load(f)
    want = _golden_json("text_cnn", "results.json")
    assert got == {"ids": want["held_out"], "words": want["reversed"]}


@pytest.mark.slow
def test_session_loop_with_lookup_tables_and_sequence_loss_matches_tf115(tmp_path):
    got = _run_tf1_json("lookup_session/train_lookup.py", tmp_path)
    assert_nested_close(got, _golden_json("lookup_session", "results.json"), TOLERANCE)


@pytest.mark.slow
def test_export_and_contrib_predictor_match_tf115(tmp_path):
    got = _run_tf1_json("serving/export_and_serve.py", tmp_path, "predictions.json")
    assert_nested_close(got, _golden_json("serving", "predictions.json"), TOLERANCE)


@pytest.mark.slow
def test_gradient_checkpointing_with_graph_editor_matches_tf115(tmp_path):
    got = _run_tf1_json("grad_checkpointing/train_checkpointed.py", tmp_path)
    want = _golden_json("grad_checkpointing", "results.json")
    assert_nested_close(got, want, TOLERANCE)
    # The recomputed gradients are tf.gradients' (TF 1.15's, and here), with the
    # checkpoints of the collection and at every MatMul ("speed").
    for key in ("checkpointed_gradients", "speed_gradients"):
        for plain, checkpointed in zip(got["plain_gradients"], got[key]):
            np.testing.assert_allclose(checkpointed, plain, atol=TOLERANCE)


@pytest.mark.slow
def test_seq2seq_with_attention_matches_tf115s_names_losses_greedy_and_beam_decoding(tmp_path):
    """Bahdanau (normalized) and Luong (scaled) attention in an AttentionWrapper, and both
    at once (attention layers of their own, the cell's output out, time-major outputs),
    trained with a TrainingHelper, decoded greedily, and by beam search from the trained
    values (with and without a coverage penalty, and with the batch and source length
    known only at run time, as NMT's input pipeline gives them), and by a
    SampleEmbeddingHelper, a
    ScheduledEmbeddingTrainingHelper (both seeded) and an InferenceHelper: TF 1.15's
    variable names and shapes, the alignment history, the losses, the decoded ids and
    logits, the beams' ids, parents, scores and lengths."""
    got = _run_tf1_json("seq2seq_attention/train_seq2seq.py", tmp_path)
    assert_nested_close(got, _golden_json("seq2seq_attention", "results.json"), TOLERANCE)


@pytest.mark.slow
def test_queue_based_input_fns_match_tf115(tmp_path):
    """An Estimator trained on string_input_producer + TextLineReader + tf.train.batch,
    evaluated on TFRecordReader + tf.train.batch (one epoch, a smaller last batch) and
    tf.train.shuffle_batch, predicting from slice_input_producer + tf.train.batch: TF
    1.15's weights, metrics and predictions (the shuffled evaluation's metrics are those
    the order does not change), and the files its Estimator wrote."""
    got = _run_tf1_json("queue_input/train_queue_input.py", tmp_path)
    want = _golden_json("queue_input", "results.json")
    # Every file TF 1.15's Estimator wrote (checkpoints of step 0 and the last,
    # graph.pbtxt, the evaluations' folders), beside the engine's own.
    assert set(want.pop("model_files")) <= set(got.pop("model_files"))
    assert_nested_close(got, want, TOLERANCE)


@pytest.mark.slow
@needs_tf_keras
def test_keras_rnn_of_stacked_cells_with_tf_keras_has_tf115s_names_and_numbers(tmp_path):
    """Where tf.keras is the tf_keras package, an RNN of a list of cells (an LSTMCell, a
    GRUCell) builds them as TF 1.15 did, in the layer's scope one after the other
    (rnn/kernel, rnn/kernel_1; Keras 2 has rnn/lstm_cell/kernel), TF 1.15's v1 cells: its
    variables' names and shapes, output and gradients are TF 1.15's. (Without tf_keras,
    tf.keras.layers.RNN and the cells are Keras 3's, which docs/tf1.md says.)"""
    got = _run_tf1_json("keras_stacked_cells/run_stacked_cells.py", tmp_path, env=TF_KERAS_ENV)
    assert_nested_close(got, _golden_json("keras_stacked_cells", "results.json"), TOLERANCE)


@pytest.mark.slow
def test_every_input_fn_and_receiver_form_matches_tf115(tmp_path):
    """Every form of input_fn result TF 1.15's Estimator took (Datasets of a tensor, a
    dict, (tensor, tensor), ((tensor, tensor), {labels}), nested features; an iterator's
    ((words, nwords), None) and [features, labels]; constants read for ever; queue tensors
    with labels None; labels dropped for prediction) trains, evaluates and predicts as in
    TF 1.15, the model_fn given the same structures; every receiver form exports the same
    signatures and serves the same outputs; and what TF 1.15 refused is refused with its
    message, after the user's file and line."""
    script = "input_forms/train_input_forms.py"
    got = _run_tf1_json(script, tmp_path)
    want = _golden_json("input_forms", "results.json")
    refused, want_refused = got.pop("refusals"), want.pop("refusals")
    assert sorted(refused) == sorted(want_refused)
    at_script = os.path.join(SCRIPTS, script) + ":"
    for name, message in want_refused.items():
        assert message is not None, name  # every case is one TF 1.15 refused
        assert refused[name].startswith(at_script), refused[name]
        line, _, text = refused[name][len(at_script) :].partition(": ")
        assert line.isdigit() and text == message, (name, refused[name])
    assert_nested_close(got, want, TOLERANCE)


@pytest.mark.slow
def test_slim_model_analyzer_prints_the_variables_as_tf115(tmp_path):
    """tf.contrib.slim.model_analyzer (DCGAN's show_all_variables): analyze_vars prints
    each variable's name, dtype (a ref variable's float32_ref, float16_ref), shape, size
    and bytes and the totals as TF 1.15 did, returns the same totals, and
    tensor_description writes an unknown batch as "?"; the rest of slim is refused."""
    got = _run_tf1_json("slim_model_analyzer/print_variables.py", tmp_path)
    assert got == _golden_json("slim_model_analyzer", "results.json")


def test_slim_layers_are_refused_by_name_with_what_to_use(tf1_module):
    with pytest.raises(tf1_api.UnsupportedAPIError) as raised:
        tf1_module.contrib.slim.conv2d  # noqa: B018
    assert "tf.contrib.slim.conv2d is not provided" in str(raised.value)
    assert str(raised.value).endswith("; use tf.layers and tf.contrib.layers instead")


@pytest.mark.slow
def test_per_image_standardization_keeps_the_dtype_as_tf115(tmp_path):
    """tf.image.per_image_standardization gives TF 1.15's dtype and values for uint8
    images (scaled to [0, 1], standardized, converted back saturated), a batch, a uniform
    image, float16 and float64 ones; and a tf.cond of it beside a float32 branch is refused
    with TF 1.15's message, as facenet's input pipeline was."""
    got = _run_tf1_json("image_standardization/standardize_images.py", tmp_path)
    want = _golden_json("image_standardization", "results.json")
    assert got.pop("cond_refused") == want.pop("cond_refused")
    assert sorted(got) == sorted(want)
    for name, result in want.items():
        assert got[name]["dtype"] == result["dtype"], name
        tolerance = 2e-3 if result["dtype"] == "float16" else TOLERANCE
        np.testing.assert_allclose(
            got[name]["values"], result["values"], atol=tolerance, rtol=0, err_msg=name
        )
