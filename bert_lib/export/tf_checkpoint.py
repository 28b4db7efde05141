"""TF checkpoints in and out: reading every variable of one, writing one from arrays, and
the model directory the converters write (config, vocabulary, checkpoint), all or nothing.

The format is TensorFlow's name-based checkpoint (prefix.index and
prefix.data-00000-of-00001), keyed by the variables' names exactly, as
Google's checkpoints and the scripts' --init_checkpoint have them.
"""

import os
import shutil

import tensorflow as tf

from ..engine import checkpoints
from ..plumbing import atomic_write, startup_checks
from ..plumbing.errors import UsageError

# The model directory a converter writes (hf_to_tf, hub_to_tf): what the
# scripts' --bert_config_file, --vocab_file and --init_checkpoint take.
CHECKPOINT_NAME = "bert_model.ckpt"
CHECKPOINT_FILES = (
    "bert_config.json",
    "vocab.txt",
    f"{CHECKPOINT_NAME}.data-00000-of-00001",
    f"{CHECKPOINT_NAME}.index",
)


def read_checkpoint(checkpoint, flag="--input"):
    """({name: array} of every variable, the checkpoint's path prefix).

    `checkpoint` is a path prefix, one of a checkpoint's files (which stands
    for its prefix, model.ckpt-300.index say) or a directory (its newest
    checkpoint).

    Raises:
      UsageError: no checkpoint there, naming `flag`.
    """
    path = checkpoint = startup_checks.checkpoint_prefix(checkpoint, flag)
    if checkpoint and os.path.isdir(checkpoint):
        path = checkpoints.newest_checkpoint(checkpoint)
        if path is None:
            raise UsageError(f"{flag}={checkpoint}: no checkpoint in this directory")
    try:
        reader = tf.train.load_checkpoint(path)
    except (tf.errors.NotFoundError, tf.errors.DataLossError, ValueError):
        raise UsageError(f"{flag}={checkpoint}: no checkpoint there") from None
    return {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}, path


def write_checkpoint(prefix, values):
    """Writes {checkpoint name: array} as a name-based checkpoint (prefix.index, prefix.data-*).

    The names are the checkpoint's keys exactly, as Google's checkpoints
    and the scripts' --init_checkpoint expect.
    """
    names = sorted(values)
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(values[name]) for name in names],
    )


def check_output_dir(output_dir, names, flag="--output_dir"):
    """An output directory that may exist, but must hold none of `names`."""
    if not output_dir:
        raise UsageError(f"{flag} is required")
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise UsageError(f"{flag}={output_dir} is an existing file, not a directory")
    for name in names:
        if os.path.exists(os.path.join(output_dir, name)):
            raise UsageError(f"{flag}={output_dir} already holds {name}; choose another directory")
    startup_checks.check_output_dir(output_dir, flag)


def write_model(
    output_dir, config, variables, vocab_lines=None, vocab_file=None, flag="--output_dir"
):
    """Writes CHECKPOINT_FILES in output_dir: all four appear together, or none does.

    config: the modeling.BertConfig (bert_config.json); variables: {name:
    array} (bert_model.ckpt); the vocabulary as its lines (vocab_lines,
    each written with "\\n") or as a file copied byte for byte (vocab_file).
    Returns the checkpoint's path prefix, for --init_checkpoint.
    """
    with atomic_write.staged_directory(output_dir, CHECKPOINT_FILES, flag=flag) as stage:
        with open(os.path.join(stage, "bert_config.json"), "w", encoding="utf-8") as f:
            f.write(config.to_json_string())
        vocab_copy = os.path.join(stage, "vocab.txt")
        if vocab_file is not None:
            shutil.copyfile(vocab_file, vocab_copy)
        else:
            with open(vocab_copy, "w", encoding="utf-8") as f:
                f.write("".join(token + "\n" for token in vocab_lines))
        write_checkpoint(os.path.join(stage, CHECKPOINT_NAME), variables)
    return os.path.join(output_dir, CHECKPOINT_NAME)
