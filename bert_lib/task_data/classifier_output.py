"""The text of run_classifier's outputs: test_results.tsv, a GLUE submission, and the files
an export's Predictor reads."""

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


def format_glue_submission(outputs, label_list):
    """GLUE submission text: 'index<TAB>prediction', one row per test example.

    The prediction is the label name of the most probable class, or the
    score itself (3 decimals) for regression (label_list None). Indices count
    the test examples from 0, as the GLUE test files do.
    """
    lines = ["index\tprediction\n"]
    for index, output in enumerate(outputs):
        if label_list is None:
            prediction = f"{float(np.asarray(output).reshape(())):.3f}"
        else:
            prediction = label_list[int(np.argmax(output))]
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
