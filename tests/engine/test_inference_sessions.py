"""Evaluation and prediction sessions skip graph passes that change nothing in their graphs.

TensorFlow's memory optimizer looks for activations to swap out or
recompute between a forward and a backward pass; in an inference graph it
finds none and leaves the graph as it was, after being the longest pass of
the session's start. The MLIR (TFG) passes sort the graph and move code
into conditionals, which BERT's graphs do not have. Evaluation and
prediction turn both off, training keeps them; a BERT classifier predicts
bit for bit the same with and without them.

Their input pipelines run without tf.data's autotuning, whose thread could
hold Session.close for tens of seconds at the end of a prediction.
"""

import numpy as np
import tensorflow as tf
from helpers import tiny_bert_config
from linear_model import data, input_fn_builder, model_fn
from tensorflow.core.framework import dataset_options_pb2
from tensorflow.core.protobuf import rewriter_config_pb2

import modeling
import run_classifier
from bert_lib import engine
from bert_lib.engine import config as engine_config
from bert_lib.engine import estimator as engine_estimator
from bert_lib.engine import graphs

NO_MEM_OPT = rewriter_config_pb2.RewriterConfig.NO_MEM_OPT


def _record_session_configs(monkeypatch):
    """The ConfigProto of every session opened from now on, in order."""
    configs = []
    session_class = tf.compat.v1.Session

    class Recording(session_class):
        def __init__(self, *args, config=None, **kwargs):
            configs.append(config)
            super().__init__(*args, config=config, **kwargs)

    monkeypatch.setattr(tf.compat.v1, "Session", Recording)
    return configs


def test_only_evaluation_and_prediction_turn_those_passes_off(tmp_path, monkeypatch):
    x, y = data()
    estimator = engine.Estimator(
        model_fn,
        engine.RunConfig(model_dir=str(tmp_path), save_checkpoints_steps=2),
        train_batch_size=8,
        eval_batch_size=8,
        predict_batch_size=8,
    )
    configs = _record_session_configs(monkeypatch)
    estimator.train(input_fn_builder(x, y), max_steps=2)
    trained = len(configs)
    estimator.evaluate(input_fn_builder(x, y, repeat=False))
    evaluated = len(configs)
    list(estimator.predict(input_fn_builder(x, y, repeat=False)))
    rewrites = [c.graph_options.rewrite_options for c in configs]
    assert trained >= 1 and evaluated == trained + 1 and len(configs) == evaluated + 1
    for training in rewrites[:trained]:
        assert training.memory_optimization != NO_MEM_OPT
        assert not training.disable_tfg_optimizer
    for inference in rewrites[trained:]:
        assert inference.memory_optimization == NO_MEM_OPT
        assert inference.disable_tfg_optimizer
    # Otherwise they are opened with the engine's usual settings.
    usual = engine_config.session_config()
    for config in configs[trained:]:
        passes = config.graph_options.rewrite_options
        passes.memory_optimization = usual.graph_options.rewrite_options.memory_optimization
        passes.disable_tfg_optimizer = False
        assert config == usual


def _tiny_classifier_predictions(model_dir, batches):
    config = modeling.BertConfig.from_dict(tiny_bert_config(99))
    model_fn = run_classifier.model_fn_builder(config, 3, None, 0.0, None, None, False, False)
    estimator = engine.Estimator(
        model_fn,
        engine.RunConfig(model_dir=str(model_dir), tf_random_seed=3),
        predict_batch_size=4,
    )
    predictions = estimator.predict(run_classifier.input_fn_builder(batches, 12, False, False))
    return np.stack([p["probabilities"] for p in predictions])


def test_bert_predicts_bit_for_bit_as_with_those_passes(tmp_path, monkeypatch):
    rng = np.random.RandomState(0)
    features = []
    for i in range(10):
        length = int(rng.randint(3, 13))
        mask = [1] * length + [0] * (12 - length)
        ids = [int(v) for v in rng.randint(5, 99, 12)]
        features.append(
            run_classifier.InputFeatures([a * m for a, m in zip(ids, mask)], mask, [0] * 12, i % 3)
        )
    without = _tiny_classifier_predictions(tmp_path / "a", features)
    monkeypatch.setattr(
        engine_estimator, "session_config", lambda inference=False: engine_config.session_config()
    )
    configs = _record_session_configs(monkeypatch)
    with_it = _tiny_classifier_predictions(tmp_path / "b", features)
    assert configs[0].graph_options.rewrite_options.memory_optimization != NO_MEM_OPT
    assert not configs[0].graph_options.rewrite_options.disable_tfg_optimizer
    assert without.shape == (10, 3)
    np.testing.assert_array_equal(without, with_it)


def _autotune_settings(graph):
    """autotune.enabled of every options dataset in `graph` (None where unset)."""
    settings = []
    for op in graph.get_operations():
        if op.type == "OptionsDataset":
            options = dataset_options_pb2.Options()
            options.ParseFromString(op.get_attr("serialized_options"))
            autotune = options.autotune_options
            settings.append(autotune.enabled if autotune.HasField("enabled") else None)
    return settings


def test_eval_and_predict_pipelines_run_without_autotuning():
    x, y = data()
    builder = graphs.ModelBuilder(model_fn, engine.RunConfig(model_dir="unused"), {})
    for build in (graphs.build_eval_graph, graphs.build_predict_graph):
        graph = tf.Graph()
        with graph.as_default():
            build(builder, input_fn_builder(x, y, repeat=False), 8)
        assert False in _autotune_settings(graph), build.__name__
    # Training keeps tf.data's default.
    graph = tf.Graph()
    with graph.as_default():
        builder.prepare_dataset(input_fn_builder(x, y)({"batch_size": 8}))
    assert False not in _autotune_settings(graph)
