"""tf.contrib packages of TF 1.x beyond what BERT's forks used, for the TF 1.x API module.

The TF 1.x code of BERT's years that was not derived from BERT reached
further into tf.contrib: text CNNs mapped words to ids with
learn.preprocessing.VocabularyProcessor and branched on learn.ModeKeys;
plain tf.Session loops looked words up with contrib.lookup's tables;
serving scripts loaded exports with contrib.predictor; gradient-checkpointing
code rewired the graph with contrib.graph_editor; sequence-to-sequence
models trained with seq2seq.sequence_loss. Each package is a module here
(learn.py, lookup.py, predictor.py, graph_editor.py, seq2seq.py), and
modules() hands them to contrib.py by name.
"""

from . import graph_editor, learn, lookup, predictor, seq2seq


def modules(estimator_classes):
    """{name: namespace} of the tf.contrib packages here; learn's Experiment drives the
    Estimators of estimator_classes (estimator.estimator_classes)."""
    return {
        "learn": learn.learn_module(estimator_classes),
        "lookup": lookup.lookup_module(),
        "predictor": predictor.predictor_module(),
        "graph_editor": graph_editor.graph_editor_module(),
        "seq2seq": seq2seq.seq2seq_module(),
    }
