"""numba as TF 1.x code knew it: today's numba, with `@jit` falling back to object mode.

TF 1.x code of 2017-2020 ran on numba 0.56 and before (numba 0.56 was the last
for Python 3.7). There, `@numba.jit` without `nopython=True` compiled in
nopython mode where it could and otherwise fell back to object mode, with a
warning, and the function ran; numba 0.59 made nopython mode the default of
`@jit` and took the fall-back away, so the same function now stops the run
with a TypingError. A researcher running such code expects it to run, with
the numbers it gave: the F1 helper of a text classifier (brightmart's TextCNN,
`p, r = np.array([p, r]) / num_classes` over counters that start as ints)
compiled in object mode under numba 0.56.

The import hook (machinery/import_hook.py) gives user code the module
numba_module() makes for `import numba`: numba's own names, but for `jit`,
which compiles as numba 0.56 did. `@jit(nopython=True)`, `@njit`,
`@jit(forceobj=True)` and every other name are numba's own; the project's
own code and every other package see numba unchanged. teach_numba() makes
numba type the numpy module of TF 1.x code (numpy_1x.py) as numpy itself.
"""

import functools
import types
import warnings

from .numpy_1x import Numpy1x

_FALLBACK_WARNING = (
    "\nCompilation is falling back to object mode WITH looplifting enabled because Function "
    '"{name}" failed type inference due to: {reason}'
)
_DEPRECATION_WARNING = (
    "\nFall-back from the nopython compilation path to the object mode compilation path "
    "has been detected, this is deprecated behaviour."
)


class FallbackDispatcher:
    """What `@jit` of numba 0.56 made of a function it could not always compile in
    nopython mode: a nopython dispatcher, and for the argument types (or the explicit
    signature) numba could not compile, the function in object mode, with numba 0.56's
    two warnings the first time. A failure at run time is the function's own, raised as
    it is."""

    def __init__(self, numba, py_func, signature, options):
        self._numba = numba
        self.py_func = py_func
        self._options = options
        self._object_mode = None
        self._object_types = set()  # the argument types compiled in object mode
        functools.update_wrapper(self, py_func)
        try:
            self._nopython = numba.jit(signature, nopython=True, **options)(py_func)
        except numba.core.errors.NumbaError as error:  # an explicit signature, compiled now
            self._nopython = None
            self._fall_back(error)

    def _fall_back(self, error):
        reason = str(error).strip().splitlines()
        reason = reason[1] if len(reason) > 1 else (reason or [type(error).__name__])[0]
        errors = self._numba.core.errors
        warnings.warn(
            _FALLBACK_WARNING.format(name=self.py_func.__name__, reason=reason),
            errors.NumbaWarning,
            stacklevel=3,
        )
        warnings.warn(_DEPRECATION_WARNING, errors.NumbaDeprecationWarning, stacklevel=3)
        if self._object_mode is None:
            options = {k: v for k, v in self._options.items() if k != "parallel"}
            self._object_mode = self._numba.jit(forceobj=True, **options)(self.py_func)

    def __call__(self, *args, **kwargs):
        if self._nopython is None:
            return self._object_mode(*args, **kwargs)
        key = tuple(self._nopython.typeof_pyval(arg) for arg in args)
        if key not in self._object_types:
            try:
                return self._nopython(*args, **kwargs)
            except self._numba.core.errors.NumbaError as error:
                self._object_types.add(key)
                self._fall_back(error)
        return self._object_mode(*args, **kwargs)

    def __getattr__(self, name):  # signatures, inspect_types, ... of the nopython dispatcher
        compiled = self.__dict__.get("_nopython") or self.__dict__.get("_object_mode")
        if compiled is None:
            raise AttributeError(name)
        return getattr(compiled, name)


def _jit_056(numba):
    """numba.jit as numba 0.56 had it: without nopython=True (or with nopython=False),
    nopython mode where numba can, else object mode with a warning."""

    @functools.wraps(numba.jit)
    def jit(signature_or_function=None, **options):
        if options.get("nopython") or options.get("forceobj"):
            return numba.jit(signature_or_function, **options)
        options.pop("nopython", None)
        if callable(signature_or_function) and not isinstance(signature_or_function, str):
            return FallbackDispatcher(numba, signature_or_function, None, options)
        return lambda function: FallbackDispatcher(numba, function, signature_or_function, options)

    return jit


class Numba056(types.ModuleType):
    """The `numba` module user code gets: numba's names, with numba 0.56's `jit`."""

    def __init__(self, numba):
        super().__init__("numba", numba.__doc__)
        for name in ("__file__", "__path__", "__version__", "__spec__", "__loader__"):
            if hasattr(numba, name):
                self.__dict__[name] = getattr(numba, name)
        self.__dict__["_numba"] = numba
        self.__dict__["jit"] = _jit_056(numba)

    def __getattr__(self, name):
        return getattr(self.__dict__["_numba"], name)

    def __dir__(self):
        return dir(self.__dict__["_numba"])

    def __repr__(self):
        return f"<numba {self.__version__} with numba 0.56's @jit (TF 1.x code)>"


def teach_numba():
    """Makes numba type the numpy of TF 1.x code as numpy itself, so that functions it
    compiles (@numba.jit of a data helper using np.array, np.zeros) find numpy's
    attributes: numba knows numpy's module by identity."""
    import numpy
    from numba.core import types as numba_types
    from numba.core.typing.typeof import typeof_impl

    typeof_impl.register(Numpy1x)(lambda module, context: numba_types.Module(numpy))


def numba_module(numba):
    """The numba module for TF 1.x code, around numba itself (imported), which is taught
    the numpy of TF 1.x code (import_hook.UserImport makes it once)."""
    teach_numba()
    return Numba056(numba)
