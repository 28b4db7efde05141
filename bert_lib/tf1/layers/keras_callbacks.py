"""tf.keras.callbacks.TensorBoard of TF 1.15, on tf_keras's TF 1.x callback.

TF 1.15's callback profiled a batch (the second by default, profile_batch=2)
and, saving the profile, wrote into the log folder, once, an events file of
its own besides the callback's: `events.out.tfevents.<time>.<host>.profile-empty`,
holding the one record every events file starts with (its file version,
stamped with that whole second), which is how TensorBoard of its years found
the profile. tf_keras's callback profiles with today's profiler, which writes
the profile (`plugins/profile/<time>/<host>.xplane.pb`, the format today's
TensorBoard reads) but not that file: it is written here when the profile is.
"""

import importlib
import os
import socket
import time

import tensorflow as tf

PROFILE_EMPTY_SUFFIX = ".profile-empty"


def write_profile_empty_events_file(log_dir):
    """The `.profile-empty` events file in `log_dir`, unless one is there already: TF 1.15's
    name and its one record (today's events writer adds its own name to that record, so
    the record is written here)."""
    if any(name.endswith(PROFILE_EMPTY_SUFFIX) for name in tf.io.gfile.listdir(log_dir)):
        return
    now = int(time.time())
    name = f"events.out.tfevents.{now:010d}.{socket.gethostname()}{PROFILE_EMPTY_SUFFIX}"
    event = tf.compat.v1.Event(wall_time=now, file_version="brain.Event:2")
    with tf.io.TFRecordWriter(os.path.join(log_dir, name)) as writer:
        writer.write(event.SerializeToString())


def tensorboard_class():
    """tf.keras.callbacks.TensorBoard: tf_keras's TF 1.x callback writing, with the profile
    it takes, TF 1.15's `.profile-empty` events file."""
    callbacks_v1 = importlib.import_module("tf_keras.src.callbacks_v1")

    class TensorBoard(callbacks_v1.TensorBoard):
        __doc__ = callbacks_v1.TensorBoard.__doc__

        def _stop_profiler(self):
            profiled = self._profiler_started
            super()._stop_profiler()
            if profiled:
                write_profile_empty_events_file(self.log_dir)

    TensorBoard.__module__ = callbacks_v1.TensorBoard.__module__
    return TensorBoard
