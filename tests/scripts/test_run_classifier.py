"""run_classifier.py: feature conversion, records, the model head and whole runs."""

import os
import random
import shutil

import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from classifier_helpers import (
    VOCAB,
    model_files,
    read_eval_results,
    run_classifier_script,
    synthetic_rows,
    write_sst2_data,
)
from helpers import (
    ONNX_EXTRA_MISSING,
    error_line,
    load_script,
    needs_onnx_extra,
    tiny_bert_config,
    write_lines,
)

import tokenization
from bert_lib.bert_runs import classifier
from bert_lib.engine import ModeKeys
from bert_lib.task_data import classifier_tasks


@pytest.fixture(scope="module")
def rc():
    return load_script("run_classifier")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = write_lines(tmp_path_factory.mktemp("vocab") / "vocab.txt", VOCAB)
    return tokenization.FullTokenizer(path, do_lower_case=True)


def _convert(rc, tokenizer, text_a, text_b=None, label="1", max_seq_length=8, labels=("0", "1")):
    example = rc.InputExample("t-0", text_a, text_b, label)
    return rc.convert_single_example(
        0, example, None if labels is None else list(labels), max_seq_length, tokenizer
    )


def test_single_sentence_is_wrapped_and_padded(rc, tokenizer):
    f = _convert(rc, tokenizer, "The dog is hairy")
    # [CLS] the dog is hairy [SEP] then padding
    assert f.input_ids == [2, 5, 6, 7, 8, 3, 0, 0]
    assert f.input_mask == [1, 1, 1, 1, 1, 1, 0, 0]
    assert f.segment_ids == [0] * 8
    assert f.label_id == 1
    assert f.is_real_example is True


def test_single_sentence_is_cut_to_max_length_minus_two(rc, tokenizer):
    f = _convert(rc, tokenizer, "the dog is hairy .", max_seq_length=5)
    assert f.input_ids == [2, 5, 6, 7, 3]  # [CLS] the dog is [SEP]
    assert f.input_mask == [1] * 5


def test_pair_truncation_trims_the_longer_side_then_b_on_ties(rc, tokenizer):
    # a = the dog is hairy (4 pieces), b = cat ##s run (3); room for 8 - 3 = 5.
    # 4+3: a is longer -> a loses "hairy"; 3+3: tie -> b loses "run".
    f = _convert(rc, tokenizer, "the dog is hairy", "cats run", label="0")
    assert f.input_ids == [2, 5, 6, 7, 3, 9, 10, 3]
    assert f.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1]
    assert f.input_mask == [1] * 8
    assert f.label_id == 0


def test_pair_shorter_than_max_keeps_segments_and_pads(rc, tokenizer):
    f = _convert(rc, tokenizer, "good movie", "a bad cat", max_seq_length=10, label="1")
    # [CLS] good movie [SEP] a bad cat [SEP] pad pad
    assert f.input_ids == [2, 12, 14, 3, 15, 13, 9, 3, 0, 0]
    assert f.segment_ids == [0, 0, 0, 0, 1, 1, 1, 1, 0, 0]
    assert f.input_mask == [1] * 8 + [0, 0]


def test_unknown_word_and_regression_label(rc, tokenizer):
    f = _convert(rc, tokenizer, "zebra dog", "good", label="3.25", labels=None)
    assert f.input_ids == [2, 1, 6, 3, 12, 3, 0, 0]
    assert f.label_id == 3.25


def test_unknown_label_is_a_value_error(rc, tokenizer):
    with pytest.raises(ValueError, match="label '2' is not one of 0, 1"):
        _convert(rc, tokenizer, "the dog", label="2")


def test_padding_example_is_all_zeros_and_not_real(rc, tokenizer):
    f = rc.convert_single_example(0, rc.PaddingInputExample(), ["0", "1"], 6, tokenizer)
    assert f.input_ids == f.input_mask == f.segment_ids == [0] * 6
    assert f.label_id == 0
    assert f.is_real_example is False


