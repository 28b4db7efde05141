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

The same export is served by ONNX Runtime or OpenVINO through its ONNX
files (run_classifier.py --export_format=onnx or onnx_int8; the runtimes
are the optional extra `pip install .[onnx]`), with the same API:

    Predictor("output/classifier_export", runtime="onnxruntime")                 # model.onnx
    Predictor("output/classifier_export", runtime="onnxruntime", precision="int8")
    Predictor("output/classifier_export", runtime="openvino", precision="bf16")
    Predictor("output/classifier_export", runtime="openvino", precision="int8")  # model.onnx
"""

# Before TensorFlow, which reads its CPU kernel choice once, at import.
from ..plumbing import cpu_kernels  # noqa: F401

# isort: split
import json
import os

import numpy as np
import tensorflow as tf

import tokenization

from ..bert_runs.onnx_export import ONNX_FILE, ONNX_INT8_FILE
from ..plumbing.errors import UsageError
from ..task_data import classifier_output, classifier_tasks, text_pairs
from . import onnx_runtimes

EXTRA_DIR = "assets.extra"
SETTINGS_FILE = "predictor.json"
TENSORFLOW = "tensorflow"


class TextEncoder:
    """Texts to the classifier's model inputs, exactly as run_classifier.py builds them.

    [CLS] a [SEP] (b [SEP]) with FullTokenizer word pieces, cut to
    max_seq_length by text_pairs.pack_pair and zero-padded.
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
            tokens, input_ids, input_mask, segment_ids = text_pairs.pack_pair(
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
        raise UsageError(f"{export_dir}: a file, not a SavedModel export directory or .onnx file")
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
      export_dir: a SavedModel written by run_classifier.py --export_dir, or
        one of its ONNX files (model.onnx, model_int8.onnx).
      vocab_file, do_lower_case, labels: override what the export recorded
        (needed for exports that recorded nothing, and for an ONNX file
        away from its export directory).
      batch_size: how many examples go through the model at once.
      max_seq_length: where texts are cut (default: what the export recorded).
      runtime: "tensorflow" (the SavedModel; the default for a directory),
        "onnxruntime" (the default for an .onnx file) or "openvino", which
        run the export's ONNX file (onnx_runtimes.py).
      precision: for the ONNX runtimes, "fp32" (model.onnx, the default),
        "int8" (ONNX Runtime: model_int8.onnx; OpenVINO: model.onnx with
        its dense weights compressed to int8 as OpenVINO compresses them)
        or, with OpenVINO, "bf16" (model.onnx computed in bfloat16). A
        SavedModel computes in the precision it was exported at, and takes
        None or "fp32" here only for a float32 export.
      num_threads: the ONNX runtime's intra-op threads (default: its own,
        one per core). TensorFlow's are set per process, before it starts
        (TF_NUM_INTRAOP_THREADS).

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
        runtime=None,
        precision=None,
        num_threads=None,
    ):
        model_file = None
        if str(export_dir).endswith(".onnx") and tf.io.gfile.exists(export_dir):
            model_file, export_dir = export_dir, os.path.dirname(os.path.abspath(export_dir))
            runtime = runtime or onnx_runtimes.ONNXRUNTIME
        else:
            _check_export_dir(export_dir)
        runtime = runtime or TENSORFLOW
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
        self.runtime = runtime
        if runtime == TENSORFLOW:
            if model_file is not None or precision not in (None, "fp32"):
                raise UsageError(
                    f"runtime 'tensorflow' serves a SavedModel directory in the precision it "
                    f"was exported at, not {model_file or precision!r}: give another runtime "
                    f"({', '.join(onnx_runtimes.RUNTIMES)}) or the export directory"
                )
            self._call_model, output_shapes, fixed_length = _load_saved_model(export_dir)
        else:
            precision = precision or "fp32"
            if model_file is None:
                # OpenVINO compresses model.onnx's weights to int8 itself (onnx_runtimes).
                quantized = precision == "int8" and runtime == onnx_runtimes.ONNXRUNTIME
                model_file = os.path.join(export_dir, ONNX_INT8_FILE if quantized else ONNX_FILE)
                if not tf.io.gfile.exists(model_file):
                    raise UsageError(
                        f"{export_dir}: no {os.path.basename(model_file)} for runtime "
                        f"{runtime!r} at {precision}; export it with run_classifier.py "
                        "--export_format=onnx (or onnx_int8)"
                    )
            model = onnx_runtimes.load(model_file, runtime, precision, num_threads)
            self._call_model, output_shapes, fixed_length = model, model.output_shapes, None
        self.precision = precision
        # Batches are cut to their longest text unless the model takes one length only.
        self._takes_any_length = fixed_length is None
        self.output_name = next(iter(output_shapes))
        if max_seq_length is None:
            max_seq_length = settings.get("max_seq_length")
        if max_seq_length is None:
            # Exports of fixed length say it in their signature.
            max_seq_length = fixed_length
        if max_seq_length is None:
            raise UsageError(f"{export_dir}: no max_seq_length recorded; pass max_seq_length")
        self.encode = TextEncoder(vocab_file, do_lower_case, int(max_seq_length))
        if self.labels is None and self.output_name == classifier_tasks.PROBABILITIES_OUTPUT:
            width = int(output_shapes[self.output_name][-1])
            self.labels = [str(i) for i in range(width)]
        # The kind of task the export's output says: a "score" is regression's.
        self.task = classifier_tasks.task_kind(
            None if self.output_name == classifier_tasks.SCORE_OUTPUT else self.labels,
            self.multi_label,
        )

    def predict_arrays(self, texts):
        """The model's raw outputs for `texts`: [n, labels] probabilities or [n] scores."""
        texts = list(texts)
        outputs = []
        for start in range(0, len(texts), self.batch_size):
            inputs = self.encode.arrays(
                texts[start : start + self.batch_size], cut=self._takes_any_length
            )
            outputs.append(self._call_model(inputs)[self.output_name])
        if not outputs:
            return np.zeros([0] + ([len(self.labels)] if self.labels else []), np.float32)
        return np.concatenate(outputs)

    def predict_ids(self, input_ids, input_mask, segment_ids):
        """The model's raw outputs for one batch already in word-piece ids ([n, length] int32
        arrays each), for callers that tokenize themselves."""
        outputs = self._call_model((input_ids, input_mask, segment_ids))
        return outputs[self.output_name]

    def __call__(self, texts):
        """One dict per text, as run_classifier.py writes to text_predictions.jsonl."""
        texts = list(texts)
        pairs = [(t, None) if isinstance(t, str) else tuple(t) for t in texts]
        outputs = self.predict_arrays(texts)
        return classifier_output.prediction_records(pairs, outputs, self.task, self.threshold)


INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


def _load_saved_model(export_dir):
    """(call, output shapes, fixed length) of the SavedModel in `export_dir`.

    call(inputs) runs its serving signature on the three id arrays and
    returns {output name: numpy array}; the output shapes are
    {name: [dims, None where any]}; the fixed length is the one its
    signature's input_ids take, or None for any length.
    """
    model = tf.saved_model.load(export_dir)
    signature = model.signatures["serving_default"]
    call = _model_caller(signature, export_dir)
    # The loaded object owns the signature's variables: keep it alive with the caller.
    call.saved_model = model
    output_shapes = {
        name: spec.shape.as_list() for name, spec in signature.structured_outputs.items()
    }
    fixed_length = signature.structured_input_signature[1]["input_ids"].shape[1]
    return call, output_shapes, fixed_length


def _model_caller(signature, export_dir):
    """A function (input_ids, input_mask, segment_ids) arrays -> the signature's outputs,
    {name: numpy array}.

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
            outputs = signature(**{name: tf.constant(inputs[i]) for name, i in zip(names, order)})
            return {name: value.numpy() for name, value in outputs.items()}

        return call_by_name
    captured = signature.captured_inputs

    def call(inputs):
        outputs = call_flat([tf.constant(inputs[i]) for i in order], captured)
        return {name: value.numpy() for name, value in outputs.items()}

    return call
