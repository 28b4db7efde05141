"""An export computes as training and prediction do: --precision reaches the serving graph.

The classifier of a random checkpoint is exported in float32 and in
bfloat16. The float32 export's probabilities are those of the numpy BERT;
the bfloat16 one's matrix multiplications run in bfloat16 (ids in, float32
probabilities out) and its probabilities stay within bfloat16 round-off of
float32. The script path (--precision=bf16 --export_dir) is checked the same
way, so the flag cannot be dropped on the way.
"""

import os

import numpy as np
import numpy_reference as npr
import pytest
import tensorflow as tf
from classifier_helpers import VOCAB, model_files, run_classifier_script
from helpers import tiny_bert_config, write_checkpoint

import modeling
import run_classifier

NUM_LABELS = 3
SEQ = 12


def _random_classifier(directory):
    """A checkpoint with every classifier variable drawn at random (large enough that
    bfloat16 rounding shows), and its config."""
    config = modeling.BertConfig.from_dict(tiny_bert_config(len(VOCAB)))
    with tf.Graph().as_default():
        ids = tf.compat.v1.placeholder(tf.int32, [None, None])
        run_classifier.create_model(config, False, ids, ids, ids, None, NUM_LABELS, False)
        shapes = {v.op.name: v.shape.as_list() for v in tf.compat.v1.global_variables()}
    rng = np.random.RandomState(7)
    values = {}
    for name, shape in shapes.items():
        scale = 1.0 if name.endswith("gamma") else 0.3
        offset = 1.0 if name.endswith("gamma") else 0.0
        values[name] = (offset + scale * rng.standard_normal(shape)).astype(np.float32)
    return write_checkpoint(directory / "model.ckpt", values), config, values


def _inputs():
    rng = np.random.RandomState(3)
    ids = rng.randint(5, len(VOCAB), size=(4, SEQ)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 7:] = 0
    mask[3, 4:] = 0
    ids *= mask
    segments = np.zeros_like(ids)
    segments[:, 5:] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments * mask}


def _serve(export_dir, feed):
    """(probabilities, the dtypes its MatMul / BatchMatMul ops compute in)."""
    graph = tf.Graph()
    with tf.compat.v1.Session(graph=graph) as session:
        meta = tf.compat.v1.saved_model.loader.load(session, ["serve"], export_dir)
        signature = meta.signature_def["serving_default"]
        fetch = signature.outputs["probabilities"].name
        values = {signature.inputs[name].name: value for name, value in feed.items()}
        probabilities = session.run(fetch, values)
        matmul_types = {
            op.get_attr("T")
            for op in graph.get_operations()
            if op.type in ("MatMul", "BatchMatMulV2", "_FusedMatMul")
        }
    return probabilities, matmul_types


def _numpy_probabilities(values, config, feed):
    outputs = npr.bert(values, config, feed["input_ids"], feed["input_mask"], feed["segment_ids"])
    logits = outputs["pooled_output"] @ values["output_weights"].T + values["output_bias"]
    return npr.softmax(logits)


@pytest.mark.slow
def test_bf16_export_computes_in_bf16_and_fp32_export_is_the_numpy_bert(tmp_path):
    checkpoint, config, values = _random_classifier(tmp_path)
    feed = _inputs()
    exports = {}
    for precision in ("fp32", "bf16"):
        target = str(tmp_path / precision)
        run_classifier.export_saved_model(
            target, checkpoint, config, NUM_LABELS, precision=precision
        )
        exports[precision] = _serve(target, feed)
    fp32, fp32_types = exports["fp32"]
    bf16, bf16_types = exports["bf16"]
    assert fp32_types == {tf.float32}
    assert tf.bfloat16 in bf16_types
    assert fp32.dtype == bf16.dtype == np.float32
    np.testing.assert_allclose(fp32, _numpy_probabilities(values, config, feed), atol=1e-5)
    np.testing.assert_allclose(bf16, fp32, atol=2e-2)
    assert not np.array_equal(bf16, fp32)


@pytest.mark.slow
def test_script_precision_flag_reaches_the_export(tmp_path):
    checkpoint, _, _ = _random_classifier(tmp_path)
    vocab, config_file = model_files(tmp_path)
    feed = _inputs()
    served = {}
    for precision in ("fp32", "bf16"):
        target = tmp_path / f"export_{precision}"
        result = run_classifier_script(
            "--task_name=custom",
            "--labels=a,b,c",
            f"--data_dir={tmp_path}",
            f"--vocab_file={vocab}",
            f"--bert_config_file={config_file}",
            f"--init_checkpoint={checkpoint}",
            f"--output_dir={tmp_path / ('out_' + precision)}",
            f"--export_dir={target}",
            f"--max_seq_length={SEQ}",
            f"--precision={precision}",
        )
        assert result.returncode == 0, result.stderr[-3000:]
        assert os.path.isdir(target)
        served[precision] = _serve(str(target), feed)
    assert served["fp32"][1] == {tf.float32}
    assert tf.bfloat16 in served["bf16"][1]
    np.testing.assert_allclose(served["bf16"][0], served["fp32"][0], atol=2e-2)
