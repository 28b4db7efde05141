"""Each task's processor reads rows in the real GLUE / XNLI layout into InputExamples."""

import inspect
import os

import pytest
from helpers import load_script

from bert_lib.task_data import classifier_tasks


@pytest.fixture(scope="module")
def rc():
    return load_script("run_classifier")


def _write(directory, files):
    for name, rows in files.items():
        path = os.path.join(directory, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join("\t".join(row) + "\n" for row in rows))


MNLI_HEADER_TRAIN = [
    "index",
    "promptID",
    "pairID",
    "genre",
    "sentence1_binary_parse",
    "sentence2_binary_parse",
    "sentence1_parse",
    "sentence2_parse",
    "sentence1",
    "sentence2",
    "label1",
    "gold_label",
]
MNLI_HEADER_DEV = (
    MNLI_HEADER_TRAIN[:11] + ["label2", "label3", "label4", "label5"] + ["gold_label"]
)
MNLI_HEADER_TEST = MNLI_HEADER_TRAIN[:10]


def _mnli_row(index, s1, s2, labels=()):
    return [
        str(index),
        "31193",
        f"{index}n",
        "government",
        "( ( x ) )",
        "( y )",
        "(ROOT x)",
        "(ROOT y)",
        s1,
        s2,
    ] + list(labels)


STSB_HEADER = [
    "index",
    "genre",
    "filename",
    "year",
    "old_index",
    "source1",
    "source2",
    "sentence1",
    "sentence2",
]


def _stsb_row(index, s1, s2, score=None):
    row = [
        str(index),
        "main-captions",
        "MSRvid",
        "2012test",
        f"000{index}",
        "none",
        "none",
        s1,
        s2,
    ]
    return row + ([score] if score is not None else [])


XNLI_DEV_HEADER = [
    "language",
    "gold_label",
    "sentence1_binary_parse",
    "sentence2_binary_parse",
    "sentence1_parse",
    "sentence2_parse",
    "sentence1",
    "sentence2",
    "promptID",
    "pairID",
    "genre",
]


def _xnli_row(lang, label, s1, s2):
    return [lang, label, "", "", "", "", s1, s2, "1", "2", "facetoface"]


