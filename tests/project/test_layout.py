"""The layout: scripts that read like the original's, libraries without flags.

Checked from the sources (and imports, for the public names):
- every public name of the original 2018 modules is importable from the
  module it was in, and the original's functions keep their parameters in
  order (new parameters come after them, with defaults);
- no function anywhere is over 100 lines (a longer one is split by job);
  each script's `main` checks its flags first through one `_check_flags()`;
- only the scripts and bert_lib/script_flags.py read flags: the libraries take values;
  within a script only `main` and `*_from_flags` functions read them (the
  original's few API functions that took their settings from the flags
  apart), and every script checks its model through checks.check_model;
- modeling and optimization hold no module-level switch: no function writes
  module-level state, so what they build is in their arguments;
- run_classifier, run_squad and run_ner alias no data-module name the
  original script did not define;
- modeling, tokenization and optimization import no module of the project,
  only what the original's did, so that each works copied alone.
"""

import ast
import inspect
import os
import sys

import pytest
from helpers import REPO, module_path, package_modules, root_modules

# The public names (and the private ones user code imported) of the original
# modules, as the 2018 code defines them.
ORIGINAL_NAMES = {
    "modeling": (
        "BertConfig BertModel gelu get_activation get_assignment_map_from_checkpoint dropout "
        "layer_norm layer_norm_and_dropout create_initializer embedding_lookup "
        "embedding_postprocessor create_attention_mask_from_input_mask attention_layer "
        "transformer_model get_shape_list reshape_to_matrix reshape_from_matrix assert_rank"
    ).split(),
    "tokenization": (
        "validate_case_matches_checkpoint convert_to_unicode printable_text load_vocab "
        "convert_by_vocab convert_tokens_to_ids convert_ids_to_tokens whitespace_tokenize "
        "FullTokenizer BasicTokenizer WordpieceTokenizer _is_whitespace _is_control "
        "_is_punctuation"
    ).split(),
    "optimization": ("create_optimizer AdamWeightDecayOptimizer").split(),
    "create_pretraining_data": (
        "FLAGS TrainingInstance write_instance_to_example_files create_int_feature "
        "create_float_feature create_training_instances create_instances_from_document "
        "MaskedLmInstance create_masked_lm_predictions truncate_seq_pair main"
    ).split(),
    "run_pretraining": (
        "FLAGS model_fn_builder get_masked_lm_output get_next_sentence_output gather_indexes "
        "input_fn_builder _decode_record main"
    ).split(),
    "run_classifier": (
        "FLAGS InputExample PaddingInputExample InputFeatures DataProcessor XnliProcessor "
        "MnliProcessor MrpcProcessor ColaProcessor convert_single_example "
        "file_based_convert_examples_to_features file_based_input_fn_builder "
        "_truncate_seq_pair create_model model_fn_builder input_fn_builder "
        "convert_examples_to_features main"
    ).split(),
    "run_squad": (
        "FLAGS SquadExample InputFeatures read_squad_examples convert_examples_to_features "
        "_improve_answer_span _check_is_max_context create_model model_fn_builder "
        "input_fn_builder RawResult write_predictions get_final_text _get_best_indexes "
        "_compute_softmax FeatureWriter validate_flags_or_throw main"
    ).split(),
    "run_classifier_with_tfhub": (
        "FLAGS create_model model_fn_builder create_tokenizer_from_hub_module main"
    ).split(),
    "extract_features": (
        "FLAGS InputExample InputFeatures input_fn_builder model_fn_builder "
        "convert_examples_to_features _truncate_seq_pair read_examples main"
    ).split(),
}

