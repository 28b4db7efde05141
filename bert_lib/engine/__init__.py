"""The Estimator-shaped engine: train, evaluate and predict a model_fn, as tf.estimator did.

The engine's front door: what a script, a model_fn or the TF 1.x layer
needs of it is here (`from bert_lib import engine`; `engine.Estimator`,
`engine.RunConfig`, `engine.EstimatorSpec`, `engine.ModeKeys`,
`engine.EveryNSteps`, ...). estimator.py says how a run goes; the other
modules are its layers. Like tf.estimator, it knows nothing of the model
it runs: nothing here imports BERT's modules. Besides the Estimator, the
TF 1.x layer uses export_graph (saved_model.py: a SavedModel of a graph
and a checkpoint) and remove_orphan_input_positions (input_position.py).
"""

from .checkpoints import checkpoint_step, checkpoint_to_resume, newest_checkpoint
from .config import (
    EstimatorSpec,
    InputReadError,
    ModeKeys,
    NanLossError,
    RunConfig,
    TrainingStopped,
    UsageError,
    WorkerLostError,
)
from .estimator import Estimator, first_predictions
from .input_position import remove_orphans as remove_orphan_input_positions
from .saved_model import export_graph
from .training import EveryNSteps, StepContext

__all__ = [
    "Estimator",
    "EstimatorSpec",
    "EveryNSteps",
    "InputReadError",
    "ModeKeys",
    "NanLossError",
    "RunConfig",
    "StepContext",
    "TrainingStopped",
    "UsageError",
    "WorkerLostError",
    "checkpoint_step",
    "checkpoint_to_resume",
    "export_graph",
    "first_predictions",
    "newest_checkpoint",
    "remove_orphan_input_positions",
]