# task -> (files to write, [(method, [(guid, text_a, text_b, label), ...]), ...])
CASES = {
    "cola": (
        {
            "train.tsv": [
                ["gj04", "1", "", "Our friends won't buy this analysis."],
                ["gj04", "0", "*", "One more pseudo generalization and I'm giving up."],
            ],
            "dev.tsv": [["gj04", "1", "", "The sailors rode the breeze clear of the rocks."]],
            "test.tsv": [["index", "sentence"], ["0", "Bill whistled past the house."]],
        },
        [
            (
                "train",
                [
                    ("train-0", "Our friends won't buy this analysis.", None, "1"),
                    ("train-1", "One more pseudo generalization and I'm giving up.", None, "0"),
                ],
            ),
            ("dev", [("dev-0", "The sailors rode the breeze clear of the rocks.", None, "1")]),
            ("test", [("test-1", "Bill whistled past the house.", None, "0")]),
        ],
    ),
    "mrpc": (
        {
            "train.tsv": [
                ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                ["1", "702876", "702977", "Amrozi accused his brother .", "He accused him ."],
                ["0", "2108705", "2108831", "Yucaipa owned Dominick 's .", "Yucaipa sold it ."],
            ],
            "dev.tsv": [
                ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                ["1", "1355540", "1355592", 'He said "no" .', '"No ," he said .'],
            ],
            "test.tsv": [
                ["index", "#1 ID", "#2 ID", "#1 String", "#2 String"],
                ["0", "1089874", "1089925", "PCCW 's chief .", "Current Chief ."],
            ],
        },
        [
            (
                "train",
                [
                    ("train-1", "Amrozi accused his brother .", "He accused him .", "1"),
                    ("train-2", "Yucaipa owned Dominick 's .", "Yucaipa sold it .", "0"),
                ],
            ),
            ("dev", [("dev-1", 'He said "no" .', '"No ," he said .', "1")]),
            ("test", [("test-1", "PCCW 's chief .", "Current Chief .", "0")]),
        ],
    ),
    "mnli": (
        {
            "train.tsv": [
                MNLI_HEADER_TRAIN,
                _mnli_row(
                    0, "Conceptually cream.", "Product and geography.", ["neutral", "neutral"]
                ),
                _mnli_row(
                    1, "you know during", "You lose the things", ["entailment", "entailment"]
                ),
            ],
            "dev_matched.tsv": [
                MNLI_HEADER_DEV,
                _mnli_row(
                    7,
                    "The new rights are nice",
                    "Everyone loves",
                    ["neutral"] * 4 + ["entailment", "contradiction"],
                ),
            ],
            "test_matched.tsv": [MNLI_HEADER_TEST, _mnli_row(3, "Hierbas", "Hierbas is")],
            "dev_mismatched.tsv": [
                MNLI_HEADER_DEV,
                _mnli_row(9, "mismatched a", "mismatched b", ["neutral"] * 5 + ["neutral"]),
            ],
        },
        [
            (
                "train",
                [
                    ("train-0", "Conceptually cream.", "Product and geography.", "neutral"),
                    ("train-1", "you know during", "You lose the things", "entailment"),
                ],
            ),
            (
                "dev",
                [("dev_matched-7", "The new rights are nice", "Everyone loves", "contradiction")],
            ),
            ("test", [("test-3", "Hierbas", "Hierbas is", "contradiction")]),
        ],
    ),
    "mnli-mm": (
        {
            "dev_mismatched.tsv": [
                MNLI_HEADER_DEV,
                _mnli_row(9, "mismatched a", "mismatched b", ["neutral"] * 5 + ["entailment"]),
            ],
            "test_mismatched.tsv": [MNLI_HEADER_TEST, _mnli_row(4, "mm test a", "mm test b")],
            "dev_matched.tsv": [
                MNLI_HEADER_DEV,
                _mnli_row(7, "matched", "matched", ["neutral"] * 6),
            ],
        },
        [
            ("dev", [("dev_mismatched-9", "mismatched a", "mismatched b", "entailment")]),
            ("test", [("test-4", "mm test a", "mm test b", "contradiction")]),
        ],
    ),
    "xnli": (
        {
            "multinli/multinli.train.zh.tsv": [
                ["premise", "hypo", "label"],
                ["他说", "他没有说", "contradictory"],
                ["我们走", "我们在走", "entailment"],
            ],
            "xnli.dev.tsv": [
                XNLI_DEV_HEADER,
                _xnli_row("en", "neutral", "I went", "He went"),
                _xnli_row("zh", "neutral", "我去了", "他去了"),
            ],
            "xnli.test.tsv": [
                XNLI_DEV_HEADER,
                _xnli_row("zh", "entailment", "测试", "测验"),
                _xnli_row("de", "entailment", "Test", "Prüfung"),
            ],
        },
        [
            (
                "train",
                [
                    ("train-1", "他说", "他没有说", "contradiction"),
                    ("train-2", "我们走", "我们在走", "entailment"),
                ],
            ),
            ("dev", [("dev-2", "我去了", "他去了", "neutral")]),
            ("test", [("test-1", "测试", "测验", "contradiction")]),
        ],
    ),
    "sst-2": (
        {
            "train.tsv": [
                ["sentence", "label"],
                ["hide new secretions ", "0"],
                ["contains no wit , only labored gags ", "0"],
                ["that loves its characters ", "1"],
            ],
            "dev.tsv": [["sentence", "label"], ["it 's a charming journey . ", "1"]],
            "test.tsv": [
                ["index", "sentence"],
                ["0", "uneasy mishmash of styles ."],
                ["1", "this film 's relationship to actual tension ."],
            ],
        },
        [
            (
                "train",
                [
                    ("train-1", "hide new secretions ", None, "0"),
                    ("train-2", "contains no wit , only labored gags ", None, "0"),
                    ("train-3", "that loves its characters ", None, "1"),
                ],
            ),
            ("dev", [("dev-1", "it 's a charming journey . ", None, "1")]),
            (
                "test",
                [
                    ("test-1", "uneasy mishmash of styles .", None, "0"),
                    ("test-2", "this film 's relationship to actual tension .", None, "0"),
                ],
            ),
        ],
    ),
    "qqp": (
        {
            "train.tsv": [
                ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                ["133273", "213221", "213222", "How is life?", "Which level?", "0"],
                ["402555", "536040", "536041", "How do I?", "How can I?", "1"],
            ],
            "dev.tsv": [
                ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                ["201359", "303345", "303346", "Why are?", "Why do?", "1"],
            ],
            "test.tsv": [
                ["id", "question1", "question2"],
                ["0", "Would the idea work?", "What is the idea?"],
            ],
        },
        [
            (
                "train",
                [
                    ("train-133273", "How is life?", "Which level?", "0"),
                    ("train-402555", "How do I?", "How can I?", "1"),
                ],
            ),
            ("dev", [("dev-201359", "Why are?", "Why do?", "1")]),
            ("test", [("test-0", "Would the idea work?", "What is the idea?", "0")]),
        ],
    ),
    "qnli": (
        {
            "train.tsv": [
                ["index", "question", "sentence", "label"],
                ["0", "When did it start?", "It started in 1990.", "entailment"],
                ["1", "Who won?", "Nobody played.", "not_entailment"],
            ],
            "dev.tsv": [
                ["index", "question", "sentence", "label"],
                ["0", "What came?", "The constitution came.", "entailment"],
            ],
            "test.tsv": [["index", "question", "sentence"], ["0", "What is it?", "It is a test."]],
        },
        [
            (
                "train",
                [
                    ("train-0", "When did it start?", "It started in 1990.", "entailment"),
                    ("train-1", "Who won?", "Nobody played.", "not_entailment"),
                ],
            ),
            ("dev", [("dev-0", "What came?", "The constitution came.", "entailment")]),
            ("test", [("test-0", "What is it?", "It is a test.", "entailment")]),
        ],
    ),
    "rte": (
        {
            "train.tsv": [
                ["index", "sentence1", "sentence2", "label"],
                ["0", "No Weapons Found.", "Weapons Found.", "not_entailment"],
            ],
            "dev.tsv": [
                ["index", "sentence1", "sentence2", "label"],
                ["0", "Dana Reeve died.", "Reeve died.", "entailment"],
                ["1", "Yet another.", "And another.", "not_entailment"],
            ],
            "test.tsv": [["index", "sentence1", "sentence2"], ["0", "Mangla was.", "Mangla is."]],
        },
        [
            ("train", [("train-0", "No Weapons Found.", "Weapons Found.", "not_entailment")]),
            (
                "dev",
                [
                    ("dev-0", "Dana Reeve died.", "Reeve died.", "entailment"),
                    ("dev-1", "Yet another.", "And another.", "not_entailment"),
                ],
            ),
            ("test", [("test-0", "Mangla was.", "Mangla is.", "entailment")]),
        ],
    ),
    "wnli": (
        {
            "train.tsv": [
                ["index", "sentence1", "sentence2", "label"],
                ["0", "I stuck a pin.", "The carrot had a hole.", "1"],
            ],
            "dev.tsv": [
                ["index", "sentence1", "sentence2", "label"],
                ["0", "The drain is clogged.", "The hair is clogged.", "0"],
            ],
            "test.tsv": [
                ["index", "sentence1", "sentence2"],
                ["0", "Maude and Dora.", "Horses ran."],
            ],
        },
        [
            ("train", [("train-0", "I stuck a pin.", "The carrot had a hole.", "1")]),
            ("dev", [("dev-0", "The drain is clogged.", "The hair is clogged.", "0")]),
            ("test", [("test-0", "Maude and Dora.", "Horses ran.", "0")]),
        ],
    ),
    "sts-b": (
        {
            "train.tsv": [
                STSB_HEADER + ["score"],
                _stsb_row(0, "A plane is taking off.", "An air plane is taking off.", "5.000"),
                _stsb_row(1, "A man plays.", "A man sings.", "1.750"),
            ],
            "dev.tsv": [
                STSB_HEADER + ["score"],
                _stsb_row(0, "A man with a hard hat.", "A man wearing a hat.", "5.0"),
            ],
            "test.tsv": [STSB_HEADER, _stsb_row(0, "A girl styles.", "A girl brushes.")],
        },
        [
            (
                "train",
                [
                    ("train-0", "A plane is taking off.", "An air plane is taking off.", "5.000"),
                    ("train-1", "A man plays.", "A man sings.", "1.750"),
                ],
            ),
            ("dev", [("dev-0", "A man with a hard hat.", "A man wearing a hat.", "5.0")]),
            ("test", [("test-0", "A girl styles.", "A girl brushes.", "0.0")]),
        ],
    ),
}