# The original functions' parameters, in order.
ORIGINAL_PARAMETERS = {
    ("run_classifier_with_tfhub", "create_model"): (
        "is_training",
        "input_ids",
        "input_mask",
        "segment_ids",
        "labels",
        "num_labels",
        "bert_hub_module_handle",
    ),
    ("run_classifier_with_tfhub", "model_fn_builder"): (
        "num_labels",
        "learning_rate",
        "num_train_steps",
        "num_warmup_steps",
        "use_tpu",
        "bert_hub_module_handle",
    ),
    ("run_classifier_with_tfhub", "create_tokenizer_from_hub_module"): ("bert_hub_module_handle",),
    ("run_classifier", "convert_single_example"): (
        "ex_index",
        "example",
        "label_list",
        "max_seq_length",
        "tokenizer",
    ),
    ("run_classifier", "file_based_convert_examples_to_features"): (
        "examples",
        "label_list",
        "max_seq_length",
        "tokenizer",
        "output_file",
    ),
    ("run_classifier", "file_based_input_fn_builder"): (
        "input_file",
        "seq_length",
        "is_training",
        "drop_remainder",
    ),
    ("run_classifier", "_truncate_seq_pair"): (
        "tokens_a",
        "tokens_b",
        "max_length",
    ),
    ("run_classifier", "create_model"): (
        "bert_config",
        "is_training",
        "input_ids",
        "input_mask",
        "segment_ids",
        "labels",
        "num_labels",
        "use_one_hot_embeddings",
    ),
    ("run_classifier", "model_fn_builder"): (
        "bert_config",
        "num_labels",
        "init_checkpoint",
        "learning_rate",
        "num_train_steps",
        "num_warmup_steps",
        "use_tpu",
        "use_one_hot_embeddings",
    ),
    ("run_classifier", "input_fn_builder"): (
        "features",
        "seq_length",
        "is_training",
        "drop_remainder",
    ),
    ("run_classifier", "convert_examples_to_features"): (
        "examples",
        "label_list",
        "max_seq_length",
        "tokenizer",
    ),
    ("run_squad", "read_squad_examples"): (
        "input_file",
        "is_training",
    ),
    ("run_squad", "convert_examples_to_features"): (
        "examples",
        "tokenizer",
        "max_seq_length",
        "doc_stride",
        "max_query_length",
        "is_training",
        "output_fn",
    ),
    ("run_squad", "_improve_answer_span"): (
        "doc_tokens",
        "input_start",
        "input_end",
        "tokenizer",
        "orig_answer_text",
    ),
    ("run_squad", "_check_is_max_context"): (
        "doc_spans",
        "cur_span_index",
        "position",
    ),
    ("run_squad", "create_model"): (
        "bert_config",
        "is_training",
        "input_ids",
        "input_mask",
        "segment_ids",
        "use_one_hot_embeddings",
    ),
    ("run_squad", "model_fn_builder"): (
        "bert_config",
        "init_checkpoint",
        "learning_rate",
        "num_train_steps",
        "num_warmup_steps",
        "use_tpu",
        "use_one_hot_embeddings",
    ),
    ("run_squad", "input_fn_builder"): (
        "input_file",
        "seq_length",
        "is_training",
        "drop_remainder",
    ),
    ("run_squad", "write_predictions"): (
        "all_examples",
        "all_features",
        "all_results",
        "n_best_size",
        "max_answer_length",
        "do_lower_case",
        "output_prediction_file",
        "output_nbest_file",
        "output_null_log_odds_file",
    ),
    ("run_squad", "get_final_text"): (
        "pred_text",
        "orig_text",
        "do_lower_case",
    ),
    ("run_squad", "_get_best_indexes"): (
        "logits",
        "n_best_size",
    ),
    ("run_squad", "_compute_softmax"): ("scores",),
    ("run_squad", "validate_flags_or_throw"): ("bert_config",),
    ("run_pretraining", "model_fn_builder"): (
        "bert_config",
        "init_checkpoint",
        "learning_rate",
        "num_train_steps",
        "num_warmup_steps",
        "use_tpu",
        "use_one_hot_embeddings",
    ),
    ("run_pretraining", "get_masked_lm_output"): (
        "bert_config",
        "input_tensor",
        "output_weights",
        "positions",
        "label_ids",
        "label_weights",
    ),
    ("run_pretraining", "get_next_sentence_output"): (
        "bert_config",
        "input_tensor",
        "labels",
    ),
    ("run_pretraining", "gather_indexes"): (
        "sequence_tensor",
        "positions",
    ),
    ("run_pretraining", "input_fn_builder"): (
        "input_files",
        "max_seq_length",
        "max_predictions_per_seq",
        "is_training",
    ),
    ("run_pretraining", "_decode_record"): (
        "record",
        "name_to_features",
    ),
    ("extract_features", "input_fn_builder"): (
        "features",
        "seq_length",
    ),
    ("extract_features", "model_fn_builder"): (
        "bert_config",
        "init_checkpoint",
        "layer_indexes",
        "use_tpu",
        "use_one_hot_embeddings",
    ),
    ("extract_features", "convert_examples_to_features"): (
        "examples",
        "seq_length",
        "tokenizer",
    ),
    ("extract_features", "read_examples"): ("input_file",),
    ("create_pretraining_data", "write_instance_to_example_files"): (
        "instances",
        "tokenizer",
        "max_seq_length",
        "max_predictions_per_seq",
        "output_files",
    ),
    ("create_pretraining_data", "create_int_feature"): ("values",),
    ("create_pretraining_data", "create_float_feature"): ("values",),
    ("create_pretraining_data", "create_training_instances"): (
        "input_files",
        "tokenizer",
        "max_seq_length",
        "dupe_factor",
        "short_seq_prob",
        "masked_lm_prob",
        "max_predictions_per_seq",
        "rng",
    ),
    ("create_pretraining_data", "create_instances_from_document"): (
        "all_documents",
        "document_index",
        "max_seq_length",
        "short_seq_prob",
        "masked_lm_prob",
        "max_predictions_per_seq",
        "vocab_words",
        "rng",
    ),
    ("create_pretraining_data", "create_masked_lm_predictions"): (
        "tokens",
        "masked_lm_prob",
        "max_predictions_per_seq",
        "vocab_words",
        "rng",
    ),
    ("create_pretraining_data", "truncate_seq_pair"): (
        "tokens_a",
        "tokens_b",
        "max_num_tokens",
        "rng",
    ),
    ("optimization", "create_optimizer"): (
        "loss",
        "init_lr",
        "num_train_steps",
        "num_warmup_steps",
        "use_tpu",
    ),
}

