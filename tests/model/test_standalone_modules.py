"""modeling.py, tokenization.py and optimization.py each work copied alone, as the
original's files did: notebooks and other projects fetch one of them by itself.

Each case copies one file into an empty directory and runs a fresh interpreter
there with that directory, and nothing of the repository, on sys.path (no
PYTHONPATH either), and uses the module's public API. The expected values are
worked out here, by hand or in numpy (numpy_reference.py), never by the module;
tokenization.py runs with TensorFlow blocked.
"""

import json
import os
import shutil
import sys
import textwrap
import types

import numpy as np
import numpy_reference as npr
import pytest
from helpers import (
    REPO,
    run_outside_repository,
    tiny_bert_config,
    write_checkpoint,
    write_lines,
)

# Every case starts a process.
pytestmark = pytest.mark.slow

# The names this project's code is imported under: the root's modules and the package.
PROJECT_MODULES = sorted(
    [name[:-3] for name in os.listdir(REPO) if name.endswith(".py")] + ["bert_lib"]
)

# Runs first in the fresh interpreter: the module is alone in the working
# directory, and no path of the repository is importable.
_PRELUDE = """\
import json, os, sys
_module, _repo, _project = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
assert os.listdir(".") == [_module + ".py"], os.listdir(".")
_paths = [os.path.realpath(p or ".") for p in sys.path]
assert os.path.realpath(_repo) not in _paths, sys.path
assert os.path.realpath(os.path.join(_repo, "tests")) not in _paths, sys.path
args = sys.argv[4:]
"""

# Runs last: the module came from the working directory and brought no sibling along.
_EPILOGUE = """
_imported = sys.modules[_module]
assert os.path.dirname(os.path.abspath(_imported.__file__)) == os.getcwd(), _imported.__file__
assert sorted(set(_project) & set(sys.modules)) == [_module], set(_project) & set(sys.modules)
print("RESULT " + json.dumps(result))
"""


def _run_alone(module, tmp_path, source, *args):
    """Copies `module`.py alone into an empty directory and runs `source` there.

    `source` sees `args` (strings) and sets `result`, a JSON-able value,
    which is returned.
    """
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy2(os.path.join(REPO, module + ".py"), alone)
    code = _PRELUDE + textwrap.dedent(source) + _EPILOGUE
    argv = [module, REPO, json.dumps(PROJECT_MODULES), *map(str, args)]
    completed = run_outside_repository([sys.executable, "-c", code, *argv], cwd=str(alone))
    assert completed.returncode == 0, completed.stderr[-4000:]
    (line,) = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(line[len("RESULT ") :])


# ---------------------------------------------------------------- tokenization

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "un",
    "##aff",
    "##able",
    "hotel",
    "##s",
    ",",
    "!",
    "caf",
    "##e",
    "我",
    "是",
]


def test_tokenization_alone_without_tensorflow(tmp_path):
    vocab_file = write_lines(tmp_path / "vocab.txt", VOCAB)
    no_mask = write_lines(tmp_path / "no_mask.txt", [t for t in VOCAB if t != "[MASK]"])
    result = _run_alone(
        "tokenization",
        tmp_path,
        """
        sys.modules["tensorflow"] = None  # any import of TensorFlow now fails
        import tokenization

        vocab_file, no_mask = args
        lower = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=True)
        tokens = lower.tokenize("The UNaffable hotels,\\x07 Café! 我是xyz")
        cased = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=False)
        result = {
            "tokens": tokens,
            "ids": lower.convert_tokens_to_ids(tokens),
            "back": lower.convert_ids_to_tokens([2, 9, 10, 3]),
            "cased": cased.tokenize("The hotels"),
            "tensorflow": sys.modules["tensorflow"],
        }
        errors = []
        try:
            tokenization.validate_case_matches_checkpoint(
                False, "/models/uncased_L-12_H-768_A-12/bert_model.ckpt"
            )
        except ValueError as e:
            errors.append(str(e))
        try:
            tokenization.check_special_tokens(tokenization.load_vocab(no_mask), no_mask)
        except ValueError as e:
            errors.append(str(e))
        result["errors"] = errors
        """,
        vocab_file,
        no_mask,
    )
    # By hand: the control character goes, lower case and accents off ("café" ->
    # "cafe"), punctuation and each CJK character split off, then the longest
    # vocabulary piece first; "xyz" has no pieces.
    assert result["tokens"] == [
        "the",
        "un",
        "##aff",
        "##able",
        "hotel",
        "##s",
        ",",
        "caf",
        "##e",
        "!",
        "我",
        "是",
        "[UNK]",
    ]
    assert result["ids"] == [5, 6, 7, 8, 9, 10, 11, 13, 14, 12, 15, 16, 1]
    assert result["back"] == ["[CLS]", "hotel", "##s", "[SEP]"]
    assert result["cased"] == ["[UNK]", "hotel", "##s"]  # "The" is not in the vocabulary
    assert result["tensorflow"] is None  # still blocked: nothing needed it
    casing, special = result["errors"]
    assert "--do_lower_case=False" in casing and "uncased_L-12_H-768_A-12" in casing
    assert special == f"--vocab_file: {no_mask} lacks [MASK]"


