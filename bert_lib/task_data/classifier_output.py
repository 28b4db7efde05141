"""The text of run_classifier's outputs: test_results.tsv, a GLUE submission, the records of
predictions on plain text, and the files an export's Predictor reads."""

import json

import numpy as np
import tensorflow as tf


def format_test_results(outputs):
    """test_results.tsv text: per example, its probabilities (or score) tab-joined.

    Each value prints as str() of a float32, as the original.
    """
    lines = []
    for output in outputs:
        values = np.atleast_1d(np.asarray(output, dtype=np.float32))
        lines.append("\t".join(str(v) for v in values) + "\n")
    return "".join(lines)


def format_glue_submission(outputs, task):
    """GLUE submission text: 'index<TAB>prediction', one row per test example.

    The prediction is the label name of the most probable class, or the
    score itself (3 decimals) for regression, as `task`
    (classifier_tasks.TaskKind) says. Indices count the test examples from
    0, as the GLUE test files do.
    """
    lines = ["index\tprediction\n"]
    for index, output in enumerate(outputs):
        if task.is_regression:
            prediction = f"{float(np.asarray(output).reshape(())):.3f}"
        else:
            prediction = task.labels[int(np.argmax(output))]
        lines.append(f"{index}\t{prediction}\n")
    return "".join(lines)


def predictor_files(
    vocab_file, do_lower_case, label_list, multi_label, threshold, max_seq_length=None
):
    """The assets.extra/ files predictor.Predictor reads: the vocabulary and its settings.

    `max_seq_length` is where the Predictor cuts texts (the exported graph
    takes any length, so its signature does not say).
    """
    with tf.io.gfile.GFile(vocab_file, "r") as f:
        vocab = f.read()
    settings = {
        "task": "classifier",
        "do_lower_case": bool(do_lower_case),
        "labels": label_list,
        "multi_label": bool(multi_label),
        "multi_label_threshold": float(threshold),
    }
    if max_seq_length is not None:
        settings["max_seq_length"] = int(max_seq_length)
    return {"vocab.txt": vocab, "predictor.json": json.dumps(settings, indent=2) + "\n"}


def prediction_records(pairs, outputs, task, threshold):
    """One JSON-ready dict per (text_a, text_b): texts, predicted label(s), probabilities.

    As `task` (classifier_tasks.TaskKind) says: single-label, "label" is the
    most probable class; multi-label, "labels" lists every class whose
    probability is at least `threshold`; regression, "score". "text_b"
    appears only for pairs.
    """
    label_list = task.labels
    records = []
    for (text_a, text_b), output in zip(pairs, outputs):
        record = {"text_a": text_a}
        if text_b is not None:
            record["text_b"] = text_b
        values = np.atleast_1d(np.asarray(output, np.float64))
        if task.is_regression:
            record["score"] = float(values[0])
        else:
            if task.multi_label:
                record["labels"] = [n for n, p in zip(label_list, values) if p >= threshold]
            else:
                record["label"] = label_list[int(np.argmax(values))]
            record["probabilities"] = {n: float(p) for n, p in zip(label_list, values)}
        records.append(record)
    return records
