# coding=utf-8
"""tf.image.per_image_standardization of TF 1.x on images of each dtype (uint8, as
decode_image gives them, float32, float16, float64; one image and a batch; a
uniform image), and facenet's input pipeline, a tf.cond between the standardization
of a uint8 image and its float32 cast. Writes the dtypes and values, and the error
the tf.cond raised, to --output_dir/results.json.
"""

import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where results.json goes.")


def main(_):
  rng = np.random.RandomState(5)
  pixels = rng.randint(0, 256, (2, 4, 5, 3)).astype(np.uint8)
  inputs = {
      "uint8_image": tf.constant(pixels[0]),
      "uint8_batch": tf.constant(pixels),
      "uniform_uint8": tf.constant(np.full((3, 3, 1), 7, np.uint8)),
      "float32_image": tf.constant(pixels[0].astype(np.float32)),
      "float16_image": tf.constant(pixels[1].astype(np.float16) / 10),
      "float64_image": tf.constant(pixels[1].astype(np.float64) / 255),
  }
  outputs = {name: tf.image.per_image_standardization(image)
             for name, image in inputs.items()}
  flag = tf.placeholder(tf.bool, [])
  image = inputs["uint8_image"]
  try:
    tf.cond(flag, lambda: (tf.cast(image, tf.float32) - 127.5) / 128.0,
            lambda: tf.image.per_image_standardization(image))
    refused = None
  except ValueError as e:
    refused = str(e)
  with tf.Session() as session:
    values = session.run(outputs)
  results = {
      name: {"dtype": outputs[name].dtype.name,
             "values": values[name].astype(np.float64).ravel().tolist()}
      for name in sorted(outputs)}
  results["cond_refused"] = refused
  tf.gfile.MakeDirs(FLAGS.output_dir)
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
