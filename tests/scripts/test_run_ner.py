"""run_ner.py: CoNLL reading, first-piece labels, windows, bad input and a whole run."""

import os
import shutil

import numpy as np
import pytest
from helpers import (
    REPO,
    VOCAB_UNCASED,
    error_line,
    load_script,
    run_script,
    write_bert_config,
    write_lines,
    write_text,
)

import tokenization
from bert_lib.bert_runs import ner as ner_run
from bert_lib.task_data import ner_data

DEMO = os.path.join(REPO, "demo_data", "ner")

# id:     0       1       2       3       4        5      6      7     8        9      10
VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "dog",
    "is",
    "hairy",
    "cat",
    "##s",
    "run",
    "lind",
    "##q",
    "##vist",
    "in",
    "oslo",
    ".",
]
#        11     12      13     14        15    16      17


@pytest.fixture(scope="module")
def ner():
    return load_script("run_ner")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = write_lines(tmp_path_factory.mktemp("vocab") / "vocab.txt", VOCAB)
    return tokenization.FullTokenizer(path, do_lower_case=True)


# ---------------------------------------------------------------------------
# Reading.


def test_conll_reading_splits_sentences_and_keeps_line_numbers(ner, tmp_path):
    path = write_text(
        tmp_path / "train.txt",
        "-DOCSTART- -X- O\n\nLindqvist NNP B-PER\nruns VBZ O\n\n\nOslo NNP B-LOC\n"
        "-DOCSTART- -X- O\nthe DT O\n",
    )
    examples = ner_data.read_conll(path)
    assert [e.words for e in examples] == [["Lindqvist", "runs"], ["Oslo"], ["the"]]
    assert [e.labels for e in examples] == [["B-PER", "O"], ["B-LOC"], ["O"]]
    assert [e.line_numbers for e in examples] == [[3, 4], [7], [9]]
    # --tag_column=1 reads the middle column instead.
    assert ner_data.read_conll(path, tag_column=1)[0].labels == ["NNP", "VBZ"]
    assert ner_data.read_conll(path, with_tags=False)[0].labels is None


@pytest.mark.parametrize(
    "text,tag_column,message",
    [
        (
            "a B-PER\nb O\nc\n",
            -1,
            r"train.txt, line 3: 1 columns where the file's first word "
            r"line has 2",
        ),
        ("a O\n", 0, r"train.txt, line 1: --tag_column=0 does not name a tag column"),
        ("\n\n-DOCSTART- O\n\n", -1, r"train.txt: no sentences"),
        ("", -1, r"train.txt: no sentences"),
    ],
)
def test_bad_files_name_file_and_line(ner, tmp_path, text, tag_column, message):
    path = write_text(tmp_path / "train.txt", text)
    with pytest.raises(ValueError, match=message):
        ner_data.read_conll(path, tag_column=tag_column)


def test_tags_are_checked_against_scheme_and_label_set(ner, tmp_path):
    path = write_text(tmp_path / "dev.txt", "a B-PER\nb O\n\nc S-LOC\n")
    examples = ner_data.read_conll(path)
    with pytest.raises(ValueError, match=r"dev.txt, line 4: tag 'S-LOC' is not O or B-, I-"):
        ner_data.check_example_tags(examples, path, "IOB2")
    ner_data.check_example_tags(examples, path, "IOBES")
    with pytest.raises(ValueError, match=r"dev.txt, line 1: tag 'B-PER' is not in the label set"):
        ner_data.check_example_tags(examples, path, "IOBES", ["O", "S-LOC"])


def test_label_set_from_training_tags_puts_o_first(ner, parsed_flags):
    parsed_flags("--do_train")
    examples = [ner_data.InputExample("a", ["x", "y"], ["I-PER", "B-LOC"], [1, 2])]
    labels = ner_run.choose_labels(examples, "train.txt", ner.settings_from_flags())
    assert labels == ["O", "B-LOC", "I-PER"]


# ---------------------------------------------------------------------------
# First-piece labels and windows.


