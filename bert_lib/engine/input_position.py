"""Where the training input stands, saved beside each checkpoint so a resumed run goes on there.

A tf.data iterator can serialize its state: its position in the input and
its buffers (the shuffle buffer, prefetched batches, the random state of an
unseeded shuffle). Saved with a checkpoint and restored
when training resumes from it, the resumed run reads the examples an
uninterrupted run would have read next, in the same order, seeded or not,
without re-reading what the checkpointed steps consumed.

The state goes to its own file beside the checkpoint, model.ckpt-STEP.input,
written through a temporary name before the checkpoint itself, so the
checkpoint's variables are exactly those of a run without it (the original
code, converters and anything else that reads every tensor see no
difference). A file whose checkpoint has been rotated away is deleted at
the next save.

Only one-device training saves it (tf.distribute's multi-device iterators
cannot be serialized); under mirrored and multi-worker training, and where
a pipeline holds state that cannot be saved (a Python generator), resuming
falls back to the engine's --tf_random_seed skip of the consumed batches.

Restoring puts the saved buffers and positions into the pipeline the
input_fn builds now, which must be built as the saved one was: the file
holds a fingerprint of the pipeline (its graph, generated names left out)
and how many batches it skipped when built (the seeded skip), and the
engine builds the pipeline with that skip. The fingerprints are compared
as soon as the pipeline is built, before the model and the session: a run
whose input pipeline changed (other files, another batch size) does not
restore it, says so, and is built as a run without a saved position.

A position is a place in particular files, so the file also holds the
identity of the files the pipeline read (input_data.py: names, sizes,
digests of their ends). A run whose files are not those any more (a shard
made again under its name between a stop and the resume) does not restore
it either: a WARNING names the file, and the input starts over from its
beginning, never at a position saved for other data, and not at a skip
counted in batches of other data either.
"""

import collections
import hashlib
import json
import re

import tensorflow as tf
from absl import logging

from ..plumbing import atomic_write
from . import input_data
from .config import CHECKPOINT_BASENAME

SUFFIX = ".input"
# The file: this line; the pipeline's fingerprint (hex) and a newline; the
# batches the pipeline skipped when it was built, and a newline; the
# identities of its files (JSON, input_data.identities) and a newline; the
# SHA-256 (hex) of the identities' line and what follows, and a newline; the
# iterator's state (a serialized TensorProto). The digest tells a damaged file
# (cut short by a full disk or a power loss) from one another pipeline wrote.
_HEADER = b"runner input position 3\n"
# Files of the second version have no identities (the files are taken to be
# the same), those of the first no digest either; both are still read.
_HEADER_V2 = b"runner input position 2\n"
_HEADER_V1 = b"runner input position 1\n"
# SerializeIterator: fail on state it cannot save (a Python generator's
# position) rather than save a position that is wrong.
_FAIL_ON_EXTERNAL_STATE = 2

SavedPosition = collections.namedtuple(
    "SavedPosition", ["path", "fingerprint", "skip", "data", "state"]
)
# Why a saved position is not restored; start_over: the input starts from its
# beginning (its data changed), not at the seeded skip of the batches trained on.
NotRestored = collections.namedtuple("NotRestored", ["start_over"])


def path_for(checkpoint_path):
    return checkpoint_path + SUFFIX


