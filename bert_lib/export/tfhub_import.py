"""A BERT encoder in the TF Hub SavedModel format in as a checkpoint the scripts read.

read_encoder loads the SavedModel and maps its variables (tfhub_mapping);
import_encoder writes them with its vocabulary and config as the model
directory convert_checkpoint's hf_to_tf writes too (tf_checkpoint), for
--init_checkpoint; run_classifier_with_tfhub.py reads an encoder the same
way. The TF1 Hub module format of 2018 (tfhub_module.pb) is refused: it is
called through TF1 signatures, not the API tfhub_encoder describes.
"""

import os
import re
import time

import numpy as np
import tensorflow as tf
from absl import logging

import modeling

from ..bert_runs import checks
from ..plumbing import errors
from ..plumbing import vocab_file as vocab_file_reader
from ..plumbing.errors import UsageError
from . import tf_checkpoint, tfhub_mapping
from .tfhub_encoder import CONFIG_ASSET, MLM_HEAD

# Values a foreign encoder's weights do not record: BERT's published ones.
ASSUMED_SETTINGS = {
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "initializer_range": 0.02,
}


def _where(path, flag):
    return f"{flag}={path}" if flag else str(path)


def load_saved_model(hub_dir, flag=None):
    """tf.saved_model.load(hub_dir), with a one-line UsageError for anything else.

    Refuses a missing directory, a TF1 Hub module (tfhub_module.pb: the
    2018 format, which TensorFlow 2 cannot call as an encoder), a directory
    without saved_model.pb, one TensorFlow cannot load, and a SavedModel
    that cannot be called.
    """
    where = _where(hub_dir, flag)
    if not hub_dir or not os.path.isdir(hub_dir):
        raise UsageError(f"{where}: no such directory")
    if os.path.isfile(os.path.join(hub_dir, "tfhub_module.pb")):
        raise UsageError(
            f"{where}: a TF1 Hub module (tfhub_module.pb), the 2018 format; only TF2 "
            "SavedModel encoders are read: take the encoder's TF2 version"
        )
    if not any(
        os.path.isfile(os.path.join(hub_dir, name))
        for name in ("saved_model.pb", "saved_model.pbtxt")
    ):
        raise UsageError(f"{where}: not a SavedModel (no saved_model.pb)")
    try:
        loaded = tf.saved_model.load(hub_dir)
    except Exception as e:  # a corrupt file fails in many ways, all the input's fault
        raise UsageError(
            f"{where}: TensorFlow cannot load this SavedModel ({errors.first_line(e)})"
        ) from None
    if not callable(loaded):
        raise UsageError(f"{where}: the SavedModel cannot be called; not a TF Hub-format encoder")
    return loaded


def _tokenization(loaded, where):
    """(vocab.txt path inside the SavedModel, do_lower_case) from its attributes."""
    asset = getattr(loaded, "vocab_file", None)
    if asset is None:
        if getattr(loaded, "sp_model_file", None) is not None:
            raise UsageError(
                f"{where}: its tokenizer is a SentencePiece model (sp_model_file), not the "
                "WordPiece vocab_file BERT's tokenization needs"
            )
        raise UsageError(f"{where}: no vocab_file asset (the WordPiece vocabulary)")
    path = getattr(asset, "asset_path", asset)
    path = path.numpy().decode("utf-8") if hasattr(path, "numpy") else str(path)
    if not os.path.isfile(path):
        raise UsageError(f"{where}: its vocab_file asset {path} is missing")
    lower = getattr(loaded, "do_lower_case", None)
    if lower is None:
        raise UsageError(f"{where}: no do_lower_case variable beside its vocab_file")
    return path, bool(np.asarray(lower))


def _saved_config(loaded, sizes, where):
    """The BertConfig an encoder exported here carries (assets/bert_config.json), else None.

    Its sizes must be the ones the weights show.
    """
    asset = getattr(loaded, "bert_config_file", None)
    if asset is None:
        return None
    path = asset.asset_path.numpy().decode("utf-8")
    try:
        config = modeling.BertConfig.from_json_file(path)
    except (ValueError, OSError, tf.errors.OpError) as e:
        reason = errors.first_line(e)
        raise UsageError(f"{where}: its {CONFIG_ASSET} cannot be read ({reason})") from None
    for key, value in sizes.items():
        if getattr(config, key) != value:
            raise UsageError(
                f"{where}: its {CONFIG_ASSET} says {key}={getattr(config, key)} but the "
                f"weights show {value}"
            )
    return config


