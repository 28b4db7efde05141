"""What numpy 1.x code of TF 1.15's years used and numpy has since removed or refused;
prints each case's result as JSON."""
import json
import random
import warnings

import numpy as np

results = {}
for name in ("int", "float", "bool", "object", "str", "long", "unicode", "complex"):
  results["alias " + name] = getattr(np, name).__name__
for name in ("int0", "uint0", "bool8", "object0", "str0", "bytes0", "float_", "complex_",
             "unicode_", "string_", "cfloat", "longfloat", "singlecomplex", "clongfloat",
             "longcomplex", "void0"):
  results["type " + name] = np.dtype(getattr(np, name)).kind + str(np.dtype(getattr(np, name)).itemsize)
for name in ("Inf", "Infinity", "PINF", "NINF", "NaN", "NAN", "PZERO", "NZERO"):
  results["constant " + name] = repr(float(getattr(np, name)))
results["array of np.int"] = np.array([1.7, 2.2]).astype(np.int).tolist()
results["dtype np.float"] = str(np.zeros(2, dtype=np.float).dtype)
results["dtype np.bool"] = str(np.array([0, 2], dtype=np.bool).dtype)
results["dtype np.object"] = str(np.array([1, "a"], dtype=np.object).dtype)
results["isinstance bool"] = isinstance(True, np.bool)
results["product"] = int(np.product([1, 2, 3, 4]))
results["cumproduct"] = np.cumproduct([1, 2, 3]).tolist()
results["sometrue"] = bool(np.sometrue([0, 0, 1]))
results["alltrue"] = bool(np.alltrue([1, 0, 1]))
results["round_"] = float(np.round_(2.675, 2))
results["msort"] = np.msort(np.array([[3, 1], [1, 2], [2, 0]])).tolist()
results["in1d"] = np.in1d(np.array([[1, 2], [3, 4]]), [2, 3]).tolist()
results["in1d invert"] = np.in1d([1, 2, 3], [2], invert=True).tolist()
results["asfarray"] = str(np.asfarray([1, 2]).dtype)
results["asfarray int"] = str(np.asfarray([1, 2], dtype=np.int32).dtype)
results["asfarray float32"] = str(np.asfarray([1, 2], dtype=np.float32).dtype)
results["trapz"] = float(np.trapz([1.0, 2.0, 4.0], dx=0.5))
results["asscalar"] = [np.asscalar(np.array([3.5])), type(np.asscalar(np.float32(2.5))).__name__]
results["alen"] = [np.alen([[1, 2], [3, 4], [5, 6]]), np.alen(np.zeros((4, 2))), np.alen(7)]
results["mat"] = list(np.mat([[1, 2], [3, 4]]).shape)
results["warnings module"] = np.warnings.__name__
with warnings.catch_warnings(record=True) as caught:
  warnings.simplefilter("always")
  results["sum generator"] = int(np.sum(i * i for i in range(5)))
  out = np.zeros(())
  back = np.sum((i for i in range(4)), axis=0, out=out)
  results["sum generator out"] = [float(out), back is out]
results["sum generator warning"] = sorted({w.category.__name__ for w in caught})
results["sum list"] = int(np.sum([[1, 2], [3, 4]]))
results["sum axis"] = np.sum([[1, 2], [3, 4]], axis=0).tolist()
results["max generator"] = type(np.max(i for i in range(3))).__name__
# numpy booleans as integers: numpy 1.x took them (with a DeprecationWarning), numpy 2 refuses.
flag, no = np.array([3]) > 0, np.array([3]) < 0
is_next, masked = flag[0], no[0]
with warnings.catch_warnings(record=True) as caught:
  warnings.simplefilter("always")
  results["bool range"] = list(range(is_next + 0)) + list(range(is_next))
  results["bool list index"] = [["no", "yes"][is_next], ("a", "b")[masked], "xy"[is_next]]
  results["bool repeat"] = [0] * is_next + [1] * masked
  results["bool slice"] = [1, 2, 3][masked:is_next]
  results["bool pop"] = [7, 8].pop(is_next)
  results["bool sample"] = len(random.Random(0).sample([4, 5, 6], is_next))
  results["bool hex"] = [hex(is_next), list(bytes(masked))]
  results["bool round"] = round(2.675, masked)
results["bool warnings"] = sorted({w.category.__name__ for w in caught})
results["bool array index"] = list(np.arange(3)[is_next].shape)
results["bool int"] = [int(is_next), int(is_next + 1), int(is_next * 3)]
try:
  np.zeros(is_next)
  results["bool zeros"] = "made"
except TypeError:
  results["bool zeros"] = "TypeError"
# Lists of different lengths: numpy 1.x made an object array (numpy 1.24+ raises).
ragged = np.array([[1, 2], [3]])
results["ragged lists"] = [ragged.dtype.kind, list(ragged.shape), [list(x) for x in ragged]]
pairs = np.array([(np.arange(3), [0, 1]), (np.arange(2), [1, 0])])
results["ragged pairs"] = [pairs.dtype.kind, list(pairs.shape), pairs[1, 0].tolist()]
nested = np.asarray([[[1, 2], [3]], [[4], [5]]])
results["ragged asarray"] = [nested.dtype.kind, list(nested.shape)]
results["ragged typed"] = str(np.array([[1, 2], [3]], dtype=object).shape)
try:
  np.array([np.zeros((2, 3)), np.zeros((2, 4))])
  results["ragged broadcast"] = "made"
except ValueError:
  results["ragged broadcast"] = "ValueError"
print(json.dumps(results, sort_keys=True))
