"""The parts of benchmarks/compat_check_lib/ that run on this Python: fixtures, comparators,
our worker.

The full check needs the original code and TensorFlow 1.15 (COMPATIBILITY.md);
this pins that its pieces compare what they claim to, and fail when they should.
"""

import ast
import json
import os
import sys

import numpy as np
import numpy_reference as npr
import pytest
from helpers import REPO, run_command, write_checkpoint

BENCHMARKS = os.path.join(REPO, "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)

from compat_check_lib import common, comparators, fixtures, launcher, orchestrator  # noqa: E402

PACKAGE = os.path.join(BENCHMARKS, "compat_check_lib")


# ----------------------------------------------------------------------------
# What runs under the original's interpreter stays Python 3.7 and TensorFlow-free at import


@pytest.mark.parametrize("name", ["__init__", "common", "fixtures", "worker"])
def test_modules_for_python37_parse_as_37_and_import_only_stdlib_at_top(name):
    with open(os.path.join(PACKAGE, name + ".py"), encoding="utf-8") as f:
        source = f.read()
    tree = ast.parse(source, feature_version=(3, 7))
    stdlib = set(sys.stdlib_module_names)
    for node in tree.body:
        if isinstance(node, ast.Import):
            roots = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            roots = [node.module.split(".")[0]]
        else:
            continue
        assert set(roots) <= stdlib, f"{name}.py imports {roots} at module level"


def test_walrus_is_rejected_by_the_37_parse():
    """The check above can fail: 3.8 syntax does not parse as 3.7."""
    with pytest.raises(SyntaxError):
        ast.parse("if (n := 1):\n    pass\n", feature_version=(3, 7))


# ----------------------------------------------------------------------------
# float32 helpers, against numpy


def test_float32_str_is_numpys_shortest_text_of_a_float32():
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [rng.standard_normal(300), rng.uniform(0, 1, 300), [0.1, 1 / 3, 2.0**-20, 123456.78]]
    ).astype(np.float32)
    for value in values:
        assert common.float32_str(float(value)) == str(value), value


def test_float32_ulps_counts_steps_between_neighbours():
    one = np.float32(1.0)
    up = np.nextafter(np.nextafter(one, np.float32(2)), np.float32(2))
    assert common.float32_ulps(1.0, float(up)) == 2
    assert common.float32_ulps(0.5, 0.5) == 0
    assert common.float32_round(0.1) == float(np.float32(0.1))


# ----------------------------------------------------------------------------
# Fixtures


def test_write_mrpc_uses_the_glue_layout(tmp_path):
    fixtures.write_mrpc(
        str(tmp_path), {"train": fixtures.MRPC_ROWS[:2], "test": [("0", "a", "b")]}
    )
    train = (tmp_path / "train.tsv").read_text(encoding="utf-8").split("\n")
    test = (tmp_path / "test.tsv").read_text(encoding="utf-8").split("\n")
    assert train[0] == "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"
    assert train[1].split("\t")[:3] == ["1", "1000", "2000"]
    assert train[2].split("\t")[:3] == ["0", "1001", "2001"]
    assert test[:2] == ["index\t#1 ID\t#2 ID\t#1 String\t#2 String", "0\t1000\t2000\ta\tb"]


def test_write_squad_v1_drops_impossible_questions_and_answers_point_into_context(tmp_path):
    v1, v2 = tmp_path / "v1.json", tmp_path / "v2.json"
    fixtures.write_squad(str(v1), version_2=False)
    fixtures.write_squad(str(v2), version_2=True)
    doc1 = json.loads(v1.read_text(encoding="utf-8"))
    doc2 = json.loads(v2.read_text(encoding="utf-8"))
    qas1 = [qa for p in doc1["data"][0]["paragraphs"] for qa in p["qas"]]
    qas2 = [qa for p in doc2["data"][0]["paragraphs"] for qa in p["qas"]]
    assert (len(qas1), len(qas2)) == (14, 16)
    assert sum(qa["is_impossible"] for qa in qas2) == 2
    assert all("is_impossible" not in qa for qa in qas1)
    misplaced = []
    for paragraph in doc2["data"][0]["paragraphs"]:
        for qa in paragraph["qas"]:
            for answer in qa["answers"]:
                start = answer["answer_start"]
                if paragraph["context"][start:].startswith(answer["text"]) is False:
                    misplaced.append(paragraph["context"][start : start + 7])
    # One answer_start points at another word on purpose.
    assert misplaced == ["Iceland"]


