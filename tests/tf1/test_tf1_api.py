"""The TF 1.x module's pieces in-process: names of layers, TF internals and deep contrib
paths, model_fn spec checks, user-code failures, hints, input-position files.

Nothing here calls tf1.install() (which switches the process to TF 1.x
behaviour): the module is built (tf1.build_module) and its pieces used in plain
tf.compat.v1 graphs. The numbers of the layers are pinned against TF 1.15
in test_tf1_golden.py.
"""

import os
import sys

import pytest
import tensorflow as tf

from bert_lib import tf1
from bert_lib.plumbing import errors
from bert_lib.tf1 import estimator as tf1_estimator
from bert_lib.tf1.estimator import input_files, specs
from bert_lib.tf1.layers import keras_layers
from bert_lib.tf1.layers import tf_layers as tf1_layers
from bert_lib.tf1.machinery import namespaces as tf1_api
from bert_lib.tf1.machinery import user_errors
from bert_lib.tf1.rnn import cells as rnn_cells
from bert_lib.tf1.rnn import loops as tf1_rnn

V1 = tf.compat.v1


@pytest.fixture(scope="module")
def tf1_module():
    return tf1.build_module(tf1_estimator.ONE_DEVICE)


def _names():
    return [v.op.name for v in V1.global_variables()]


# ---------------------------------------------------------------------------
# Layer names


def test_keras_layers_and_tf_layers_share_one_name_counter_per_graph():
    for _ in range(2):
        with tf.Graph().as_default():
            x = V1.placeholder(tf.float32, [2, 3])
            tf1_layers.dense(x, 4)
            tf1_layers.dense(x, 4, name="named")  # a named layer takes no number
            tf1_layers.dense(x, 4)
            with V1.variable_scope("head"):
                keras_layers.Dense(2)(x)
            keras_layers.Dropout(0.5)(x, training=True)
            assert _names() == [
                "dense/kernel",
                "dense/bias",
                "named/kernel",
                "named/bias",
                "dense_1/kernel",
                "dense_1/bias",
                "head/dense_2/kernel",
                "head/dense_2/bias",
            ]


def test_batch_normalization_refuses_renorm_and_applies_regularizers():
    """Both APIs: renorm and virtual batches refused, naming the API's class and the user's
    line; fused taken; a beta regularizer adds one loss and no variable of its own (its
    value against TF 1.15's is in the golden layer cases)."""
    for module, api in ((tf1_layers, "tf.layers"), (keras_layers, "tf.keras.layers")):
        for refused in ({"renorm": True}, {"virtual_batch_size": 2}):
            with pytest.raises(tf1_api.UnsupportedAPIError) as raised:
                module.BatchNormalization(**refused)
            where, _, text = str(raised.value).partition(": ")
            assert where.startswith(f"{__file__}:")  # the line that made the layer
            assert text.startswith(
                f"{api}.BatchNormalization(renorm= / virtual_batch_size=) is not provided"
            )
        with tf.Graph().as_default():
            layer = module.BatchNormalization(
                fused=True, beta_regularizer=lambda w: 2 * w, gamma_constraint=abs
            )
            layer(V1.placeholder(tf.float32, [2, 3]))
            assert len(layer.losses) == 1
            assert [name.split("/")[-1] for name in _names()] == [
                "gamma",
                "beta",
                "moving_mean",
                "moving_variance",
            ]


def test_rnn_cells_take_their_scope_under_the_loops_scope():
    with tf.Graph().as_default():
        x = V1.placeholder(tf.float32, [2, 5, 3])
        tf1_rnn.bidirectional_dynamic_rnn(
            rnn_cells.LSTMCell(4),
            rnn_cells.DropoutWrapper(rnn_cells.GRUCell(2), output_keep_prob=0.5),
            x,
            sequence_length=[5, 3],
            dtype=tf.float32,
        )
        assert _names() == [
            "bidirectional_rnn/fw/lstm_cell/kernel",
            "bidirectional_rnn/fw/lstm_cell/bias",
            "bidirectional_rnn/bw/gru_cell/gates/kernel",
            "bidirectional_rnn/bw/gru_cell/gates/bias",
            "bidirectional_rnn/bw/gru_cell/candidate/kernel",
            "bidirectional_rnn/bw/gru_cell/candidate/bias",
        ]