def _parse(data):
    """(fingerprint, skip, identities or None, state) of a file's bytes, or None when
    they are not whole."""
    identities = None
    if data.startswith(_HEADER):
        fingerprint, _, rest = data[len(_HEADER) :].partition(b"\n")
        skip, _, rest = rest.partition(b"\n")
        identities, _, rest = rest.partition(b"\n")
        digest, _, state = rest.partition(b"\n")
        if hashlib.sha256(identities + b"\n" + state).hexdigest().encode() != digest:
            return None
        try:
            identities = json.loads(identities)
        except ValueError:
            return None
    elif data.startswith(_HEADER_V2):
        fingerprint, _, rest = data[len(_HEADER_V2) :].partition(b"\n")
        skip, _, rest = rest.partition(b"\n")
        digest, _, state = rest.partition(b"\n")
        if hashlib.sha256(state).hexdigest().encode() != digest:
            return None
    elif data.startswith(_HEADER_V1):
        fingerprint, _, rest = data[len(_HEADER_V1) :].partition(b"\n")
        skip, _, state = rest.partition(b"\n")
    else:
        return None
    if not re.fullmatch(rb"[0-9a-f]{64}", fingerprint) or not skip.isdigit() or not state:
        return None
    return fingerprint.decode(), int(skip), identities, state


def read_saved(checkpoint_path):
    """The SavedPosition beside checkpoint_path, or None (there is none, or it is damaged)."""
    path = path_for(checkpoint_path)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    parsed = _parse(data)
    if parsed is None:
        logging.warning(
            "%s is damaged (cut short, or not an input position file this code wrote); "
            "the input position is not restored: the input starts as without it.",
            path,
        )
        return None
    return SavedPosition(path, *parsed)


def dataset_fingerprint(dataset):
    """The fingerprint of the pipeline that makes `dataset` (see pipeline_fingerprint)."""
    return pipeline_fingerprint(tf.data.experimental.to_variant(dataset))


def not_restorable(fingerprint, skip, data, saved):
    """None when `saved` can be restored into this pipeline: one built as the pipeline
    that saved it (the same `fingerprint`, `skip` batches skipped) over the same data
    (`data`: its files' identities now). Else a NotRestored, after saying why in the log.
    """
    if fingerprint != saved.fingerprint or skip != saved.skip:
        logging.warning(
            "The input pipeline differs from the one %s was saved with (other input "
            "files, batch size or input_fn); the input position is not restored.",
            saved.path,
        )
        return NotRestored(start_over=False)
    changed = None if saved.data is None else input_data.difference(saved.data, data)
    if changed is None:
        return None
    logging.warning(
        "The input's data changed since %s was saved: %s. The input position is not "
        "restored: the input starts over from its beginning, not at a position in other "
        "data.",
        saved.path,
        changed,
    )
    return NotRestored(start_over=True)


class InputPosition:
    """The ops that save and restore one initializable iterator's state; build after the model.

    `iterator` is a tf.compat.v1.data.Iterator over `dataset`, a pipeline
    that skipped `skip` batches first and reads `files`; `fingerprint` is the
    pipeline's and `data` the files' identities, when already computed.
    Restoring needs a pipeline built alike over the same data: the same
    input_fn and the same skip (read_saved tells which, not_restorable
    checks).
    """

    def __init__(self, iterator, dataset, skip, files, fingerprint=None, data=None):
        self.skip = skip
        # The iterator's resource has no public accessor in graph mode.
        resource = iterator._iterator_resource  # noqa: SLF001
        with tf.name_scope("input_position"):
            self._serialized = tf.io.serialize_tensor(
                tf.raw_ops.SerializeIterator(
                    resource_handle=resource, external_state_policy=_FAIL_ON_EXTERNAL_STATE
                )
            )
            self._state = tf.compat.v1.placeholder(tf.string, [], name="state")
            self._restore = tf.raw_ops.DeserializeIterator(
                resource_handle=resource, serialized=tf.io.parse_tensor(self._state, tf.variant)
            )
        self._dataset = dataset
        self._files = files
        self._fingerprint = fingerprint
        self.data = data
        self._disabled = False

    def fingerprint(self):
        """The pipeline's fingerprint (computed once, from the graph: a few tenths of a
        second for a BERT-Base training graph)."""
        if self._fingerprint is None:
            self._fingerprint = dataset_fingerprint(self._dataset)
        return self._fingerprint

    def _disable(self, error):
        self._disabled = True
        logging.warning(
            "The input pipeline's position cannot be saved (%s); a resumed run restarts "
            "the input (or, with --tf_random_seed, skips the batches already used).",
            error.message.splitlines()[0],
        )

    def restore(self, session, saved):
        """Puts the iterator where `saved` says (after the iterator's initializer ran)."""
        session.run(self._restore, {self._state: saved.state})
        logging.info("Input position restored from %s.", saved.path)

    def save(self, session, checkpoint_path):
        """Writes checkpoint_path's input file (call before the checkpoint is written)."""
        if self._disabled:
            return
        try:
            state = session.run(self._serialized)
        except tf.errors.OpError as e:
            self._disable(e)
            return
        if self.data is None:
            # Once, at the first save: the files as this run reads them.
            self.data = input_data.identities(self._files)
        identities = json.dumps(self.data).encode()
        digest = hashlib.sha256(identities + b"\n" + state).hexdigest()
        header = _HEADER + f"{self.fingerprint()}\n{self.skip}\n".encode()
        header += identities + f"\n{digest}\n".encode()
        with atomic_write.atomic_files([path_for(checkpoint_path)], "wb") as (f,):
            f.write(header + state)