ROOT_MODULES = root_modules()


def _tree(path):
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read(), filename=path)


def _is_script(tree):
    return any(
        isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) for node in tree.body
    )


SCRIPTS = [m for m in ROOT_MODULES if _is_script(_tree(module_path(m)))]
# The modules that read flags besides the scripts: script_flags (the shared flags,
# read for the scripts) and the entry point that parses the command line.
FLAG_READERS = ("bert_lib.script_flags", "bert_lib.plumbing.command_line")
LIBRARIES = [m for m in ROOT_MODULES if m not in SCRIPTS] + [
    m for m in package_modules() if m not in FLAG_READERS
]


def test_the_scripts_and_libraries_are_found():
    assert {"run_classifier", "run_squad", "run_ner", "run_pretraining"} <= set(SCRIPTS)
    assert {"modeling", "optimization", "tokenization", "bert_lib.engine.estimator"} <= set(
        LIBRARIES
    )


@pytest.mark.parametrize("module", sorted(ORIGINAL_NAMES))
def test_every_original_public_name_is_importable_from_its_module(module):
    imported = __import__(module)
    missing = [name for name in ORIGINAL_NAMES[module] if not hasattr(imported, name)]
    assert missing == []


@pytest.mark.parametrize("module, function", sorted(ORIGINAL_PARAMETERS))
def test_original_functions_keep_their_parameters(module, function):
    signature = inspect.signature(getattr(__import__(module), function))
    expected = list(ORIGINAL_PARAMETERS[(module, function)])
    parameters = list(signature.parameters.values())
    assert [p.name for p in parameters[: len(expected)]] == expected
    added = parameters[len(expected) :]
    assert all(p.default is not inspect.Parameter.empty for p in added), added


def test_create_int_and_float_feature_give_the_original_protobufs():
    import tensorflow as tf

    import create_pretraining_data as cpd

    assert cpd.create_int_feature([3, 1]) == tf.train.Feature(
        int64_list=tf.train.Int64List(value=[3, 1])
    )
    assert cpd.create_float_feature([0.5]) == tf.train.Feature(
        float_list=tf.train.FloatList(value=[0.5])
    )