def test_truncate_alias_stays_importable(rc):
    a, b = [1, 2, 3, 4], [5, 6]
    rc._truncate_seq_pair(a, b, 4)
    assert (a, b) == ([1, 2], [5, 6])


def test_records_round_trip_through_the_input_fn(rc, tokenizer, tmp_path):
    examples = [
        rc.InputExample("a", "the dog", None, "1"),
        rc.InputExample("b", "cats", "good movie", "0"),
        rc.PaddingInputExample(),
    ]
    path = str(tmp_path / "eval.tf_record")
    rc.file_based_convert_examples_to_features(examples, ["0", "1"], 8, tokenizer, path)
    assert os.listdir(tmp_path) == ["eval.tf_record"]

    first = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(path))).numpy())
    assert sorted(first.features.feature) == [
        "input_ids",
        "input_mask",
        "is_real_example",
        "label_ids",
        "segment_ids",
    ]

    input_fn = rc.file_based_input_fn_builder(path, 8, is_training=False, drop_remainder=False)
    batches = list(input_fn({"batch_size": 2}))
    assert [b["input_ids"].shape[0] for b in batches] == [2, 1]
    batch = batches[0]
    assert batch["input_ids"].dtype == tf.int32
    np.testing.assert_array_equal(
        batch["input_ids"].numpy(), [[2, 5, 6, 3, 0, 0, 0, 0], [2, 9, 10, 3, 12, 14, 3, 0]]
    )
    np.testing.assert_array_equal(batch["segment_ids"].numpy()[1], [0, 0, 0, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(batch["label_ids"].numpy(), [1, 0])
    np.testing.assert_array_equal(batches[1]["is_real_example"].numpy(), [0])


def test_regression_records_hold_float_labels(rc, tokenizer, tmp_path):
    path = str(tmp_path / "train.tf_record")
    examples = [rc.InputExample("a", "the dog", "cats", "4.5")]
    rc.file_based_convert_examples_to_features(examples, None, 8, tokenizer, path)
    input_fn = rc.file_based_input_fn_builder(
        path, 8, is_training=False, drop_remainder=False, is_regression=True
    )
    batch = next(iter(input_fn({"batch_size": 4})))
    assert batch["label_ids"].dtype == tf.float32
    np.testing.assert_allclose(batch["label_ids"].numpy(), [4.5])


def last_layer_rows(rc, mode, **options):
    """Rows of the last layer's feed-forward matmul in model_fn_builder's `mode` graph,
    for a batch of 2 sequences of 5 positions."""
    import modeling

    config = modeling.BertConfig.from_dict(tiny_bert_config(len(VOCAB)))
    model_fn = rc.model_fn_builder(config, 3, None, 1e-3, 10, 1, False, False, **options)
    with tf.Graph().as_default() as graph:
        ids = tf.zeros([2, 5], tf.int32)
        features = {"input_ids": ids, "input_mask": ids, "segment_ids": ids}
        features["label_ids"] = tf.zeros([2], tf.int32)
        model_fn(features, None, mode, {"batch_size": 2})
        last = f"bert/encoder/layer_{config.num_hidden_layers - 1}/intermediate/dense/BiasAdd"
        return graph.get_operation_by_name(last).outputs[0].shape.as_list()[0]


@pytest.mark.parametrize(
    "mode, options, rows",
    [
        (ModeKeys.TRAIN, {}, 2 * 5),
        (ModeKeys.TRAIN, {"pooled_output_only_in_training": True}, 2),
        (ModeKeys.EVAL, {}, 2),
        (ModeKeys.PREDICT, {}, 2),
    ],
)
def test_last_layer_runs_at_cls_only_except_in_full_training(rc, mode, options, rows):
    # The head reads only the pooled [CLS] output; training computes every
    # position unless asked not to, as the original does.
    assert last_layer_rows(rc, mode, **options) == rows


@pytest.mark.parametrize("flag, expected", [([], False), (["--dynamic_padding"], True)])
def test_dynamic_padding_trains_the_last_layer_at_cls_only(rc, parsed_flags, flag, expected):
    import modeling

    parsed_flags("--task_name=sst-2", "--do_train", *flag)
    built = {}
    fields = dict.fromkeys(classifier.Setup._fields)
    fields.update(
        settings=rc.settings_from_flags(),
        bert_config=modeling.BertConfig.from_dict(tiny_bert_config(len(VOCAB))),
        task=classifier_tasks.task_kind(["0", "1"], multi_label=False),
        num_train_steps=10,
        num_warmup_steps=1,
    )
    classifier.estimator_of(classifier.Setup(**fields), lambda **kwargs: built.update(kwargs))
    assert built["pooled_output_only_in_training"] is expected


@pytest.mark.parametrize("is_regression", [False, True])
def test_head_variables_and_math(rc, tmp_path, is_regression):
    import modeling

    config = modeling.BertConfig.from_dict(tiny_bert_config(len(VOCAB)))
    num_labels = 1 if is_regression else 3
    graph = tf.Graph()
    with graph.as_default():
        ids = tf.constant([[2, 5, 6, 3, 0], [2, 9, 3, 12, 3]], dtype=tf.int32)
        mask = tf.constant([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], dtype=tf.int32)
        segments = tf.constant([[0, 0, 0, 0, 0], [0, 0, 0, 1, 1]], dtype=tf.int32)
        if is_regression:
            labels = tf.constant([1.5, 4.0], dtype=tf.float32)
        else:
            labels = tf.constant([2, 0], dtype=tf.int32)
        loss, per_example, logits, output = rc.create_model(
            config,
            False,
            ids,
            mask,
            segments,
            labels,
            num_labels,
            False,
            is_regression=is_regression,
        )
        head = {v.name: v for v in tf.compat.v1.global_variables() if "bert/" not in v.name}
        assert sorted(head) == ["output_bias:0", "output_weights:0"]
        assert head["output_weights:0"].shape.as_list() == [num_labels, 32]
        (pooled,) = [
            op.outputs[0]
            for op in graph.get_operations()
            if op.name.startswith("bert/pooler/") and op.type == "Tanh"
        ]
        with tf.compat.v1.Session(graph=graph) as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            sess.run(head["output_bias:0"].assign(np.arange(num_labels, dtype=np.float32) / 10))
            values = sess.run(
                [
                    loss,
                    per_example,
                    logits,
                    output,
                    pooled,
                    head["output_weights:0"],
                    head["output_bias:0"],
                ]
            )
    loss_v, per_example_v, logits_v, output_v, pooled_v, w, b = values
    expected_logits = pooled_v.astype(np.float64) @ w.T.astype(np.float64) + b
    np.testing.assert_allclose(logits_v, expected_logits, rtol=1e-5, atol=1e-6)
    if is_regression:
        scores = expected_logits[:, 0]
        np.testing.assert_allclose(output_v, scores, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(per_example_v, (scores - [1.5, 4.0]) ** 2, rtol=1e-5)
    else:
        probs = npr.softmax(expected_logits, axis=1)
        np.testing.assert_allclose(output_v, probs, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(
            per_example_v, -np.log(probs[[0, 1], [2, 0]]), rtol=1e-5, atol=1e-6
        )
    assert loss_v == pytest.approx(float(np.mean(per_example_v)), rel=1e-6)


# ---------------------------------------------------------------------------
# Whole runs of the script on a synthetic task: label 1 iff the text holds "good".

TRAIN_ROWS, DEV_ROWS, TEST_ROWS = 96, 40, 24


def _serve(export_dir, tokenizer, rc, examples, output_name, max_seq_length=16):
    converted = [
        rc.convert_single_example(5, e, None, max_seq_length, tokenizer)
        if output_name == "score"
        else rc.convert_single_example(5, e, ["0", "1"], max_seq_length, tokenizer)
        for e in examples
    ]
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    outputs = serve(
        input_ids=tf.constant([f.input_ids for f in converted], tf.int32),
        input_mask=tf.constant([f.input_mask for f in converted], tf.int32),
        segment_ids=tf.constant([f.segment_ids for f in converted], tf.int32),
    )
    assert list(outputs) == [output_name]
    return outputs[output_name].numpy()


@pytest.fixture(scope="module")
def sst2_run(tmp_path_factory):
    """One train + eval + predict + export run on SST-2 shaped synthetic data; the export
    has model.onnx too where the [onnx] extra is installed."""
    root = tmp_path_factory.mktemp("sst2")
    rng = random.Random(7)
    train, dev, test = (synthetic_rows(rng, n) for n in (TRAIN_ROWS, DEV_ROWS, TEST_ROWS))
    data = write_sst2_data(root / "data", train, dev, test)
    vocab, config = model_files(root)
    out = root / "out"
    proc = run_classifier_script(
        "--task_name=SST-2",
        "--do_train=true",
        "--do_eval=true",
        "--do_predict=true",
        f"--data_dir={data}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        "--max_seq_length=16",
        "--train_batch_size=16",
        "--learning_rate=2e-3",
        "--num_train_epochs=10",
        f"--output_dir={out}",
        f"--export_dir={root / 'export'}",
        "--export_format=saved_model" if ONNX_EXTRA_MISSING else "--export_format=onnx",
        f"--glue_submission_file={root / 'SST-2.tsv'}",
        "--tf_random_seed=1",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"root": root, "out": out, "vocab": vocab, "config": config, "dev": dev, "test": test}


@pytest.mark.slow
def test_tiny_run_learns_the_task_and_writes_eval_results(sst2_run):
    result = read_eval_results(sst2_run["out"] / "eval_results.txt")
    assert sorted(result) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
    assert int(result["global_step"]) == int(TRAIN_ROWS / 16 * 10)
    assert float(result["eval_accuracy"]) >= 0.9  # chance is about 0.5
    for name in ("train", "eval", "predict"):
        assert (sst2_run["out"] / f"{name}.tf_record").exists()


@pytest.mark.slow
def test_test_results_hold_one_probability_row_per_test_example(sst2_run):
    lines = (sst2_run["out"] / "test_results.tsv").read_text().splitlines()
    assert len(lines) == TEST_ROWS
    probabilities = []
    for line in lines:
        fields = line.split("\t")
        assert len(fields) == 2
        for field in fields:
            assert str(np.float32(field)) == field  # str() of a float32, as the original
        probabilities.append([float(f) for f in fields])
    probabilities = np.array(probabilities)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    gold = np.array([label for _, label in sst2_run["test"]])
    assert np.mean(probabilities.argmax(axis=1) == gold) >= 0.9

    submission = (sst2_run["root"] / "SST-2.tsv").read_text().splitlines()
    assert submission[0] == "index\tprediction"
    assert submission[1:] == [f"{i}\t{p.argmax()}" for i, p in enumerate(probabilities)]


@pytest.mark.slow
def test_saved_model_gives_the_predict_probabilities(rc, sst2_run):
    tokenizer = tokenization.FullTokenizer(sst2_run["vocab"], do_lower_case=True)
    examples = [
        rc.InputExample(f"t-{i}", s, None, "0") for i, (s, _) in enumerate(sst2_run["test"])
    ]
    served = _serve(str(sst2_run["root"] / "export"), tokenizer, rc, examples, "probabilities")
    predicted = np.loadtxt(str(sst2_run["out"] / "test_results.tsv"), delimiter="\t")
    np.testing.assert_allclose(served, predicted, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
@needs_onnx_extra
def test_onnx_export_gives_the_predict_probabilities_under_both_runtimes(sst2_run):
    from bert_lib.export import predictor

    texts = [sentence for sentence, _ in sst2_run["test"]]
    predicted = np.loadtxt(str(sst2_run["out"] / "test_results.tsv"), delimiter="\t")
    for runtime in ("onnxruntime", "openvino"):
        served = predictor.Predictor(str(sst2_run["root"] / "export"), runtime=runtime)
        np.testing.assert_allclose(served.predict_arrays(texts), predicted, atol=1e-6)


@pytest.mark.slow
def test_export_format_is_checked_before_any_work(tmp_path):
    vocab, config = model_files(tmp_path)
    common = (
        "--task_name=sst-2",
        "--do_train=true",
        f"--data_dir={tmp_path}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        f"--output_dir={tmp_path / 'out'}",
    )
    proc = run_classifier_script(*common, "--export_format=onnx")
    assert error_line(proc) == "ERROR: --export_format=onnx needs --export_dir"
    proc = run_classifier_script(
        *common, f"--export_dir={tmp_path / 'export'}", "--export_format=onnx,tflite"
    )
    assert error_line(proc) == (
        "ERROR: --export_format=onnx,tflite: 'tflite' is not one of saved_model, onnx, onnx_int8"
    )
    assert not (tmp_path / "out").exists() and not (tmp_path / "export").exists()


@pytest.mark.slow
def test_cola_eval_reports_matthews_of_all_dev_predictions(rc, sst2_run, tmp_path):
    # The same model evaluated as CoLA (no-header layout); its MCC must equal
    # the MCC of the SavedModel's predictions on the same dev rows.
    data = tmp_path / "cola"
    data.mkdir()
    dev = sst2_run["dev"]
    (data / "dev.tsv").write_text("".join(f"src\t{y}\t\t{s}\n" for s, y in dev))
    out = tmp_path / "out"
    shutil.copytree(sst2_run["out"], out)
    proc = run_classifier_script(
        "--task_name=cola",
        "--do_eval=true",
        f"--data_dir={data}",
        f"--vocab_file={sst2_run['vocab']}",
        f"--bert_config_file={sst2_run['config']}",
        "--max_seq_length=16",
        "--eval_batch_size=7",
        f"--output_dir={out}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = read_eval_results(out / "eval_results.txt")
    assert sorted(result) == ["eval_accuracy", "eval_loss", "eval_mcc", "global_step", "loss"]

    tokenizer = tokenization.FullTokenizer(sst2_run["vocab"], do_lower_case=True)
    examples = [rc.InputExample(f"d-{i}", s, None, "0") for i, (s, _) in enumerate(dev)]
    served = _serve(str(sst2_run["root"] / "export"), tokenizer, rc, examples, "probabilities")
    predicted = served.argmax(axis=1)
    gold = np.array([label for _, label in dev])
    tp = np.sum((gold == 1) & (predicted == 1))
    tn = np.sum((gold == 0) & (predicted == 0))
    fp = np.sum((gold == 0) & (predicted == 1))
    fn = np.sum((gold == 1) & (predicted == 0))
    denominator = np.sqrt(float((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)))
    mcc = (tp * tn - fp * fn) / denominator if denominator else 0.0
    assert float(result["eval_mcc"]) == pytest.approx(mcc, abs=1e-6)
    assert float(result["eval_accuracy"]) == pytest.approx(np.mean(predicted == gold), abs=1e-6)


@pytest.mark.slow
def test_sts_b_regression_run_reports_correlations_and_scores(rc, tmp_path):
    rng = random.Random(3)
    data = tmp_path / "data"
    data.mkdir()
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2"

    def rows(count, with_score):
        lines, gold = [], []
        for i in range(count):
            (a, _), (b, y) = synthetic_rows(rng, 2)
            score = 4.0 * y + rng.random()
            gold.append(score)
            line = f"{i}\tmain\tMSRvid\t2012\t{i:04d}\tnone\tnone\t{a}\t{b}"
            lines.append(line + (f"\t{score:.3f}" if with_score else ""))
        return lines, gold

    train, _ = rows(32, True)
    dev, dev_gold = rows(12, True)
    test, _ = rows(8, False)
    (data / "train.tsv").write_text("\n".join([header + "\tscore"] + train) + "\n")
    (data / "dev.tsv").write_text("\n".join([header + "\tscore"] + dev) + "\n")
    (data / "test.tsv").write_text("\n".join([header] + test) + "\n")
    vocab, config = model_files(tmp_path)
    out = tmp_path / "out"
    proc = run_classifier_script(
        "--task_name=STS-B",
        "--do_train=true",
        "--do_eval=true",
        "--do_predict=true",
        f"--data_dir={data}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        "--max_seq_length=16",
        "--train_batch_size=8",
        "--learning_rate=1e-3",
        "--num_train_epochs=2",
        f"--output_dir={out}",
        f"--export_dir={tmp_path / 'export'}",
        f"--glue_submission_file={tmp_path / 'STS-B.tsv'}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = read_eval_results(out / "eval_results.txt")
    assert sorted(result) == ["eval_loss", "eval_pearson", "eval_spearman", "global_step", "loss"]

    tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=True)
    processor = classifier_tasks.get_processor("sts-b")
    dev_examples = processor.get_dev_examples(str(data))
    served_dev = _serve(str(tmp_path / "export"), tokenizer, rc, dev_examples, "score")
    gold = np.array([float(e.label) for e in dev_examples])
    # The served graph and the eval graph round differently (about 1e-6 per score), and
    # Pearson over 12 scores of a barely trained model magnifies that: 2.6e-5 was seen.
    assert float(result["eval_pearson"]) == pytest.approx(
        np.corrcoef(served_dev, gold)[0, 1], abs=1e-3
    )
    assert float(result["eval_loss"]) == pytest.approx(np.mean((served_dev - gold) ** 2), rel=1e-4)

    scores = [float(line) for line in (out / "test_results.tsv").read_text().splitlines()]
    assert len(scores) == len(test)
    served_test = _serve(
        str(tmp_path / "export"), tokenizer, rc, processor.get_test_examples(str(data)), "score"
    )
    np.testing.assert_allclose(served_test, scores, rtol=1e-5, atol=1e-6)
    submission = (tmp_path / "STS-B.tsv").read_text().splitlines()
    assert submission == ["index\tprediction"] + [f"{i}\t{s:.3f}" for i, s in enumerate(scores)]


@pytest.mark.slow
def test_bad_training_row_is_one_line_error_before_any_work(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    rows = ["sentence\tlabel", "good movie\t1", "bad dog\t0", "a cat\t1", "the dog\t2"]
    (data / "train.tsv").write_text("\n".join(rows) + "\n")
    vocab, config = model_files(tmp_path)
    out = tmp_path / "out"
    proc = run_classifier_script(
        "--task_name=sst-2",
        "--do_train=true",
        f"--data_dir={data}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        "--max_seq_length=16",
        f"--output_dir={out}",
    )
    assert error_line(proc) == (
        f"ERROR: {data / 'train.tsv'}, line 5: label '2' is not one of 0, 1"
    )
    assert not out.exists()


@pytest.fixture
def parsed_flags(rc, tmp_path):
    """Parses run_classifier flags in-process; undone after the test."""
    from absl import flags

    vocab, config = model_files(tmp_path)

    def parse(*args):
        flags.FLAGS.unparse_flags()
        flags.FLAGS(
            [
                "run_classifier.py",
                f"--vocab_file={vocab}",
                f"--bert_config_file={config}",
                f"--data_dir={tmp_path}",
                f"--output_dir={tmp_path / 'out'}",
                "--max_seq_length=16",
                *args,
            ]
        )

    yield parse
    flags.FLAGS.unparse_flags()


@pytest.mark.parametrize(
    "args,message",
    [
        (["--task_name=sst-2"], "At least one of `do_train`, `do_eval` or `do_predict'"),
        (["--task_name=nope", "--do_train"], "Task not found: nope (known tasks: cola, "),
        (
            ["--task_name=rte", "--do_eval", "--max_seq_length=65"],
            "Cannot use sequence length 65 because the BERT model was only trained up to "
            "sequence length 64",
        ),
        (
            [
                "--task_name=rte",
                "--do_train",
                "--init_checkpoint=/m/cased_L-12_H-768_A-12/bert_model.ckpt",
            ],
            "cased",
        ),
        (
            ["--task_name=rte", "--do_eval", "--glue_submission_file=/tmp/x.tsv"],
            "--glue_submission_file needs --do_predict",
        ),
    ],
)
def test_flag_errors_come_before_any_work(rc, parsed_flags, tmp_path, args, message):
    parsed_flags(*args)
    with pytest.raises(ValueError) as info:
        rc.main([])
    assert message in str(info.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_checkpoint_with_another_head_is_refused_before_any_work(rc, sst2_run, parsed_flags):
    mnli = sst2_run["root"] / "mnli"
    mnli.mkdir()
    parsed_flags(
        "--task_name=mnli", "--do_predict", f"--data_dir={mnli}", f"--output_dir={sst2_run['out']}"
    )
    with pytest.raises(
        ValueError,
        match=r"variable output_weights has shape \[3, 32\] in the "
        r"model but \[2, 32\] in the checkpoint .*another",
    ):
        rc.main([])


@pytest.mark.slow
def test_export_checks_every_variable_shape(rc, sst2_run, tmp_path):
    import modeling

    config = modeling.BertConfig.from_json_file(sst2_run["config"])
    checkpoint = str(sst2_run["out"] / f"model.ckpt-{int(TRAIN_ROWS / 16 * 10)}")
    target = tmp_path / "export"
    with pytest.raises(
        ValueError,
        match=r"variable output_weights has shape \[1, 32\] in the "
        r"model but \[2, 32\] in the checkpoint",
    ):
        rc.export_saved_model(str(target), checkpoint, config, 1, is_regression=True)
    assert os.listdir(tmp_path) == []
    rc.export_saved_model(str(target), checkpoint, config, 2)
    with pytest.raises(ValueError, match="already exists"):
        rc.export_saved_model(str(target), checkpoint, config, 2)


def test_empty_split_is_an_error(rc, parsed_flags, tmp_path):
    (tmp_path / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n")
    parsed_flags("--task_name=RTE", "--do_eval")
    with pytest.raises(ValueError, match="the dev set of task RTE has no examples"):
        rc.main([])
    assert not (tmp_path / "out").exists()


class _OnePassEstimator:
    """Stands in for engine.Estimator: evaluation hands back every record's output,
    out of input order as length-sorted batches give them; prediction is refused."""

    def __init__(self, records):
        self.records = records
        self.evaluations = 0

    def evaluate(
        self,
        input_fn,
        steps=None,
        checkpoint_path=None,
        with_predictions=False,
        write_summaries=True,
    ):
        del input_fn, steps, checkpoint_path, write_summaries
        self.evaluations += 1
        assert with_predictions
        return {"eval_accuracy": 0.5, "eval_loss": 1.0, "loss": 1.0, "global_step": 3}, list(
            self.records
        )

    def predict(self, *args, **kwargs):
        raise AssertionError("the dev set was read a second time for the official metrics")


def test_official_metrics_come_from_the_one_evaluation_pass(rc):
    labels = ["0", "1", "1", "0", "1"]
    predicted = [0, 1, 0, 0, 1]  # tp 2, tn 2, fp 0, fn 1
    examples = [rc.InputExample(f"d-{i}", "text", None, y) for i, y in enumerate(labels)]
    examples.append(rc.PaddingInputExample())
    records = [
        {"probabilities": np.eye(2)[p], "example_index": np.int64(i)}
        for i, p in enumerate(predicted + [1])
    ]
    records = records[3:] + records[:3]  # batches sorted by length arrive out of order
    dev_set = classifier.RecordSet(examples, 5, input_fn=None, steps=None, owners=None)
    estimator = _OnePassEstimator(records)
    task = classifier_tasks.task_kind(["0", "1"], multi_label=False)
    result = classifier.evaluate_dev_set(estimator, dev_set, ["f1", "mcc"], task)
    assert estimator.evaluations == 1
    precision, recall = 2 / 2, 2 / 3
    assert result["eval_f1"] == pytest.approx(2 * precision * recall / (precision + recall))
    assert result["eval_mcc"] == pytest.approx((2 * 2 - 0 * 1) / np.sqrt(2 * 3 * 2 * 3))
    assert result["global_step"] == 3
