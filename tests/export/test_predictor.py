"""Predictor's model calls: what the export's signature and the numpy BERT give, in any thread.

A classifier with random weights is exported as run_classifier.py exports
one, with the Predictor's files (a real uncased vocabulary, texts cut at 24
word pieces). Its probabilities, at batch 1 and in batches, are compared
with the numpy BERT on TextEncoder's full-length ids (whose ids the golden
tokenization test of tests/task_data/test_custom_data.py checks), and with
the signature called by keyword on the same ids cut to the batch's longest
text. Four threads sharing one Predictor get what one thread gets.
"""

import threading

import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from helpers import VOCAB_UNCASED, tiny_bert_config, write_checkpoint

import modeling
import run_classifier
from bert_lib.export import predictor
from bert_lib.task_data import classifier_output

LABELS = ["no", "maybe", "yes"]
MAX_SEQ_LENGTH = 24
TEXTS = [
    ("the cat sat on the mat.", "a dog slept by the door."),
    "an unaffable hotel, far from everything!",
    ("short", "a much longer second text that runs past the length the export cuts texts at"),
    "x",
    ("Héllo wörld", "ÜBER naïve café"),
    "a very long single text that goes on and on well past the twenty-four word pieces",
    ("what is it?", "it is what it is"),
]


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    """(export directory, checkpoint values, config) of a random 3-class classifier."""
    directory = tmp_path_factory.mktemp("predictor")
    config = modeling.BertConfig.from_dict(tiny_bert_config(30522))
    with tf.Graph().as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [None, None])
        run_classifier.create_model(config, False, ids, ids, ids, None, len(LABELS), False)
        shapes = {v.op.name: v.shape.as_list() for v in tf.compat.v1.global_variables()}
    rng = np.random.RandomState(11)
    values = {}
    for name, shape in shapes.items():
        offset = 1.0 if name.endswith("gamma") else 0.0
        values[name] = (offset + 0.2 * rng.standard_normal(shape)).astype(np.float32)
    checkpoint = write_checkpoint(directory / "model.ckpt", values)
    files = classifier_output.predictor_files(
        VOCAB_UNCASED, True, LABELS, False, 0.5, MAX_SEQ_LENGTH
    )
    target = str(directory / "export")
    run_classifier.export_saved_model(
        target, checkpoint, config, len(LABELS), predictor_files=files
    )
    return target, values, config


def _numpy_probabilities(values, config, inputs):
    outputs = npr.bert(
        values, config, inputs["input_ids"], inputs["input_mask"], inputs["segment_ids"]
    )
    logits = outputs["pooled_output"] @ values["output_weights"].T + values["output_bias"]
    return npr.softmax(logits)


@pytest.mark.parametrize("batch_size", [1, 3, 32])
def test_probabilities_are_the_numpy_berts_and_the_signatures(export, batch_size):
    export_dir, values, config = export
    model = predictor.Predictor(export_dir, batch_size=batch_size)
    served = model.predict_arrays(TEXTS)
    assert served.dtype == np.float32 and served.shape == (len(TEXTS), len(LABELS))

    full = model.encode(TEXTS)
    assert full["input_ids"].shape == (len(TEXTS), MAX_SEQ_LENGTH)
    np.testing.assert_allclose(served, _numpy_probabilities(values, config, full), atol=1e-5)

    signature = tf.saved_model.load(export_dir).signatures["serving_default"]
    for start in range(0, len(TEXTS), batch_size):
        batch = {name: value[start : start + batch_size] for name, value in full.items()}
        longest = int(batch["input_mask"].sum(axis=1).max())
        cut = {name: tf.constant(value[:, :longest]) for name, value in batch.items()}
        expected = signature(**cut)["probabilities"].numpy()
        np.testing.assert_array_equal(served[start : start + batch_size], expected)


def test_predict_ids_gives_the_numpy_berts_probabilities_for_ids_tokenized_elsewhere(export):
    export_dir, values, config = export
    model = predictor.Predictor(export_dir)
    full = model.encode(TEXTS[:3])
    served = model.predict_ids(full["input_ids"], full["input_mask"], full["segment_ids"])
    np.testing.assert_allclose(served, _numpy_probabilities(values, config, full), atol=1e-5)


def test_encoder_arrays_are_the_full_width_ones_cut_to_the_longest_text():
    encode = predictor.TextEncoder(VOCAB_UNCASED, True, MAX_SEQ_LENGTH)
    for texts in (TEXTS, TEXTS[3:4], TEXTS[:1], TEXTS[5:6]):
        full = encode(texts)
        longest = int(full["input_mask"].sum(axis=1).max())
        cut = encode.arrays(texts)
        for name, array in zip(predictor.INPUT_NAMES, cut):
            assert array.dtype == np.int32
            np.testing.assert_array_equal(array, full[name][:, :longest])
            assert not full[name][:, longest:].any()
        uncut = encode.arrays(texts, cut=False)
        for name, array in zip(predictor.INPUT_NAMES, uncut):
            np.testing.assert_array_equal(array, full[name])
    empty = encode([])
    assert all(value.shape == (0, MAX_SEQ_LENGTH) for value in empty.values())


def test_four_threads_sharing_a_predictor_get_what_one_thread_gets(export):
    export_dir, _, _ = export
    model = predictor.Predictor(export_dir, batch_size=2)
    jobs = [TEXTS[i:] + TEXTS[:i] for i in range(len(TEXTS))]
    alone = [model.predict_arrays(texts) for texts in jobs]
    alone_records = [model(texts) for texts in jobs]
    results = {}
    errors = []
    start = threading.Barrier(4)

    def work(thread):
        try:
            start.wait()
            for _ in range(3):
                for index in range(thread, len(jobs), 4):
                    got = model.predict_arrays(jobs[index])
                    results.setdefault(index, []).append(got)
                    assert model(jobs[index]) == alone_records[index]
        except Exception as error:  # noqa: BLE001 (handed to the main thread)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert sorted(results) == list(range(len(jobs)))
    for index, runs in results.items():
        assert len(runs) == 3
        for got in runs:
            np.testing.assert_array_equal(got, alone[index])


def test_a_signature_without_the_three_id_inputs_is_refused(tmp_path):
    class Module(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name="tokens")])
        def serve(self, tokens):
            return {"probabilities": tf.ones([tf.shape(tokens)[0], 2])}

    module = Module()
    target = str(tmp_path / "other")
    tf.saved_model.save(module, target, signatures={"serving_default": module.serve})
    with open(VOCAB_UNCASED, encoding="utf-8") as f:
        vocab = f.read()
    (tmp_path / "other" / "assets.extra").mkdir()
    (tmp_path / "other" / "assets.extra" / "vocab.txt").write_text(vocab, encoding="utf-8")
    with pytest.raises(predictor.UsageError, match="takes tokens, not input_ids"):
        predictor.Predictor(target, max_seq_length=8)


def test_a_signature_without_a_flat_entry_is_called_by_keyword(export):
    export_dir, _, _ = export
    model = predictor.Predictor(export_dir, batch_size=3)
    signature = tf.saved_model.load(export_dir).signatures["serving_default"]

    class KeywordOnly:
        structured_input_signature = signature.structured_input_signature

        def __call__(self, **inputs):
            assert sorted(inputs) == sorted(predictor.INPUT_NAMES)
            return signature(**inputs)

    expected = model.predict_arrays(TEXTS)
    model._call_model = predictor._model_caller(KeywordOnly(), export_dir)
    np.testing.assert_array_equal(model.predict_arrays(TEXTS), expected)
