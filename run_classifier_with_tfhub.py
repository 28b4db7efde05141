"""Fine-tunes a classifier on a BERT encoder in the TF Hub SavedModel format.

The original's run_classifier_with_tfhub.py, for the encoders TensorFlow
users share today. --bert_hub_module_handle names a TF Hub-format BERT
encoder: a TF2 SavedModel directory (as TF Hub, Kaggle and TensorFlow Model
Garden publish them, or as `convert_checkpoint.py --direction=tf_to_hub`
writes one), or a TF Hub / Kaggle handle that tensorflow_hub resolves where
that package is installed (it is never required). The encoder stands for
run_classifier.py's --bert_config_file, --init_checkpoint, --vocab_file and
--do_lower_case: it is read as BertModel's config and variables
(tfhub_import.read_encoder, which refuses what is not a BERT encoder), its
weights written as a checkpoint to a temporary directory that is removed
when the process exits, and the run is run_classifier.py's own on those
files: the same training, evaluation and prediction, eval_results.txt and
test_results.tsv, and every other flag of run_classifier.py. As there, a
rerun of the same command resumes from the newest checkpoint in
--output_dir, and nothing is written there before every check has passed.

The TF1 Hub modules of 2018 (tfhub_module.pb), which the original read
through hub.Module, are refused: TensorFlow 2 cannot call them as encoders.
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from bert_lib.plumbing import cpu_kernels  # noqa: F401

# isort: split
import atexit
import collections
import concurrent.futures
import os
import shutil
import tempfile

from absl import flags, logging

import run_classifier  # its flags, as the original's import gave them, and its head
from bert_lib import script_flags
from bert_lib.bert_runs import checks, classifier, model_fns
from bert_lib.export import tfhub_import
from bert_lib.plumbing.errors import UsageError

FLAGS = flags.FLAGS

flags.DEFINE_string(
    "bert_hub_module_handle",
    None,
    "The BERT encoder to fine-tune: a TF Hub-format TF2 SavedModel directory, or a TF Hub / "
    "Kaggle handle (resolved by tensorflow_hub, where it is installed). It gives the model's "
    "config, initial weights, vocabulary and do_lower_case.",
)
# --helpshort lists run_classifier's flags as this script's own.
flags.adopt_module_key_flags(run_classifier)

# run_classifier's flags the encoder gives values to; one given beside the handle is refused.
ENCODER_FLAGS = ("bert_config_file", "init_checkpoint", "vocab_file")

# An encoder as run_classifier's model takes it: its modeling.BertConfig and
# that config's file, the checkpoint of its weights, its vocabulary (the
# SavedModel's vocab_file asset) and its do_lower_case.
EncoderFiles = collections.namedtuple(
    "EncoderFiles", "bert_config bert_config_file init_checkpoint vocab_file do_lower_case"
)

_encoders = {}  # handle -> EncoderFiles: each encoder is read and written once a process


def encoder_files(bert_hub_module_handle):
    """The encoder a handle names, as files run_classifier's model starts from.

    Read once a process; the config and checkpoint are in a temporary
    directory removed at exit.

    Raises:
      UsageError: a handle that names no directory (or that tensorflow_hub,
        missing or not, cannot resolve), or a SavedModel that is not a
        TF Hub-format BERT encoder.
    """
    handle = bert_hub_module_handle
    if handle not in _encoders:
        # The SavedModel is read eagerly, and create_model is called while a
        # graph is being built: a thread of its own runs eagerly whatever
        # the caller's thread is doing.
        with concurrent.futures.ThreadPoolExecutor(1) as reader:
            _encoders[handle] = reader.submit(_write_encoder_files, handle).result()
    return _encoders[handle]


def _write_encoder_files(handle):
    path = tfhub_import.resolve_handle(handle)
    encoder = tfhub_import.read_encoder(path, "--bert_hub_module_handle")
    directory = tempfile.mkdtemp(prefix="bert_hub_encoder_")
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    checkpoint = tfhub_import.write_encoder(encoder, directory)
    logging.info("Encoder %s written for the run to %s", handle, directory)
    return EncoderFiles(
        encoder.config,
        os.path.join(directory, "bert_config.json"),
        checkpoint,
        encoder.vocab_file,
        encoder.do_lower_case,
    )


def create_model(
    is_training, input_ids, input_mask, segment_ids, labels, num_labels, bert_hub_module_handle
):
    """Builds the encoder of `bert_hub_module_handle` plus a linear head on its pooled output.

    The graph is run_classifier.create_model's on the encoder's config
    (BertModel's variables under bert/, output_weights and output_bias, 0.1
    dropout on the head's input in training); the encoder's variables start
    from its weights and are trainable, as the original's hub.Module
    (trainable=True) was.

    Returns:
      (loss, per_example_loss, logits, probabilities); see run_classifier.create_model.
    """
    encoder = encoder_files(bert_hub_module_handle)
    outputs = run_classifier.create_model(
        encoder.bert_config,
        is_training,
        input_ids,
        input_mask,
        segment_ids,
        labels,
        num_labels,
        use_one_hot_embeddings=False,
    )
    model_fns.warm_start_from_checkpoint(encoder.init_checkpoint)
    return outputs


def model_fn_builder(
    num_labels,
    learning_rate,
    num_train_steps,
    num_warmup_steps,
    use_tpu,
    bert_hub_module_handle,
    precision="fp32",
    num_accumulation_steps=1,
):
    """Returns the model_fn for engine.Estimator: run_classifier's, on the handle's encoder
    (computing in `precision`, accumulating num_accumulation_steps micro-batches a step)."""
    encoder = encoder_files(bert_hub_module_handle)
    return run_classifier.model_fn_builder(
        bert_config=encoder.bert_config,
        num_labels=num_labels,
        init_checkpoint=encoder.init_checkpoint,
        learning_rate=learning_rate,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        use_tpu=use_tpu,
        use_one_hot_embeddings=use_tpu,
        precision=precision,
        num_accumulation_steps=num_accumulation_steps,
    )


def create_tokenizer_from_hub_module(bert_hub_module_handle):
    """The FullTokenizer of the encoder's vocab_file asset and do_lower_case.

    Raises:
      UsageError: the vocabulary lacks one of BERT's special tokens, lists a
        token twice, or is uncased under do_lower_case False.
    """
    encoder = encoder_files(bert_hub_module_handle)
    where = f"--bert_hub_module_handle={bert_hub_module_handle}"
    return checks.load_tokenizer(
        encoder.vocab_file,
        encoder.do_lower_case,
        flag=f"{where}: its vocab_file",
        lower_case_source=f"{where}: its do_lower_case",
    )


# What the flags say about the encoder: its handle, the names of the
# ENCODER_FLAGS given beside it, and whether --do_lower_case was given.
HubFlags = collections.namedtuple(
    "HubFlags", "bert_hub_module_handle given_encoder_flags do_lower_case_given"
)


def _settings_from_flags():
    """(HubFlags, run_classifier's Settings): the flags, read once."""
    hub = HubFlags(
        FLAGS.bert_hub_module_handle,
        [name for name in ENCODER_FLAGS if FLAGS[name].value is not None],
        FLAGS["do_lower_case"].present,
    )
    return hub, run_classifier.settings_from_flags()


def _check_flags(hub, settings):
    """Checks the handle and the flags it replaces, then run_classifier's flags and the
    encoder as its model, before anything is written.

    Returns (settings, processor, bert_config, tokenizer) for classifier.prepare:
    the encoder's files take the place of the model flags in `settings`.
    """
    handle = hub.bert_hub_module_handle
    for name in hub.given_encoder_flags:
        raise UsageError(
            f"--{name} cannot be given with --bert_hub_module_handle: the encoder gives "
            "the config, the initial checkpoint and the vocabulary"
        )
    encoder = encoder_files(handle)
    do_lower_case = settings.model.do_lower_case
    if hub.do_lower_case_given and do_lower_case != encoder.do_lower_case:
        raise UsageError(
            f"--do_lower_case={do_lower_case}, but the encoder "
            f"--bert_hub_module_handle={handle} has "
            f"do_lower_case={encoder.do_lower_case}; leave the flag out"
        )
    create_tokenizer_from_hub_module(handle)
    model = settings.model._replace(
        bert_config_file=encoder.bert_config_file,
        init_checkpoint=encoder.init_checkpoint,
        vocab_file=encoder.vocab_file,
        do_lower_case=encoder.do_lower_case,
    )
    settings = settings._replace(model=model)
    processor = classifier.check_task_flags(settings)
    bert_config, tokenizer = checks.check_model(settings.model, settings.output_dir)
    return settings, processor, bert_config, tokenizer


def main(argv):
    del argv  # The script takes flags only.
    logging.set_verbosity(logging.INFO)
    settings, processor, bert_config, tokenizer = _check_flags(*_settings_from_flags())
    setup = classifier.prepare(settings, processor, bert_config, tokenizer)
    classifier.run(setup, run_classifier.model_fn_builder)


if __name__ == "__main__":
    flags.mark_flag_as_required("data_dir")
    flags.mark_flag_as_required("task_name")
    flags.mark_flag_as_required("bert_hub_module_handle")
    flags.mark_flag_as_required("output_dir")
    script_flags.run_main(main)
