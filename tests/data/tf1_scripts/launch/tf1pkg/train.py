import json
import os
import sys

import numpy as np
import tensorflow as tf

from . import helpers
from .helpers import total

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_integer("units", 3, "Units.")


def main(argv):
  with tf.Graph().as_default():
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.reduce_sum(x * FLAGS.units)
    with tf.Session(config=tf.ConfigProto()) as session:
      value = session.run(y, {x: np.ones([2, 2], dtype=np.float)})
  print(json.dumps({
      "name": __name__, "package": __package__,
      "argv0": os.path.basename(sys.argv[0]), "argv": argv[1:],
      "total": int(helpers.total([1, 2, 3])), "same": total is helpers.total,
      "value": float(value)}))


if __name__ == "__main__":
  tf.app.run()