@pytest.mark.parametrize("task", sorted(CASES))
def test_processor_reads_the_real_layout(rc, tmp_path, task):
    files, expectations = CASES[task]
    _write(str(tmp_path), files)
    processor = classifier_tasks.get_processor(task.upper())
    for split, expected in expectations:
        examples = getattr(processor, f"get_{split}_examples")(str(tmp_path))
        got = [(e.guid, e.text_a, e.text_b, e.label) for e in examples]
        assert got == expected, (task, split)


def test_labels_and_metrics_of_each_task(rc):
    labels = {
        name: classifier_tasks.get_processor(name).get_labels()
        for name in classifier_tasks.PROCESSORS
    }
    assert labels["cola"] == labels["mrpc"] == labels["sst-2"] == ["0", "1"]
    assert labels["qqp"] == labels["wnli"] == ["0", "1"]
    assert labels["mnli"] == labels["mnli-mm"] == labels["xnli"]
    assert labels["mnli"] == ["contradiction", "entailment", "neutral"]
    assert labels["qnli"] == labels["rte"] == ["entailment", "not_entailment"]
    assert labels["sts-b"] is None
    metrics = {
        name: classifier_tasks.get_processor(name).metric_names
        for name in classifier_tasks.PROCESSORS
    }
    assert metrics["cola"] == ("mcc",)
    assert metrics["mrpc"] == metrics["qqp"] == ("f1",)
    assert metrics["sts-b"] == ("pearson", "spearman")
    assert metrics["mnli"] == metrics["rte"] == ()


