"""Not computing padding: cut batches, length grouping, order restored, outputs unchanged.

The cut runs are compared with runs at full length (--length_bucket=0) and
with a numpy BERT on the same checkpoint.
"""

import json
import os
import random
import shutil

import numpy as np
import numpy_reference
import pytest
import tensorflow as tf
from classifier_helpers import (
    model_files,
    random_classifier_values,
    read_eval_results,
    run_classifier_script,
    sst2_flags,
    synthetic_rows,
    write_sst2_data,
)
from extract_features_helpers import CONFIG as EF_CONFIG
from extract_features_helpers import LINES as EF_LINES
from extract_features_helpers import VOCAB as EF_VOCAB
from extract_features_helpers import run_extract_features, write_model_files
from helpers import (
    REPO,
    checkpoint_values,
    error_line,
    run_code,
    write_bert_config,
    write_checkpoint,
    write_lines,
)
from squad_helpers import run_squad_script, toy_model_flags, toy_squad, write_json

import modeling
import tokenization
from bert_lib import engine
from bert_lib.task_data import dynamic_padding

TOLERANCE = 1e-5


def _batch(masks):
    mask = tf.constant(masks, tf.int32)
    return {"input_ids": mask * 7, "input_mask": mask, "segment_ids": mask * 0, "label": [1] * 2}


def _widths(batch, length_bucket):
    trimmed = dynamic_padding.trim_batch(batch, length_bucket, ["input_ids", "input_mask"])
    return [trimmed[k].shape[1] for k in ("input_ids", "input_mask", "segment_ids")]


def test_batch_is_cut_to_longest_real_sequence_rounded_up_to_the_bucket():
    masks = [[1] * 3 + [0] * 9, [1] * 5 + [0] * 7]  # real lengths 3 and 5 of 12
    assert _widths(_batch(masks), 4) == [8, 8, 12]  # segment_ids not among the keys
    assert _widths(_batch(masks), 5) == [5, 5, 12]
    assert _widths(_batch(masks), 16) == [12, 12, 12]  # never longer than the records
    assert _widths(_batch([[0] * 12, [0] * 12]), 4) == [4, 4, 12]  # at least one bucket


def test_real_length_runs_to_the_last_real_position():
    lengths = dynamic_padding.real_lengths(tf.constant([[1, 1, 0, 0], [1, 0, 1, 0], [0] * 4]))
    assert lengths.numpy().tolist() == [2, 3, 0]


def _examples(lengths, seq_length=12):
    ids = np.zeros([len(lengths), seq_length], np.int32)
    for row, length in enumerate(lengths):
        ids[row, :length] = np.arange(1, length + 1) + 100 * row
    return tf.data.Dataset.from_tensor_slices(
        {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32), "segment_ids": ids * 0}
    )