def _functions(tree):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _python_files():
    for name in root_modules() + package_modules():
        yield module_path(name)
    benchmarks = os.path.join(REPO, "benchmarks")
    for directory in (
        benchmarks,
        *(os.path.join(benchmarks, p) for p in ("compat_check_lib", "tf1_corpus_lib")),
    ):
        for name in sorted(os.listdir(directory)):
            if name.endswith(".py"):
                yield os.path.join(directory, name)


def test_no_function_is_over_100_lines():
    long = [
        f"{os.path.relpath(path, REPO)}:{node.lineno} {node.name} "
        f"({node.end_lineno - node.lineno + 1} lines)"
        for path in _python_files()
        for node in _functions(_tree(path))
        if node.end_lineno - node.lineno + 1 > 100
    ]
    assert long == []


TRAINING_SCRIPTS = [
    "run_classifier_with_tfhub",
    "run_classifier",
    "run_squad",
    "run_ner",
    "run_pretraining",
    "extract_features",
]


@pytest.mark.parametrize("script", TRAINING_SCRIPTS)
def test_main_checks_its_flags_first_and_stays_short(script):
    tree = _tree(module_path(script))
    (main,) = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    assert main.end_lineno - main.lineno + 1 <= 100
    calls = [
        ast.unparse(node.func)
        for statement in main.body[:3]
        for node in ast.walk(statement)
        if isinstance(node, ast.Call)
    ]
    assert "_check_flags" in calls, calls
    assert any(isinstance(n, ast.FunctionDef) and n.name == "_check_flags" for n in tree.body)


def _reads_flags(tree):
    """Lines that read absl flags: FLAGS, flags.FLAGS or an import of absl's flags."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "FLAGS":
            lines.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "FLAGS":
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "absl":
            if any(alias.name == "flags" for alias in node.names):
                lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("module", LIBRARIES)
def test_libraries_read_no_flags(module):
    assert _reads_flags(_tree(module_path(module))) == []


def test_the_flag_check_catches_a_flag_read(tmp_path):
    path = tmp_path / "lib.py"
    path.write_text("from absl import flags\n\n\ndef f():\n    return flags.FLAGS.x\n")
    assert _reads_flags(_tree(str(path))) == [1, 5]


# The modules users copy into their own projects, one file at a time, and what
# the original's imported besides the standard library: nothing else may they import.
STANDALONE_MODULES = ("modeling", "optimization", "tokenization")
STANDALONE_MAY_IMPORT = {"tensorflow", "numpy", "absl", "six"}


def _imports_outside(tree, allowed):
    """Lines and names of imports (at any depth) of neither the standard library nor `allowed`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if not top or (top not in sys.stdlib_module_names and top not in allowed):
                found.append(f"{node.lineno}: {name}")
    return found


@pytest.mark.parametrize("module", STANDALONE_MODULES)
def test_modules_copied_alone_import_no_sibling(module):
    tree = _tree(module_path(module))
    assert _imports_outside(tree, STANDALONE_MAY_IMPORT) == []


def test_the_import_check_catches_a_sibling(tmp_path):
    path = tmp_path / "lib.py"
    path.write_text(
        "import os\nimport six\nfrom errors import UsageError\n\n\n"
        "def f():\n    import checkpoint_shapes\n    from . import x\n"
    )
    found = _imports_outside(_tree(str(path)), STANDALONE_MAY_IMPORT)
    assert found == ["3: errors", "7: checkpoint_shapes", "8: ."]


# ---------------------------------------------------------------------------
# Configuration in plain sight: flags read once per script, no module-level
# switches in the model, no aliases the original's scripts did not have.

# Functions of the original's API that took their settings from the flags in
# the 2018 code and keep doing so, for user code that calls them with the
# original's arguments; the scripts themselves call the value-taking versions.
ORIGINAL_API_READING_FLAGS = {
    ("run_squad", "read_squad_examples"),  # --version_2_with_negative
    ("run_squad", "write_predictions"),  # and --null_score_diff_threshold, --verbose_logging
    ("run_squad", "get_final_text"),  # --verbose_logging
    ("run_squad", "validate_flags_or_throw"),  # the flags are what it checks
}