def test_layer_norms_keep_their_epsilon_in_a_frozen_graph(tf1_module):
    """contrib's layer_norm, Keras' LayerNormalization and tf.nn.batch_normalization, each
    frozen (its variables made constants, their reads removed, as bert-as-service serves
    BERT), against numpy: the epsilon each was given, where TensorFlow 2's oneDNN optimizer
    fused the TF 1.15 graph of a layer norm with constant scale and offset into one op of
    epsilon 0.001."""
    import numpy as np

    rng = np.random.RandomState(3)
    # Rows whose variance (about 1e-6) is far below 0.001: epsilon decides the output.
    data = rng.normal(0.0, 1e-3, (2, 3, 8)).astype(np.float32)
    gamma = rng.normal(1.0, 0.1, 8).astype(np.float32)
    beta = rng.normal(0.0, 0.1, 8).astype(np.float32)

    def batch_normalization(x):
        mean, variance = tf.nn.moments(x, [2], keepdims=True)
        return tf1_module.nn.batch_normalization(x, mean, variance, beta, gamma, 1e-12)

    for name, layer_norm, epsilon in (
        ("layer_norm", lambda x: tf1_layers.layer_norm(x, begin_norm_axis=-1), 1e-12),
        ("LayerNormalization", keras_layers.LayerNormalization(epsilon=1e-6), 1e-6),
        ("batch_normalization", batch_normalization, 1e-12),
    ):
        with tf.Graph().as_default():
            x = V1.placeholder(tf.float32, [None, None, 8], name="x")
            tf.identity(layer_norm(x), name="output")
            with V1.Session() as session:
                session.run(V1.global_variables_initializer())
                for variable in V1.global_variables():
                    session.run(variable.assign(gamma if "gamma" in variable.name else beta))
                frozen = V1.graph_util.convert_variables_to_constants(
                    session, session.graph.as_graph_def(), ["output"]
                )
        frozen = V1.graph_util.remove_training_nodes(frozen, ["output"])
        with tf.Graph().as_default():
            V1.import_graph_def(frozen, name="")
            with V1.Session() as session:
                got = session.run("output:0", {"x:0": data})
        centred = data - data.mean(axis=-1, keepdims=True)
        want = centred / np.sqrt(data.var(axis=-1, keepdims=True) + epsilon) * gamma + beta
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)


# ---------------------------------------------------------------------------
# tensorflow.python.* and tf.contrib module paths


def test_tensorflow_python_modules_have_what_tf115s_had(tf1_module):
    python = tf1_module.python
    assert python.ops.variable_scope.variable is V1.Variable
    assert python.ops.array_ops.stack is tf.stack
    assert python.ops.array_ops.placeholder is V1.placeholder
    assert python.framework.ops.Tensor is tf.Tensor
    assert python.framework.ops.IndexedSlicesValue.__name__ == "IndexedSlicesValue"
    assert python.util.nest.is_sequence([1]) is True
    assert python.ops.control_flow_ops.cond is tf1_module.cond
    assert python.ops.rnn_cell_impl.LSTMStateTuple is rnn_cells.LSTMStateTuple
    assert python.ops.rnn.dynamic_rnn is tf1_rnn.dynamic_rnn
    assert python.estimator.model_fn.EstimatorSpec is tf1_module.estimator.EstimatorSpec
    assert python.ops.metrics_impl._streaming_confusion_matrix is not None  # noqa: SLF001
    assert python.layers.core.Dense is tf1_module.layers.Dense
    assert python.keras.layers.LSTM is tf1_module.keras.layers.LSTM
    assert python.framework.graph_util.convert_variables_to_constants is not None
    with pytest.raises(tf1_api.UnsupportedAPIError, match="tensorflow.python.ops.no_such"):
        python.ops.no_such  # noqa: B018


