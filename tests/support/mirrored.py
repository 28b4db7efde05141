"""The one harness for tests under MirroredStrategy on one machine: the CPU split into
logical devices, a strategy over them, data that differs by replica, and each replica's
copy of a variable.

The split is process-wide and must happen before TensorFlow's runtime starts, so tests
that need it run in a process of their own (helpers.run_checks(replicas=2), the worker
scripts in this folder).
"""

import numpy as np
import tensorflow as tf


def split_cpu(replicas=2):
    """Makes the CPU `replicas` logical devices, /cpu:0 ... (before the runtime starts)."""
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * replicas
    )


def strategy(replicas=2):
    """A MirroredStrategy over the first `replicas` logical CPUs."""
    return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])


def by_replica(values):
    """A function that, called inside a replica function, gives that replica's entry of
    `values` (a list of {name: numpy array}, one per replica) as tensors."""
    stacked = {name: tf.constant(np.stack([v[name] for v in values])) for name in values[0]}

    def this_replica():
        replica = tf.distribute.get_replica_context().replica_id_in_sync_group
        return {name: tf.gather(tensor, replica) for name, tensor in stacked.items()}

    return this_replica


def copies(strategy, variable):
    """Each replica's copy of a mirrored variable."""
    return strategy.experimental_local_results(variable)