# ---------------------------------------------------------------- modeling

CONFIG = tiny_bert_config(
    11,
    hidden_size=8,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=12,
    max_position_embeddings=8,
)

_MODELING_SOURCE = """
import numpy as np
import tensorflow as tf

import modeling

config_file, bad_config_file, partial, mismatched, out = args
result = {}
try:
    modeling.BertConfig.from_json_file(bad_config_file)
except ValueError as e:
    result["bad_config"] = str(e)
config = modeling.BertConfig.from_json_file(config_file)
ids = np.array([[2, 5, 6, 3, 0], [2, 7, 8, 9, 3]], np.int32)
mask = np.array([[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]], np.int32)
types = np.array([[0, 0, 1, 1, 0], [0, 0, 0, 1, 1]], np.int32)
graph = tf.Graph()
with graph.as_default():
    model = modeling.BertModel(
        config, is_training=False, input_ids=tf.constant(ids), input_mask=tf.constant(mask),
        token_type_ids=tf.constant(types),
    )
    tvars = tf.compat.v1.trainable_variables()
    assignment_map, initialized = modeling.get_assignment_map_from_checkpoint(tvars, partial)
    tf.compat.v1.train.init_from_checkpoint(partial, assignment_map)
    try:
        modeling.get_assignment_map_from_checkpoint(tvars, mismatched)
    except ValueError as e:
        result["mismatch"] = str(e)
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        weights = session.run({v.op.name: v for v in tvars})
        outputs = session.run(
            {"sequence": model.get_sequence_output(), "pooled": model.get_pooled_output(),
             "embedding": model.get_embedding_output()}
        )
np.savez(os.path.join(out, "weights.npz"), **weights)
np.savez(os.path.join(out, "outputs.npz"), ids=ids, mask=mask, types=types, **outputs)
result["assignment_map"] = list(assignment_map.items())
result["initialized"] = sorted(initialized)
"""