def remove_orphans(model_dir):
    """Deletes input files whose checkpoint is gone (rotated away by keep_checkpoint_max)."""
    pattern = f"{model_dir.rstrip('/')}/{CHECKPOINT_BASENAME}-*{SUFFIX}"
    for path in tf.io.gfile.glob(pattern):
        if not tf.io.gfile.exists(path[: -len(SUFFIX)] + ".index"):
            tf.io.gfile.remove(path)


def pipeline_fingerprint(variant):
    """A digest of the tf.data pipeline whose dataset is the tensor `variant`.

    It covers the ops that make the dataset, in the order they were made:
    each op's type, inputs (by position), attributes and constants, and the
    bodies of the functions they call (map functions ...), with functions
    named by their own digests. Generated names are left out: they carry
    process-wide counters (MapDataset:7, __inference_Dataset_map_lambda_56),
    so the same input_fn gives other names in another process or graph.
    """
    graph_def, wanted = input_data.pipeline_graph(variant)
    functions = {}
    pending = {f.signature.name: f for f in graph_def.library.function}
    while pending:
        ready = [name for name, f in pending.items() if not _calls(f.node_def) & set(pending)]
        if not ready:
            raise ValueError("recursive functions in an input pipeline")
        for name in ready:
            function = pending.pop(name)
            digest = hashlib.sha256(
                str(function.signature.input_arg).encode()
                + str(function.signature.output_arg).encode()
            )
            _digest_nodes(function.node_def, functions, digest)
            functions[name] = digest.hexdigest()
    digest = hashlib.sha256()
    _digest_nodes([node for node in graph_def.node if node.name in wanted], functions, digest)
    return digest.hexdigest()


def _calls(nodes):
    names = set()
    for node in nodes:
        names.add(node.op)
        for value in node.attr.values():
            if value.WhichOneof("value") == "func":
                names.add(value.func.name)
            elif value.WhichOneof("value") == "list":
                names.update(f.name for f in value.list.func)
    return names


def _digest_nodes(nodes, functions, digest):
    position = {node.name: index for index, node in enumerate(nodes)}
    for node in nodes:
        digest.update(b"|" + functions.get(node.op, node.op).encode())
        for name in node.input:
            source, _, output = name.lstrip("^").partition(":")
            digest.update(f"<{position.get(source, source)}:{output}".encode())
        for key in sorted(node.attr):
            if key == "metadata" or key.startswith("_"):
                continue  # a dataset's generated name; internal attributes
            value = node.attr[key]
            kind = value.WhichOneof("value")
            if kind == "func":
                text = functions[value.func.name].encode()
            elif kind == "list" and value.list.func:
                text = ",".join(functions[f.name] for f in value.list.func).encode()
            else:
                text = value.SerializeToString(deterministic=True)
            digest.update(key.encode() + b"=" + text)
