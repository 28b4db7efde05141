"""script_flags.run_main, the scripts' entry point: what it changes around main."""

import pytest
from helpers import run_code

pytestmark = pytest.mark.slow


def test_imports_are_frozen_and_new_garbage_is_still_collected():
    """The modules imported before run_main (TensorFlow's included) are frozen;
    cycles that main itself makes are still collected, and main's exit status stands."""
    result = run_code(
        """
        import gc
        import weakref
        from bert_lib import script_flags
        import tensorflow  # noqa: F401 (imported before main, as a script does)

        class Node:
            pass

        def main(argv):
            frozen = gc.get_freeze_count()
            node = Node()
            node.self = node
            alive = weakref.ref(node)
            del node
            gc.collect()
            print(f"frozen={frozen} collected={alive() is None} enabled={gc.isenabled()}")
            return 3

        script_flags.run_main(main, argv=["prog"])
        """
    )
    assert result.returncode == 3, result.stderr
    fields = dict(item.split("=") for item in result.stdout.split())
    assert int(fields["frozen"]) > 100_000  # TensorFlow alone is far more
    assert fields["collected"] == "True"
    assert fields["enabled"] == "True"