def test_contrib_module_paths_lead_to_what_the_package_provides(tf1_module):
    contrib = tf1_module.contrib
    layers = contrib.layers.python.layers
    assert layers.initializers.xavier_initializer is contrib.layers.xavier_initializer
    assert layers.layers.layer_norm is contrib.layers.layer_norm
    assert contrib.rnn.python.ops.rnn_cell.LSTMBlockCell is rnn_cells.LSTMBlockCell
    assert contrib.rnn.python.ops.core_rnn_cell._linear is tf1_rnn.linear  # noqa: SLF001
    assert contrib.crf.python.ops.crf.crf_decode is contrib.crf.crf_decode
    assert contrib.tpu.python.tpu.tpu_estimator.TPUEstimator is contrib.tpu.TPUEstimator
    assert tf1_module.estimator.tpu.TPUEstimator is contrib.tpu.TPUEstimator
    assert tf1_module.estimator.tpu.InputPipelineConfig.PER_HOST_V2 == 3
    with pytest.raises(
        tf1_api.UnsupportedAPIError,
        match=r"tf\.contrib\.layers\.python\.layers\.initializers\.variance is not provided",
    ):
        layers.initializers.variance  # noqa: B018


def test_a_refusal_names_where_the_name_is_provided(tf1_module):
    find = tf1_api.make_finder(tf1_module)
    assert find("LSTMBlockCell") == "tf.contrib.rnn.LSTMBlockCell"
    assert find("dense") == "tf.layers.dense"
    assert find("LayerNormalization") == "tf.keras.layers.LayerNormalization"
    assert find("get_or_create_global_step") == "tf.train.get_or_create_global_step"
    assert find("NASCell") is None


# ---------------------------------------------------------------------------
# model_fn specs, as TF 1.15 checked them


def test_eval_metric_ops_must_be_value_and_update_pairs():
    with tf.Graph().as_default():
        value = tf.constant(1.0)
        specs.check_eval_metric_ops({"good": (value, value.op)}, "a.py:3")
        with pytest.raises(specs.SpecError) as raised:
            specs.check_eval_metric_ops({"good": (value, value.op), "f1": value}, "a.py:3")
    assert str(raised.value) == (
        "a.py:3: Values of eval_metric_ops must be (metric_value, update_op) tuples, given: "
        f"{value} for key: f1"
    )
    assert isinstance(raised.value, errors.UsageError)


def test_spec_fields_are_refused_with_tf115s_messages():
    with tf.Graph().as_default():
        vector = tf.zeros([3])
        cases = [
            (lambda: specs.check_train_op(None, "train", "w"), "w: Missing train_op."),
            (lambda: specs.check_loss(None, "eval", "w"), "w: Missing loss."),
            (
                lambda: specs.check_loss(vector, "train", "w"),
                f"w: Loss must be scalar, given: {vector}",
            ),
            (lambda: specs.check_predictions(None, "infer", "w"), "w: Missing predictions."),
            (
                lambda: specs.check_predictions({"p": 1}, "infer", "w"),
                "w: predictions[p] must be Tensor, given: 1",
            ),
            (
                lambda: specs.check_hooks([object], "w"),
                f"w: All hooks must be SessionRunHook instances, given: {object}",
            ),
            (
                lambda: specs.check_host_call("eval_metrics", (len, [1, 2]), "w"),
                "w: In TPUEstimatorSpec.eval_metrics, length of tensors 2 does not match "
                "method args of the function, which takes 1.",
            ),
            (
                lambda: specs.check_host_call("eval_metrics", (1, []), "w"),
                "w: eval_metrics[0] should be callable.",
            ),
        ]
        for check, message in cases:
            with pytest.raises(specs.SpecError) as raised:
                check()
            assert str(raised.value) == message
        assert specs.check_loss(tf.zeros([1]), "train", "w").shape == []  # [1] -> scalar


def test_what_a_metric_fn_returns_is_checked_at_its_definition():
    def metric_fn(x):
        return {"mean": x}

    line = metric_fn.__code__.co_firstlineno
    with tf.Graph().as_default():
        with pytest.raises(specs.SpecError, match=rf"^{__file__}:{line}: Values of eval_metric"):
            specs.checked_metric_fn(metric_fn)(tf.constant(1.0))


# ---------------------------------------------------------------------------
# Failures of user code


def _user_function(tmp_path, body):
    """A function compiled from a file outside the project: user code to run_tf1.py."""
    path = tmp_path / "user_script.py"
    source = "def f():\n" + "".join(f"    {line}\n" for line in body)
    path.write_text(source)
    namespace = {}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace["f"], str(path)