def _script_flags_readers():
    """The functions of script_flags.py that read flags (FLAGS or flag_value)."""
    tree = _tree(module_path("bert_lib.script_flags"))
    readers = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("define"):
            names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            if {"FLAGS", "flag_value"} & names:
                readers.add(node.name)
    return readers - {"run_main", "parse_flags"}


def _flag_readings(node, readers):
    """Lines of `node` that read flags: FLAGS, a flag-reading script_flags function, or a
    `*_from_flags` function."""
    lines = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id == "FLAGS":
            lines.append(n.lineno)
        elif isinstance(n, ast.Call):
            func = n.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            from_script_flags = isinstance(func, ast.Attribute) and ast.unparse(func.value) == (
                "script_flags"
            )
            if name.endswith("from_flags") or (from_script_flags and name in readers):
                lines.append(n.lineno)
    return lines


def _functions_reading_flags(tree, script, readers):
    """`name:line` of each top-level function or method of a script that reads flags but
    is neither `main` nor a `*_from_flags` function (nor in ORIGINAL_API_READING_FLAGS)."""
    found = []
    for node in tree.body:
        methods = [node] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef):
            methods = [m for m in node.body if isinstance(m, ast.FunctionDef)]
        for function in methods:
            name = function.name
            if name == "main" or name.endswith("from_flags"):
                continue
            if (script, name) in ORIGINAL_API_READING_FLAGS:
                continue
            found += [f"{name}:{line}" for line in _flag_readings(function, readers)]
    return found


@pytest.mark.parametrize("script", SCRIPTS)
def test_only_main_and_from_flags_functions_read_flags(script):
    tree = _tree(module_path(script))
    assert _functions_reading_flags(tree, script, _script_flags_readers()) == []


def test_the_script_flag_check_catches_each_way_of_reading_flags(tmp_path):
    readers = _script_flags_readers()
    assert {"run_config_from_flags", "check_padding_flags", "padding_from_flags"} <= readers
    assert "check_model" not in readers and "train_steps" not in readers
    path = tmp_path / "script.py"
    path.write_text(
        "def settings_from_flags():\n    return FLAGS.a\n\n\n"
        "def main(_):\n    return FLAGS.b\n\n\n"
        "def _train(settings):\n    return FLAGS.c\n\n\n"
        "def _check_flags(settings):\n    return script_flags.check_padding_flags()\n\n\n"
        "def _run(settings):\n    return settings_from_flags()\n\n\n"
        "def _export(settings):\n    return script_flags.check_model(settings.model)\n\n\n"
        "class Recipe:\n    def from_flags(self):\n        return FLAGS.d\n\n"
        "    def size(self):\n        return FLAGS.e\n"
    )
    found = _functions_reading_flags(_tree(str(path)), "script", readers)
    assert found == ["_train:10", "_check_flags:14", "_run:18", "size:30"]


@pytest.mark.parametrize(
    "script", [s for s in TRAINING_SCRIPTS if s != "run_classifier_with_tfhub"]
)
def test_each_script_checks_its_model_through_the_shared_check(script):
    """A check added to checks.check_model reaches every script (run_pretraining too)."""
    tree = _tree(module_path(script))
    (check,) = [
        n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "_check_flags"
    ]
    calls = {ast.unparse(n.func) for n in ast.walk(check) if isinstance(n, ast.Call)}
    assert "checks.check_model" in calls


# What changes what modeling and optimization build lives in their arguments.
MODEL_MODULES = ("modeling", "optimization")
_MUTATING_METHODS = {"append", "extend", "insert", "update", "clear", "pop", "setdefault"}
_MUTATING_METHODS |= {"remove", "add", "discard", "__setitem__"}


