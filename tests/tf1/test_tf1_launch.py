"""How run_tf1.py launches TF 1.x code: tf.app.run's flag parsing, `-m`, installed packages
written for TF 1.x, and the numpy of TF 1.15's years.

The scripts of tests/data/tf1_scripts/launch run through run_tf1.py as a
user runs them, and what they print is compared with what TensorFlow
1.15.5 on numpy 1.18.5 printed for the same command line
(tests/data/golden/tf1_15/launch.json, make_launch_golden.py). The
requirement reading of installed packages is checked against the
`packaging` library's reading of the same specifiers.
"""

import json
import os
import sys
import textwrap

import pytest
from helpers import DATA, GOLDEN, error_line, run_script

from bert_lib.tf1 import numpy_1x, numpy_bool_index
from bert_lib.tf1.machinery import tf1_packages

LAUNCH = os.path.join(DATA, "tf1_scripts", "launch")

with open(os.path.join(GOLDEN, "tf1_15", "launch.json"), encoding="utf-8") as _f:
    TF115 = json.load(_f)


def run_tf1(*args, cwd=LAUNCH, env=None):
    return run_script("run_tf1.py", *args, cwd=cwd, env=env)


def printed(result):
    """The JSON a launch script printed last, after checking the run ended well."""
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def as_tf115_ran(name):
    """run_tf1.py with the command line TF 1.15 was given for golden run `name`."""
    return run_tf1(*TF115["runs"][name])


# ---------------------------------------------------------------------------
# tf.app.run: unknown flags let through, as TF 1.15 did


@pytest.mark.slow
def test_tf_app_run_lets_unknown_flags_through_to_main_as_tf115_did():
    result = as_tf115_ran("flags_app")
    assert printed(result) == TF115["outputs"]["flags_app"]
    warnings = [line for line in result.stderr.splitlines() if "tf.app.run" in line]
    assert warnings == [
        "WARNING: not flags of this script, ignored as TF 1.x's tf.app.run ignored them "
        "(they stay in main's argv): --extra_flag, --stepz (did you mean --steps?)"
    ]


@pytest.mark.slow
def test_tf_app_run_still_refuses_a_bad_value_of_a_defined_flag():
    line = error_line(run_tf1("flags_app.py", "--steps=many", "--extra=1"))
    assert line.startswith("ERROR: flag --steps=many: ")


@pytest.mark.slow
def test_known_flags_only_print_no_warning():
    result = run_tf1("flags_app.py", "--steps=4", "pos")
    assert printed(result)["argv"] == ["pos"]
    assert "WARNING: not flags" not in result.stderr


# ---------------------------------------------------------------------------
# python run_tf1.py -m package.module


@pytest.mark.slow
@pytest.mark.parametrize("name", ["module_train", "module_package"])
def test_dash_m_runs_a_module_as_python_m_did_under_tf115(name):
    assert printed(as_tf115_ran(name)) == TF115["outputs"][name]


@pytest.mark.slow
def test_dash_m_joined_to_its_name_and_modules_that_cannot_run():
    assert printed(run_tf1("-mtf1pkg", "x"))["argv"] == ["x"]
    assert error_line(run_tf1("-m", "no_such_package.train")) == (
        "ERROR: -m no_such_package.train: no module named no_such_package.train on sys.path"
    )
    assert error_line(run_tf1("-m", "tf1pkg.no_such_module")) == (
        "ERROR: -m tf1pkg.no_such_module: no module named tf1pkg.no_such_module on sys.path"
    )
    assert error_line(run_tf1("-m")) == (
        "ERROR: usage: python run_tf1.py [--distribution_strategy=one_device|mirrored|"
        "multi_worker] [--num_gpus=N] [--tf1_packages=name,...] path/to/script.py | "
        "-m package.module [the script's flags ...]: -m needs a module name"
    )


@pytest.mark.slow
def test_dash_m_reports_a_failure_inside_the_package_at_its_line(tmp_path):
    package = tmp_path / "broken"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "main.py").write_text("import tensorflow as tf\n\ncell = tf.contrib.cudnn_rnn\n")
    line = error_line(run_tf1("-m", "broken.main", cwd=str(tmp_path)))
    assert line.startswith(f"ERROR: {package / 'main.py'}:3: tf.contrib.cudnn_rnn is not provided")