def test_original_public_names_keep_their_signatures(rc):
    for name in ("ColaProcessor", "MnliProcessor", "MrpcProcessor", "XnliProcessor"):
        assert issubclass(getattr(rc, name), rc.DataProcessor)
    expected = {
        "InputExample": ["guid", "text_a", "text_b", "label"],
        "InputFeatures": ["input_ids", "input_mask", "segment_ids", "label_id", "is_real_example"],
        "convert_single_example": [
            "ex_index",
            "example",
            "label_list",
            "max_seq_length",
            "tokenizer",
        ],
        "file_based_convert_examples_to_features": [
            "examples",
            "label_list",
            "max_seq_length",
            "tokenizer",
            "output_file",
        ],
        "file_based_input_fn_builder": [
            "input_file",
            "seq_length",
            "is_training",
            "drop_remainder",
        ],
        "create_model": [
            "bert_config",
            "is_training",
            "input_ids",
            "input_mask",
            "segment_ids",
            "labels",
            "num_labels",
            "use_one_hot_embeddings",
        ],
        "model_fn_builder": [
            "bert_config",
            "num_labels",
            "init_checkpoint",
            "learning_rate",
            "num_train_steps",
            "num_warmup_steps",
            "use_tpu",
            "use_one_hot_embeddings",
        ],
        "input_fn_builder": ["features", "seq_length", "is_training", "drop_remainder"],
        "convert_examples_to_features": ["examples", "label_list", "max_seq_length", "tokenizer"],
    }
    for name, params in expected.items():
        signature = inspect.signature(getattr(rc, name))
        got = [p for p in signature.parameters if p != "self"]
        # Additions beyond the original come last and are optional.
        assert got[: len(params)] == params, name
        for extra in got[len(params) :]:
            assert signature.parameters[extra].default is not inspect.Parameter.empty, name
    assert inspect.signature(rc.DataProcessor._read_tsv).parameters["quotechar"].default is None