def test_label_goes_on_the_first_piece_only(ner, tokenizer):
    example = ner_data.InputExample(
        "s", ["Lindqvist", "runs", "in", "Oslo", "."], ["B-PER", "O", "O", "B-LOC", "O"]
    )
    label_map = {"O": 0, "B-LOC": 1, "B-PER": 2}
    (feature,) = ner_data.convert_single_example(0, example, label_map, 12, 5, tokenizer)
    # [CLS] lind ##q ##vist run ##s in oslo . [SEP] pad pad
    assert feature.input_ids == [2, 12, 13, 14, 11, 10, 15, 16, 17, 3, 0, 0]
    assert feature.input_mask == [1] * 10 + [0, 0]
    assert feature.segment_ids == [0] * 12
    assert feature.label_mask == [0, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0]
    assert feature.label_ids == [0, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]
    assert feature.word_ids == [-1, 0, -1, -1, 1, -1, 2, 3, 4, -1, -1, -1]


def test_windows_start_on_words_and_miss_none(ner):
    # Words of 3, 2, 1, 1, 1, 3, 1, 2, 1 pieces: first pieces at these offsets, 15 in all.
    starts = [0, 3, 5, 6, 7, 8, 11, 12, 14]
    # 6 pieces a window, starts >= 3 apart: 0, then the first word start >= 3 (3),
    # >= 6 (6), >= 9 (11), which reaches the end.
    windows = ner_data.sentence_windows(starts, 15, 6, 3)
    assert windows == [(0, 6), (3, 9), (6, 12), (11, 15)]
    # Owner = most context min(left, right), + len/100, earliest on ties:
    # 3 -> w0 (2 vs 0); 5 -> w1 (0 vs 2); 6 -> w1 (2 vs 0); 7 -> w1 (1.06 tie 1.06);
    # 8 -> w2; 11 -> w2 (0.06 vs 0.04); 12, 14 -> w3.
    assert ner_data.owning_windows(starts, windows) == [0, 0, 1, 1, 1, 2, 2, 3, 3]


def test_a_word_longer_than_the_window_is_still_predicted(ner):
    windows = ner_data.sentence_windows([0, 8], 9, 6, 3)
    assert windows == [(0, 6), (8, 9)]
    assert ner_data.owning_windows([0, 8], windows) == [0, 1]
    assert ner_data.sentence_windows([0, 1], 2, 6, 3) == [(0, 2)]


def test_long_sentence_predicts_every_word_once_in_order(ner, tokenizer):
    words = ["the", "cats", "run", "Lindqvist", "in", "Oslo", "dog", "is", "hairy", "."] * 3
    tags = ["O", "O", "O", "B-PER", "O", "B-LOC", "O", "O", "O", "O"] * 3
    label_list = ["O", "B-LOC", "B-PER"]
    example = ner_data.InputExample("long", words, tags)
    label_map = {label: i for i, label in enumerate(label_list)}
    windows = ner_data.convert_single_example(0, example, label_map, 10, 3, tokenizer)
    assert len(windows) > 3  # 42 pieces through 8-piece windows
    scored = []
    vocab = {token: i for i, token in enumerate(VOCAB)}
    for feature in windows:
        for position, word in enumerate(feature.word_ids):
            if word < 0:
                assert feature.label_mask[position] == 0
                continue
            assert feature.label_mask[position] == 1
            first_piece = tokenizer.tokenize(words[word])[0]
            assert feature.input_ids[position] == vocab[first_piece]
            assert feature.label_ids[position] == label_map[tags[word]]
            scored.append(word)
    assert scored == list(range(len(words)))

    # Outputs that say each word's own tag come back as the sentence's tags.
    outputs = [np.eye(3)[feature.label_ids] for feature in windows]
    assert ner_data.word_predictions([example], windows, outputs, label_list) == [tags]


def test_predictions_file_appends_a_column_to_every_line(ner, tmp_path):
    path = write_text(tmp_path / "test.txt", "-DOCSTART- O\n\nOslo B-LOC\nruns  O \n\nthe\tO\n")
    examples = ner_data.read_conll(path, with_tags=False)
    text = ner_data.format_predictions(path, examples, [["B-LOC", "B-PER"], ["O"]])
    assert text == "-DOCSTART- O O\n\nOslo B-LOC B-LOC\nruns  O B-PER\n\nthe\tO\tO\n"


# ---------------------------------------------------------------------------
# Flags and the label file, checked before any work.


