"""benchmarks/grouping_accuracy.py's data and table, without training a model.

The shipped real-text tasks must be what their README says (so the
benchmark's figures describe the data in the repository), the scripts must
read them as the benchmark runs them, and the summary table's means and
worst seeds are checked against hand-made rows.
"""

import collections
import csv
import os
import sys

from helpers import REPO

BENCHMARKS = os.path.join(REPO, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

import grouping_accuracy  # noqa: E402

REAL_TEXT = os.path.join(BENCHMARKS, "real_text")


def _tsv(task, split):
    with open(os.path.join(REAL_TEXT, task, f"{split}.tsv"), encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def _sentences(split):
    sentences, current = [], []
    with open(os.path.join(REAL_TEXT, "names", f"{split}.txt"), encoding="utf-8") as f:
        for line in f:
            if line.strip():
                current.append(line.split())
            elif current:
                sentences.append(current)
                current = []
    return sentences


def test_sentence_pairs_are_balanced_and_every_row_whole():
    train, dev = _tsv("senses", "train"), _tsv("senses", "dev")
    assert (len(train), len(dev)) == (3200, 800)
    for row in train + dev:
        assert row["definition"] and row["example"] and row["label"] in ("0", "1")
    share = sum(row["label"] == "1" for row in train) / len(train)
    assert 0.45 < share < 0.55


def test_domains_are_unbalanced_as_the_readme_says():
    train, dev = _tsv("domains", "train"), _tsv("domains", "dev")
    assert (len(train), len(dev)) == (3200, 800)
    counts = collections.Counter(row["label"] for row in train)
    assert counts == {
        "artifact": 1006,
        "plant": 685,
        "person": 630,
        "animal": 610,
        "food": 212,
        "location": 57,
    }
    assert set(row["label"] for row in dev) <= set(counts)


def test_names_are_iob2_sentences_with_entities():
    train, dev = _sentences("train"), _sentences("dev")
    assert (len(train), len(dev)) == (2400, 600)
    for sentence in train + dev:
        tags = [word[-1] for word in sentence]
        assert any(tag != "O" for tag in tags)
        for before, tag in zip(["O"] + tags, tags):
            assert tag == "O" or tag[:2] in ("B-", "I-")
            assert tag[2:] in ("", "PER", "LOC", "ORG", "MISC")
            if tag.startswith("I-"):
                assert before[2:] == tag[2:], sentence  # IOB2: I- follows its type


def test_corpus_pairs_are_written_in_the_custom_layout(tmp_path):
    grouping_accuracy.write_corpus_pairs(str(tmp_path), 40, 10)
    with open(tmp_path / "train.tsv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert len(rows) == 40 and set(rows[0]) == {"first", "second", "label"}
    assert {row["label"] for row in rows} == {"0", "1"}


def test_summary_gives_each_variants_mean_and_worst_seed():
    rows = [
        {"task": "t", "variant": "full", "seed": s, "metric": "acc", "value": v, "wall_s": w}
        for s, v, w in ((1, 0.8, 10), (2, 0.7, 30), (3, 0.9, 20))
    ] + [
        {"task": "t", "variant": "grouped", "seed": 1, "metric": "acc", "value": 0.5, "wall_s": 5}
    ]
    table = grouping_accuracy.summary_table(rows).splitlines()
    # Rows written before --precisions existed are float32 runs.
    assert table[2] == (
        "| t | fp32 | full | acc | 1: 0.800, 2: 0.700, 3: 0.900 | 0.800 | 0.700 | 20 | 0 |"
    )
    assert table[3].startswith("| t | fp32 | grouped | acc | 1: 0.500 | 0.500 | 0.500 | 5 |")


def _rows(task, precision, variant, values):
    return [
        {"task": task, "precision": precision, "variant": variant, "seed": seed, "value": value}
        for seed, value in enumerate(values, start=1)
    ]


def test_goals_compare_the_flags_with_full_length_and_each_precision_with_fp32():
    rows = (
        _rows("t", "fp32", "full", [0.80, 0.82, 0.84])  # mean 0.82, worst 0.80
        + _rows("t", "fp32", "grouped", [0.81, 0.80, 0.81])  # mean -0.013, worst +0.00
        + _rows("t", "bf16", "full", [0.80, 0.81, 0.81])  # mean 0.807: -0.013 from fp32
        + _rows("t", "bf16", "grouped", [0.66, 0.80, 0.64])  # mean 0.70, worst 0.64
    )
    lines = grouping_accuracy.goal_lines(rows)
    assert lines == [
        "t bf16 full against fp32 full: mean -0.013: met",
        "t bf16 grouped against bf16 full: mean -0.107, worst seed -0.160: NOT met",
        "t bf16 grouped against fp32 grouped: mean -0.107: NOT met",
        "t fp32 grouped against fp32 full: mean -0.013, worst seed +0.000: met",
    ]
    # A worst seed 0.031 below full length's fails even with the mean within 0.015.
    rows = _rows("u", "fp32", "full", [0.80, 0.80, 0.80]) + _rows(
        "u", "fp32", "grouped", [0.769, 0.83, 0.83]
    )
    assert grouping_accuracy.goal_lines(rows) == [
        "u fp32 grouped against fp32 full: mean +0.010, worst seed -0.031: NOT met"
    ]


def test_served_table_gives_each_runtimes_difference_from_the_savedmodel():
    args = grouping_accuracy.parse_args(
        ["--model_dir=m", "--work_dir=w", "--served=onnxruntime:int8,openvino"]
    )
    served = grouping_accuracy._served(args)
    assert served == [("tensorflow", "fp32"), ("onnxruntime", "int8"), ("openvino", "fp32")]
    assert (
        grouping_accuracy._served(grouping_accuracy.parse_args(["--model_dir=m", "--work_dir=w"]))
        == []
    )
    rows = [
        {
            "task": "t",
            "variant": "grouped",
            "seed": seed,
            "served": {"tensorflow:fp32": base, "onnxruntime:int8": int8},
        }
        for seed, base, int8 in ((2, 0.75, 0.76), (1, 0.8, 0.79))
    ]
    table = grouping_accuracy.served_table(rows).splitlines()
    assert (
        table[2]
        == "| t | grouped | tensorflow:fp32 | 1: 0.8000 (+0.0000), 2: 0.7500 (+0.0000) | 0.0000 |"
    )
    assert (
        table[3]
        == "| t | grouped | onnxruntime:int8 | 1: 0.7900 (-0.0100), 2: 0.7600 (+0.0100) | 0.0100 |"
    )


# Each classifier task's dev set in its own layout: texts and label as its columns hold them.
DEV_COLUMNS = {
    "next_sentence_pairs": (("#1 String", "#2 String"), "Quality"),
    "senses": (("definition", "example"), "label"),
    "domains": (("definition",), "label"),
}


def test_the_scorer_reads_each_tasks_dev_set_in_its_own_layout():
    """The served accuracies are scored against the dev set the script trained on: the
    scoring child is told the task's --task_name (next_sentence_pairs is MRPC's layout,
    not custom TSV columns) and reads every dev row's texts and label."""
    args = grouping_accuracy.parse_args(["--model_dir=m", "--work_dir=w"])
    served = [("tensorflow", "fp32"), ("onnxruntime", "int8")]
    for task, (columns, label_column) in DEV_COLUMNS.items():
        data_flags = grouping_accuracy.TASKS[task][2]
        command = grouping_accuracy.score_command(task, data_flags, "export", served, args)
        child_args = grouping_accuracy.parse_args(command[2:])
        assert child_args.score_served == "tensorflow:fp32,onnxruntime:int8"
        texts, labels = grouping_accuracy.dev_texts_and_labels(child_args)
        rows = _tsv(task, "dev")
        expected = [tuple(row[c] for c in columns) for row in rows]
        assert [t if isinstance(t, tuple) else (t,) for t in texts] == expected, task
        assert labels == [row[label_column] for row in rows], task
