"""TensorFlow's module paths as TF 1.x code imported them, for the TF 1.x API module.

Research code derived from BERT reaches past the public API:

- `from tensorflow.python.ops import variable_scope, array_ops, math_ops,
  init_ops, metrics_impl` (a widely copied metrics module builds streaming
  precision / recall / F1 on metrics_impl._streaming_confusion_matrix and
  variable_scope.variable), `tensorflow.python.framework.ops`,
  `tensorflow.python.util.nest`, `tensorflow.python.ops.rnn_cell_impl`...
  In user code these are TensorFlow 2's own modules with what TF 1.15's
  had and TensorFlow 2 dropped or moved put back (python_module):
  variable_scope.variable, array_ops.stack, control_flow_ops.cond, ops.Tensor,
  nest.is_sequence, ..., and the modules TensorFlow 2 no longer has
  (tensorflow.python.estimator, the TPU estimator's) are this layer's own;
  the RNN and tf.layers modules are this layer's too (rnn/, layers/).
- `from tensorflow.contrib.layers.python.layers import initializers`,
  `tensorflow.contrib.rnn.python.ops.rnn_cell`, ...: the module paths under
  a tf.contrib package of TF 1.15 resolve to that package as provided here
  (attach_module_paths), so what the package provides is found under any of
  its modules and what it does not is refused by its full name.
"""

import importlib
import types

import tensorflow as tf

from .machinery.namespaces import Namespace, UnsupportedAPIError, unsupported

_V1 = tf.compat.v1


def _tensor_shape_helpers():
    return {
        "scalar": lambda: tf.TensorShape([]),
        "vector": lambda length: tf.TensorShape([length]),
        "matrix": lambda rows, cols: tf.TensorShape([rows, cols]),
    }


def _resource_variable_switches():
    from tensorflow.python.ops import resource_variables_toggle as toggle

    return {
        "enable_resource_variables": toggle.enable_resource_variables,
        "disable_resource_variables": toggle.disable_resource_variables,
        "resource_variables_enabled": toggle.resource_variables_enabled,
    }


def _framework_ops():
    from tensorflow.python.framework import indexed_slices

    return {
        "Tensor": tf.Tensor,
        "IndexedSlices": tf.IndexedSlices,
        "IndexedSlicesValue": indexed_slices.IndexedSlicesValue,
        "convert_to_tensor_or_indexed_slices": _V1.convert_to_tensor_or_indexed_slices,
        "register_tensor_conversion_function": tf.register_tensor_conversion_function,
    }


def _checkpoint_management():
    return {
        name: getattr(_V1.train, name)
        for name in (
            "CheckpointState",
            "checkpoint_exists",
            "generate_checkpoint_state_proto",
            "get_checkpoint_mtimes",
            "get_checkpoint_state",
            "latest_checkpoint",
            "remove_checkpoint",
            "update_checkpoint_state",
            "CheckpointManager",
        )
        if hasattr(_V1.train, name)
    }


def _tf1_names(path):
    """What TF 1.15's tensorflow.python.<path> had that TensorFlow 2's lacks or changed."""
    from . import control_flow as tf1_control_flow
    from . import rnn as tf1_rnn

    rnn_cells = dict(tf1_rnn.rnn_cell_module().__dict__)
    rnn_cells = {k: v for k, v in rnn_cells.items() if not k.startswith("_")}
    loops = {k: v for k, v in tf1_rnn.nn_names().items() if k != "rnn_cell"}
    table = {
        "ops.variable_scope": lambda: {"variable": _V1.Variable, **_resource_variable_switches()},
        "ops.variables": lambda: {
            "VariableV1": _V1.Variable,
            "RefVariable": _V1.Variable,
            "is_variable_initialized": _V1.is_variable_initialized,
        },
        "ops.array_ops": lambda: {"stack": tf.stack, "unstack": tf.unstack},
        "ops.standard_ops": lambda: {"stack": tf.stack, "unstack": tf.unstack},
        "ops.control_flow_ops": lambda: {
            "cond": tf1_control_flow.cond,
            "while_loop": _V1.while_loop,
            "case": _V1.case,
            "switch_case": tf.switch_case,
            "Assert": _V1.Assert,
        },
        "ops.random_ops": lambda: {"random_crop": _V1.random_crop},
        "ops.nn": lambda: tf1_rnn.nn_names(),
        "ops.rnn": lambda: loops,
        "ops.rnn_cell": lambda: rnn_cells,
        "ops.rnn_cell_impl": lambda: rnn_cells,
        "framework.ops": _framework_ops,
        "framework.tensor_shape": _tensor_shape_helpers,
        "util.nest": lambda: {"is_sequence": tf.nest.is_nested},
        "framework.graph_util": lambda: {
            name: getattr(_V1.graph_util, name)
            for name in dir(_V1.graph_util)
            if not name.startswith("_")
        },
        "training.checkpoint_management": _checkpoint_management,
    }
    names = table.get(path)
    return names() if names is not None else {}


