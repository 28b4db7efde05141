"""Exports a compiled tf.keras model with tf.keras.experimental.export_saved_model, as Keras
code of TF 1.15's years did (cloudml-samples' census/tf-keras), and saves it as h5: writes
into --output_dir/results.json the export's files, its variables' names and shapes (the
object-graph names of Keras's TF format), its graphs' tags and signature keys, what its
serving signature and load_from_saved_model predict, and the model's own predictions; the
h5 file is --output_dir/model.h5. Weights are set from a seeded numpy generator and trained
one step on fixed data, so every number is reproducible."""
import json
import os

import numpy as np
import tensorflow as tf

flags = tf.flags
FLAGS = flags.FLAGS
flags.DEFINE_string("output_dir", None, "Where results.json, export/ and model.h5 go.")


def _model(rng):
  model = tf.keras.Sequential()
  model.add(tf.keras.layers.Dense(3, activation=tf.nn.relu, input_shape=(4,)))
  model.add(tf.keras.layers.Dense(1, activation=tf.nn.sigmoid))
  model.compile(loss="binary_crossentropy",
                optimizer=tf.keras.optimizers.RMSprop(lr=0.01),
                metrics=["accuracy"])
  model.set_weights([rng.normal(0, 0.5, w.shape).astype(np.float32)
                     for w in model.get_weights()])
  return model


def main(_):
  tf.gfile.MakeDirs(FLAGS.output_dir)
  rng = np.random.RandomState(5)
  x = rng.normal(0, 1, (8, 4)).astype(np.float32)
  y = (x[:, :1] > 0).astype(np.float32)
  model = _model(rng)
  model.fit(x, y, batch_size=8, epochs=1, verbose=0)
  export = os.path.join(FLAGS.output_dir, "export")
  tf.keras.experimental.export_saved_model(model, export)
  model.save(os.path.join(FLAGS.output_dir, "model.h5"))
  results = {"predictions": model.predict(x).tolist()}
  results["files"] = sorted(
      os.path.relpath(os.path.join(d, n), export)
      for d, _, names in os.walk(export) for n in names)
  results["variables"] = sorted(
      [name, shape] for name, shape in
      tf.train.list_variables(os.path.join(export, "variables", "variables")))
  graphs = []
  for tags in (["serve"], ["train"], ["eval"]):
    with tf.Graph().as_default(), tf.Session() as session:
      meta = tf.saved_model.loader.load(session, tags, export)
      graphs.append([tags, sorted(meta.signature_def)])
      if tags == ["serve"]:
        signature = meta.signature_def["serving_default"]
        feed = {signature.inputs[k].name: x for k in signature.inputs}
        fetch = [signature.outputs[k].name for k in sorted(signature.outputs)]
        results["served"] = session.run(fetch, feed)[0].tolist()
  results["graphs"] = graphs
  with tf.Graph().as_default(), tf.Session().as_default():
    loaded = tf.keras.experimental.load_from_saved_model(export)
    results["loaded"] = loaded.predict(x).tolist()
  with open(os.path.join(FLAGS.output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1, sort_keys=True)


if __name__ == "__main__":
  flags.mark_flag_as_required("output_dir")
  tf.app.run()
