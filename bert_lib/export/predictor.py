"""Raw strings in, class probabilities out, from a classifier exported by run_classifier.py.

The exported SavedModel takes word-piece ids. TensorFlow's string ops could
tokenize inside the graph, but not with exactly FullTokenizer's rules
(accent stripping, CJK spacing, control characters), and a model fed ids
that differ from those it was trained on silently loses accuracy. So the
tokenization stays in Python, with tokenization.FullTokenizer itself:

    from bert_lib.export.predictor import Predictor

    predictor = Predictor("output/classifier_export")   # loads once
    predictor(["a charming little hotel", ("a question", "its answer")])
    # -> [{"text_a": ..., "label": "1", "probabilities": {"0": 0.1, "1": 0.9}}, ...]

An example is a string, or a (text_a, text_b) pair. The vocabulary, casing
and label names come from the export's assets.extra/ (written by
run_classifier.py --export_dir); each can be given instead. Inputs are cut
to the export's max_seq_length exactly as run_classifier.py cuts them.
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from ..plumbing import cpu_kernels  # noqa: F401

# isort: split
import json
import os

import numpy as np
import tensorflow as tf

import tokenization

from ..plumbing.errors import UsageError
from ..task_data import classifier_output, classifier_tasks, features

EXTRA_DIR = "assets.extra"
SETTINGS_FILE = "predictor.json"


class TextEncoder:
    """Texts to the classifier's model inputs, exactly as run_classifier.py builds them.

    [CLS] a [SEP] (b [SEP]) with FullTokenizer word pieces, cut to
    max_seq_length by features.pack_pair and zero-padded.
    """

    def __init__(self, vocab_file, do_lower_case, max_seq_length):
        self.tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
        self.max_seq_length = max_seq_length

    def __call__(self, texts):
        """input_ids, input_mask, segment_ids ([n, max_seq_length] int32) of `texts`.

        Each text is a string or a (text_a, text_b) pair.
        """
        input_ids, input_mask, segment_ids = self.arrays(texts, cut=False)
        return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}

    def arrays(self, texts, cut=True):
        """(input_ids, input_mask, segment_ids), int32 [n, width], of `texts`.

        width is max_seq_length, or with `cut` the longest text's length (at
        least 1): the same values as the full-width arrays' first columns,
        built without padding what is cut off again.
        """
        tokenizer = self.tokenizer
        tokenize = tokenizer.tokenize
        max_seq_length = self.max_seq_length
        ids, masks, segments = [], [], []
        width = 1 if cut else max_seq_length
        for text in texts:
            text_a, text_b = (text, None) if isinstance(text, str) else text
            tokens_a = tokenize(text_a)
            tokens_b = tokenize(text_b) if text_b else None
            tokens, input_ids, input_mask, segment_ids = features.pack_pair(
                tokenizer, tokens_a, tokens_b, max_seq_length
            )
            ids.append(input_ids)
            masks.append(input_mask)
            segments.append(segment_ids)
            if cut and len(tokens) > width:
                width = len(tokens)
        if width < max_seq_length:
            ids = [row[:width] for row in ids]
            masks = [row[:width] for row in masks]
            segments = [row[:width] for row in segments]
        shape = [len(ids), width]
        return (
            np.array(ids, np.int32).reshape(shape),
            np.array(masks, np.int32).reshape(shape),
            np.array(segments, np.int32).reshape(shape),
        )


def _check_export_dir(export_dir):
    """Refuses, saying what it is, a directory that is not a SavedModel export."""
    if not tf.io.gfile.exists(export_dir):
        raise UsageError(f"{export_dir}: no such directory")
    if not tf.io.gfile.isdir(export_dir):
        raise UsageError(f"{export_dir}: a file, not a SavedModel export directory")
    if tf.io.gfile.exists(os.path.join(export_dir, "saved_model.pb")):
        return
    if tf.io.gfile.exists(os.path.join(export_dir, "checkpoint")):
        raise UsageError(
            f"{export_dir}: a checkpoint directory, not a SavedModel export (export one with "
            "run_classifier.py --export_dir)"
        )
    raise UsageError(f"{export_dir}: not a SavedModel export (no saved_model.pb)")


class Predictor:
    """Loads an exported classifier and its vocabulary once, then classifies many texts.

    Args:
      export_dir: a SavedModel written by run_classifier.py --export_dir.
      vocab_file, do_lower_case, labels: override what the export recorded
        (needed for exports that recorded nothing).
      batch_size: how many examples go through the model at once.
      max_seq_length: where texts are cut (default: what the export recorded).

    Batches go to the model cut to their longest text when the export takes
    any length, since padding positions change nothing.
    """

    def __init__(
        self,
        export_dir,
        vocab_file=None,
        do_lower_case=None,
        labels=None,
        batch_size=32,
        max_seq_length=None,
    ):
        _check_export_dir(export_dir)
        settings = {}
        settings_path = os.path.join(export_dir, EXTRA_DIR, SETTINGS_FILE)
        if tf.io.gfile.exists(settings_path):
            with tf.io.gfile.GFile(settings_path, "r") as f:
                settings = json.load(f)
        if vocab_file is None:
            vocab_file = os.path.join(export_dir, EXTRA_DIR, "vocab.txt")
        if not tf.io.gfile.exists(vocab_file):
            raise UsageError(f"{export_dir}: no vocabulary in {EXTRA_DIR}/; pass vocab_file")
        if do_lower_case is None:
            do_lower_case = settings.get("do_lower_case", True)
        self.labels = list(labels) if labels is not None else settings.get("labels")
        self.multi_label = bool(settings.get("multi_label", False))
        self.threshold = float(settings.get("multi_label_threshold", 0.5))
        self.batch_size = batch_size
        self._model = tf.saved_model.load(export_dir)
        self._serve = self._model.signatures["serving_default"]
        self._call_model = _model_caller(self._serve, export_dir)
        self.output_name = next(iter(self._serve.structured_outputs))
        if max_seq_length is None:
            max_seq_length = settings.get("max_seq_length")
        if max_seq_length is None:
            # Exports of fixed length say it in their signature.
            max_seq_length = self._serve.structured_input_signature[1]["input_ids"].shape[1]
        if max_seq_length is None:
            raise UsageError(f"{export_dir}: no max_seq_length recorded; pass max_seq_length")
        self.encode = TextEncoder(vocab_file, do_lower_case, int(max_seq_length))
        self._takes_any_length = (
            self._serve.structured_input_signature[1]["input_ids"].shape[1] is None
        )
        if self.labels is None and self.output_name == "probabilities":
            width = int(self._serve.structured_outputs["probabilities"].shape[-1])
            self.labels = [str(i) for i in range(width)]
        # The kind of task the export's output says: a "score" is regression's.
        self.task = classifier_tasks.task_kind(
            None if self.output_name == "score" else self.labels, self.multi_label
        )

    def predict_arrays(self, texts):
        """The model's raw outputs for `texts`: [n, labels] probabilities or [n] scores."""
        texts = list(texts)
        outputs = []
        for start in range(0, len(texts), self.batch_size):
            inputs = self.encode.arrays(
                texts[start : start + self.batch_size], cut=self._takes_any_length
            )
            outputs.append(self._call_model(inputs)[self.output_name].numpy())
        if not outputs:
            return np.zeros([0] + ([len(self.labels)] if self.labels else []), np.float32)
        return np.concatenate(outputs)

    def predict_ids(self, input_ids, input_mask, segment_ids):
        """The model's raw outputs for one batch already in word-piece ids ([n, length] int32
        arrays each), for callers that tokenize themselves."""
        outputs = self._call_model((input_ids, input_mask, segment_ids))
        return outputs[self.output_name].numpy()

    def __call__(self, texts):
        """One dict per text, as run_classifier.py writes to text_predictions.jsonl."""
        texts = list(texts)
        pairs = [(t, None) if isinstance(t, str) else tuple(t) for t in texts]
        outputs = self.predict_arrays(texts)
        return classifier_output.prediction_records(pairs, outputs, self.task, self.threshold)


INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def _model_caller(signature, export_dir):
    """A function (input_ids, input_mask, segment_ids) arrays -> the signature's output dict.

    A signature called by keyword first matches its arguments against its
    structured input signature, in Python, on every call: about a third of
    the Python of a batch-1 call (BENCHMARKS.md, "What was tried to cut the
    work around the matmuls"). The inputs are
    always the same three int32 tensors, so the caller hands them over in
    the signature's flat order (tf.nest's: by sorted name), with the
    variables the signature captured, as the keyword call ends up doing.
    Where the concrete function has no such flat entry, it is called by
    keyword.
    """
    names = sorted(signature.structured_input_signature[1])
    if sorted(INPUT_NAMES) != names:
        raise UsageError(
            f"{export_dir}: its serving signature takes {', '.join(names)}, not "
            f"{', '.join(INPUT_NAMES)}"
        )
    order = [INPUT_NAMES.index(name) for name in names]
    call_flat = getattr(signature, "_call_flat", None)
    if call_flat is None:

        def call_by_name(inputs):
            return signature(**{name: tf.constant(inputs[i]) for name, i in zip(names, order)})

        return call_by_name
    captured = signature.captured_inputs

    def call(inputs):
        return call_flat([tf.constant(inputs[i]) for i in order], captured)

    return call