# Modules of TF 1.15 that TensorFlow 2 no longer has, given whole by this layer
# (tensorflow.python.<key>), filled in by python_module from the TF 1.x module.
def _own_modules(tf1):
    estimator = tf1.estimator
    tpu = tf1.contrib.tpu
    estimator_names = {
        name: getattr(estimator, name)
        for name in (
            "Estimator",
            "EstimatorSpec",
            "ModeKeys",
            "RunConfig",
            "TrainSpec",
            "EvalSpec",
            "train_and_evaluate",
        )
    }
    tpu_names = {
        name: getattr(tpu, name)
        for name in (
            "TPUEstimator",
            "TPUEstimatorSpec",
            "RunConfig",
            "TPUConfig",
            "InputPipelineConfig",
        )
    }
    return {
        "estimator": estimator_names,
        "estimator.estimator": estimator_names,
        "estimator.model_fn": estimator_names,
        "estimator.run_config": estimator_names,
        "estimator.training": estimator_names,
        "estimator.tpu": tpu_names,
        "estimator.tpu.tpu_estimator": tpu_names,
        "estimator.tpu.tpu_config": tpu_names,
        "tpu.tpu_estimator": tpu_names,
        "tpu.tpu_config": tpu_names,
    }


_MISSING = object()


class PythonModule(Namespace):
    """tensorflow.python.<path> in user code: TF 1.15's names first, then TensorFlow 2's.

    Submodules are found whether or not TensorFlow has imported them yet, and
    wrapped alike.
    """

    def __init__(self, path, real, own, context):
        api = "tensorflow.python" + (f".{path}" if path else "")
        super().__init__(api, real, own)
        self.__dict__["_tf1_path"] = path
        self.__dict__["_tf1_context"] = context

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        path = self.__dict__["_tf1_path"]
        child = f"{path}.{name}" if path else name
        context = self.__dict__["_tf1_context"]
        if child in context["aliases"]:
            value = context["aliases"][child]
            self.__dict__[name] = value
            return value
        if child in context["own_modules"]:
            value = PythonModule(child, None, context["own_modules"][child], context)
            self.__dict__[name] = value
            return value
        real = self.__dict__["_tf1_base"]
        value = getattr(real, name, _MISSING) if real is not None else _MISSING
        if value is _MISSING and real is not None:
            try:
                value = importlib.import_module(f"{real.__name__}.{name}")
            except ImportError:
                pass
        if value is _MISSING:
            raise unsupported(f"{self.__dict__['_tf1_api']}.{name}")
        if isinstance(value, types.ModuleType):
            value = PythonModule(child, value, context["names"](child), context)
        self.__dict__[name] = value
        return value


# tensorflow.python.keras.engine of TF 1.15: where each of its names is in tf.keras.
_KERAS_ENGINE = {
    "Layer": "layers",
    "InputLayer": "layers",
    "InputSpec": "layers",
    "Input": None,
    "get_source_inputs": "utils",
}


class KerasEngine(Namespace):
    """tensorflow.python.keras.engine, which Keras layer packages of TF 1.x's years took their
    base class from (keras-pos-embd's `keras.engine.Layer` where TF_KERAS is set): TF 1.15's
    five names, those of tf.keras (Keras 2's where tf_keras is installed)."""

    def __init__(self, keras):
        super().__init__("tensorflow.python.keras.engine")
        self.__dict__["_tf1_keras"] = keras

    def __getattr__(self, name):
        if name not in _KERAS_ENGINE:
            return super().__getattr__(name)
        keras = self.__dict__["_tf1_keras"]
        where = _KERAS_ENGINE[name]
        value = getattr(getattr(keras, where) if where else keras, name)
        self.__dict__[name] = value
        return value