def test_read_tsv_does_no_quote_processing(rc, tmp_path):
    path = tmp_path / "x.tsv"
    path.write_text('a "quoted\tb"\n"c\td\n', encoding="utf-8")
    rows = rc.DataProcessor._read_tsv(str(path))
    assert rows == [['a "quoted', 'b"'], ['"c', "d"]]
    assert [row.line_number for row in rows] == [1, 2]


def test_unknown_task_lists_the_known_ones(rc):
    with pytest.raises(ValueError) as info:
        classifier_tasks.get_processor("glue-x")
    message = str(info.value)
    assert message.startswith("Task not found: glue-x")
    for name in (
        "cola",
        "mnli",
        "mnli-mm",
        "mrpc",
        "qnli",
        "qqp",
        "rte",
        "sst-2",
        "sts-b",
        "wnli",
        "xnli",
    ):
        assert name in message


@pytest.mark.parametrize(
    "task,name,rows,pattern",
    [
        (
            "mrpc",
            "train.tsv",
            [["Quality", "a", "b", "c", "d"], ["1", "1", "2", "x", "y"], ["0", "1", "2"]],
            r"train\.tsv, line 3: expected at least 5 tab-separated columns, found 3",
        ),
        (
            "sst-2",
            "train.tsv",
            [["sentence", "label"], ["good", "1"], ["bad", "2"]],
            r"train\.tsv, line 3: label '2' is not one of 0, 1",
        ),
        (
            "cola",
            "train.tsv",
            [["src", "1", "", "fine"], ["src", "1", ""]],
            r"train\.tsv, line 2: expected at least 4 tab-separated columns, found 3",
        ),
        (
            "qnli",
            "train.tsv",
            [["index", "question", "sentence", "label"], ["0", "q", "s", "entailed"]],
            r"line 2: label 'entailed' is not one of entailment, not_entailment",
        ),
        (
            "sts-b",
            "train.tsv",
            [STSB_HEADER + ["score"], _stsb_row(0, "a", "b", "high")],
            r"line 2: label 'high' is not a number",
        ),
        (
            "mnli",
            "train.tsv",
            [MNLI_HEADER_TRAIN, _mnli_row(0, "a", "b", [])],
            r"line 2: expected at least 11 tab-separated columns, found 10",
        ),
        (
            "qqp",
            "train.tsv",
            [
                ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
                ["1", "2", "3", "q1", "q2", "0"],
                [],
            ],
            r"line 3: expected at least 6 tab-separated columns, found 0",
        ),
    ],
)
def test_bad_rows_name_the_file_and_line(rc, tmp_path, task, name, rows, pattern):
    _write(str(tmp_path), {name: rows})
    with pytest.raises(ValueError, match=pattern) as info:
        classifier_tasks.get_processor(task).get_train_examples(str(tmp_path))
    assert str(tmp_path / name) in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_is_a_clear_error(rc, tmp_path):
    with pytest.raises(ValueError, match=r"dev\.tsv: no such file"):
        classifier_tasks.get_processor("rte").get_dev_examples(str(tmp_path))
