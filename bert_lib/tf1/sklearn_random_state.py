"""scikit-learn's `random_state=np.random` as TF 1.x code knew it: numpy's global RandomState.

TF 1.x code of 2017-2020 passed the numpy.random module itself as a random
state: OpenAI's GPT fine-tuning shuffles its training set each epoch with
`sklearn.utils.shuffle(..., random_state=np.random)`, after `np.random.seed`.
scikit-learn's check_random_state has always taken the module as numpy's
global RandomState (`np.random.mtrand._rand`), and still does; but the
parameter validation scikit-learn put in front of it (its estimators' from
1.2, its functions' from 1.3, among them `resample`, which `shuffle` calls)
lists an integer, a RandomState or None, and refuses the module before
check_random_state sees it.

`accept_numpy_random` makes that validation take the numpy.random module
too, wherever it takes a random state (the `_RandomStates` constraint every
"random_state" constraint of scikit-learn is made of); the function it
validates then uses numpy's global RandomState, as check_random_state makes
of the module. Every other refusal is scikit-learn's own, in its own words.
Nothing is imported for this: scikit-learn's validation module is changed
when the script (or a library it uses) first imports it, by a finder on
sys.meta_path, or at once if it is imported already.
"""

import importlib.abc
import sys

import numpy

VALIDATION_MODULE = "sklearn.utils._param_validation"


def _takes_numpy_random(validation):
    """Makes the random-state constraint of scikit-learn's validation module take the
    numpy.random module; returns whether the module has that constraint."""
    constraint = getattr(validation, "_RandomStates", None)
    check = getattr(constraint, "is_satisfied_by", None)
    if check is None:
        return False
    if getattr(check, "takes_numpy_random", False):
        return True

    def is_satisfied_by(self, value):
        return value is numpy.random or check(self, value)

    is_satisfied_by.takes_numpy_random = True
    is_satisfied_by.__wrapped__ = check
    is_satisfied_by.__doc__ = check.__doc__
    constraint.is_satisfied_by = is_satisfied_by
    return True


class _ValidationFinder(importlib.abc.MetaPathFinder):
    """Finds scikit-learn's validation module as the rest of sys.meta_path does, and has
    its loader change the module once it has run."""

    def find_spec(self, fullname, path, target=None):
        if fullname != VALIDATION_MODULE:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or isinstance(loader, type) or not hasattr(loader, "exec_module"):
            return spec  # a loader shared by other modules is left alone
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _takes_numpy_random(module)

        loader.exec_module = exec_module
        return spec


def accept_numpy_random():
    """Lets scikit-learn's parameter validation take numpy.random as a random state, in the
    module imported already or when it is first imported."""
    if not any(isinstance(finder, _ValidationFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _ValidationFinder())
    validation = sys.modules.get(VALIDATION_MODULE)
    if validation is not None:
        _takes_numpy_random(validation)


def restore():
    """scikit-learn's validation as scikit-learn made it, and no finder (tests)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _ValidationFinder)]
    constraint = getattr(sys.modules.get(VALIDATION_MODULE), "_RandomStates", None)
    check = getattr(constraint, "is_satisfied_by", None)
    if getattr(check, "takes_numpy_random", False):
        constraint.is_satisfied_by = check.__wrapped__