@pytest.fixture
def parsed_flags(ner, tmp_path):
    from absl import flags

    vocab = write_lines(tmp_path / "vocab.txt", VOCAB)
    config = write_bert_config(tmp_path / "bert_config.json", len(VOCAB))
    data = tmp_path / "data"
    data.mkdir()

    def parse(*args):
        flags.FLAGS.unparse_flags()
        flags.FLAGS(
            [
                "run_ner.py",
                f"--vocab_file={vocab}",
                f"--bert_config_file={config}",
                f"--data_dir={data}",
                f"--output_dir={tmp_path / 'out'}",
                "--max_seq_length=16",
                *args,
            ]
        )
        return data

    yield parse
    flags.FLAGS.unparse_flags()


@pytest.mark.parametrize(
    "files,args,message",
    [
        (
            {"train.txt": "a B-PER\nb O\n\nc E-PER\n"},
            ["--do_train"],
            r"train.txt, line 4: tag 'E-PER' is not O or B-, I-<TYPE> \(--tag_scheme=IOB2\)",
        ),
        (
            {"train.txt": "a B-PER\n", "dev.txt": "a B-PER\n\nb B-ORG\n"},
            ["--do_train", "--do_eval"],
            r"dev.txt, line 3: tag 'B-ORG' is not in the label set \(O, B-PER\)",
        ),
        ({"dev.txt": "a O\n"}, ["--do_eval"], r"no tag set: --output_dir=.* has no labels.txt"),
        ({"dev.txt": "a O\n"}, ["--do_eval", "--labels=O,B-X,B-X"], r"a tag is given twice"),
        ({"dev.txt": "a O\n"}, ["--do_eval", "--labels=O,S-X"], r"--labels: tag 'S-X' is not"),
        (
            {"dev.txt": "a O\n"},
            ["--do_eval", "--labels=O", "--window_stride=15"],
            r"--window_stride=15 must be between 1 and max_seq_length - 2 = 14",
        ),
        ({}, ["--do_predict", "--labels=O"], r"test.txt: no such file"),
        ({}, [], r"At least one of `do_train`, `do_eval` or `do_predict'"),
    ],
)
def test_bad_input_stops_before_any_work(ner, parsed_flags, tmp_path, files, args, message):
    data = parsed_flags(*args)
    for name, text in files.items():
        write_text(data / name, text)
    with pytest.raises(ValueError, match=message):
        ner.main([])
    assert not (tmp_path / "out").exists()


def test_a_window_stride_its_rule_refuses_stops_the_command_line(parsed_flags, tmp_path):
    """--window_stride=0 is refused as the flags are parsed (its rule: positive), before
    main runs."""
    from absl import flags

    with pytest.raises(flags.IllegalFlagValueError, match="--window_stride must be positive"):
        parsed_flags("--do_eval", "--labels=O", "--window_stride=0")
    assert not (tmp_path / "out").exists()


def test_saved_label_file_is_reused_and_must_match_labels_flag(ner, parsed_flags, tmp_path):
    parsed_flags("--do_eval")
    (tmp_path / "out").mkdir()
    write_text(tmp_path / "out" / "labels.txt", "O\nB-LOC\nI-LOC\n")
    settings = ner.settings_from_flags()
    assert ner_run.choose_labels(None, None, settings) == ["O", "B-LOC", "I-LOC"]
    parsed_flags("--do_eval", "--labels=O,B-LOC")
    with pytest.raises(ValueError, match=r"--labels=O,B-LOC differs from .*labels.txt"):
        ner_run.choose_labels(None, None, ner.settings_from_flags())


# ---------------------------------------------------------------------------
# Whole runs.


def _lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


SEQ = 32


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """Train, evaluate, predict and export on the demo set (test.txt = dev.txt)."""
    root = tmp_path_factory.mktemp("ner")
    data = root / "data"
    data.mkdir()
    shutil.copy(os.path.join(DEMO, "train.txt"), data / "train.txt")
    shutil.copy(os.path.join(DEMO, "dev.txt"), data / "dev.txt")
    shutil.copy(os.path.join(DEMO, "dev.txt"), data / "test.txt")
    config = write_bert_config(root / "bert_config.json", 30522)
    out = root / "out"
    proc = run_script(
        "run_ner.py",
        "--do_train",
        "--do_eval",
        "--do_predict",
        f"--data_dir={data}",
        f"--vocab_file={VOCAB_UNCASED}",
        f"--bert_config_file={config}",
        f"--max_seq_length={SEQ}",
        "--train_batch_size=16",
        "--learning_rate=3e-3",
        "--num_train_epochs=3",
        f"--output_dir={out}",
        f"--export_dir={root / 'export'}",
        "--tf_random_seed=1",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"root": root, "out": out, "data": data}


