"""TF 1.x research code (tests/data/tf1_scripts) under TensorFlow 1.15 and through run_tf1.py.

Part of the tf1 check. The scripts written here in the manner of code
derived from BERT (a BERT + BiLSTM + CRF tagger with a metrics module on
TF internals, an ELECTRA-style tf.estimator.tpu fine-tuner, a
tf.keras.layers classifier; their flags in tests/data/golden/tf1_15/runs.json)
are trained by both; each checkpoint is then evaluated and predicted from
by both, so a checkpoint goes from TF 1.15 to run_tf1.py and back. The RNN
and Keras layer cases compare names, outputs and gradients.
"""

import json
import os
import shutil

from .common import GOLDEN, REPO
from .comparators import compare_checkpoint_variables, compare_npz, compare_text_with_numbers
from .launcher import copy_checkpoint, newest_checkpoint

SCRIPTS = os.path.join(REPO, "tests", "data", "tf1_scripts")
SIDES = {"tf115": False, "run_tf1": True}  # side -> through run_tf1.py


def _runs():
    with open(os.path.join(GOLDEN, "tf1_15", "runs.json"), encoding="utf-8") as f:
        return json.load(f)


def _flags(spec, output_dir, work):
    """The script's flags of runs.json, writing to output_dir (its data made in `work`)."""
    script = os.path.join(SCRIPTS, spec["script"])
    values = {"script_dir": os.path.dirname(script), "work": work}
    return [f"--{spec['output_flag']}={output_dir}", *(f.format(**values) for f in spec["flags"])]


def check_tf1_research(run, report):
    for side, through in SIDES.items():
        run.user_script(
            os.path.join(SCRIPTS, "layer_cases", "run_layer_cases.py"),
            [f"--output_file={run.path(f'tf1_layers_{side}.npz')}"],
            f"tf1_layers_{side}.log",
            through,
        )
    report.add(
        "tf1",
        "RNN and Keras layer cases: TF 1.15 vs run_tf1",
        compare_npz(run.path("tf1_layers_tf115.npz"), run.path("tf1_layers_run_tf1.npz")),
    )
    for name, spec in sorted(_runs().items()):
        _check_script(run, report, name, spec)


def _check_script(run, report, name, spec):
    script = os.path.join(SCRIPTS, spec["script"])
    trained = {}
    for side, through in SIDES.items():
        directory = run.path(f"tf1_{name}_{side}")
        if os.path.exists(directory):
            shutil.rmtree(directory)
        flags = _flags(spec, directory, run.path(f"tf1_{name}_data"))
        run.user_script(script, [*flags, "--do_train"], f"tf1_{name}_{side}.log", through)
        trained[side] = newest_checkpoint(directory)
    report.add(
        "tf1",
        f"{name}: the variables of TF 1.15's and run_tf1's checkpoints",
        compare_checkpoint_variables(trained["tf115"], trained["run_tf1"]),
    )
    for trainer, checkpoint in trained.items():
        outputs = {}
        for side, through in SIDES.items():
            directory = run.path(f"tf1_{name}_{trainer}_by_{side}")
            copy_checkpoint(checkpoint, directory)
            flags = _flags(spec, directory, run.path(f"tf1_{name}_data"))
            log = f"tf1_{name}_{trainer}_by_{side}.log"
            run.user_script(script, [*flags, "--do_eval", "--do_predict"], log, through)
            outputs[side] = directory
        for output in spec["outputs"]:
            report.add(
                "tf1",
                f"{name}: {output} from {trainer}'s checkpoint, TF 1.15 vs run_tf1",
                compare_text_with_numbers(
                    os.path.join(outputs["tf115"], output),
                    os.path.join(outputs["run_tf1"], output),
                ),
            )
