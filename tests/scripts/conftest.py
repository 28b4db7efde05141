"""Fixtures the tests of run_pretraining.py share: the script loaded in-process, and a
config file of tests/support/pretraining_runs.py's tiny BERT."""

import helpers
import pretraining_runs
import pytest
from absl import flags


@pytest.fixture(scope="module")
def rp():
    """run_pretraining.py imported as user code imports it; its flags are unparsed after
    the test module's last test."""
    module = helpers.load_script("run_pretraining")
    yield module
    flags.FLAGS.unparse_flags()


@pytest.fixture(scope="module")
def tiny_config_file(tmp_path_factory):
    """bert_config.json of pretraining_runs.TINY."""
    return helpers.write_bert_config(
        tmp_path_factory.mktemp("config") / "bert_config.json", **pretraining_runs.TINY
    )