def test_prediction_batches_are_sorted_within_windows_and_outputs_come_back_in_order():
    rng = random.Random(3)
    lengths = [rng.randint(1, 12) for _ in range(14)]
    settings = dynamic_padding.Settings(length_bucket=2, window_batches=2)
    dataset = dynamic_padding.batch(_examples(lengths), 3, False, settings, is_training=False)
    order, per_example = [], []
    for batch in dataset.as_numpy_iterator():
        batch_lengths = [lengths[i] for i in batch["example_index"]]
        # Each batch is as wide as its longest member, rounded up to 2.
        assert batch["input_ids"].shape[1] == min(12, -(-max(batch_lengths) // 2) * 2)
        order.extend(batch["example_index"].tolist())
        for row, index in enumerate(batch["example_index"]):
            # The ids of an example survive the cut: its rows were not mixed up.
            ids = batch["input_ids"][row]
            real = lengths[index]
            assert ids[:real].tolist() == [j + 100 * index for j in range(1, real + 1)]
            per_example.append({"example_index": index, "first_id": ids[0]})
    # Windows of 6 examples, shortest first (ties in input order); the 2 examples
    # past the last whole batch of 3 keep their order, so the last batch is the
    # input's own.
    for start in range(0, 14, 6):
        window = list(range(start, min(start + 6, 14)))
        whole = len(window) - len(window) % 3
        expected = sorted(window[:whole], key=lambda i: (lengths[i], i)) + window[whole:]
        assert order[start : start + 6] == expected
    assert order[-2:] == [12, 13]
    restored = list(dynamic_padding.in_input_order(iter(per_example)))
    assert [p["example_index"] for p in restored] == list(range(14))
    assert [int(p["first_id"]) for p in restored] == [1 + 100 * i for i in range(14)]


def test_outputs_are_given_back_as_soon_as_their_predecessors_came():
    consumed = []

    def arriving():
        for index in [2, 0, 1, 5, 3, 4]:
            consumed.append(index)
            yield {"example_index": np.int64(index)}

    restored = dynamic_padding.in_input_order(arriving())
    assert int(next(restored)["example_index"]) == 0
    assert consumed == [2, 0]
    assert [int(next(restored)["example_index"]) for _ in range(2)] == [1, 2]
    assert consumed == [2, 0, 1]
    assert [int(p["example_index"]) for p in restored] == [3, 4, 5]


def _rows(batch):
    """The example (row of _examples) each row of a batch is."""
    return sorted(int(first - 1) // 100 for first in batch["input_ids"][:, 0])


def test_a_grouped_training_step_takes_the_examples_of_the_ungrouped_step():
    """--group_by_length only changes how a step's examples are computed: the 4
    micro-batches of a step hold the examples of the step's batch without it (a random
    sample), sorted by length, each micro-batch cut to its own longest."""
    rng = random.Random(5)
    lengths = [rng.randint(1, 12) for _ in range(200)]
    dataset = _examples(lengths).repeat()
    ungrouped = dynamic_padding.batch(
        dataset, 32, True, dynamic_padding.Settings(length_bucket=4, window_batches=0), True
    )
    grouped = dynamic_padding.batch(
        dataset, 8, True, dynamic_padding.Settings(length_bucket=4, window_batches=4), True
    )
    pieces = list(grouped.take(40).as_numpy_iterator())
    for step, batch in enumerate(ungrouped.take(10).as_numpy_iterator()):
        micro_batches = pieces[4 * step : 4 * step + 4]
        assert sorted(r for m in micro_batches for r in _rows(m)) == _rows(batch)
        real = [m["input_mask"].sum(axis=1) for m in micro_batches]
        for shorter, longer in zip(real, real[1:]):
            assert shorter.max() <= longer.min()
        for micro_batch, lengths_in in zip(micro_batches, real):
            assert micro_batch["input_ids"].shape == (8, -(-lengths_in.max() // 4) * 4)
    # Sorted micro-batches compute less padding than the step's batch cut as a whole.
    assert sum(m["input_ids"].size for m in pieces) < 0.85 * 32 * 10 * 12


# (flags, micro-batches a training step runs)
_MICRO_BATCH_CASES = [
    ([], 1),
    (["--dynamic_padding"], 1),
    (["--dynamic_padding", "--group_by_length"], 4),
    (["--dynamic_padding", "--group_by_length", "--num_accumulation_steps=2"], 8),
    (["--dynamic_padding", "--group_by_length", "--train_batch_size=6"], 3),
    (["--dynamic_padding", "--group_by_length", "--train_batch_size=7"], 1),
    (["--num_accumulation_steps=4"], 4),
    # Pieces of each replica's batch: 12 on 2 replicas is 6 each, in 3 pieces (not the 4
    # of 12, which would not divide a replica's 6).
    (["--dynamic_padding", "--group_by_length", "--distribution_strategy=mirrored"], 4),
    (
        [
            "--dynamic_padding",
            "--group_by_length",
            "--distribution_strategy=mirrored",
            "--train_batch_size=12",
        ],
        3,
    ),
]


def test_group_by_length_multiplies_the_micro_batches_of_a_step():
    """The engine and the model_fn's step average the same number of micro-batches, and the
    training input sorts that many at a time (its window); under mirrored, on 2 replicas."""
    result = run_code(
        f"""
        import json
        import mirrored
        mirrored.split_cpu(2)
        from absl import flags
        import run_classifier
        from bert_lib import script_flags
        seen = []
        for argv, _ in {_MICRO_BATCH_CASES!r}:
            flags.FLAGS(["prog", "--output_dir=/nonexistent", *argv])
            script_flags.check_padding_flags()
            seen.append([
                script_flags.run_config_from_flags().num_accumulation_steps,
                list(script_flags.padding_from_flags(True)),
            ])
            flags.FLAGS.unparse_flags()
        print(json.dumps(seen))
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    expected = []
    for argv, micro_batches in _MICRO_BATCH_CASES:
        grouped, cut = "--group_by_length" in argv, "--dynamic_padding" in argv
        padding = [1, micro_batches] if grouped else [1, 0] if cut else [0, 0]
        expected.append([micro_batches, padding])
    assert seen == expected


def _dynamic_length_model(config, use_xla):
    ids = tf.compat.v1.placeholder(tf.int32, [None, None])
    mask = tf.compat.v1.placeholder(tf.int32, ids.shape)
    types = tf.compat.v1.placeholder(tf.int32, ids.shape)
    scope = tf.xla.experimental.jit_scope() if use_xla else tf.compat.v1.name_scope(None)
    with scope:
        model = modeling.BertModel(config, False, ids, mask, types)
    return (ids, mask, types), model.get_sequence_output()


@pytest.mark.parametrize("use_xla", [False, True])
def test_model_with_a_dynamic_length_matches_numpy_at_every_cut(use_xla):
    """One graph of [None, None] inputs, run at full and cut lengths (XLA compiles each)."""
    config = modeling.BertConfig.from_dict(
        dict(EF_CONFIG, max_position_embeddings=16, initializer_range=0.3)
    )
    rng = np.random.RandomState(0)
    lengths = [3, 9, 6]
    ids = np.zeros([3, 16], np.int32)
    types = np.zeros_like(ids)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.randint(5, config.vocab_size, size=length)
        types[row, length // 2 : length] = 1
    mask = (ids > 0).astype(np.int32)
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(1)
        inputs, output = _dynamic_length_model(config, use_xla)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            weights = {v.op.name: sess.run(v) for v in tf.compat.v1.global_variables()}
            runs = {}
            for length in (16, 12, 9):
                feeds = dict(zip(inputs, (ids[:, :length], mask[:, :length], types[:, :length])))
                runs[length] = sess.run(output, feeds)
    expected = numpy_reference.bert(weights, config, ids, mask, types)["sequence_output"]
    for length, got in runs.items():
        assert got.shape == (3, length, config.hidden_size)
        for row, real in enumerate(lengths):
            np.testing.assert_allclose(got[row, :real], expected[row, :real], atol=TOLERANCE)
        # Padding positions that stay are computed as at full length.
        np.testing.assert_allclose(got, expected[:, :length], atol=TOLERANCE)


# ---------------------------------------------------------------------------
# The scripts, cut against full length


def _sentences(rng, count):
    rows = []
    for _ in range(count):
        label = rng.randint(0, 1)
        words = [rng.choice(["the", "dog", "is", "hairy", "cat", "a", "very", "."])]
        words += [
            rng.choice(["run", "movie", "not", "bad", "the"]) for _ in range(rng.randint(0, 12))
        ]
        if label:
            words.insert(rng.randint(0, len(words)), "good")
        rows.append((" ".join(words), label))
    return rows


def _results_table(path):
    return np.array(
        [[float(x) for x in line.split("\t")] for line in path.read_text().splitlines()]
    )


@pytest.fixture(scope="module")
def classifier_runs(tmp_path_factory):
    """A trained tiny classifier's eval / predict / export, cut (default) and at full length."""
    root = tmp_path_factory.mktemp("classifier")
    rng = random.Random(11)
    data = root / "data"
    data.mkdir()
    rows = {name: _sentences(rng, n) for name, n in (("train", 64), ("dev", 38), ("test", 37))}
    for name in ("train", "dev"):
        text = "".join(f"{s}\t{y}\n" for s, y in rows[name])
        (data / f"{name}.tsv").write_text("sentence\tlabel\n" + text)
    test = "".join(f"{i}\t{s}\n" for i, (s, _) in enumerate(rows["test"]))
    (data / "test.tsv").write_text("index\tsentence\n" + test)
    vocab, config = model_files(root)
    common = [
        *sst2_flags(data, vocab, config),
        "--max_seq_length=32",
        "--eval_batch_size=5",
        "--predict_batch_size=5",
        "--do_eval=true",
        "--do_predict=true",
    ]
    cut = root / "cut"
    proc = run_classifier_script(
        *common,
        "--do_train=true",
        "--train_batch_size=16",
        "--num_train_epochs=2",
        "--learning_rate=1e-3",
        "--tf_random_seed=1",
        f"--output_dir={cut}",
        f"--export_dir={root / 'export'}",
        "--length_bucket=4",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # Training kept its full length; evaluation and prediction did not.
    assert "name = input_ids, shape = (16, 32)" in proc.stderr
    assert "name = input_ids, shape = (None, None)" in proc.stderr
    checkpoint = engine.newest_checkpoint(str(cut))
    full = root / "full"
    proc = run_classifier_script(
        *common, f"--init_checkpoint={checkpoint}", f"--output_dir={full}", "--length_bucket=0"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "name = input_ids, shape = (None, 32)" in proc.stderr
    assert "shape = (None, None)" not in proc.stderr
    default = root / "default"
    proc = run_classifier_script(
        *common, f"--init_checkpoint={checkpoint}", f"--output_dir={default}"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"root": root, "rows": rows, "vocab": vocab, "config": config, "ckpt": checkpoint}


def _numpy_probabilities(checkpoint, config_path, vocab, sentences, seq_length=32):
    tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=True)
    ids = np.zeros([len(sentences), seq_length], np.int32)
    for row, sentence in enumerate(sentences):
        tokens = ["[CLS]"] + tokenizer.tokenize(sentence) + ["[SEP]"]
        ids[row, : len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
    weights = checkpoint_values(checkpoint)
    config = modeling.BertConfig.from_json_file(config_path)
    pooled = numpy_reference.bert(weights, config, ids, (ids > 0).astype(np.int32))[
        "pooled_output"
    ]
    logits = pooled @ weights["output_weights"].T + weights["output_bias"]
    return numpy_reference.softmax(logits), ids


@pytest.mark.slow
def test_classifier_predictions_and_eval_are_those_of_full_length(classifier_runs):
    root = classifier_runs["root"]
    cut, full, default = (
        _results_table(root / d / "test_results.tsv") for d in ("cut", "full", "default")
    )
    sentences = [s for s, _ in classifier_runs["rows"]["test"]]
    expected, _ = _numpy_probabilities(
        classifier_runs["ckpt"], classifier_runs["config"], classifier_runs["vocab"], sentences
    )
    assert cut.shape == (37, 2)
    np.testing.assert_allclose(cut, full, atol=TOLERANCE)
    np.testing.assert_allclose(default, full, atol=TOLERANCE)
    np.testing.assert_allclose(full, expected, atol=TOLERANCE)
    results = [read_eval_results(root / d / "eval_results.txt") for d in ("cut", "full")]
    assert results[0]["eval_accuracy"] == results[1]["eval_accuracy"]
    assert abs(float(results[0]["eval_loss"]) - float(results[1]["eval_loss"])) < TOLERANCE
    # "loss" is the mean of the batch losses: 7 whole batches of 5 and the last 3
    # dev examples, in the cut run as in the full-length (and the original's) one.
    assert abs(float(results[0]["loss"]) - float(results[1]["loss"])) < TOLERANCE


@pytest.mark.slow
def test_exported_classifier_takes_any_length(classifier_runs):
    root = classifier_runs["root"]
    serve = tf.saved_model.load(str(root / "export")).signatures["serving_default"]
    assert serve.structured_input_signature[1]["input_ids"].shape.as_list() == [None, None]
    sentences = [s for s, _ in classifier_runs["rows"]["test"]][:6]
    _, ids = _numpy_probabilities(
        classifier_runs["ckpt"], classifier_runs["config"], classifier_runs["vocab"], sentences
    )
    predicted = _results_table(root / "full" / "test_results.tsv")[:6]
    longest = int((ids > 0).sum(axis=1).max())
    for length in (longest, 32):
        batch = ids[:, :length]
        outputs = serve(
            input_ids=tf.constant(batch),
            input_mask=tf.constant((batch > 0).astype(np.int32)),
            segment_ids=tf.constant(batch * 0),
        )["probabilities"].numpy()
        np.testing.assert_allclose(outputs, predicted, atol=TOLERANCE)


@pytest.mark.slow
def test_squad_predictions_are_those_of_full_length(tmp_path):
    train, _ = toy_squad(48, seed=1)
    dev, _ = toy_squad(21, seed=2)
    common = toy_model_flags(tmp_path) + [
        f"--predict_file={write_json(tmp_path / 'dev.json', dev)}",
        "--do_predict",
        "--max_seq_length=24",
        "--doc_stride=8",
        "--max_query_length=8",
        "--predict_batch_size=4",
        "--n_best_size=5",
    ]
    cut = tmp_path / "cut"
    proc = run_squad_script(
        common
        + [
            "--do_train",
            f"--train_file={write_json(tmp_path / 'train.json', train)}",
            f"--output_dir={cut}",
            "--train_batch_size=16",
            "--num_train_epochs=1",
            "--learning_rate=1e-3",
            "--tf_random_seed=7",
            "--length_bucket=4",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    full = tmp_path / "full"
    checkpoint = engine.newest_checkpoint(str(cut))
    proc = run_squad_script(
        common + [f"--init_checkpoint={checkpoint}", f"--output_dir={full}", "--length_bucket=0"]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]

    def read(directory, name):
        return json.loads((directory / name).read_text(encoding="utf-8"))

    assert read(cut, "predictions.json") == read(full, "predictions.json")
    nbest_cut, nbest_full = (
        read(cut, "nbest_predictions.json"),
        read(full, "nbest_predictions.json"),
    )
    assert sorted(nbest_cut) == sorted(nbest_full)
    for qid, entries in nbest_full.items():
        assert [e["text"] for e in nbest_cut[qid]] == [e["text"] for e in entries]
        for key in ("probability", "start_logit", "end_logit"):
            np.testing.assert_allclose(
                [e[key] for e in nbest_cut[qid]], [e[key] for e in entries], atol=TOLERANCE
            )


@pytest.mark.slow
def test_extract_features_are_those_of_full_length_and_of_numpy(tmp_path):
    (tmp_path / "model").mkdir()
    model_dir = write_model_files(tmp_path / "model")
    outputs = {}
    for name, flag in (
        ("default", []),
        ("cut", ["--length_bucket=4"]),
        ("full", ["--length_bucket=0"]),
        ("xla", ["--length_bucket=4", "--use_xla"]),  # XLA compiles each cut length
    ):
        run_dir = tmp_path / name
        run_dir.mkdir()
        proc = run_extract_features(model_dir, run_dir, "-1,-2", *flag)
        assert proc.returncode == 0, proc.stderr[-3000:]
        lines = (run_dir / "out" / "features.jsonl").read_text().splitlines()
        outputs[name] = [json.loads(line) for line in lines]
    config = modeling.BertConfig.from_dict(EF_CONFIG)
    weights = checkpoint_values(str(model_dir / "model.ckpt"))
    vocab = {token: i for i, token in enumerate(EF_VOCAB)}
    assert [r["linex_index"] for r in outputs["cut"]] == list(range(len(EF_LINES)))
    for records in zip(*outputs.values()):
        tokens = [f["token"] for f in records[0]["features"]]
        assert [[f["token"] for f in r["features"]] for r in records] == [tokens] * len(records)
        ids = np.array([[vocab[t] for t in tokens]])
        types = np.zeros_like(ids)
        if tokens.count("[SEP]") == 2:
            types[0, tokens.index("[SEP]") + 1 :] = 1
        layers = numpy_reference.bert(weights, config, ids, None, types)["all_encoder_layers"]
        for record in records:
            for position, feature in enumerate(record["features"]):
                for layer in feature["layers"]:
                    np.testing.assert_allclose(
                        layer["values"], layers[layer["index"]][0, position], atol=2e-6 + TOLERANCE
                    )


# ---------------------------------------------------------------------------
# Training on the demo task


def _demo_vocab(path):
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    words = set()
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        with open(os.path.join(REPO, "demo_data", "sentiment", name), encoding="utf-8") as f:
            for line in f:
                words.update(basic.tokenize(line.split("\t")[-2 if name != "test.tsv" else -1]))
    return write_lines(path, ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words))


@pytest.mark.slow
def test_training_with_dynamic_padding_lands_in_the_accuracy_band_of_full_length(tmp_path):
    vocab = _demo_vocab(tmp_path / "vocab.txt")
    vocab_size = len(open(vocab, encoding="utf-8").read().split())
    config = write_bert_config(tmp_path / "bert_config.json", vocab_size)
    common = [
        *sst2_flags(os.path.join(REPO, "demo_data", "sentiment"), vocab, config),
        "--max_seq_length=64",
        "--do_train=true",
        "--do_eval=true",
        "--train_batch_size=16",
        "--num_train_epochs=10",
        "--learning_rate=5e-4",
        "--tf_random_seed=2",
        "--save_checkpoints_steps=100000",
    ]
    accuracies = {}
    for name, flags in (
        ("full", ["--length_bucket=0"]),
        ("grouped", ["--dynamic_padding", "--group_by_length", "--length_bucket=8"]),
    ):
        out = tmp_path / name
        proc = run_classifier_script(*common, *flags, f"--output_dir={out}")
        assert proc.returncode == 0, proc.stderr[-3000:]
        # Grouped, a step of 16 runs as 4 micro-batches of 4, each cut to its own length.
        shape = "(16, 64)" if name == "full" else "(4, None)"
        assert f"name = input_ids, shape = {shape}" in proc.stderr
        accuracies[name] = float(read_eval_results(out / "eval_results.txt")["eval_accuracy"])
    # 150 dev sentences: one standard error of an accuracy near 0.8 is about 0.03, of
    # the difference of two about 0.05.
    assert accuracies["full"] >= 0.7, accuracies
    assert accuracies["grouped"] >= 0.7, accuracies
    assert abs(accuracies["grouped"] - accuracies["full"]) <= 0.12, accuracies


def _train(*argv, replicas=1, dropout=True):
    """run_classifier.py, the CPU split into `replicas` devices for
    --distribution_strategy=mirrored; without `dropout`, no dropout anywhere (the
    model's by its config, the head's by patching the dropout functions), so that
    runs on the same examples make the same steps however they draw masks."""
    no_dropout = (
        "" if dropout else "tf.nn.dropout = modeling.dropout = lambda x, *unused, **unused_too: x"
    )
    return run_code(
        f"""
        import sys
        import mirrored
        mirrored.split_cpu({replicas})
        import tensorflow as tf
        import modeling
        {no_dropout}
        import run_classifier
        from bert_lib import script_flags
        sys.argv = ["run_classifier.py", *{list(argv)!r}]
        script_flags.run_main(run_classifier.main)
        """
    )


@pytest.mark.slow
def test_grouped_training_makes_the_steps_of_the_ungrouped_run(tmp_path):
    """Training with --dynamic_padding --group_by_length ends on the weights (and Adam
    moments) of --dynamic_padding alone from the same start, to float32 round-off,
    dropout on: each step's gradient is the average over the same examples, and each
    example draws its dropout masks by its number in the input, not by its batch. So do
    a grouped run on 2 mirrored replicas, each replica's 6 examples a step in 3 pieces,
    and a grouped run stopped and resumed. Without dropout a grouped run also ends on the
    weights of a full-length run."""
    rng = random.Random(11)
    data = write_sst2_data(tmp_path / "data", synthetic_rows(rng, 64), [], [])
    vocab, config = model_files(
        tmp_path, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1
    )
    common = [
        *sst2_flags(data, vocab, config),
        "--max_seq_length=16",
        "--do_train=true",
        "--train_batch_size=12",
        "--num_train_epochs=1",
        "--learning_rate=1e-3",
        "--tf_random_seed=3",
    ]
    # A start with the classifier head in it, shared by every run.
    values = random_classifier_values(
        modeling.BertConfig.from_json_file(str(config)), 2, seed=5, spread=0.02
    )
    start = write_checkpoint(tmp_path / "start" / "model.ckpt", values)
    ends = {}
    dynamic = ["--dynamic_padding", "--length_bucket=1"]
    grouped = [*dynamic, "--group_by_length"]
    runs = (
        # (name, flags, replicas, dropout, the run it must end as)
        ("dynamic", dynamic, 1, True, None),
        ("grouped", [*grouped, "--save_checkpoints_steps=2"], 1, True, "dynamic"),
        ("grouped_mirrored", [*grouped, "--distribution_strategy=mirrored"], 2, True, "dynamic"),
        # The grouped run as if killed after its step-2 checkpoint, then run again
        # without its saved input position: by the seeded skip of the micro-batches its
        # steps took.
        ("resumed", [*grouped, "--save_checkpoints_steps=2"], 1, True, "dynamic"),
        ("full_no_dropout", ["--length_bucket=0"], 1, False, None),
        ("grouped_no_dropout", grouped, 1, False, "full_no_dropout"),
    )
    for name, flags, replicas, dropout, _ in runs:
        out = tmp_path / name
        if name == "resumed":
            shutil.copytree(tmp_path / "grouped", out)
            for path in out.iterdir():
                if path.name.startswith(("model.ckpt-4", "model.ckpt-5")):
                    path.unlink()
            (out / "model.ckpt-2.input").unlink()
        proc = _train(
            *common,
            *flags,
            f"--init_checkpoint={start}",
            f"--output_dir={out}",
            replicas=replicas,
            dropout=dropout,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        if name == "resumed":
            assert "model.ckpt-2" in proc.stderr, proc.stderr[-3000:]
        ends[name] = checkpoint_values(str(out / "model.ckpt-5"))
    begun = checkpoint_values(start)
    for run, _, _, _, reference in runs:
        if reference is None:
            continue
        assert set(ends[run]) == set(ends[reference]), run
        for name, value in ends[reference].items():
            np.testing.assert_allclose(
                ends[run][name], value, rtol=1e-4, atol=2e-6, err_msg=f"{run}: {name}"
            )
    for run in ("dynamic", "full_no_dropout"):
        moved = sum(
            name in begun and not np.allclose(value, begun[name], atol=1e-4)
            for name, value in ends[run].items()
        )
        assert moved > 10, run  # the 5 steps did train
    # Dropout did act: the runs with it end elsewhere than those without.
    assert not np.allclose(
        ends["dynamic"]["output_weights"], ends["full_no_dropout"]["output_weights"], atol=1e-4
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "flags, message",
    [
        (["--group_by_length"], "--group_by_length needs --dynamic_padding"),
        (
            ["--dynamic_padding", "--length_bucket=0"],
            "--dynamic_padding needs --length_bucket > 0",
        ),
        (["--length_bucket=-1"], "--length_bucket=-1: must be 0 or positive"),
    ],
)
def test_contradictory_padding_flags_stop_before_any_work(tmp_path, flags, message):
    vocab, config = model_files(tmp_path)
    proc = run_classifier_script(
        *sst2_flags(os.path.join(REPO, "demo_data", "sentiment"), vocab, config),
        "--do_train=true",
        f"--output_dir={tmp_path / 'out'}",
        *flags,
    )
    assert error_line(proc) == f"ERROR: {message}"
    assert not (tmp_path / "out").exists()


def test_length_bucket_defaults_to_1_and_to_16_under_xla_and_a_given_value_wins():
    """Rounding lengths up only serves XLA, which compiles a program per length."""
    result = run_code(
        """
        import json
        from absl import flags
        import run_classifier
        from bert_lib import script_flags
        seen = []
        for argv in ([], ["--use_xla"], ["--length_bucket=8"], ["--use_xla", "--length_bucket=0"]):
            flags.FLAGS(["prog", *argv])
            script_flags.check_padding_flags()
            seen.append([list(script_flags.padding_from_flags(False)),
                         list(script_flags.padding_from_flags(True))])
            flags.FLAGS.unparse_flags()
        print(json.dumps(seen))
        """
    )
    assert result.returncode == 0, result.stderr[-2000:]
    window = dynamic_padding.PREDICT_WINDOW_BATCHES
    off = list(dynamic_padding.OFF)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == [
        [[1, window], off],
        [[16, window], off],
        [[8, window], off],
        [off, off],
    ]