def test_an_oserror_in_user_code_is_reported_at_the_users_line(tmp_path):
    f, path = _user_function(tmp_path, ["x = 1", "open('/no/such/dir/out.txt', 'w')"])
    with pytest.raises(OSError) as raised:
        f()
    located = user_errors.locate(raised.value)
    assert isinstance(located, user_errors.UserCodeError)
    assert str(located) == (
        f"{path}:3: [Errno 2] No such file or directory: '/no/such/dir/out.txt'"
    )


def test_a_bug_in_user_code_keeps_its_traceback_and_ends_in_one_line(tmp_path, capsys):
    f, path = _user_function(tmp_path, ["return {}['missing']"])
    with pytest.raises(KeyError) as raised:
        f()
    located = user_errors.locate(raised.value)
    assert str(located) == f"{path}:2: KeyError: 'missing'"
    assert "Traceback" in capsys.readouterr().err


def test_a_syntax_error_names_the_users_file_and_line(tmp_path):
    path = tmp_path / "broken.py"
    path.write_text("x = 1\ndef f(:\n")
    with pytest.raises(SyntaxError) as raised:
        compile(path.read_text(), str(path), "exec")
    assert str(user_errors.locate(raised.value)) == f"{path}:2: SyntaxError: invalid syntax"


def test_refusals_and_errors_outside_user_code_keep_their_own_text():
    for error in (errors.UsageError("--flag: bad"), errors.RunError("loss is NaN")):
        assert user_errors.locate(error) is error
    interrupt = KeyboardInterrupt()
    assert user_errors.locate(interrupt) is interrupt


# ---------------------------------------------------------------------------
# Input-position files