class HubEncoder:
    """A TF Hub-format BERT encoder read as this repository's model.

    Attributes:
      config: the modeling.BertConfig it computes as.
      variables: {checkpoint name: float32 array}: bert/* with the pooler,
        and cls/predictions/* when with_mlm.
      vocab_file: path of its vocab.txt (inside the SavedModel's assets/).
      vocab: the vocabulary's lines.
      do_lower_case: bool, as the encoder says.
      with_mlm: whether it has the masked LM head (its `mlm` sub-object).
      hidden_act_source: where the activation was learnt.
      assumed: BertConfig keys the SavedModel does not record, set to
        ASSUMED_SETTINGS.
      unused: names of its float variables that have no place in BERT.
      difference: largest relative difference between its outputs and
        BertModel's with `config` and `variables` on a fixed input.
    """

    def __init__(self, **fields):
        self.__dict__.update(fields)


def read_encoder(hub_dir, flag=None):
    """Reads a TF Hub-format BERT encoder SavedModel (a local directory) as a HubEncoder.

    Variables are mapped by their names' meaning and checked against the
    shapes the sizes imply; then the encoder and BertModel are run on the
    same input, and the number of heads and the activation (where the
    SavedModel does not record them) are the ones under which the outputs,
    the masked LM logits included, agree within tfhub_mapping.TOLERANCE.

    Raises:
      UsageError (one line, naming hub_dir, or `flag`=hub_dir): not a
        directory or not a SavedModel, no vocab_file asset or no
        do_lower_case, shared layer weights or factorized embeddings
        (ALBERT), a missing layer or variable, a shape that does not fit,
        outputs BertModel cannot reproduce.
    """
    where = _where(hub_dir, flag)
    loaded = load_saved_model(hub_dir, flag)
    vocab_file, do_lower_case = _tokenization(loaded, where)
    values, sources, heads, unused = tfhub_mapping.map_variables(
        tfhub_mapping.saved_variables(loaded, where), where
    )
    sizes = tfhub_mapping.infer_sizes(values, sources, where)
    saved = _saved_config(loaded, sizes, where)
    check_config = modeling.BertConfig(num_attention_heads=1, **sizes)
    with_mlm = tfhub_mapping.check_complete(values, sources, check_config, where) and hasattr(
        loaded, "mlm"
    )
    for name in MLM_HEAD:
        if not with_mlm and name in values:
            unused.append(sources[name])
            del values[name]
    if saved is not None:
        settings = saved.to_dict()
        head_counts, activations = [saved.num_attention_heads], [saved.hidden_act]
    else:
        settings = dict(sizes, **ASSUMED_SETTINGS)
        head_counts, activations = (
            tfhub_mapping.head_counts(heads, sizes["hidden_size"]),
            tfhub_mapping.ACTIVATIONS,
        )
    num_heads, act, difference, tried = tfhub_mapping.settle_by_outputs(
        loaded, settings, values, head_counts, activations, with_mlm, where
    )
    config = modeling.BertConfig.from_dict(
        dict(settings, num_attention_heads=num_heads, hidden_act=act)
    )
    vocab = vocab_file_reader.read_lines(vocab_file)
    if len(vocab) > config.vocab_size:
        raise UsageError(
            f"{vocab_file}: {len(vocab)} tokens, more than the encoder's {config.vocab_size}"
        )
    if saved is not None:
        act_source = f"its {CONFIG_ASSET}"
    else:
        act_source = f"its outputs, matched by BertModel within {difference:.1g}"
        alike = [other for d, other in tried if other != act and d <= tfhub_mapping.TOLERANCE]
        if alike:
            act_source += f" ({', '.join(alike)} match too on these weights)"
            logging.warning("%s: outputs match under %s and %s alike", where, act, alike)
    return HubEncoder(
        config=config,
        variables=values,
        vocab_file=vocab_file,
        vocab=vocab,
        do_lower_case=do_lower_case,
        with_mlm=with_mlm,
        hidden_act_source=act_source,
        assumed=[] if saved is not None else sorted(ASSUMED_SETTINGS),
        unused=sorted(unused),
        difference=difference,
    )


def write_encoder(encoder, output_dir, flag="--output_dir"):
    """Writes a HubEncoder as bert_config.json, vocab.txt and bert_model.ckpt.* in output_dir.

    All four files appear together or none does. Returns the checkpoint
    path prefix, for --init_checkpoint.

    Raises:
      UsageError: output_dir is a file or already holds one of the files.
    """
    tf_checkpoint.check_output_dir(output_dir, tf_checkpoint.CHECKPOINT_FILES, flag)
    return tf_checkpoint.write_model(
        output_dir, encoder.config, encoder.variables, vocab_file=encoder.vocab_file, flag=flag
    )


