"""An export computes as training and prediction do: --precision reaches the serving graph.

The classifier of a random checkpoint is exported in float32 and in
bfloat16. The float32 export's probabilities are those of the numpy BERT;
the bfloat16 one's matrix multiplications run in bfloat16 (ids in, float32
probabilities out) and its probabilities stay within bfloat16 round-off of
float32. The script path (--precision=bf16 --export_dir) is checked the same
way, so the flag cannot be dropped on the way.

A bfloat16 export stores the weights its Transformer layers read in
bfloat16, cast once at export, as constants of its graph (no variables):
the served graph casts no weight, and its probabilities are those of a
graph that reads the float32 variables and casts them on every call (the
export without either step), to float32 round-off; numpy redoes the
cast-once export on a small graph of its own. A float32 export keeps its
variables.
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
from bert_lib import engine
from bert_lib.bert_runs import serving
from bert_lib.engine import saved_model

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
    """(probabilities, the dtypes its MatMul / BatchMatMul ops compute in, the op types of
    its graph)."""
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
        op_types = {op.type for op in graph.get_operations()}
    return probabilities, matmul_types, op_types


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
    fp32, fp32_types, _ = exports["fp32"]
    bf16, bf16_types, bf16_ops = exports["bf16"]
    assert fp32_types == {tf.float32}
    assert tf.bfloat16 in bf16_types
    # A graph of inference: no custom gradient's IdentityN wrapper around the bias adds.
    assert "BiasAdd" in bf16_ops and "IdentityN" not in bf16_ops
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


def _variable_casts(graph, weight_names=()):
    """The Cast ops of `graph` that read a variable, or a constant named as one of
    `weight_names`: the weights cast on every call."""
    casts = []
    for op in graph.get_operations():
        if op.type != "Cast":
            continue
        source = op.inputs[0].op
        while source.type == "Identity":
            source = source.inputs[0].op
        if source.type in ("ReadVariableOp", "VariableV2") or source.name in weight_names:
            casts.append(op)
    return casts


def _served_as_predictor_loads_it(export_dir, feed, weight_names):
    """(probabilities, the serving function's graph, {weight name: dtype}) of an export
    loaded with tf.saved_model.load, as predictor.Predictor loads it; the dtypes are the
    variables', or those of the graph's constants named as `weight_names`."""
    model = tf.saved_model.load(export_dir)
    serve = model.signatures["serving_default"]
    outputs = serve(**{name: tf.constant(value) for name, value in feed.items()})
    dtypes = {v.name.split(":")[0]: v.dtype for v in model.variables}
    constants = {
        op.name: op.get_attr("dtype")
        for op in serve.graph.get_operations()
        if op.type == "Const" and op.name in weight_names
    }
    return outputs["probabilities"].numpy(), serve.graph, dtypes or constants


@pytest.mark.slow
def test_bf16_export_stores_bf16_constants_and_serves_what_casting_per_call_served(tmp_path):
    checkpoint, config, values = _random_classifier(tmp_path)
    feed = _inputs()
    target = str(tmp_path / "bf16")
    run_classifier.export_saved_model(target, checkpoint, config, NUM_LABELS, precision="bf16")
    # The same model exported as before: float32 variables, cast on every call.
    per_call = str(tmp_path / "bf16_cast_per_call")
    model_fn = run_classifier.model_fn_builder(
        config, NUM_LABELS, None, 0.0, None, None, False, False, precision="bf16"
    )
    engine.Estimator(model_fn, engine.RunConfig(model_dir=str(tmp_path))).export_saved_model(
        per_call, serving.id_inputs, checkpoint
    )
    probabilities, graph, dtypes = _served_as_predictor_loads_it(target, feed, values)
    expected, per_call_graph, per_call_dtypes = _served_as_predictor_loads_it(
        per_call, feed, values
    )
    assert list(tf.saved_model.load(target).variables) == []
    assert not tf.io.gfile.exists(os.path.join(target, "variables", "variables.index"))
    assert sorted(dtypes) == sorted(values)
    assert _variable_casts(graph, values) == []
    # The reference does cast: the check above would see the casts if they came back.
    assert len(_variable_casts(per_call_graph)) == 12 * config.num_hidden_layers
    np.testing.assert_allclose(probabilities, expected, atol=1e-6, rtol=0)
    assert set(per_call_dtypes.values()) == {tf.float32}
    layer_weights = {
        name: dtype for name, dtype in dtypes.items() if name.startswith("bert/encoder/")
    }
    # Every dense kernel and bias of the layers is bfloat16; their LayerNorms stay float32.
    assert {d for n, d in layer_weights.items() if "LayerNorm" not in n} == {tf.bfloat16}
    assert {d for n, d in layer_weights.items() if "LayerNorm" in n} == {tf.float32}
    for name in ("bert/embeddings/word_embeddings", "output_weights", "bert/pooler/dense/kernel"):
        assert dtypes[name] == tf.float32, name


def test_only_bf16_exports_write_their_weights_as_constants():
    assert serving.weights_as_constants("bf16")
    assert not serving.weights_as_constants("fp32") and not serving.weights_as_constants("fp16")


@pytest.mark.slow
def test_fp32_export_is_written_as_without_the_bf16_step(tmp_path):
    checkpoint, config, _ = _random_classifier(tmp_path)
    exported = {}
    for cast_once in (False, True):
        target = tmp_path / f"cast_once_{cast_once}"
        model_fn = run_classifier.model_fn_builder(
            config, NUM_LABELS, None, 0.0, None, None, False, False
        )
        estimator = engine.Estimator(model_fn, engine.RunConfig(model_dir=str(tmp_path)))
        estimator.export_saved_model(
            str(target), serving.id_inputs, checkpoint, cast_weights_once=cast_once
        )
        exported[cast_once] = [
            (target / name).read_bytes()
            for name in ("saved_model.pb", "variables/variables.data-00000-of-00001")
        ]
    assert exported[True] == exported[False]


def test_cast_once_export_of_a_small_graph_stores_numpy_bf16_weights(tmp_path):
    rng = np.random.RandomState(5)
    values = {
        "cast_only": rng.standard_normal([3, 4]).astype(np.float32),
        "read_both_ways": rng.standard_normal([4]).astype(np.float32),
    }
    checkpoint = write_checkpoint(tmp_path / "model.ckpt", values)

    def build():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        cast_only = tf.compat.v1.get_variable("cast_only", [3, 4])
        read_both_ways = tf.compat.v1.get_variable("read_both_ways", [4])
        hidden = tf.matmul(tf.cast(x, tf.bfloat16), tf.cast(cast_only, tf.bfloat16))
        hidden = tf.cast(hidden + tf.cast(read_both_ways, tf.bfloat16), tf.float32)
        return {"x": x}, {"y": hidden * read_both_ways}

    x = rng.standard_normal([2, 3]).astype(np.float32)
    served = {}
    for cast_once in (True, False):
        target = str(tmp_path / f"export_{cast_once}")
        saved_model.export_graph(target, checkpoint, build, cast_weights_once=cast_once)
        model = tf.saved_model.load(target)
        serve = model.signatures["serving_default"]
        stored = {v.name.split(":")[0]: v.numpy() for v in model.variables}
        served[cast_once] = (serve(x=tf.constant(x))["y"].numpy(), serve.graph, stored)
    y, graph, stored = served[True]
    y_per_call, graph_per_call, _ = served[False]
    bf16 = tf.bfloat16.as_numpy_dtype
    # numpy's (ml_dtypes') round to nearest even, as TensorFlow's Cast rounds.
    assert stored["cast_only"].dtype == bf16
    np.testing.assert_array_equal(stored["cast_only"], values["cast_only"].astype(bf16))
    np.testing.assert_array_equal(stored["read_both_ways"], values["read_both_ways"])
    # The variable also read in float32 is still cast when the graph runs; the other not.
    assert (len(_variable_casts(graph)), len(_variable_casts(graph_per_call))) == (1, 2)
    np.testing.assert_array_equal(y, y_per_call)
    weights = values["cast_only"].astype(bf16).astype(np.float32)
    hidden = x.astype(bf16).astype(np.float32) @ weights + values["read_both_ways"]
    np.testing.assert_allclose(y, hidden * values["read_both_ways"], rtol=2e-2, atol=1e-2)