def test_input_position_files_without_their_checkpoint_are_swept(tmp_path):
    for name in ("model.ckpt-3.input", "model.ckpt-6.input", "model.ckpt-6.index"):
        (tmp_path / name).write_text("x")
    input_files.sweep(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["model.ckpt-6.index", "model.ckpt-6.input"]
    input_files.sweep(str(tmp_path / "gone"))  # a deleted directory: no error


def test_user_code_file_detection_counts_this_tmp_path_as_users(tmp_path):
    assert tf1.is_user_file(str(tmp_path / "x.py"))
    assert not tf1.is_user_file(tf1.__file__)
    assert not tf1.is_user_file(sys.modules["tensorflow"].__file__)


# ---------------------------------------------------------------------------
# input_fns returning a Dataset iterator's tensors

_X = [[1.0, 2.0], [3.0, 1.0], [0.0, 1.0], [2.0, 2.0]]
_Y = [[1.0], [2.0], [0.5], [1.5]]


def _linear_model_fn(features, labels, mode):
    w = V1.get_variable("w", [2, 1], initializer=V1.zeros_initializer())
    prediction = tf.matmul(features["x"], w)
    if mode == "infer":
        return tf1_estimator.EstimatorSpec(mode, predictions=prediction)
    loss = tf.reduce_mean(tf.square(prediction - labels))
    step = V1.train.GradientDescentOptimizer(0.1).minimize(loss, V1.train.get_global_step())
    return tf1_estimator.EstimatorSpec(mode, loss=loss, train_op=step)


def test_input_fn_returning_get_next_trains_on_the_iterators_elements(tf1_module, tmp_path):
    """TF 1.x input_fns ended with make_one_shot_iterator().get_next() (or an initializable
    iterator's): the Estimator trains on those elements, three full-batch gradient steps
    here, as numpy computes them; the tensors may be rearranged into the returned
    structure. Training writes graph.pbtxt and a checkpoint of step 0 first, as TF 1.15's
    Estimator did."""
    import numpy as np

    def one_shot_input_fn():
        dataset = V1.data.Dataset.from_tensor_slices((_X, _Y)).batch(4).repeat(3)
        x, y = dataset.make_one_shot_iterator().get_next()
        return {"x": x}, y

    def initializable_input_fn():
        dataset = V1.data.Dataset.from_tensor_slices(({"x": _X}, _Y)).batch(4)
        return V1.data.make_initializable_iterator(dataset).get_next()

    estimator = tf1_module.estimator.Estimator(_linear_model_fn, str(tmp_path))
    estimator.train(one_shot_input_fn)
    x, y, w = np.array(_X), np.array(_Y), np.zeros((2, 1))
    for _ in range(3):
        w -= 0.1 * 2 / len(x) * x.T.dot(x.dot(w) - y)
    np.testing.assert_allclose(estimator.get_variable_value("w"), w, rtol=1e-6)
    # What TF 1.15's Estimator wrote as training started, beside the last step's checkpoint.
    assert {"graph.pbtxt", "model.ckpt-0.index", "model.ckpt-3.index"} <= set(os.listdir(tmp_path))
    evaluated = estimator.evaluate(initializable_input_fn)
    np.testing.assert_allclose(evaluated["loss"], np.mean((x.dot(w) - y) ** 2), rtol=1e-6)


def _numpy_steps(x, y, batches):
    """The weights of _linear_model_fn after a gradient step on each batch (row indexes)."""
    import numpy as np

    w = np.zeros((2, 1))
    for rows in batches:
        bx, by = x[rows], y[rows]
        w -= 0.1 * 2 / len(bx) * bx.T.dot(bx.dot(w) - by)
    return w


def _csv_input_fn(path, epochs, batch_size=3, shuffle=False):
    """A queue-based input_fn of 2017: file names queued, lines read, parsed and batched."""

    def input_fn():
        files = V1.train.string_input_producer([path], num_epochs=epochs, shuffle=False)
        _, line = V1.TextLineReader().read(files)
        a, b, y = V1.io.decode_csv(line, [[0.0], [0.0], [0.0]])
        tensors = [tf.stack([a, b]), tf.reshape(y, [1])]
        if shuffle:
            x, y = V1.train.shuffle_batch(
                tensors,
                batch_size,
                capacity=8,
                min_after_dequeue=2,
                num_threads=2,
                allow_smaller_final_batch=True,
            )
        else:
            x, y = V1.train.batch(tensors, batch_size, allow_smaller_final_batch=True)
        return {"x": x}, y

    return input_fn


@pytest.mark.slow
def test_queue_based_input_fns_are_read_as_monitored_session_read_them(tf1_module, tmp_path):
    """string_input_producer, a reader and tf.train.batch (their queue runners started as
    MonitoredSession started them): training reads the batches in the file's order, across
    epochs (a smaller last batch where allowed), and evaluation and prediction one epoch,
    each as numpy computes them; shuffle_batch gives every example once an epoch."""
    import numpy as np

    x, y = np.array(_X), np.array(_Y)
    path = tmp_path / "data.csv"
    path.write_text("".join(f"{a},{b},{t[0]}\n" for (a, b), t in zip(_X, _Y)))
    estimator = tf1_module.estimator.Estimator(_linear_model_fn, str(tmp_path / "model"))
    estimator.train(_csv_input_fn(str(path), epochs=2))  # 8 lines in batches of 3: 3, 3, 2
    w = _numpy_steps(x, y, [[0, 1, 2], [3, 0, 1], [2, 3]])
    np.testing.assert_allclose(estimator.get_variable_value("w"), w, rtol=1e-6)
    assert estimator.get_variable_value("global_step") == 3
    # One epoch, in batches of 3 and 1: the loss metric is the mean of the batches' means.
    evaluated = estimator.evaluate(_csv_input_fn(str(path), epochs=1))
    squared = (x.dot(w) - y) ** 2
    np.testing.assert_allclose(
        evaluated["loss"], (squared[:3].mean() + squared[3:].mean()) / 2, rtol=1e-6
    )
    predicted = list(estimator.predict(_csv_input_fn(str(path), epochs=1)))
    np.testing.assert_allclose(np.concatenate(predicted), x.dot(w).ravel(), rtol=1e-6)
    shuffled = tf1_module.estimator.Estimator(_linear_model_fn, str(tmp_path / "shuffled"))
    shuffled.train(_csv_input_fn(str(path), epochs=1, batch_size=4, shuffle=True))
    # One full batch of the 4 examples, in whatever order: the same step.
    np.testing.assert_allclose(
        shuffled.get_variable_value("w"), _numpy_steps(x, y, [[0, 1, 2, 3]]), rtol=1e-6
    )


@pytest.mark.slow
def test_input_fn_tensors_computed_after_get_next_are_read_run_after_run(tf1_module, tmp_path):
    """Tensors an input_fn computes from an iterator's get_next() (here doubled) are the
    elements, as TF 1.15's Estimator ran them; a queue runner's failure (a file that is not
    there) is raised as MonitoredSession raised it; placeholders, which a hook fed in TF
    1.x, are refused naming the API."""
    import numpy as np

    def computed_input_fn():
        dataset = V1.data.Dataset.from_tensor_slices((_X, _Y)).batch(4).repeat(2)
        x, y = dataset.make_one_shot_iterator().get_next()
        return {"x": x * 2.0}, y

    estimator = tf1_module.estimator.Estimator(_linear_model_fn, str(tmp_path / "model"))
    estimator.train(computed_input_fn)
    x, y = 2.0 * np.array(_X), np.array(_Y)
    w = _numpy_steps(x, y, [[0, 1, 2, 3], [0, 1, 2, 3]])
    np.testing.assert_allclose(estimator.get_variable_value("w"), w, rtol=1e-6)
    with pytest.raises(tf.errors.NotFoundError, match="no_such.csv"):
        estimator.evaluate(_csv_input_fn(str(tmp_path / "no_such.csv"), epochs=1))

    def fed_input_fn():
        return {"x": V1.placeholder(tf.float32, [None, 2], name="fed_x")}, tf.zeros([4, 1])

    with pytest.raises(tf1_api.UnsupportedAPIError, match="fed through a placeholder .fed_x"):
        estimator.train(fed_input_fn, steps=1)

    def python_value_input_fn():  # TF 1.15 gave the model_fn the int itself
        return {"x": tf.constant(_X), "size": 4}, tf.constant(_Y)

    with pytest.raises(tf1_api.UnsupportedAPIError, match="labels hold int rather than tensors"):
        estimator.train(python_value_input_fn, steps=1)


def test_an_installed_tf1_package_missing_a_name_is_told_the_launcher_option(tmp_path):
    """A helper package of TF 1.x's years (tf_metrics calling tf.diag_part) is installed, so
    it gets TensorFlow 2 itself: the one line says which package and the option."""
    package_file = os.path.join(
        os.path.dirname(os.path.dirname(tf.__file__)), "tf_metrics", "__init__.py"
    )
    package, user = {}, {}
    message = "module 'tensorflow' has no attribute 'diag_part'"
    source = f"def precision():\n    raise AttributeError({message!r})\n"
    exec(compile(source, package_file, "exec"), package)
    user_file = str(tmp_path / "main.py")
    exec(compile("def model_fn(metric):\n    return metric()\n", user_file, "exec"), user)
    try:
        user["model_fn"](package["precision"])
    except AttributeError as error:
        located = user_errors.locate(error)
    assert str(located) == (
        f"{user_file}:2: AttributeError: module 'tensorflow' has no attribute 'diag_part' (in "
        "the installed package tf_metrics, which gets TensorFlow 2 itself; if it was written "
        "for TF 1.x, run with: run_tf1.py --tf1_packages=tf_metrics ...)"
    )


def test_contrib_variance_scaling_takes_factor_mode_uniform_with_contribs_deviations():
    """contrib's variance_scaling_initializer (factor, "FAN_AVG", uniform), as QANet and
    BiDAF code called it: uniform in +-sqrt(3 factor / n), else a normal of deviation
    sqrt(1.3 factor / n) cut at two deviations (whose own deviation is 0.8796 of that)."""
    import numpy as np

    contrib = tf1_layers.contrib_layers_module()
    fan_in, fan_out = 300, 500
    n = (fan_in + fan_out) / 2
    with tf.Graph().as_default(), V1.Session() as session:
        uniform = contrib.variance_scaling_initializer(1.5, "FAN_AVG", True, seed=1)
        normal = contrib.variance_scaling_initializer(factor=2.0, mode="FAN_AVG", seed=2)
        xavier = contrib.xavier_initializer(uniform=False, seed=3)
        u, g, x = session.run([init([fan_in, fan_out]) for init in (uniform, normal, xavier)])
    limit = np.sqrt(3 * 1.5 / n)
    assert -limit <= u.min() and u.max() <= limit and u.max() > 0.99 * limit
    for values, factor in ((g, 2.0), (x, 1.0)):
        deviation = np.sqrt(1.3 * factor / n)
        assert np.abs(values).max() <= 2 * deviation
        np.testing.assert_allclose(values.std(), 0.87962566 * deviation, rtol=0.01)
    with pytest.raises(TypeError, match="Unknown mode"):
        contrib.variance_scaling_initializer(mode="fan_avg")


def test_tf_keras_installed_is_tf_keras_sharing_the_layer_numbers(tmp_path, monkeypatch):
    """Where the tf_keras package (Keras 2) is installed, tf.keras of TF 1.x code is it,
    saying TF 1.15's version, its optimizers the legacy ones TF 1.15 had, and tf.layers
    count their layers in its per-graph counts (a stand-in package here: the real one runs
    the functional API against TF 1.15 in test_tf1_golden.py). Its recurrent layers are
    TF 1.15's: the v1 classes, under the same names (keras2_rnn.py)."""
    from bert_lib.tf1 import layers as tf1_layers_package
    from bert_lib.tf1.layers import layer_base

    package = tmp_path / "tf_keras"
    rnn = package / "src" / "layers" / "rnn"
    rnn.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "import types\n__version__ = '2.21.0'\n"
        "optimizers = types.SimpleNamespace(legacy=types.SimpleNamespace(SGD='legacy SGD'), "
        "get='get')\nInput = 'Input'\nlayers = types.SimpleNamespace(Layer=object)\n"
        "callbacks = types.SimpleNamespace()\n"
    )
    (package / "src" / "callbacks_v1.py").write_text("class TensorBoard:\n    pass\n")
    for init in (package / "src", package / "src" / "layers", rnn):
        (init / "__init__.py").write_text("")
    (package / "src" / "backend.py").write_text(
        "import collections\nCOUNTS = collections.defaultdict(int)\n"
        "def get_default_graph_uid_map():\n    return COUNTS\n"
    )
    classes = {"lstm_v1": "LSTM LSTMCell", "gru_v1": "GRU GRUCell"}
    classes.update(simple_rnn="SimpleRNN", base_rnn="RNN", stacked_rnn_cells="StackedRNNCells")
    for module, names in classes.items():
        (rnn / f"{module}.py").write_text("".join(f"class {n}: pass\n" for n in names.split()))
    # The real package, if installed and imported, steps aside for the stand-in.
    installed = {n: m for n, m in sys.modules.items() if n.split(".")[0] == "tf_keras"}
    for name in installed:
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        keras = tf1_layers_package.keras_module()
        assert (keras.__version__, keras.Input, keras.optimizers.SGD) == (
            "2.2.4-tf",
            "Input",
            "legacy SGD",
        )
        stand_in = sys.modules["tf_keras.src.layers.rnn.lstm_v1"]
        assert keras.layers.LSTM.__name__ == "LSTM"
        assert keras.layers.LSTM.__bases__ == (stand_in.LSTM,)
        assert keras.layers.LSTMCell is stand_in.LSTMCell
        counts = sys.modules["tf_keras.src.backend"].COUNTS
        counts[("", "dense")] = 2  # two Keras Dense layers came first
        with tf.Graph().as_default():
            # Its variables are named by their variable scope, as TF 1.15's tf.layers; its
            # number is taken from Keras's counts, so that the next Keras Dense is dense_3.
            tf1_layers.dense(V1.placeholder(tf.float32, [2, 3]), 4)
            assert _names() == ["dense/kernel", "dense/bias"]
        assert counts[("", "dense")] == 3
    finally:
        layer_base.share_names_with_keras2(None)
        for name in [n for n in sys.modules if n.split(".")[0] == "tf_keras"]:
            del sys.modules[name]
        sys.modules.update(installed)