def import_encoder(hub_dir, output_dir, input_flag="--input", output_flag="--output_dir"):
    """Converts a TF Hub-format BERT encoder SavedModel into a checkpoint the scripts read.

    Writes output_dir/bert_config.json, vocab.txt (the vocab_file asset)
    and bert_model.ckpt.* under the original's variable names, the pooler
    included and the masked LM head as cls/predictions/* when the encoder
    has an `mlm`. See read_encoder for what is checked; what is written
    must also be a model every script takes (checks.check_converted_model).

    Returns:
      dict: checkpoint (path prefix), bert_config_file, vocab_file,
      do_lower_case, hidden_act, hidden_act_source, assumed (config keys
      not recorded in the SavedModel), with_mlm, unused (its variables not
      converted), difference, and message: the lines for the user, with
      the flags to fine-tune the result (as hf_to_tf prints them).

    Raises:
      UsageError: see read_encoder and write_encoder; nothing is written then.
    """
    start = time.time()
    tf_checkpoint.check_output_dir(output_dir, tf_checkpoint.CHECKPOINT_FILES, output_flag)
    encoder = read_encoder(hub_dir, input_flag)
    where = _where(hub_dir, input_flag)
    sources = checks.Sources(
        f"{where} (its weights' sizes)",
        where,
        "its vocab_file",
        where,
        f"{where}: its do_lower_case",
    )
    names = list(encoder.variables)
    checks.check_converted_model(
        encoder.config, names, encoder.vocab, encoder.do_lower_case, sources
    )
    if encoder.unused:
        logging.info("Variables not converted (%d): %s", len(encoder.unused), encoder.unused)
    checkpoint = write_encoder(encoder, output_dir, output_flag)
    elapsed = time.time() - start
    logging.info("Wrote %d variables to %s in %.1f s", len(encoder.variables), output_dir, elapsed)
    result = {
        "checkpoint": checkpoint,
        "bert_config_file": os.path.join(output_dir, "bert_config.json"),
        "vocab_file": os.path.join(output_dir, "vocab.txt"),
        "do_lower_case": encoder.do_lower_case,
        "hidden_act": encoder.config.hidden_act,
        "hidden_act_source": encoder.hidden_act_source,
        "assumed": encoder.assumed,
        "with_mlm": encoder.with_mlm,
        "unused": encoder.unused,
        "difference": encoder.difference,
    }
    result["message"] = _import_message(result)
    return result


def _import_message(result):
    lines = [
        f"do_lower_case={result['do_lower_case']} (from the SavedModel's do_lower_case); "
        f"hidden_act={result['hidden_act']} (from {result['hidden_act_source']})."
    ]
    if result["assumed"]:
        lines.append(
            "Not recorded in the SavedModel, set to BERT's values in bert_config.json: "
            + ", ".join(f"{key}={ASSUMED_SETTINGS[key]}" for key in result["assumed"])
            + "."
        )
    lines.append(
        "Use the model with:\n"
        f"  --bert_config_file={result['bert_config_file']} "
        f"--vocab_file={result['vocab_file']} "
        f"--init_checkpoint={result['checkpoint']} "
        f"--do_lower_case={result['do_lower_case']}"
    )
    return "\n".join(lines)


def resolve_handle(handle, flag="--bert_hub_module_handle"):
    """The local directory of an encoder given as a path or a TF Hub / Kaggle handle.

    A local directory is used as it is. Anything else with a scheme or a
    model host in it is handed to tensorflow_hub.resolve (which downloads
    and caches it) when the tensorflow_hub package is installed; it is
    never required.

    Raises:
      UsageError: no handle, no such directory, a remote handle without
        tensorflow_hub, or one it cannot resolve.
    """
    if not handle:
        raise UsageError(f"{flag} is required")
    if os.path.isdir(handle):
        return handle
    if "://" not in handle and not re.match(r"^(www\.)?(tfhub\.dev|kaggle\.com)/", handle):
        raise UsageError(f"{flag}={handle}: no such directory")
    try:
        import tensorflow_hub
    except ImportError:
        raise UsageError(
            f"{flag}={handle}: not a local directory, and resolving a TF Hub handle needs the "
            "tensorflow_hub package (pip install tensorflow-hub); or download the model and "
            "give its directory"
        ) from None
    try:
        return tensorflow_hub.resolve(handle)
    except Exception as e:  # network, cache and format errors alike
        raise UsageError(
            f"{flag}={handle}: tensorflow_hub cannot resolve it ({errors.first_line(e)})"
        ) from None
