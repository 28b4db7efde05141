"""tf.keras.callbacks.TensorBoard in a TF 1.x script, as Keras code of TF 1.15's years used
it: a compiled Sequential fit for two epochs of three batches with the callback's
defaults (profile_batch=2: the second batch is profiled). Writes results.json into
--output_dir: the files of the log folder (the times and host in the events files' names,
the profile's folder and trace file, left out) and, for each events file, its first
record and what its name says."""
import json
import os
import re
import socket

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "The log folder and results.json.")

layers = tf.keras.layers


def normalized(path):
  path = re.sub(r"events\.out\.tfevents\.\d+\.[^.]+", "events.out.tfevents.TIME.HOST", path)
  return re.sub(r"plugins/profile/[^/]+/[^/]+$", "plugins/profile/TIME/TRACE", path)


def events_file(path):
  name = os.path.basename(path)
  match = re.match(r"events\.out\.tfevents\.(\d+)\.([^.]+)(.*)$", name)
  records = list(tf.compat.v1.train.summary_iterator(path))
  first = records[0]
  return {
      "host_is_this_host": match.group(2) == socket.gethostname(),
      "suffix": match.group(3),
      "first_record": {
          "file_version": first.file_version,
          "wall_time_is_the_name's_time": first.wall_time == float(match.group(1)),
      },
      "records": len(records) if match.group(3) else None,
      "bytes": os.path.getsize(path) if match.group(3) else None,
  }


def main(_):
  log_dir = os.path.join(FLAGS.output_dir, "logs")
  model = tf.keras.Sequential([
      layers.Dense(4, activation="relu", input_shape=(3,)),
      layers.Dense(1),
  ])
  model.compile(optimizer="sgd", loss="mse")
  rng = np.random.RandomState(0)
  x = rng.uniform(-1, 1, (12, 3)).astype(np.float32)
  y = x.sum(axis=1, keepdims=True)
  model.fit(x, y, batch_size=4, epochs=2, verbose=0,
            callbacks=[tf.keras.callbacks.TensorBoard(log_dir=log_dir)])
  files = {}
  for directory, _, names in os.walk(log_dir):
    for name in names:
      path = os.path.join(directory, name)
      relative = os.path.relpath(path, log_dir)
      files[normalized(relative)] = (
          events_file(path) if name.startswith("events.out.tfevents") else None)
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump({"files": files}, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