# ---------------------------------------------------------------------------
# Installed packages written for TF 1.x


def _install(site, name, requires, source):
    """A package `name` in the site directory `site`, with a dist-info requiring `requires`."""
    (site / name).mkdir(parents=True)
    (site / name / "__init__.py").write_text(textwrap.dedent(source))
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 0.1"]
    lines += [f"Requires-Dist: {requirement}" for requirement in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    (info / "RECORD").write_text(
        f"{name}/__init__.py,,\n{name}-0.1.dist-info/METADATA,,\n{name}-0.1.dist-info/RECORD,,\n"
    )


# What a TF 1.x library's code does: TF 1.x's API and numpy 1.x's names.
TF1_LIBRARY = """
    import numpy as np
    import tensorflow as tf

    def session_config():
        return type(tf.ConfigProto(allow_soft_placement=True)).__name__, np.float is float
    """


@pytest.fixture
def site(tmp_path):
    """A site-packages directory with a TF 1.x library its metadata says is one
    (tensorflow<2.0), one whose metadata does not (tensorflow>=1.10, under an extra), and a
    library of today; and a script using the three."""
    site = tmp_path / "site-packages"
    _install(site, "old_encoder", ["numpy", "tensorflow (<2.0,>=1.10)"], TF1_LIBRARY)
    _install(site, "named_encoder", ['tensorflow>=1.10; extra == "cpu"'], TF1_LIBRARY)
    _install(
        site,
        "modern_lib",
        ["tensorflow>=2.16"],
        """
        import numpy as np
        import tensorflow as tf

        def what_it_sees():
            return hasattr(tf, "ConfigProto"), hasattr(np, "float"), tf.executing_eagerly()
        """,
    )
    (tmp_path / "serve.py").write_text(
        textwrap.dedent(
            """
            import json
            import sys

            import modern_lib
            import named_encoder
            import old_encoder

            seen = {"old": old_encoder.session_config(), "modern": modern_lib.what_it_sees()}
            if "--named" in sys.argv:
                seen["named"] = named_encoder.session_config()
            print(json.dumps(seen))
            """
        )
    )
    return tmp_path


def _run_with_site(site, *args):
    env = dict(os.environ, PYTHONPATH=str(site / "site-packages"))
    return run_tf1(*args, cwd=str(site), env=env)


@pytest.mark.slow
def test_installed_packages_written_for_tf1_get_its_api_and_others_tensorflow_2(site):
    # old_encoder by its metadata; named_encoder only when named; modern_lib never.
    seen = printed(_run_with_site(site, "serve.py"))
    assert seen == {"old": ["ConfigProto", True], "modern": [False, False, False]}
    seen = printed(_run_with_site(site, "--tf1_packages=named_encoder", "serve.py", "--named"))
    assert seen["named"] == ["ConfigProto", True]
    # Unnamed, named_encoder gets TensorFlow 2 itself, as before; the line names the option.
    result = _run_with_site(site, "serve.py", "--named")
    assert result.returncode == 1
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "AttributeError: module 'tensorflow' has no attribute 'ConfigProto' (in the installed "
            "package named_encoder, which gets TensorFlow 2 itself; if it was written for TF 1.x, "
            "run with: run_tf1.py --tf1_packages=named_encoder ...)"
        )
    )
    # Run with -m through run_tf1.py, an installed module is TF 1.x code by the user's word.
    (site / "site-packages" / "named_encoder" / "cli.py").write_text(
        "import json\nfrom . import session_config\nprint(json.dumps(session_config()))\n"
    )
    assert printed(_run_with_site(site, "-m", "named_encoder.cli")) == ["ConfigProto", True]
    assert error_line(_run_with_site(site, "--tf1_packages=no_such_thing", "serve.py")) == (
        "ERROR: --tf1_packages: no_such_thing is neither an installed package nor a distribution"
    )