def _results(path):
    return {key: float(value) for key, value in (line.split(" = ") for line in _lines(path))}


@pytest.mark.slow
def test_demo_run_beats_the_majority_tag_by_far(demo_run):
    result = _results(demo_run["out"] / "eval_results.txt")
    assert sorted(result) == [
        "eval_f1",
        "eval_f1_LOC",
        "eval_f1_MISC",
        "eval_f1_ORG",
        "eval_f1_PER",
        "eval_loss",
        "eval_precision",
        "eval_recall",
        "eval_token_accuracy",
        "global_step",
    ]
    # Tagging every word O (the majority tag) finds no entity: F1 0.0, and its token
    # accuracy is the share of O in dev.txt, 0.672 (928 of 1381 words).
    dev_tags = [
        line.split()[-1]
        for line in _lines(os.path.join(DEMO, "dev.txt"))
        if line and not line.startswith("-DOCSTART-")
    ]
    majority_accuracy = dev_tags.count("O") / len(dev_tags)
    assert majority_accuracy == pytest.approx(0.672, abs=1e-3)
    # The tiny model after 3 epochs (81 steps) reached F1 0.92, token accuracy 0.986.
    assert result["eval_f1"] >= 0.6
    assert result["eval_token_accuracy"] >= majority_accuracy + 0.1
    windows = sum(1 for _ in _tf_records(demo_run["out"] / "train.tf_record"))
    assert result["global_step"] == int(windows / 16 * 3)
    assert windows > 400  # sentences longer than 30 pieces gave more than one window


def _tf_records(path):
    import tensorflow as tf

    return tf.data.TFRecordDataset(str(path))


@pytest.mark.slow
def test_predictions_have_one_line_per_input_line_and_match_eval(demo_run):
    source = _lines(demo_run["data"] / "test.txt")
    predicted = _lines(demo_run["out"] / "test_predictions.txt")
    assert len(predicted) == len(source)
    gold, guesses, sentence_gold, sentence_guess = [], [], [], []
    for before, after in zip(source, predicted):
        if not before:
            assert after == ""
            if sentence_gold:
                gold.append(sentence_gold)
                guesses.append(sentence_guess)
            sentence_gold, sentence_guess = [], []
            continue
        assert after.rsplit(" ", 1)[0] == before
        if not before.startswith("-DOCSTART-"):
            sentence_gold.append(before.split()[-1])
            sentence_guess.append(after.split()[-1])
    # test.txt is dev.txt: rescoring the written predictions gives the eval F1.
    result = _results(demo_run["out"] / "eval_results.txt")
    rescored = ner_data.conll_scores(gold, guesses)
    assert rescored["eval_f1"] == pytest.approx(result["eval_f1"], abs=1e-6)
    assert _lines(demo_run["out"] / "labels.txt") == [
        "O",
        "B-LOC",
        "B-MISC",
        "B-ORG",
        "B-PER",
        "I-LOC",
        "I-MISC",
        "I-ORG",
        "I-PER",
    ]


