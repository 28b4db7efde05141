"""numpy booleans as integers in TF 1.x code, as numpy 1.x took them.

numpy 1.x let its boolean scalar stand for 0 or 1 wherever Python wants an
integer (`range(is_next)`, `["no", "yes"][is_next]`, `[0] * flag`), with a
DeprecationWarning; numpy 2 refuses (`TypeError: 'numpy.bool' object
cannot be interpreted as an integer`). Such values come from numpy's own
operations (`(a > 0)[i]`, `np.random.rand() < 0.5`), not from the module
user code imports, so numpy_1x.py's module cannot give them back their
integer meaning: only their type can.

`allow_in_user_code` gives numpy's boolean type the integer conversion
(the C slot behind `operator.index`) that numpy 1.x had, answering by who
asks: code that gets the TF 1.x API (user_code.asked_by_user_code), directly or
through the standard library it calls (`random.sample(population,
is_next)`), gets 0 or 1 and numpy 1.x's warning; any other code gets a
TypeError as under numpy 2, worded "__index__ returned non-int (type
numpy.bool (numpy 2 takes no bool as an integer))" where numpy 2's own words
differ from list to list. numpy's own refusals of booleans (`np.zeros(flag)`,
which numpy 1.x refused too) are unchanged.

The slot is set in a copy of the type's number table, which `restore` puts
back; the type object's layout is checked (its name where CPython keeps it)
before anything is written, and on an interpreter whose layout differs
nothing is.
"""

import ctypes
import sys
import warnings

import numpy

from .machinery.user_code import asked_by_user_code

_POINTER = ctypes.sizeof(ctypes.c_void_p)
# PyTypeObject's fields, in pointer-sized steps: ob_refcnt, ob_type, ob_size, tp_name, ...
# tp_as_number is the thirteenth. PyNumberMethods: 36 slots, nb_index the thirty-fourth
# (CPython 3.5 and later).
_TP_NAME = 3
_TP_AS_NUMBER = 12
_NUMBER_SLOTS = 36
_NB_INDEX = 33

_DEPRECATION = (
    "In future, it will be an error for 'np.bool_' scalars to be interpreted as an index"
)


class _NotAnInteger:
    """What the slot answers code that is not TF 1.x code: Python then raises TypeError."""


_NotAnInteger.__name__ = _NotAnInteger.__qualname__ = (
    "numpy.bool (numpy 2 takes no bool as an integer)"
)


def _index(value):
    """nb_index of numpy's boolean: never raises (a C slot called through ctypes must not)."""
    try:
        if asked_by_user_code(sys._getframe(1)):
            warnings.warn(_DEPRECATION, DeprecationWarning, stacklevel=2)
            return 1 if value else 0
    except BaseException:  # the warning made an error (-W error): the caller gets a TypeError
        pass
    return _NotAnInteger()


_SLOT_TYPE = ctypes.CFUNCTYPE(ctypes.py_object, ctypes.py_object)
_SLOT = _SLOT_TYPE(_index)

# While allowed: (the type's own number table's address, the copy now in its place).
_swapped = None


def _table_field(kind):
    return ctypes.c_void_p.from_address(id(kind) + _TP_AS_NUMBER * _POINTER)


def _layout_is_known(kind):
    name = ctypes.c_void_p.from_address(id(kind) + _TP_NAME * _POINTER).value
    return bool(name) and ctypes.string_at(name) == f"numpy.{kind.__name__}".encode()


def allow_in_user_code():
    """Lets TF 1.x code use numpy booleans as integers; returns whether it could."""
    global _swapped
    if _swapped is not None:
        return True
    kind = numpy.bool_
    if not _layout_is_known(kind):
        return False
    field = _table_field(kind)
    own = field.value
    if not own:
        return False
    table = (ctypes.c_void_p * _NUMBER_SLOTS)(*(ctypes.c_void_p * _NUMBER_SLOTS).from_address(own))
    if table[_NB_INDEX]:  # a numpy that takes booleans as integers already
        return True
    table[_NB_INDEX] = ctypes.cast(_SLOT, ctypes.c_void_p).value
    _swapped = (own, table)
    field.value = ctypes.addressof(table)
    return True


def restore():
    """numpy's boolean as numpy made it (tests)."""
    global _swapped
    if _swapped is not None:
        _table_field(numpy.bool_).value = _swapped[0]
        _swapped = None