def test_a_tf1_distribution_is_its_own_files_directories_not_a_shared_namespace(
    tmp_path, monkeypatch
):
    site = tmp_path / "site-packages"
    (site / "google" / "enc").mkdir(parents=True)
    (site / "google" / "enc" / "__init__.py").write_text("")
    (site / "google" / "enc" / "data.txt").write_text("")
    (site / "top_mod.py").write_text("")
    info = site / "nsenc-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: nsenc\nVersion: 1.0\nRequires-Dist: tensorflow<2\n"
    )
    (info / "RECORD").write_text(
        "google/enc/__init__.py,,\ngoogle/enc/data.txt,,\ntop_mod.py,,\n"
        "../../bin/nsenc-serve,,\nnsenc-1.0.dist-info/METADATA,,\n"
    )
    monkeypatch.syspath_prepend(str(site))
    found = tf1_packages.tf1_distribution_paths()
    assert found["nsenc"] == [str(site / "google" / "enc"), str(site / "top_mod.py")]
    assert tf1_packages.named_package_paths(["nsenc"]) == found["nsenc"]


@pytest.mark.parametrize(
    "requirement",
    [
        "tensorflow<2",
        "tensorflow (<2.0,>=1.10)",
        "tensorflow>=1.10,<2.0",
        "tensorflow==1.15.*",
        "tensorflow==1.15.5",
        "tensorflow~=1.14",
        "tensorflow-gpu<=1.15",
        "TensorFlow_GPU (<1.16)",
        'tensorflow<2.0; extra == "cpu"',
        "tensorflow<1.99",
        "tensorflow>=1.10",
        "tensorflow",
        "tensorflow<2.1",
        "tensorflow>=2.16",
        "tensorflow!=2.0",
        "tensorflow-hub<2",
        "tensorflowx<2",
        "numpy<2",
    ],
)
def test_a_requirement_says_tf1_when_it_allows_tf1_only_as_packaging_reads_it(requirement):
    from packaging.requirements import Requirement

    parsed = Requirement(requirement)
    is_tensorflow = parsed.name.lower().replace("_", "-") in ("tensorflow", "tensorflow-gpu")
    allows = [v for v in ("1.10.0", "1.15.5", "2.0.0", "2.1.0", "2.16.1") if v in parsed.specifier]
    tf1_only = is_tensorflow and bool(allows) and all(v.startswith("1.") for v in allows)
    assert tf1_packages.requires_tensorflow_1(requirement) == tf1_only


# ---------------------------------------------------------------------------
# numpy as TF 1.15's users had it


@pytest.mark.slow
def test_tf1_code_gets_numpy_1x_names_and_calls_as_numpy_1_18_gave_them():
    assert printed(as_tf115_ran("numpy_cases")) == TF115["outputs"]["numpy_cases"]


def test_the_numpy_of_tf1_code_leaves_numpy_itself_unchanged():
    numpy = sys.modules["numpy"]
    old = numpy_1x.numpy_module()
    assert old.int is int and old.asscalar(numpy.array([2])) == 2
    assert not hasattr(numpy, "int") and not hasattr(numpy, "asscalar")
    with pytest.raises(TypeError, match="generator"):
        numpy.sum(i for i in range(3))
    assert old.sum([[1, 2], [3, 4]], 1, None, None, True).tolist() == [[3], [7]]
    assert old.sum([[1, 2]], axis=0, keepdims=True).tolist() == [[1, 2]]
    assert old.ndarray is numpy.ndarray and old.random is numpy.random
    assert "asscalar" in dir(old) and "ndarray" in dir(old)


def run_as_if_from(filename, source):
    """Runs `source` as code of `filename` (whose it is decides what numpy gives it)."""
    namespace = {"np": sys.modules["numpy"], "random": __import__("random")}
    exec(compile(textwrap.dedent(source), filename, "exec"), namespace)
    return namespace


