"""run_pretraining.py in a process of its own, with a record of what each replica trained.

Usage: packed_pretraining_worker.py REPLICAS LOG ARGS...

Splits the CPU into REPLICAS logical devices (1: left alone), so that
--distribution_strategy=mirrored has that many replicas, then runs
run_pretraining.py's main on ARGS as the script does (its flags, one ERROR
line for a user error). The script's own model_fn_builder and
input_fn_builder are wrapped so that, at exit, LOG (an .npz) holds:

- "trained:R:NAME": the feature NAME of the batches replica R trained on,
  one per training step, stacked ([steps, batch, length]), and
  "trained:R:loss" the loss replica R computed at each step (before the
  step's update);
- "stream:NAME": the training batches the input_fn made on this worker,
  stacked in the order made (before the engine splits them over the
  replicas and workers, and with those made ahead of training).
"""

import process_setup  # noqa: F401 (quiet TensorFlow on CPU, the repo importable)

# isort: split
# Before TensorFlow, as in the script.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import atexit
import collections
import sys
import threading

import mirrored
import numpy as np
import tensorflow as tf
from absl import flags

import run_pretraining
from bert_lib import engine, script_flags

_LOCK = threading.Lock()
_TRAINED = collections.defaultdict(list)
_STREAM = []


def _save(path):
    arrays = {}
    for replica, steps in _TRAINED.items():
        for name in steps[0]:
            arrays[f"trained:{replica}:{name}"] = np.stack([step[name] for step in steps])
    for name in _STREAM[0] if _STREAM else ():
        arrays[f"stream:{name}"] = np.stack([batch[name] for batch in _STREAM])
    np.savez(path, **arrays)


def _logging_model_fn_builder(model_fn_builder):
    """model_fn_builder whose TRAIN steps record the replica's batch and loss."""

    def builder(*args, **kwargs):
        model_fn = model_fn_builder(*args, **kwargs)

        def logged_model_fn(features, labels, mode, params):
            spec = model_fn(features, labels, mode, params)
            if mode != engine.ModeKeys.TRAIN:
                return spec
            names = sorted(features)
            replica = tf.distribute.get_replica_context().replica_id_in_sync_group

            def record(replica, loss, *values):
                with _LOCK:
                    _TRAINED[int(replica)].append(
                        {"loss": np.float32(loss), **dict(zip(names, values))}
                    )
                return np.int32(0)

            inputs = [tf.convert_to_tensor(replica), spec.loss, *(features[n] for n in names)]
            done = tf.numpy_function(record, inputs, tf.int32, stateful=True)
            return spec._replace(train_op=tf.group(spec.train_op, done))

        return logged_model_fn

    return builder


def _logging_input_fn_builder(input_fn_builder):
    """input_fn_builder whose training input records each batch it makes."""

    def builder(*args, **kwargs):
        input_fn = input_fn_builder(*args, **kwargs)
        if not kwargs.get("is_training"):
            return input_fn

        def logged_input_fn(params):
            dataset = input_fn(params)

            def record_batch(batch):
                names = sorted(batch)

                def record(*values):
                    with _LOCK:
                        _STREAM.append(dict(zip(names, values)))
                    return np.int32(0)

                done = tf.numpy_function(record, [batch[n] for n in names], tf.int32)
                with tf.control_dependencies([done]):
                    return {name: tf.identity(value) for name, value in batch.items()}

            return dataset.map(record_batch)

        return logged_input_fn

    return builder


def main():
    replicas, log, *args = sys.argv[1:]
    if int(replicas) > 1:
        mirrored.split_cpu(int(replicas))
    run_pretraining.model_fn_builder = _logging_model_fn_builder(run_pretraining.model_fn_builder)
    run_pretraining.input_fn_builder = _logging_input_fn_builder(run_pretraining.input_fn_builder)
    atexit.register(_save, log)
    for name in ("input_file", "bert_config_file", "output_dir"):
        flags.mark_flag_as_required(name)
    script_flags.run_main(run_pretraining.main, argv=["run_pretraining.py", *args])


if __name__ == "__main__":
    main()
