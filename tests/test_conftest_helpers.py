"""The script loader used by the other tests keeps one script's flags live."""

import os
import sys
import textwrap

import conftest


def test_load_script_swaps_flags_of_scripts_with_shared_names(tmp_path, monkeypatch):
    from absl import flags

    for name, default in (("run_squad", 384), ("run_classifier", 128)):
        (tmp_path / f"{name}.py").write_text(
            textwrap.dedent(
                f"""
                from absl import flags
                flags.DEFINE_integer("max_seq_length", {default}, "len")
                """
            )
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        conftest.load_script("run_squad")
        assert flags.FLAGS["max_seq_length"].default == 384
        conftest.load_script("run_classifier")
        assert flags.FLAGS["max_seq_length"].default == 128
        conftest.load_script("run_squad")
        assert flags.FLAGS["max_seq_length"].default == 384
    finally:
        delattr(flags.FLAGS, "max_seq_length")
        for name in ("run_squad", "run_classifier"):
            sys.modules.pop(name, None)


def test_fixtures_live_inside_the_repository():
    for path in (conftest.GOLDEN, conftest.VOCAB_UNCASED):
        assert os.path.exists(path)
        assert os.path.commonpath([path, conftest.REPO]) == conftest.REPO
