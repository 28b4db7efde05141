"""Converts BERT checkpoints between this repository's format, Hugging Face's and TF Hub's.

    python convert_checkpoint.py --direction=hf_to_tf --input=HF_DIR --output_dir=OUT
    python convert_checkpoint.py --direction=tf_to_hf --input=CKPT_PREFIX \\
        --bert_config_file=bert_config.json --vocab_file=vocab.txt \\
        --do_lower_case=True --output_dir=OUT [--task_name=TASK]
    python convert_checkpoint.py --direction=hub_to_tf --input=HUB_DIR --output_dir=OUT
    python convert_checkpoint.py --direction=tf_to_hub --input=CKPT_PREFIX \\
        --bert_config_file=bert_config.json --vocab_file=vocab.txt \\
        --do_lower_case=True --output_dir=OUT [--with_mlm]

hf_to_tf reads a directory as Hugging Face's `save_pretrained` writes it
(config.json, model.safetensors or its sharded index, or pytorch_model.bin
when torch is installed; vocab.txt or tokenizer.json; tokenizer_config.json)
and writes OUT/bert_config.json, OUT/vocab.txt and OUT/bert_model.ckpt.*
under the variable names the scripts use, ready for --init_checkpoint.
tf_to_hf reads any checkpoint the scripts read or write and writes
OUT/config.json, OUT/model.safetensors, OUT/vocab.txt and
OUT/tokenizer_config.json. Safetensors files are read and written with numpy
alone.

hub_to_tf and tf_to_hub are tfhub_import's import_encoder and
tfhub_export's export_encoder: a BERT encoder in the TF Hub SavedModel format (as TF Hub,
Kaggle and TensorFlow Model Garden publish them: called with
input_word_ids, input_mask and input_type_ids, it returns pooled_output,
sequence_output and encoder_outputs, and carries its vocab_file and
do_lower_case) becomes the same three files as hf_to_tf writes, and any
checkpoint becomes such an encoder, with --with_mlm its masked LM head too
(the `mlm` sub-object). Like hf_to_tf, hub_to_tf prints the flags that use
the result.

Heads that are present carry over: the pretraining heads (cls/predictions,
cls/seq_relationship), run_classifier's output_weights / output_bias
(Hugging Face's classifier.*) and run_squad's cls/squad/output_* (qa_outputs.*,
row 0 the start logits, row 1 the end logits). Dense kernels are stored
[in, out] here and [out, in] there; the head matrices above are [out, in] in
both. Hugging Face's question answering and masked LM models have no
pooler, so none is required from them and none is written to them. Floating
tensors are float32 here; float16 / bfloat16 sources are widened exactly.
A TF Hub encoder holds the encoder alone (and the masked LM head): a task
head is left out of it and listed in the log.

Activations keep the function the model was trained with:

    ours (bert_config.json)   Hugging Face (config.json)
    gelu (tanh approx.)       gelu_new  (also read: gelu_pytorch_tanh, gelu_fast)
    gelu_erf (exact)          gelu      (also read: gelu_python)
    relu / tanh / linear      relu / tanh / linear

Optimizer slots, global_step and loss-scale variables are dropped, and every
source tensor that is not converted is listed in the log. Nothing appears in
OUT until every file has been written.

The formats live in bert_lib/export: tf_checkpoint.py (checkpoints in and
out), hugging_face.py (with hf_names.py and safetensors.py), tfhub_export.py
and tfhub_import.py (with tfhub_encoder.py and tfhub_mapping.py); each
direction checks what it writes with bert_runs/checks.py's
check_converted_model. This script reads the flags and runs one direction.
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import collections
import os

from absl import flags, logging

from bert_lib import script_flags
from bert_lib.export import hugging_face, tfhub_export, tfhub_import
from bert_lib.plumbing.errors import UsageError

FLAGS = flags.FLAGS

flags.DEFINE_enum(
    "direction",
    None,
    ["hf_to_tf", "tf_to_hf", "hub_to_tf", "tf_to_hub"],
    "hf_to_tf: a Hugging Face model directory to a checkpoint the scripts read; "
    "tf_to_hf: a checkpoint to a Hugging Face model directory; "
    "hub_to_tf: a TF Hub-format BERT encoder (a TF2 SavedModel directory) to a checkpoint; "
    "tf_to_hub: a checkpoint to a TF Hub-format BERT encoder.",
)
flags.DEFINE_string(
    "input",
    None,
    "hf_to_tf: the Hugging Face model directory; hub_to_tf: the encoder's SavedModel "
    "directory; tf_to_hf, tf_to_hub: the checkpoint path prefix (e.g. model.ckpt-1000) or a "
    "directory holding checkpoints (the newest is used).",
)
flags.DEFINE_bool(
    "with_mlm",
    False,
    "tf_to_hub: also export the masked LM head (cls/predictions/*, so a pre-training "
    "checkpoint) as the encoder's `mlm` sub-object, which returns mlm_logits.",
)
# The flags this script shares with the others (bert_lib/script_flags.py).
script_flags.define_flags(
    "output_dir",
    "bert_config_file",
    "vocab_file",
    "do_lower_case",
    "task_name",
    "show_traceback",
    module=__name__,
)

# The flags beyond --input and --output_dir each direction takes: (required, optional).
# Any other of these given on the command line is refused.
DIRECTION_FLAGS = {
    "hf_to_tf": ((), ()),
    "tf_to_hf": (("bert_config_file", "vocab_file"), ("do_lower_case", "task_name")),
    "hub_to_tf": ((), ()),
    "tf_to_hub": (("bert_config_file", "vocab_file"), ("do_lower_case", "with_mlm")),
}


# The flags this script reads, read once by settings_from_flags, and the
# names of those given on the command line (`given`).
Settings = collections.namedtuple(
    "Settings",
    "direction input output_dir bert_config_file vocab_file do_lower_case task_name with_mlm "
    "given",
)


def _run_hf_to_tf(settings):
    result = hugging_face.hf_to_tf(settings.input, settings.output_dir)
    out = settings.output_dir
    print(
        f"do_lower_case={result['do_lower_case']} (from {result['do_lower_case_source']}); "
        f"hidden_act={result['hidden_act']}. Use the model with:\n"
        f"  --bert_config_file={os.path.join(out, 'bert_config.json')} "
        f"--vocab_file={os.path.join(out, 'vocab.txt')} "
        f"--init_checkpoint={result['checkpoint']} "
        f"--do_lower_case={result['do_lower_case']}"
    )


def _run_tf_to_hf(settings):
    result = hugging_face.tf_to_hf(
        settings.input,
        settings.bert_config_file,
        settings.vocab_file,
        settings.do_lower_case,
        settings.output_dir,
        settings.task_name,
    )
    print(f"Wrote a {result['architecture']} to {settings.output_dir}")


def _run_hub_to_tf(settings):
    result = tfhub_import.import_encoder(settings.input, settings.output_dir)
    print(result["message"])


def _run_tf_to_hub(settings):
    result = tfhub_export.export_encoder(
        settings.input,
        settings.bert_config_file,
        settings.vocab_file,
        settings.do_lower_case,
        settings.output_dir,
        with_mlm=settings.with_mlm,
    )
    head = " and its masked LM head (mlm)" if result["with_mlm"] else ""
    print(
        f"Wrote a TF Hub-format BERT encoder{head} ({result['variables']} variables, "
        f"do_lower_case={bool(settings.do_lower_case)}) to {settings.output_dir}. Fine-tune it "
        f"with run_classifier_with_tfhub.py --bert_hub_module_handle={settings.output_dir}, or "
        "load it with tf.saved_model.load or hub.KerasLayer(..., trainable=True)."
    )


DIRECTIONS = {
    "hf_to_tf": _run_hf_to_tf,
    "tf_to_hf": _run_tf_to_hf,
    "hub_to_tf": _run_hub_to_tf,
    "tf_to_hub": _run_tf_to_hub,
}


def settings_from_flags():
    names = Settings._fields[:-1]
    given = {name for name in names if FLAGS[name].present}
    return Settings(*(FLAGS[name].value for name in names), given=given)


def _check_flags(settings):
    """Refuses a flag the direction does not take, and asks for one it needs."""
    direction = settings.direction
    required, optional = DIRECTION_FLAGS[direction]
    for name in sorted(set().union(*(r + o for r, o in DIRECTION_FLAGS.values()))):
        if name in settings.given and name not in required + optional:
            takers = [d for d, (r, o) in DIRECTION_FLAGS.items() if name in r + o]
            raise UsageError(f"--{name} is for --direction={' or '.join(takers)} only")
    for name in required:
        if not getattr(settings, name):
            raise UsageError(f"--{name} is required with --direction={direction}")


def main(_):
    logging.set_verbosity(logging.INFO)
    settings = settings_from_flags()
    _check_flags(settings)
    DIRECTIONS[settings.direction](settings)


if __name__ == "__main__":
    flags.mark_flag_as_required("direction")
    flags.mark_flag_as_required("input")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