def test_early_stopping_hooks_put_tf1s_stop_variable_in_the_checkpoint(tf1_module, tmp_path):
    """TF 1.x's stop_if_no_*_hook made `signal_early_stopping/STOP` (bool, False) in the
    training graph, so its checkpoints hold it and a TF 1.x restore of ours needs it."""

    def input_fn():
        return V1.data.Dataset.from_tensor_slices(({"x": _X}, _Y)).batch(4).repeat(2)

    estimator = tf1_module.estimator.Estimator(_linear_model_fn, str(tmp_path))
    hook = tf1_module.estimator.experimental.stop_if_no_decrease_hook(estimator, "loss", 100)
    estimator.train(input_fn, hooks=[hook])
    variables = dict(tf.train.list_variables(str(tmp_path)))
    assert variables["signal_early_stopping/STOP"] == []
    assert not tf.train.load_variable(str(tmp_path), "signal_early_stopping/STOP")


def test_evaluation_hooks_of_the_spec_and_of_evaluate_run_around_each_batch(tf1_module, tmp_path):
    """An EVAL spec's evaluation_hooks (ELECTRA's progress hook) and evaluate(hooks=) run as
    tf.estimator ran them: begin, then before_run / after_run around each batch, fetching
    what they ask for (here each batch's loss, whose mean evaluate returns), then end."""
    import numpy as np

    seen = {"spec": [], "given": []}

    class LossHook(V1.train.SessionRunHook):
        def __init__(self, key, loss=None):
            self.key, self.loss = key, loss

        def begin(self):
            self.loss = self.loss if self.loss is not None else V1.get_collection("eval_loss")[0]

        def before_run(self, run_context):
            return V1.train.SessionRunArgs(self.loss)

        def after_run(self, run_context, run_values):
            seen[self.key].append(float(run_values.results))

    def model_fn(features, labels, mode):
        spec = _linear_model_fn(features, labels, mode)
        if mode != "eval":
            return spec
        V1.add_to_collection("eval_loss", spec.loss)
        return tf1_estimator.EstimatorSpec(
            mode, loss=spec.loss, evaluation_hooks=[LossHook("spec", spec.loss)]
        )

    def input_fn():
        return V1.data.Dataset.from_tensor_slices(({"x": _X}, _Y)).batch(2)

    estimator = tf1_module.estimator.Estimator(model_fn, str(tmp_path))
    estimator.train(input_fn)
    w = estimator.get_variable_value("w")
    evaluated = estimator.evaluate(input_fn, hooks=[LossHook("given")])
    x, y = np.array(_X), np.array(_Y)
    losses = [np.mean((x[i : i + 2].dot(w) - y[i : i + 2]) ** 2) for i in (0, 2)]
    np.testing.assert_allclose(seen["spec"], losses, rtol=1e-6)
    np.testing.assert_allclose(seen["given"], losses, rtol=1e-6)
    np.testing.assert_allclose(evaluated["loss"], np.mean(losses), rtol=1e-6)