def test_numpy_booleans_are_integers_for_tf1_code_only_and_numpy_is_given_back(tmp_path):
    numpy = sys.modules["numpy"]
    user_file = str(tmp_path / "data_script.py")
    project_file = numpy_bool_index.__file__
    uses = """
        flag = (np.arange(3) > 0)[2]
        picked = ["no", "yes"][flag]
        count = len(list(range(flag))) + len([0] * flag)
        drawn = len(random.Random(0).sample([4, 5, 6], flag))
    """
    with pytest.raises(TypeError, match="numpy.bool"):
        run_as_if_from(user_file, uses)
    assert numpy_bool_index.allow_in_user_code()
    try:
        with pytest.warns(DeprecationWarning, match="np.bool_' scalars to be interpreted"):
            done = run_as_if_from(user_file, uses)
        assert (done["picked"], done["count"], done["drawn"]) == ("yes", 2, 1)
        with pytest.raises(TypeError, match=r"numpy 2 takes no bool as an integer"):
            run_as_if_from(project_file, uses)
        with pytest.raises(TypeError):  # numpy's own refusal stays, as numpy 1.x had it
            run_as_if_from(user_file, "np.zeros(np.True_)")
        for other in (numpy.float64(1.0), numpy.float32(2.0)):
            with pytest.raises(TypeError):
                [1, 2][other]
        assert [1, 2][numpy.int64(1)] == 2
        assert numpy.arange(3)[numpy.True_].shape == (1, 3)
    finally:
        numpy_bool_index.restore()
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        run_as_if_from(user_file, "range(np.True_)")


# An F1 helper of TF 1.x code, in the manner of a text classifier's: its counters start as
# integers, so numba types the array of the two sums as one of integers in one branch and
# of floats in the other, and nopython mode cannot compile it.
MACRO_SCORES = """
def macro_scores(labels, predictions, num_classes):
    precision_sum, recall_sum = 0, 0
    for c in range(num_classes):
        hits = relevant = chosen = 0
        for i, label in enumerate(labels):
            if label == c:
                relevant += 1
                if predictions[i] == c:
                    hits += 1
            if predictions[i] == c:
                chosen += 1
        precision_sum += hits / chosen if chosen else 0
        recall_sum += hits / relevant if relevant else 0
    precision, recall = np.array([precision_sum, recall_sum]) / num_classes
    return precision, recall
"""


@pytest.mark.slow
def test_numba_jit_in_tf1_code_compiles_as_numba_056_did(tmp_path):
    """@numba.jit in TF 1.x code types the numpy that code gets as numpy itself (without
    that numba finds no attribute of the module); a function nopython mode cannot compile
    (MACRO_SCORES) runs in object mode, as numba 0.56 ran it with its two warnings, giving
    Python's numbers, where numba 0.59 and later refuse it; @njit of it is refused as
    under numba 0.56, ending in one ERROR line at the user's line."""
    import numpy as np

    script = tmp_path / "f1.py"
    script.write_text(
        "import json\nimport numpy as np\nfrom numba import jit, njit\n\n"
        "@jit\ndef mean_pair(n):\n    total = 0.0\n    for k in range(n):\n"
        "        total += k\n    p, r = np.array([total, 2.0]) / n\n"
        "    return p + r + np.zeros(2).sum()\n\n"
        f"{MACRO_SCORES}\n"
        "fast = jit(macro_scores)\n"
        "scores = [fast([0, 1, 1, 2], [0, 1, 2, 2], 3), fast([1, 1], [1, 0], 2)]\n"
        "print(json.dumps([mean_pair(3), fast.py_func is macro_scores, scores]))\n"
    )
    result = run_tf1("f1.py", cwd=str(tmp_path))
    mean, same_function, scores = printed(result)
    assert mean == (0 + 1 + 2) / 3 + 2 / 3
    assert same_function
    python = {"np": np}
    exec(MACRO_SCORES, python)
    expected = [python["macro_scores"]([0, 1, 1, 2], [0, 1, 2, 2], 3)]
    expected.append(python["macro_scores"]([1, 1], [1, 0], 2))
    np.testing.assert_allclose(scores, expected, rtol=1e-15)
    assert (
        "Compilation is falling back to object mode WITH looplifting enabled because Function "
        '"macro_scores" failed type inference due to: Cannot unify'
    ) in result.stderr
    assert "Fall-back from the nopython compilation path" in result.stderr
    refused = tmp_path / "refused.py"
    code = f"import numpy as np\nfrom numba import njit\n{MACRO_SCORES}\n"
    refused.write_text(code + "njit(macro_scores)([0, 1], [0, 1], 2)\n")
    result = run_tf1("refused.py", cwd=str(tmp_path))
    assert result.returncode == 1  # after numba's traceback, as other errors of user code
    line = len(code.splitlines()) + 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ERROR: refused.py:{line}: TypingError: "), result.stderr[-3000:]
