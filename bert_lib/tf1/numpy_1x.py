"""numpy as TF 1.x code knew it: today's numpy, with what numpy 1.x had and later lost.

Code written for TensorFlow 1.15 ran on numpy 1.x (1.16-1.18), and used
names numpy has since removed (`np.int`, `np.float`, `np.bool`,
`np.object`, `np.asscalar`, `np.alen`, `np.float_`, `np.NaN`, ...) or
calls it now refuses (`np.sum` of a generator, which numpy 1.x summed with
Python's sum, warning only; `np.array` of lists of different lengths, which
numpy 1.x made an object array of). The import hook (machinery/import_hook.py)
gives user code - the code that gets the TF 1.x `tensorflow` - this
module for `import numpy`: every name is numpy's own, but for those put
back here, each as numpy 1.18 had it. numpy itself is not changed: the
project's own code and every other package see today's numpy.
"""

import builtins
import types
import warnings

import numpy

# Removed since numpy 1.18, and what each was there: the Python type of the same name
# for the aliases numpy 1.20 deprecated; numpy's own for the rest.
_RENAMED = {
    "int": builtins.int,
    "float": builtins.float,
    "bool": builtins.bool,
    "object": builtins.object,
    "str": builtins.str,
    "long": builtins.int,
    "unicode": builtins.str,
    "complex": builtins.complex,
    "int0": numpy.intp,
    "uint0": numpy.uintp,
    "bool8": numpy.bool_,
    "object0": numpy.object_,
    "str0": numpy.str_,
    "bytes0": numpy.bytes_,
    "void0": numpy.void,
    "float_": numpy.float64,
    "complex_": numpy.complex128,
    "unicode_": numpy.str_,
    "string_": numpy.bytes_,
    "cfloat": numpy.complex128,
    "longfloat": numpy.longdouble,
    "singlecomplex": numpy.complex64,
    "clongfloat": numpy.clongdouble,
    "longcomplex": numpy.clongdouble,
    "Inf": numpy.inf,
    "Infinity": numpy.inf,
    "PINF": numpy.inf,
    "NINF": -numpy.inf,
    "NaN": numpy.nan,
    "NAN": numpy.nan,
    "PZERO": 0.0,
    "NZERO": -0.0,
    "product": numpy.prod,
    "cumproduct": numpy.cumprod,
    "sometrue": numpy.any,
    "alltrue": numpy.all,
    "round_": numpy.round,
    "mat": numpy.asmatrix,
    "warnings": warnings,
}


def asscalar(a):
    """np.asscalar of numpy 1.x: the one element of an array as a Python scalar."""
    return a.item()


def alen(a):
    """np.alen of numpy 1.x: the length of the first dimension (1 for a scalar)."""
    try:
        return len(a)
    except TypeError:
        return len(numpy.array(a, ndmin=1))


def msort(a):
    """np.msort of numpy 1.x: a copy sorted along the first axis."""
    return numpy.sort(a, axis=0)


def in1d(ar1, ar2, assume_unique=False, invert=False):
    """np.in1d of numpy 1.x: for each element of ar1, flattened, whether it is in ar2."""
    return numpy.isin(numpy.asarray(ar1).ravel(), ar2, assume_unique=assume_unique, invert=invert)


def asfarray(a, dtype=numpy.float64):
    """np.asfarray of numpy 1.x: an array of a floating type (float64 unless `dtype` is one)."""
    if not numpy.issubdtype(dtype, numpy.inexact):
        dtype = numpy.float64
    return numpy.asarray(a, dtype=dtype)


def trapz(y, x=None, dx=1.0, axis=-1):
    """np.trapz of numpy 1.x: the trapezoidal rule (numpy.trapezoid today)."""
    return numpy.trapezoid(y, x=x, dx=dx, axis=axis)


def sum(a, axis=None, dtype=None, out=None, *args, **kwargs):  # noqa: A001 (numpy's name)
    """np.sum, and for a generator what numpy 1.x gave: Python's sum of it, with a warning.

    numpy 1.15-1.x summed a generator with the builtin sum (ignoring axis
    and dtype, filling `out` if given) and warned that this was deprecated;
    numpy 2 refuses it.
    """
    if isinstance(a, types.GeneratorType):
        warnings.warn(
            "Calling np.sum(generator) is deprecated, and in the future will give a different "
            "result. Use np.sum(np.fromiter(generator)) or the python sum builtin instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        result = builtins.sum(a)
        if out is not None:
            out[...] = result
            return out
        return result
    return numpy.sum(a, axis, dtype, out, *args, **kwargs)


_RAGGED_WARNING = (
    "Creating an ndarray from ragged nested sequences (which is a list-or-tuple of "
    "lists-or-tuples-or ndarrays with different lengths or shapes) is deprecated. If you "
    "meant to do this, you must specify 'dtype=object' when creating the ndarray"
)


def _ragged(error, dtype):
    return dtype is None and "inhomogeneous" in str(error)


def _object_arrays_for_ragged(make):
    """numpy's `make` (np.array, np.asarray), and for ragged nested sequences what numpy
    1.x gave: an object array.

    numpy up to 1.23 made an array of dtype object from lists of different
    lengths (`np.array([[1, 2], [3]])`, a data helper's list of (ids, label)
    pairs), of the shape its consistent leading dimensions have (numpy
    1.19-1.23 warned); numpy 1.24 and later raise ValueError ("inhomogeneous
    shape") unless dtype=object is given, which is what this passes then.
    """

    def numpy_1x(a, dtype=None, *args, **kwargs):
        try:
            return make(a, dtype, *args, **kwargs)
        except ValueError as error:
            if not _ragged(error, dtype):
                raise
        warnings.warn(_RAGGED_WARNING, numpy.exceptions.VisibleDeprecationWarning, stacklevel=2)
        return make(a, numpy.object_, *args, **kwargs)

    numpy_1x.__name__ = make.__name__
    numpy_1x.__doc__ = _object_arrays_for_ragged.__doc__.replace("`make`", make.__name__)
    return numpy_1x


_OWN = {
    **_RENAMED,
    "array": _object_arrays_for_ragged(numpy.array),
    "asarray": _object_arrays_for_ragged(numpy.asarray),
    "asscalar": asscalar,
    "alen": alen,
    "msort": msort,
    "in1d": in1d,
    "asfarray": asfarray,
    "trapz": trapz,
    "sum": sum,
}


class Numpy1x(types.ModuleType):
    """The `numpy` module user code gets: numpy's names, and numpy 1.x's where numpy lost
    one (a name today's numpy still has keeps today's meaning, but for np.sum, np.bool and
    np.long, whose numpy 1.x meaning is put back)."""

    def __init__(self):
        super().__init__("numpy", numpy.__doc__)
        for name in ("__file__", "__path__", "__version__", "__spec__", "__loader__"):
            if hasattr(numpy, name):
                self.__dict__[name] = getattr(numpy, name)
        self.__dict__.update(_OWN)

    def __getattr__(self, name):
        return getattr(numpy, name)

    def __dir__(self):
        return sorted(set(dir(numpy)) | set(_OWN))

    def __repr__(self):
        return f"<numpy {numpy.__version__} with numpy 1.x's removed names (TF 1.x code)>"


def numpy_module():
    """A new numpy module for TF 1.x code (import_hook.UserImport holds one)."""
    return Numpy1x()