def test_contrib_batch_norm_has_contribs_defaults_names_and_update_ops():
    """tf.contrib.layers.batch_norm (a TextCNN's conv output): contrib's defaults (no gamma,
    decay 0.999), variables under its scope ("BatchNorm", numbered, or the one given), the
    batch's own statistics in training, the moving averages' updates in UPDATE_OPS."""
    import numpy as np

    contrib = tf1_layers.contrib_layers_module()
    x = np.random.RandomState(0).normal(2.0, 3.0, (8, 5, 1, 4)).astype(np.float32)
    with tf.Graph().as_default(), V1.Session() as session:
        out = contrib.batch_norm(tf.constant(x), is_training=True, scope="cnn_bn_")
        contrib.batch_norm(tf.constant(x), is_training=False)
        contrib.batch_norm(tf.constant(x), is_training=False)
        session.run(V1.global_variables_initializer())
        got = session.run(out)
        updates = V1.get_collection(V1.GraphKeys.UPDATE_OPS)
        session.run(updates)
        moving_mean = session.run(V1.global_variables("cnn_bn_/moving_mean")[0])
        names = _names()
    assert names == [
        f"{scope}/{name}"
        for scope in ("cnn_bn_", "BatchNorm", "BatchNorm_1")
        for name in ("beta", "moving_mean", "moving_variance")
    ]
    mean, variance = x.mean(axis=(0, 1, 2)), x.var(axis=(0, 1, 2))
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(variance + 0.001), atol=1e-5)
    assert len(updates) == 2  # the training layer's moving mean and variance
    np.testing.assert_allclose(moving_mean, 0.001 * mean, rtol=1e-4)
