"""Prints what Keras layer packages of TF 1.x's years took from tensorflow.python.keras
(keras-bert and its layer packages with TF_KERAS=1): whether each is tf.keras's own."""
import tensorflow as tf
from tensorflow.python import keras
from tensorflow.python.keras import backend_config
from tensorflow.python.keras.optimizer_v2.optimizer_v2 import OptimizerV2

print("engine.Layer", keras.engine.Layer is tf.keras.layers.Layer)
print("engine.InputSpec", keras.engine.InputSpec is tf.keras.layers.InputSpec)
print("OptimizerV2", OptimizerV2 is tf.keras.optimizers.Optimizer)
print("epsilon", backend_config.epsilon(), "floatx", backend_config.floatx())
print("wrappers", type(tf.keras.wrappers).__name__ != "NoneType")
