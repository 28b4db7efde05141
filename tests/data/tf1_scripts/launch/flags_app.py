"""Flags as TF 1.x scripts define them, parsed by tf.app.run; prints what main got."""
import json

import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS

flags.DEFINE_string("output_dir", "out", "Where outputs go.")
flags.DEFINE_integer("steps", 10, "Training steps.")
flags.DEFINE_bool("do_train", False, "Whether to train.")


def main(argv):
  print(json.dumps({"argv": argv[1:], "output_dir": FLAGS.output_dir,
                    "steps": FLAGS.steps, "do_train": FLAGS.do_train}))


if __name__ == "__main__":
  tf.app.run()