def test_tricky_rows_clean_cells_and_pair_each_line_with_the_third_after():
    rows = fixtures.tricky_rows(["a\tb", "", "c\x00d", "e\rf", "g"])
    texts = ["a b", "cd", "e f", "g", fixtures.TRICKY_EXTRA]
    assert [r[1] for r in rows] == texts
    assert [r[2] for r in rows] == [texts[3], texts[4], texts[0], texts[1], texts[2]]
    assert {r[0] for r in rows} == {"0"}


def test_cased_vocab_keeps_every_id_and_reads_as_cased(tmp_path):
    from bert_lib.bert_runs import checks

    source = tmp_path / "vocab.txt"
    tokens = ["[PAD]", "[UNK]"] + [f"w{chr(97 + i % 26)}" * 2 for i in range(200)] + ["##s"]
    source.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    assert checks.vocabulary_casing(tokens) == "uncased"
    fixtures.write_cased_vocab(str(source), str(tmp_path / "cased.txt"))
    cased = (tmp_path / "cased.txt").read_text(encoding="utf-8").split("\n")
    assert len(cased) == len(tokens) + 1 and cased[-1] == ""
    changed = [i for i, (a, b) in enumerate(zip(tokens, cased)) if a != b]
    assert changed == [i for i in range(len(tokens)) if i % 10 == 0 and tokens[i].isalpha()]
    assert all(cased[i] == tokens[i].capitalize() for i in changed)
    assert checks.vocabulary_casing(cased[:-1]) == "cased"


def test_generated_logits_are_float32_exact_and_seeded():
    logits = np.array(fixtures.softmax_logits())
    assert logits.shape == (2000, 2)
    assert np.array_equal(logits.astype(np.float32).astype(np.float64), logits)
    a = fixtures.synthetic_logits(1000000005, 7, 3.0)
    assert a == fixtures.synthetic_logits(1000000005, 7, 3.0)
    assert a != fixtures.synthetic_logits(1000000006, 7, 3.0)
    assert [len(row) for row in a] == [7, 7]
    assert all(float(np.float32(x)) == x for row in a for x in row)


# ----------------------------------------------------------------------------
# Comparators


def _write_records(path, rows):
    import tensorflow as tf

    with tf.io.TFRecordWriter(str(path)) as writer:
        for row in rows:
            example = tf.train.Example()
            for key, values in row:
                example.features.feature[key].int64_list.value.extend(values)
            writer.write(example.SerializeToString())


def test_compare_records_parses_content_and_finds_a_changed_value(tmp_path):
    _write_records(tmp_path / "a", [[("x", [1, 2]), ("y", [3])], [("x", [4]), ("y", [5])]])
    _write_records(tmp_path / "b", [[("y", [3]), ("x", [1, 2])], [("y", [5]), ("x", [4])]])
    _write_records(tmp_path / "c", [[("x", [1, 2]), ("y", [3])], [("x", [4]), ("y", [6])]])
    _write_records(tmp_path / "d", [[("x", [1, 2]), ("y", [3])]])
    same = comparators.compare_records(str(tmp_path / "a"), str(tmp_path / "b"))
    assert same.ok and same.detail.startswith("2 vs 2 records, 0 differ")
    changed = comparators.compare_records(str(tmp_path / "a"), str(tmp_path / "c"))
    assert not changed.ok and "1 differ in content" in changed.detail
    assert not comparators.compare_records(str(tmp_path / "a"), str(tmp_path / "d")).ok


def _compare_json(tmp_path, a, b, json_lines=False):
    (tmp_path / "a").write_text(a, encoding="utf-8")
    (tmp_path / "b").write_text(b, encoding="utf-8")
    return comparators.compare_json_files(str(tmp_path / "a"), str(tmp_path / "b"), json_lines)