@pytest.mark.slow
def test_cut_batches_tag_and_score_as_full_length(demo_run, tmp_path):
    # demo_run evaluated and predicted with batches cut to their longest window
    # (--length_bucket's default) and sorted by length; the same checkpoint at full
    # length must give the same tags and scores.
    out = tmp_path / "full"
    shutil.copytree(demo_run["out"], out)
    for name in ("eval_results.txt", "test_predictions.txt"):
        (out / name).unlink()
    proc = run_script(
        "run_ner.py",
        "--do_eval",
        "--do_predict",
        f"--data_dir={demo_run['data']}",
        f"--vocab_file={VOCAB_UNCASED}",
        f"--bert_config_file={demo_run['root'] / 'bert_config.json'}",
        f"--max_seq_length={SEQ}",
        f"--output_dir={out}",
        "--length_bucket=0",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"name = input_ids, shape = (None, {SEQ})" in proc.stderr
    cut = _results(demo_run["out"] / "eval_results.txt")
    full = _results(out / "eval_results.txt")
    assert cut.pop("eval_loss") == pytest.approx(full.pop("eval_loss"), rel=1e-5)
    assert cut == full
    written = (demo_run["out"] / "test_predictions.txt").read_text()
    assert (out / "test_predictions.txt").read_text() == written


@pytest.mark.slow
def test_grouped_training_tags_as_well_as_the_demo_band(tmp_path):
    out = tmp_path / "out"
    config = write_bert_config(tmp_path / "bert_config.json", 30522)
    proc = run_script(
        "run_ner.py",
        "--do_train",
        "--do_eval",
        f"--data_dir={DEMO}",
        f"--vocab_file={VOCAB_UNCASED}",
        f"--bert_config_file={config}",
        f"--max_seq_length={SEQ}",
        "--train_batch_size=16",
        "--learning_rate=3e-3",
        "--num_train_epochs=3",
        f"--output_dir={out}",
        "--tf_random_seed=1",
        "--dynamic_padding",
        "--group_by_length",
        "--length_bucket=8",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # A step of 16 runs as 4 micro-batches of 4, each cut to its own longest.
    assert "name = input_ids, shape = (4, None)" in proc.stderr
    # As test_demo_run_beats_the_majority_tag_by_far: full length reached F1 0.92.
    assert _results(out / "eval_results.txt")["eval_f1"] >= 0.6


@pytest.mark.slow
def test_saved_model_gives_per_token_probabilities(demo_run):
    import tensorflow as tf

    tokenizer = tokenization.FullTokenizer(VOCAB_UNCASED, do_lower_case=True)
    labels = _lines(demo_run["out"] / "labels.txt")
    label_map = {label: i for i, label in enumerate(labels)}
    example = ner_data.read_conll(str(demo_run["data"] / "test.txt"))[0]
    (feature,) = ner_data.convert_single_example(0, example, label_map, SEQ, 15, tokenizer)
    serve = tf.saved_model.load(str(demo_run["root"] / "export")).signatures["serving_default"]
    probabilities = serve(
        input_ids=tf.constant([feature.input_ids], tf.int32),
        input_mask=tf.constant([feature.input_mask], tf.int32),
        segment_ids=tf.constant([feature.segment_ids], tf.int32),
    )["probabilities"].numpy()
    assert probabilities.shape == (1, SEQ, len(labels))
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    served = ner_data.word_predictions([example], [feature], probabilities, labels)[0]
    written = [
        line.split()[-1] if line else ""
        for line in _lines(demo_run["out"] / "test_predictions.txt")
    ]
    assert served == [written[n - 1] for n in example.line_numbers]


@pytest.mark.slow
def test_bad_line_is_one_error_line_and_nothing_written(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    write_text(data / "train.txt", "-DOCSTART- O\n\nOslo B-LOC\nis O\n\nthe O x\n")
    vocab = write_lines(tmp_path / "vocab.txt", VOCAB)
    config = write_bert_config(tmp_path / "bert_config.json", len(VOCAB))
    out = tmp_path / "out"
    proc = run_script(
        "run_ner.py",
        "--do_train",
        f"--data_dir={data}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        "--max_seq_length=16",
        f"--output_dir={out}",
    )
    assert error_line(proc) == (
        f"ERROR: {data / 'train.txt'}, line 6: 3 columns where the file's first word line has 2"
    )
    assert not out.exists()


def test_demo_set_is_what_its_generator_writes(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_ner_data", os.path.join(DEMO, "make_ner_data.py")
    )
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    generator.main(str(tmp_path))
    for name in ("train.txt", "dev.txt", "test.txt"):
        with open(os.path.join(DEMO, name), "rb") as shipped:
            assert (tmp_path / name).read_bytes() == shipped.read(), name


def test_flags_are_the_classifiers_without_its_task_flags(ner):
    from absl import flags

    taken = {flag.name for flag in flags.FLAGS.get_key_flags_for_module("run_ner")}
    for name in (
        "init_checkpoint",
        "max_seq_length",
        "learning_rate",
        "export_dir",
        "iterations_per_loop",
        "tag_column",
        "tag_scheme",
        "labels",
        "window_stride",
        "use_xla",
        "precision",
        "num_accumulation_steps",
        "steps_per_run",
        "use_tpu",
        "tf_random_seed",
        "length_bucket",
        "dynamic_padding",
        "group_by_length",
    ):
        assert name in taken, name
    assert "task_name" not in taken and "glue_submission_file" not in taken
