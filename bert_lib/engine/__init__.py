"""The Estimator-shaped engine: train, evaluate and predict a model_fn, as tf.estimator did.

The engine's front door: what a script or a model_fn needs of it is here
(`from bert_lib import engine`; `engine.Estimator`, `engine.RunConfig`,
`engine.EstimatorSpec`, `engine.ModeKeys`, ...). estimator.py says how a
run goes; the other modules are its layers.
"""

from .estimator import (
    LEARNING_RATE_COLLECTION,
    Estimator,
    EstimatorSpec,
    ModeKeys,
    NanLossError,
    RunConfig,
    TrainingStopped,
    UsageError,
    WorkerLostError,
    checkpoint_step,
    first_predictions,
    newest_checkpoint,
    warm_start_from_checkpoint,
)

__all__ = [
    "Estimator",
    "EstimatorSpec",
    "LEARNING_RATE_COLLECTION",
    "ModeKeys",
    "NanLossError",
    "RunConfig",
    "TrainingStopped",
    "UsageError",
    "WorkerLostError",
    "checkpoint_step",
    "first_predictions",
    "newest_checkpoint",
    "warm_start_from_checkpoint",
]