def test_compare_json_files_tolerates_floats_only(tmp_path):
    base = '{"q1": [{"text": "x", "p": 0.25}], "q2": 1}'
    assert _compare_json(tmp_path, base, base) == (True, "byte-identical")
    floats = _compare_json(tmp_path, base, base.replace("0.25", "0.2500001"))
    assert floats.ok and "1 floats differ, max |diff| 1e-07" in floats.detail
    assert not _compare_json(tmp_path, base, '{"q2": 1, "q1": [{"text": "x", "p": 0.25}]}').ok
    assert not _compare_json(tmp_path, base, base.replace('"x"', '"y"')).ok
    assert not _compare_json(tmp_path, base, base.replace('"q2": 1', '"q2": 1.0')).ok
    lines = _compare_json(
        tmp_path, '{"a": 1.5}\n{"b": [1]}\n', '{"a": 1.5}\n{"b": [1, 2]}\n', True
    )
    assert not lines.ok


def _compare_kv(tmp_path, a, b, extra_ok=()):
    (tmp_path / "a").write_text(a, encoding="utf-8")
    (tmp_path / "b").write_text(b, encoding="utf-8")
    return comparators.compare_key_value_file(str(tmp_path / "a"), str(tmp_path / "b"), extra_ok)


def test_compare_key_value_file_wants_the_same_keys_in_order(tmp_path):
    orig = "eval_accuracy = 0.6\neval_loss = 0.69\nglobal_step = 5\n"
    ours = "eval_accuracy = 0.6\neval_f1 = 0.75\neval_loss = 0.68999\nglobal_step = 5\n"
    result = _compare_kv(tmp_path, orig, ours, extra_ok=("eval_f1",))
    assert result.ok and "eval_loss: 0.69 vs 0.68999" in result.detail
    assert not _compare_kv(tmp_path, orig, ours).ok
    assert not _compare_kv(tmp_path, orig, "eval_loss = 0.69\neval_accuracy = 0.6\n").ok
    # More than round-off apart: the same checkpoint computed another way.
    far = "eval_accuracy = 0.6\neval_loss = 0.69\nglobal_step = 5\nloss = 0.70944744\n"
    near = far.replace("0.70944744", "0.70944738")
    original = far.replace("0.70944744", "0.64914846")
    assert _compare_kv(tmp_path, near, far).ok
    result = _compare_kv(tmp_path, original, far)
    assert not result.ok and "beyond round-off: loss: 0.64914846 vs 0.70944744" in result.detail


def _compare_tsv(tmp_path, a, b):
    (tmp_path / "a").write_text(a, encoding="utf-8")
    (tmp_path / "b").write_text(b, encoding="utf-8")
    return comparators.compare_tsv(str(tmp_path / "a"), str(tmp_path / "b"))


def test_compare_tsv_counts_ulps_and_wants_shortest_float32_text(tmp_path):
    # str() of a numpy float32 is its shortest text, as the original's TSV writer gives it.
    x, y = np.float32(0.3), np.float32(0.7)
    up = np.nextafter(x, np.float32(1))
    a = f"{str(x)}\t{str(y)}\n"
    result = _compare_tsv(tmp_path, a, f"{str(up)}\t{str(y)}\n")
    assert result.ok and "1 of 2 values differ, by at most 1 float32 ulp" in result.detail
    assert not _compare_tsv(tmp_path, a, f"0.30000001192092896\t{str(y)}\n").ok
    assert not _compare_tsv(tmp_path, a, f"{str(x)}\n").ok


def test_compare_softmax_rows_counts_rows_and_ulps():
    half_up = str(np.nextafter(np.float32(0.5), np.float32(1)))
    result = comparators.compare_softmax_rows(
        [["0.5", "0.5"], ["0.25", "0.75"]], [["0.5", half_up], ["0.25", "0.75"]]
    )
    assert result.ok and result.detail.startswith("1 rows differ") and "1 ulp" in result.detail
    assert not comparators.compare_softmax_rows([], []).ok


def _save_checkpoint(prefix, tensors):
    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    return write_checkpoint(prefix, tensors)