def _module_state_writes(tree):
    """`function:line` wherever a function writes module-level state: a `global`
    statement, or an item, attribute or in-place change of a module-level name the
    function does not bind itself."""
    module_names = set()
    for node in tree.body:
        for target in getattr(node, "targets", [getattr(node, "target", None)]):
            if isinstance(target, ast.Name):
                module_names.add(target.id)
    writes = []
    for function in _functions(tree):
        local = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
        local |= {
            n.id
            for n in ast.walk(function)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
        }
        shared = module_names - local
        for n in ast.walk(function):
            if isinstance(n, (ast.Global, ast.Nonlocal)):
                writes.append(f"{function.name}:{n.lineno}")
                continue
            changed = []
            if isinstance(n, (ast.Assign, ast.AugAssign)):
                changed = n.targets if isinstance(n, ast.Assign) else [n.target]
                changed = [
                    t.value for t in changed if isinstance(t, (ast.Subscript, ast.Attribute))
                ]
            elif (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and n.func.attr in _MUTATING_METHODS
            ):
                changed = [n.func.value]
            if any(isinstance(c, ast.Name) and c.id in shared for c in changed):
                writes.append(f"{function.name}:{n.lineno}")
    return writes


@pytest.mark.parametrize("module", MODEL_MODULES)
def test_modeling_and_optimization_hold_no_module_level_switch(module):
    tree = _tree(module_path(module))
    assert _module_state_writes(tree) == []
    context_managers = [
        n.name
        for n in _functions(tree)
        if any("contextmanager" in ast.unparse(d) for d in n.decorator_list)
    ]
    assert context_managers == []
    mutable = [
        ast.unparse(node.targets[0])
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, (ast.List, ast.Set, ast.ListComp, ast.SetComp))
    ]
    assert mutable == []


def test_the_switch_check_catches_module_state_written_by_a_function(tmp_path):
    path = tmp_path / "lib.py"
    path.write_text(
        "_DTYPE = [None]\n_OPTIONS = {}\n_COUNT = 0\n\n\n"
        "def set_dtype(dtype):\n    _DTYPE[0] = dtype\n\n\n"
        "def set_options(**kw):\n    _OPTIONS.update(kw)\n\n\n"
        "def count():\n    global _COUNT\n    _COUNT += 1\n\n\n"
        "def local(x):\n    _OPTIONS = {}\n    _OPTIONS['x'] = x\n    return _OPTIONS\n"
    )
    assert _module_state_writes(_tree(str(path))) == ["set_dtype:7", "set_options:11", "count:15"]


# The scripts whose data side lives in a module of its own. Their module-level
# aliases of that module's names (NAME = module.attr) must be names the
# original script defined: ORIGINAL_NAMES above (from the 2018 scripts'
# module-level definitions); the original has no run_ner.py, so run_ner has none.
ALIAS_FREE_SCRIPTS = {
    "run_classifier": ORIGINAL_NAMES["run_classifier"],
    "run_squad": ORIGINAL_NAMES["run_squad"],
    "run_ner": [],
}


# The modules holding the scripts' data side, without flags.
DATA_MODULES = (
    "classifier_data",
    "squad_data",
    "squad_features",
    "squad_answers",
    "squad_scoring",
    "ner_data",
)


def _module_aliases(tree):
    """Module-level names bound to an attribute of an imported module (NAME = mod.attr),
    or imported by name from a data module."""
    imported = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {a.asname or a.name for a in node.names}
    aliases = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
            root = node.value.value
            if isinstance(root, ast.Name) and root.id in imported:
                aliases += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith(DATA_MODULES):
            aliases += [a.asname or a.name for a in node.names]
    return aliases


@pytest.mark.parametrize("script", sorted(ALIAS_FREE_SCRIPTS))
def test_scripts_alias_only_the_originals_names(script):
    tree = _tree(module_path(script))
    allowed = set(ALIAS_FREE_SCRIPTS[script]) | {"FLAGS"}
    assert [name for name in _module_aliases(tree) if name not in allowed] == []


def test_the_alias_check_finds_aliases(tmp_path):
    path = tmp_path / "script.py"
    path.write_text(
        "import classifier_data\nimport features as f\nfrom errors import UsageError\n"
        "from ner_data import InputExample\n"
        "from bert_lib.task_data import squad_data\n"
        "from bert_lib.task_data.squad_data import SquadExample\n\n"
        "A = classifier_data.A\nB = f.truncate_seq_pair\nC = 3\nD = squad_data.D\n"
    )
    assert _module_aliases(_tree(str(path))) == ["InputExample", "SquadExample", "A", "B", "D"]
