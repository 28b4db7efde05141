"""tf.keras's functional API in a TF 1.x script, as Keras code of TF 1.15's years wrote it:
a tf.layers layer first (the Keras layers then count on from it), Input, Embedding,
GlobalAveragePooling1D and Dense layers joined into a Model, compile / fit / evaluate /
predict, save_weights and load_weights into a second model. The weights are set from
seeded numpy values, so both TensorFlows start alike; prints the variable names, the
losses, the evaluation, the predictions and the checkpoint's names as JSON."""
import json
import os
import sys

import numpy as np
import tensorflow as tf

keras = tf.keras


def build():
  tokens = keras.Input(shape=(5,), dtype="int32", name="tokens")
  embedded = keras.layers.Embedding(12, 4)(tokens)
  pooled = keras.layers.GlobalAveragePooling1D()(embedded)
  hidden = keras.layers.Dense(6, activation="tanh")(pooled)
  output = keras.layers.Dense(3, activation="softmax")(hidden)
  return keras.Model(inputs=tokens, outputs=output)


def main(output_dir):
  tf.layers.dense(tf.zeros([1, 2]), 2)
  model = build()
  rng = np.random.RandomState(5)
  model.set_weights([rng.uniform(-0.5, 0.5, w.shape).astype(np.float32)
                     for w in model.get_weights()])
  model.compile(keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy",
                metrics=["accuracy"])
  x = np.random.RandomState(6).randint(0, 12, (16, 5)).astype(np.int32)
  y = (x.sum(axis=1) % 3).astype(np.int32)
  history = model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
  evaluated = model.evaluate(x, y, batch_size=8, verbose=0)
  predicted = model.predict(x[:4])
  path = os.path.join(output_dir, "weights", "ckpt")
  model.save_weights(path)
  again = build()
  again.load_weights(path)
  results = {
      "names": [w.name for w in model.weights],
      "globals": [v.op.name for v in tf.global_variables()
                  if not v.op.name.startswith(("training", "SGD", "Adam"))],
      "losses": [float(v) for v in history.history["loss"]],
      "evaluated": [float(v) for v in evaluated],
      "predicted": predicted.tolist(),
      "reloaded": again.predict(x[:4]).tolist(),
      "checkpoint": sorted(name for name, _ in tf.train.list_variables(path)
                           if "optimizer" not in name),
  }
  with open(os.path.join(output_dir, "results.json"), "w") as f:
    json.dump(results, f, indent=1)


if __name__ == "__main__":
  main(sys.argv[1])