def _adam_weight_decay_step(w, m, v, grad, lr, decay):
    """One step of the original's AdamWeightDecayOptimizer (decay 0.01), stored as float32."""
    w, m, v = npr.adam_step(w, m, v, grad, lr, weight_decay_rate=0.01 if decay else 0.0)
    return w.astype(np.float32), m.astype(np.float32), v.astype(np.float32)


def _two_steps(tmp_path, break_slots=False, step_after=4):
    rng = np.random.default_rng(1)
    before, after = {"global_step": np.int64(3)}, {"global_step": np.int64(step_after)}
    for name, decay in (("bert/dense/kernel", True), ("bert/dense/bias", False)):
        w, m = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
        v = rng.uniform(0.1, 1, 5).astype(np.float32)
        w4, m4, v4 = _adam_weight_decay_step(w, m, v, rng.standard_normal(5), 2.5e-4, decay)
        before.update({name: w, name + "/adam_m": m, name + "/adam_v": v})
        after.update({name: w4, name + "/adam_m": m4, name + "/adam_v": v4})
    if break_slots:
        # A resume that lost the slots: they restart from zero.
        name = "bert/dense/kernel"
        after[name], after[name + "/adam_m"], after[name + "/adam_v"] = _adam_weight_decay_step(
            before[name], 0.0, 0.0, rng.standard_normal(5), 2.5e-4, True
        )
    a = _save_checkpoint(str(tmp_path / "a" / "model.ckpt-3"), before)
    b = _save_checkpoint(str(tmp_path / "b" / "model.ckpt-4"), after)
    return a, b


def test_compare_resumed_step_accepts_one_adam_step_and_rejects_lost_slots(tmp_path):
    good = comparators.compare_resumed_step(*_two_steps(tmp_path / "good"), lr=2.5e-4)
    assert good.ok, good.detail
    assert "global_step 3 -> 4; 2 variables" in good.detail
    lost = comparators.compare_resumed_step(*_two_steps(tmp_path / "lost", True), lr=2.5e-4)
    assert not lost.ok
    stuck = comparators.compare_resumed_step(*_two_steps(tmp_path / "stuck", step_after=3), 2.5e-4)
    assert not stuck.ok
    wrong_lr = comparators.compare_resumed_step(*_two_steps(tmp_path / "lr"), lr=5e-4)
    assert not wrong_lr.ok


def test_compare_adam_slots_is_relative_to_each_slot_and_skips_key_bias(tmp_path):
    rng = np.random.default_rng(2)
    slots = {
        "l/query/kernel/adam_m": rng.standard_normal(4).astype(np.float32) * 1e-5,
        "l/key/bias/adam_v": rng.standard_normal(4).astype(np.float32),
    }
    near = dict(slots)
    near["l/query/kernel/adam_m"] = slots["l/query/kernel/adam_m"] * np.float32(1 + 1e-6)
    near["l/key/bias/adam_v"] = slots["l/key/bias/adam_v"] + 1
    far = dict(slots)
    far["l/query/kernel/adam_m"] = slots["l/query/kernel/adam_m"] * np.float32(1.01)
    base = _save_checkpoint(str(tmp_path / "a" / "model.ckpt-1"), slots)
    result = comparators.compare_adam_slots(
        base, _save_checkpoint(str(tmp_path / "b" / "model.ckpt-1"), near)
    )
    assert result.ok and result.detail.startswith("1 slots compared"), result.detail
    assert not comparators.compare_adam_slots(
        base, _save_checkpoint(str(tmp_path / "c" / "model.ckpt-1"), far)
    ).ok


# ----------------------------------------------------------------------------
# The command line and our worker


def test_unknown_check_and_a_wrong_original_dir_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        orchestrator.parse_args(
            ["--original_dir=x", "--original_python=y", f"--work_dir={tmp_path}", "--checks=nope"]
        )
    assert exit_info.value.code == 2
    assert "unknown checks ['nope']" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        launcher.Runner(str(tmp_path), sys.executable, str(tmp_path))
    assert str(exit_info.value).startswith(f"ERROR: --original_dir={tmp_path} holds neither")