def python_module(tf1):
    """`tensorflow.python` for user code; `tf1` is the TF 1.x module (for its estimator)."""
    import tensorflow.python as real

    # tensorflow.python.layers.core.Dense and the like are tf.layers; tensorflow.python.keras
    # is tf.keras (its layers, initializers, ...).
    layer_modules = {
        (name,) for name in ("base", "core", "layers", "normalization", "convolutional", "pooling")
    }
    aliases = {
        "layers": ModulePath("tensorflow.python.layers", tf1.layers, layer_modules),
        "keras": Namespace(
            "tensorflow.python.keras",
            tf1.keras,
            {
                "engine": KerasEngine(tf1.keras),
                # keras-bert's AdamWarmup subclasses optimizer_v2.OptimizerV2 (TF 1.15's
                # tf.keras.optimizers.Optimizer) and reads backend_config.epsilon().
                "optimizer_v2": Namespace(
                    "tensorflow.python.keras.optimizer_v2",
                    None,
                    {
                        "optimizer_v2": Namespace(
                            "tensorflow.python.keras.optimizer_v2.optimizer_v2",
                            None,
                            {"OptimizerV2": tf1.keras.optimizers.Optimizer},
                        )
                    },
                ),
                "backend_config": tf1.keras.backend,
            },
        ),
    }
    context = {
        "aliases": aliases,
        "own_modules": _own_modules(tf1),
        "names": _tf1_names,
    }
    return PythonModule("", real, {}, context)


# ---------------------------------------------------------------------------
# tensorflow.contrib.<package>.python.<module>: TF 1.15's module paths

_CONTRIB_MODULE_PATHS = {
    "layers": """layers.embedding_ops layers.encoders layers.feature_column
        layers.feature_column_ops layers.initializers layers.layers layers.normalization
        layers.optimizers layers.regularizers layers.rev_block_lib layers.summaries
        layers.target_column layers.utils ops.bucketization_op ops.sparse_feature_cross_op
        ops.sparse_ops""",
    "rnn": "ops.core_rnn_cell ops.fused_rnn_cell ops.gru_ops ops.lstm_ops ops.rnn ops.rnn_cell",
    "crf": "ops.crf",
    "tpu": """ops.tpu_ops tpu.async_checkpoint tpu.bfloat16 tpu.datasets tpu.device_assignment
        tpu.error_handling tpu.feature_column tpu.functional tpu.session_support tpu.topology
        tpu.tpu tpu.tpu_config tpu.tpu_context tpu.tpu_embedding tpu.tpu_estimator
        tpu.tpu_feed tpu.tpu_function tpu.tpu_optimizer tpu.tpu_sharding
        tpu.tpu_system_metadata tpu.training_loop tpu.util""",
    "metrics": """metrics.classification ops.confusion_matrix_ops ops.histogram_ops
        ops.metric_ops ops.set_ops""",
    "data": """ops.batching ops.counter ops.enumerate_ops ops.error_ops ops.get_single_element
        ops.grouping ops.interleave_ops ops.iterator_ops ops.parsing_ops ops.prefetching_ops
        ops.random_ops ops.readers ops.resampling ops.scan_ops ops.shuffle_ops ops.sliding
        ops.threadpool ops.unique ops.writers""",
    "cluster_resolver": """training.cluster_resolver training.gce_cluster_resolver
        training.kubernetes_cluster_resolver training.slurm_cluster_resolver
        training.tfconfig_cluster_resolver training.tpu_cluster_resolver""",
    "framework": """framework.checkpoint_utils framework.tensor_util ops.arg_scope ops.ops
        ops.variables""",
    "training": "training.hparam training.training training.evaluation",
    "eager": "tfe",
    "slim": "slim",
    "estimator": """estimator.early_stopping estimator.export estimator.exporter
        estimator.extenders estimator.head estimator.hooks estimator.multi_head
        estimator.replicate_model_fn estimator.saved_model_estimator""",
}


class ModulePath(Namespace):
    """A module path under a tf.contrib package (`python.layers.initializers`): further
    module names of TF 1.15 lead deeper, any other name is the package's."""

    def __init__(self, api, package, paths):
        super().__init__(api)
        self.__dict__["_tf1_package"] = package
        self.__dict__["_tf1_paths"] = paths

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        api = self.__dict__["_tf1_api"]
        deeper = {path[1:] for path in self.__dict__["_tf1_paths"] if path[0] == name}
        deeper.discard(())
        if deeper or any(path == (name,) for path in self.__dict__["_tf1_paths"]):
            value = ModulePath(f"{api}.{name}", self.__dict__["_tf1_package"], deeper)
        else:
            try:
                value = getattr(self.__dict__["_tf1_package"], name)
            except UnsupportedAPIError:
                raise unsupported(f"{api}.{name}") from None
        self.__dict__[name] = value
        return value


def attach_module_paths(contrib_modules):
    """Gives each tf.contrib package of `contrib_modules` its TF 1.15 module paths."""
    for package, text in _CONTRIB_MODULE_PATHS.items():
        namespace = contrib_modules.get(package)
        if namespace is None:
            continue
        paths = {tuple(path.split(".")) for path in text.split()}
        namespace.__dict__["python"] = ModulePath(f"tf.contrib.{package}.python", namespace, paths)
    return contrib_modules
