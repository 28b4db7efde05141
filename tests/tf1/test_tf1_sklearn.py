"""scikit-learn under run_tf1.py: `random_state=np.random` means numpy's global RandomState,
as scikit-learn before 1.2 (and its functions before 1.3) took it.

The shuffles are checked against numpy's own RandomState seeded the same
way. Where scikit-learn is installed the checks run on it; where it is not
(the project does not depend on it), on a package of a few lines laid out
as scikit-learn is (FAKE_SKLEARN: its validation module, whose
`_RandomStates` constraint refuses the module as today's does, and a
`shuffle` that validates, then takes the global RandomState for the module
as check_random_state does).
"""

import importlib
import importlib.util
import json
import sys
import textwrap

import numpy as np
import pytest
from helpers import run_script

from bert_lib.tf1 import sklearn_random_state

REAL_SKLEARN = importlib.util.find_spec("sklearn") is not None

FAKE_SKLEARN = {
    "sklearn/__init__.py": "",
    "sklearn/utils/_param_validation.py": """
        from numbers import Integral

        import numpy as np


        class InvalidParameterError(ValueError, TypeError):
            pass


        class _RandomStates:
            def is_satisfied_by(self, val):
                return val is None or isinstance(val, (Integral, np.random.RandomState))


        def validate_random_state(caller, val):
            if not _RandomStates().is_satisfied_by(val):
                raise InvalidParameterError(
                    f"The 'random_state' parameter of {caller} must be an int, a "
                    f"RandomState or None. Got {val!r} instead."
                )
    """,
    "sklearn/utils/__init__.py": """
        import numpy as np

        from ._param_validation import validate_random_state


        def shuffle(*arrays, random_state=None):
            validate_random_state("resample", random_state)
            if random_state is None or random_state is np.random:
                random_state = np.random.mtrand._rand
            elif not isinstance(random_state, np.random.RandomState):
                random_state = np.random.RandomState(random_state)
            indices = np.arange(len(arrays[0]))
            random_state.shuffle(indices)
            picked = [np.asarray(a)[indices] for a in arrays]
            return picked[0] if len(picked) == 1 else picked
    """,
}


def write_fake_sklearn(folder):
    for name, text in FAKE_SKLEARN.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def numpy_shuffled(seed, count):
    """The order numpy's global RandomState, seeded `seed`, shuffles range(count) into, and
    the next number it draws."""
    state = np.random.RandomState(seed)
    order = np.arange(count)
    state.shuffle(order)
    return order.tolist(), state.rand()


@pytest.fixture
def sklearn(tmp_path, monkeypatch):
    """scikit-learn (the fake one where it is not installed), imported afresh."""
    if not REAL_SKLEARN:
        write_fake_sklearn(tmp_path)
        monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    taught = any(isinstance(f, sklearn_random_state._ValidationFinder) for f in sys.meta_path)
    sklearn_random_state.restore()  # scikit-learn as it is, whatever ran in this process
    yield lambda: importlib.import_module("sklearn.utils")
    sklearn_random_state.restore()
    if taught:
        sklearn_random_state.accept_numpy_random()
    if not REAL_SKLEARN:
        for name in set(sys.modules) - before:
            if name == "sklearn" or name.startswith("sklearn."):
                del sys.modules[name]


@pytest.mark.parametrize("imported_first", [False, True])
def test_shuffle_with_numpy_random_uses_numpy_global_random_state(sklearn, imported_first):
    """Taught before scikit-learn is imported (the finder) or after (at once)."""
    if imported_first:
        utils = sklearn()
        sklearn_random_state.accept_numpy_random()
    else:
        sklearn_random_state.accept_numpy_random()
        assert sklearn_random_state.VALIDATION_MODULE not in sys.modules or REAL_SKLEARN
        utils = sklearn()
    np.random.seed(7)
    rows = np.arange(23) * 10
    shuffled, labels = utils.shuffle(rows, np.arange(23), random_state=np.random)
    order, next_draw = numpy_shuffled(7, 23)
    assert labels.tolist() == order
    assert shuffled.tolist() == [10 * i for i in order]
    assert np.random.rand() == next_draw  # the global state moved on as numpy's does
    assert utils.shuffle(np.arange(23), random_state=7).tolist() == numpy_shuffled(7, 23)[0]
    with pytest.raises(ValueError, match="'random_state' parameter of resample"):
        utils.shuffle(np.arange(3), random_state="seven")  # still refused, in its words


def test_without_it_scikit_learn_refuses_numpy_random(sklearn):
    utils = sklearn()
    with pytest.raises(ValueError, match="'random_state' parameter of resample"):
        utils.shuffle(np.arange(3), random_state=np.random)
    sklearn_random_state.accept_numpy_random()
    sklearn_random_state.restore()
    with pytest.raises(ValueError, match="'random_state' parameter of resample"):
        utils.shuffle(np.arange(3), random_state=np.random)


@pytest.mark.slow
def test_tf1_script_shuffles_with_numpy_random_as_old_scikit_learn_did(tmp_path):
    """Through run_tf1.py: the script's epoch shuffles (GPT fine-tuning's) follow numpy's
    global RandomState, and run_tf1.py itself imports no scikit-learn."""
    if not REAL_SKLEARN:
        write_fake_sklearn(tmp_path)
    (tmp_path / "epochs.py").write_text(
        textwrap.dedent("""
            import json
            import sys

            import numpy as np
            import tensorflow as tf

            imported_before = "sklearn" in sys.modules
            from sklearn.utils import shuffle

            np.random.seed(42)
            orders = [shuffle(np.arange(11), random_state=np.random).tolist() for _ in "ab"]
            print(json.dumps([imported_before, orders, np.random.rand()]))
        """)
    )
    result = run_script("run_tf1.py", "epochs.py", cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    imported_before, orders, next_draw = json.loads(result.stdout.strip().splitlines()[-1])
    state = np.random.RandomState(42)
    expected = []
    for _ in "ab":
        order = np.arange(11)
        state.shuffle(order)
        expected.append(order.tolist())
    if not REAL_SKLEARN:  # (installed, Keras imports it: its wrappers look for it)
        assert not imported_before
    assert orders == expected
    assert next_draw == state.rand()
