"""tf.estimator, tf.contrib.tpu / tf.estimator.tpu and tf.estimator.export of TF 1.x.

TF 1.x code's Estimators and TPUEstimators, on this project's engine
(estimators.py), with what a model_fn returns checked as TF 1.15 checked it
(specs.py), TF 1.x's serving-input receivers and export (export.py), and
the input-position files of checkpoints a script deletes swept away when
the run ends (input_files.py). The module builders below are what the TF
1.x module (bert_lib/tf1/__init__.py) and tf.contrib (contrib/) put in
place, with the tf.estimator names other parts of the layer build on
(ModeKeys, RunConfig, EstimatorSpec, TrainSpec, EvalSpec,
train_and_evaluate; the Estimator classes to use are estimator_classes'
own, which train on the launcher's devices); the engine is reached through
its front door only.
"""

from .estimators import (
    ONE_DEVICE,
    Devices,
    EstimatorSpec,
    EvalSpec,
    ModeKeys,
    RunConfig,
    TrainSpec,
    contrib_estimator_module,
    estimator_classes,
    estimator_module,
    tpu_module,
    train_and_evaluate,
)

__all__ = [
    "ONE_DEVICE",
    "Devices",
    "EstimatorSpec",
    "EvalSpec",
    "ModeKeys",
    "RunConfig",
    "TrainSpec",
    "contrib_estimator_module",
    "estimator_classes",
    "estimator_module",
    "tpu_module",
    "train_and_evaluate",
]
