import numpy as np


def total(values):
  # numpy 1.x summed a generator with Python's sum
  return np.sum(v * 2 for v in values)