def _run_our_worker(tmp_path, *flags):
    cmd = launcher.worker_command(sys.executable, "ours", REPO, list(flags))
    proc = run_command(cmd, env=launcher.worker_env(), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_our_processors_worker_reads_each_layout(tmp_path):
    fixtures.write_glue(str(tmp_path / "glue"))
    out = tmp_path / "processors.json"
    _run_our_worker(
        tmp_path, "--worker=processors", f"--work_dir={tmp_path}", f"--worker_out={out}"
    )
    dump = json.loads(out.read_text(encoding="utf-8"))
    three = ["contradiction", "entailment", "neutral"]
    assert dump["cola/labels"] == dump["mrpc/labels"] == ["0", "1"]
    assert dump["mnli/labels"] == dump["xnli/labels"] == three
    assert dump["cola/train"][1] == ["train-1", "They drank the pub.", None, "0"]
    assert dump["cola/test"][1][1:] == ["Z\u00fcrich \u6771\u4eac caf\u00e9.", None, "0"]
    assert [len(dump[f"mrpc/{s}"]) for s in ("train", "dev", "test")] == [7, 3, 4]
    assert dump["mrpc/train"][0][0] == "train-1" and dump["mrpc/train"][0][3] == "1"
    assert dump["mnli/test"][0][3] == "contradiction"
    # XNLI: the Chinese training file with "contradictory" renamed, and only zh of dev.
    assert [e[3] for e in dump["xnli/train"]] == ["contradiction", "entailment"]
    assert [e[1:] for e in dump["xnli/dev"]] == [["\u4ed6\u8bf4", "\u5979\u8bf4", "entailment"]]


@pytest.mark.slow
def test_our_softmax_worker_matches_numpy(tmp_path):
    out = tmp_path / "softmax.txt"
    _run_our_worker(tmp_path, "--worker=softmax", f"--worker_out={out}")
    got = np.array([[float(x) for x in line.split()] for line in out.read_text().splitlines()])
    logits = np.array(fixtures.softmax_logits(), dtype=np.float64)
    exact = npr.softmax(logits, axis=1)
    assert got.shape == (2000, 2)
    assert np.array_equal(got.astype(np.float32).astype(np.float64), got)
    np.testing.assert_allclose(got, exact, rtol=5e-7)


@pytest.mark.slow
def test_our_lr_schedule_worker_always_uses_lr_of_step_zero(tmp_path):
    out = tmp_path / "lr.json"
    _run_our_worker(tmp_path, "--worker=lr_schedule", f"--worker_out={out}")
    assert json.loads(out.read_text()) == {"step 0": 20}


@pytest.mark.slow
def test_our_squad_post_worker_answers_every_question(tmp_path):
    fixtures.write_squad(str(tmp_path / "squad_v2.json"), version_2=True)
    out = tmp_path / "post"
    out.mkdir()
    _run_our_worker(
        tmp_path,
        "--worker=squad_post",
        "--worker_case=v2_cased_threshold",
        f"--work_dir={tmp_path}",
        f"--worker_out={out}",
    )
    ids = [f"q{i}" for i in range(1, 17)]
    predictions = json.loads((out / "predictions.json").read_text(encoding="utf-8"))
    nbest = json.loads((out / "nbest_predictions.json").read_text(encoding="utf-8"))
    null_odds = json.loads((out / "null_odds.json").read_text(encoding="utf-8"))
    assert sorted(predictions, key=lambda q: int(q[1:])) == ids
    assert sorted(null_odds) == sorted(ids)
    # Answers are recovered from whitespace-split words, rejoined with single spaces.
    contexts = " ".join(" ".join(c.split()) for c in fixtures.SQUAD_CONTEXTS)
    for qid, text in predictions.items():
        # n_best_size 7; the v2 list gains the empty answer when it is not there yet.
        assert 1 <= len(nbest[qid]) <= 8
        assert text in contexts, (qid, text)
        if not any(e["text"] for e in nbest[qid]):
            assert text == ""
            continue
        # Threshold 2.0: "" exactly when null score minus best non-null exceeds it.
        assert (text == "") == (null_odds[qid] > 2.0), (qid, null_odds[qid])
    features = json.loads((out / "features_False.json").read_text(encoding="utf-8"))
    assert {f["example_index"] for f in features} == set(range(16))
    assert all(len(f["tokens"]) <= 48 for f in features)