def test_modeling_alone(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    config_file = write_lines(data / "bert_config.json", [json.dumps(CONFIG)])
    bad_config = write_lines(data / "bad.json", [json.dumps({**CONFIG, "num_attention_heads": 3})])
    rng = np.random.RandomState(0)
    saved = {
        "bert/embeddings/word_embeddings": rng.randn(11, 8).astype(np.float32),
        "bert/pooler/dense/bias": rng.randn(8).astype(np.float32),
        "cls/not_in_the_graph": rng.randn(3).astype(np.float32),
    }
    partial = write_checkpoint(data / "partial.ckpt", saved)
    mismatched = write_checkpoint(
        data / "mismatched.ckpt", {"bert/pooler/dense/bias": np.zeros(9, np.float32)}
    )
    result = _run_alone(
        "modeling", tmp_path, _MODELING_SOURCE, config_file, bad_config, partial, mismatched, data
    )

    assert bad_config in result["bad_config"] and "num_attention_heads" in result["bad_config"]
    mismatch = result["mismatch"]
    assert mismatched in mismatch and "bert/pooler/dense/bias" in mismatch
    assert "[8] in the model" in mismatch and "[9] in the checkpoint" in mismatch
    # The checkpoint's variables the graph has, in checkpoint (sorted) order.
    loaded = ["bert/embeddings/word_embeddings", "bert/pooler/dense/bias"]
    assert result["assignment_map"] == [[name, name] for name in loaded]
    assert result["initialized"] == sorted(loaded + [name + ":0" for name in loaded])

    weights = dict(np.load(data / "weights.npz"))
    for name in loaded:
        np.testing.assert_array_equal(weights[name], saved[name])
    outputs = np.load(data / "outputs.npz")
    expected = npr.bert(
        weights,
        types.SimpleNamespace(**CONFIG),
        outputs["ids"],
        outputs["mask"],
        outputs["types"],
    )
    for key, name in [
        ("sequence", "sequence_output"),
        ("pooled", "pooled_output"),
        ("embedding", "embedding_output"),
    ]:
        np.testing.assert_allclose(outputs[key], expected[name], rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- optimization

_OPTIMIZATION_SOURCE = """
import numpy as np
import tensorflow as tf

import optimization

(data_file,) = args
data = np.load(data_file)
graph = tf.Graph()
with graph.as_default():
    with tf.compat.v1.variable_scope("dense"):
        kernel = tf.compat.v1.get_variable("kernel", initializer=data["kernel"])
        bias = tf.compat.v1.get_variable("bias", initializer=data["bias"])
    prediction = tf.matmul(tf.constant(data["x"]), kernel) + bias
    loss = tf.reduce_sum(tf.square(prediction - tf.constant(data["y"])))
    train_op = optimization.create_optimizer(loss, 0.1, 10, 0, use_tpu=False)
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(tf.compat.v1.global_variables_initializer())
        steps = []
        for _ in range(2):
            session.run(train_op)
            steps.append([session.run(kernel).tolist(), session.run(bias).tolist()])
        global_step = int(session.run(tf.compat.v1.train.get_global_step()))
result = {"steps": steps, "global_step": global_step}
"""


def test_optimization_alone(tmp_path):
    rng = np.random.RandomState(3)
    values = {
        "x": rng.randn(4, 3).astype(np.float32),
        "y": 5.0 * rng.randn(4, 2).astype(np.float32),  # large: the gradients get clipped
        "kernel": rng.randn(3, 2).astype(np.float32),
        "bias": rng.randn(2).astype(np.float32),
    }
    np.savez(tmp_path / "data.npz", **values)
    result = _run_alone("optimization", tmp_path, _OPTIMIZATION_SOURCE, tmp_path / "data.npz")
    assert result["global_step"] == 2

    # Two steps of AdamWeightDecay in float64: gradients of the squared error
    # clipped to global norm 1, learning rate 0.1 decaying linearly to 0 at step
    # 10, no warmup; weight decay 0.01 on the kernel, none on the bias.
    x, y = values["x"].astype(np.float64), values["y"].astype(np.float64)
    kernel, bias = values["kernel"].astype(np.float64), values["bias"].astype(np.float64)
    kernel_m = kernel_v = bias_m = bias_v = 0.0
    for step, (got_kernel, got_bias) in enumerate(result["steps"]):
        residual = x @ kernel + bias - y
        grad_kernel, grad_bias = npr.clip_by_global_norm(
            [2.0 * x.T @ residual, 2.0 * residual.sum(axis=0)], 1.0
        )
        assert np.sqrt(np.sum(grad_kernel**2) + np.sum(grad_bias**2)) == pytest.approx(1.0)
        lr = 0.1 * (1.0 - step / 10)
        kernel, kernel_m, kernel_v = npr.adam_step(
            kernel, kernel_m, kernel_v, grad_kernel, lr, weight_decay_rate=0.01
        )
        bias, bias_m, bias_v = npr.adam_step(bias, bias_m, bias_v, grad_bias, lr)
        np.testing.assert_allclose(got_kernel, kernel, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got_bias, bias, rtol=1e-5, atol=1e-6)
