"""run_squad.py on plain {context, question} files, and its SavedModel export."""

import json

import numpy as np
import pytest
import tensorflow as tf
from squad_helpers import (
    TOY_CONFIG,
    TOY_VOCAB,
    load_run_squad,
    run_squad_script,
    toy_model_flags,
    toy_squad,
    write_json,
)

import modeling
import tokenization
from bert_lib.task_data import squad_data


def _plain(squad):
    """The (context, question, id) of every question of a SQuAD document."""
    return [
        (p["context"], q["question"], q["id"])
        for article in squad["data"]
        for p in article["paragraphs"]
        for q in p["qas"]
    ]


def test_plain_question_files_read_as_the_squad_nesting(tmp_path):
    squad, _ = toy_squad(5, seed=4)
    nested = squad_data.read_squad_examples(write_json(tmp_path / "s.json", squad), False, False)
    plain = _plain(squad)
    records = [{"context": c, "question": q} for c, q, _ in plain]
    as_list = squad_data.read_squad_examples(
        write_json(tmp_path / "l.json", records), False, False
    )
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text("\n".join(json.dumps(r) for r in records) + "\n\n", encoding="utf-8")
    as_lines = squad_data.read_squad_examples(str(jsonl), False, False)
    for examples in (as_list, as_lines):
        assert [e.qas_id for e in examples] == [str(i) for i in range(5)]
        assert [(e.question_text, e.doc_tokens) for e in examples] == [
            (e.question_text, e.doc_tokens) for e in nested
        ]
    single = {"context": "a b", "question": "what ?", "id": "x1"}
    (example,) = squad_data.read_squad_examples(
        write_json(tmp_path / "one.json", single), False, False
    )
    assert (example.qas_id, example.doc_tokens) == ("x1", ["a", "b"])

    jsonl.write_text('{"context": "a"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"q.jsonl: missing key 'question' in line 1"):
        squad_data.read_squad_examples(str(jsonl), False, False)
    with pytest.raises(ValueError, match="training needs SQuAD's layout"):
        squad_data.read_squad_examples(write_json(tmp_path / "l.json", records), True, False)


@pytest.mark.slow
def test_plain_questions_get_the_answers_of_the_nested_file_and_export_serves_logits(tmp_path):
    train, _ = toy_squad(96, seed=1)
    dev, _ = toy_squad(12, seed=2)
    model_flags = toy_model_flags(tmp_path)
    sizes = ["--max_seq_length=24", "--doc_stride=8", "--max_query_length=8"]
    out = tmp_path / "out"
    proc = run_squad_script(
        model_flags
        + sizes
        + [
            "--do_train",
            "--do_predict",
            "--train_batch_size=16",
            "--learning_rate=1e-3",
            "--num_train_epochs=2",
            "--tf_random_seed=7",
            f"--train_file={write_json(tmp_path / 'train.json', train)}",
            f"--predict_file={write_json(tmp_path / 'dev.json', dev)}",
            f"--output_dir={out}",
            f"--export_dir={tmp_path / 'export'}",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    nested = json.loads((out / "predictions.json").read_text())

    plain = _plain(dev)
    questions = tmp_path / "questions.jsonl"
    questions.write_text(
        "".join(json.dumps({"context": c, "question": q}) + "\n" for c, q, _ in plain),
        encoding="utf-8",
    )
    plain_out = tmp_path / "plain"
    proc = run_squad_script(
        model_flags
        + sizes
        + [
            "--do_predict",
            f"--predict_file={questions}",
            f"--output_dir={plain_out}",
            f"--init_checkpoint={out / 'model.ckpt-12'}",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = json.loads((plain_out / "predictions.json").read_text())
    assert list(answers) == [str(i) for i in range(len(plain))]
    assert list(answers.values()) == [nested[qid] for _, _, qid in plain]
    assert not (plain_out / "eval_results.txt").exists()

    # The SavedModel's logits equal a direct run of the span head on the checkpoint.
    rs = load_run_squad()
    tokenizer = tokenization.FullTokenizer(str(tmp_path / "vocab.txt"), do_lower_case=True)
    features = []
    rs.convert_examples_to_features(
        squad_data.read_squad_examples(str(questions), False, False),
        tokenizer,
        24,
        8,
        8,
        False,
        features.append,
    )
    inputs = {
        name: np.array([getattr(f, name) for f in features], np.int32)
        for name in ("input_ids", "input_mask", "segment_ids")
    }
    serve = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    served = serve(**{k: tf.constant(v) for k, v in inputs.items()})
    assert sorted(served) == ["end_logits", "start_logits"]
    config = modeling.BertConfig.from_dict(TOY_CONFIG)
    with tf.Graph().as_default():
        placeholders = {k: tf.compat.v1.placeholder(tf.int32, [None, 24]) for k in inputs}
        logits = rs.create_model(
            config,
            False,
            placeholders["input_ids"],
            placeholders["input_mask"],
            placeholders["segment_ids"],
            False,
        )
        with tf.compat.v1.Session() as sess:
            tf.compat.v1.train.Saver().restore(sess, str(out / "model.ckpt-12"))
            start, end = sess.run(logits, {placeholders[k]: v for k, v in inputs.items()})
    np.testing.assert_allclose(served["start_logits"].numpy(), start, atol=1e-5)
    np.testing.assert_allclose(served["end_logits"].numpy(), end, atol=1e-5)
    assert len(TOY_VOCAB) == TOY_CONFIG["vocab_size"]
