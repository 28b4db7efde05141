"""tf.contrib of TF 1.x, for the TF 1.x API module (tf1/__init__.py): one module per package.

tf.contrib is gone from TensorFlow 2. What BERT code and the research of its
years took from it is here, each package a module named for it: crf (the
CRF of BERT + CRF taggers), metrics, framework, training (HParams),
cluster_resolver, compiler (XLA's jit scope), eager (defun), learn (VocabularyProcessor,
Experiment), lookup, predictor, graph_editor, seq2seq (a package: attention
wrapper, decoders, beam search, loss), opt (LazyAdamOptimizer), util and
slim (its model_analyzer, and the data helpers of slim_data.py that
tensor2tensor's input pipeline reads with; not its layers).
tpu, layers, rnn and estimator are
the sibling subpackages' (estimator/, layers/, rnn/), which tf.estimator,
tf.layers and tf.nn share; data is tf.data.experimental. modules() is where
each package is registered by name; tf1/__init__.py gives them TF 1.15's
module paths (internals.attach_module_paths).
"""

import tensorflow as tf

from .. import estimator as tf1_estimator
from .. import layers as tf1_layers
from .. import rnn as tf1_rnn
from ..machinery.namespaces import Namespace
from . import (
    cluster_resolver,
    compiler,
    crf,
    eager,
    framework,
    graph_editor,
    learn,
    lookup,
    metrics,
    opt,
    predictor,
    seq2seq,
    slim,
    training,
    util,
)


def modules(estimator_classes):
    """{name: namespace} of tf.contrib's packages. tf.contrib.tpu's TPUEstimator and
    learn's Experiment drive the Estimators of estimator_classes
    (estimator.estimator_classes)."""
    return {
        "tpu": tf1_estimator.tpu_module(estimator_classes),
        "cluster_resolver": cluster_resolver.cluster_resolver_module(),
        "data": Namespace("tf.contrib.data", tf.compat.v1.data.experimental),
        "layers": tf1_layers.contrib_layers_module(),
        "crf": crf.crf_module(),
        "rnn": tf1_rnn.contrib_rnn_module(),
        "framework": framework.framework_module(),
        "eager": eager.eager_module(),
        "training": training.training_module(),
        "estimator": tf1_estimator.contrib_estimator_module(),
        "metrics": metrics.metrics_module(),
        "compiler": compiler.compiler_module(),
        "learn": learn.learn_module(estimator_classes),
        "lookup": lookup.lookup_module(),
        "predictor": predictor.predictor_module(),
        "graph_editor": graph_editor.graph_editor_module(),
        "seq2seq": seq2seq.seq2seq_module(),
        "slim": slim.slim_module(),
        "opt": opt.opt_module(),
        "util": util.util_module(),
    }
