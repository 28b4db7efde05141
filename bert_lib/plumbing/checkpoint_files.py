"""Whether a checkpoint's files are whole: its index readable, its data files as long as it says.

A checkpoint `PREFIX` is `PREFIX.index` (a table of every tensor's data
file, offset and size) and `PREFIX.data-0000I-of-0000N`. A power loss or a
full disk can leave either cut short; TensorFlow then fails deep inside a
restore (`Read less bytes than requested`, `not an sstable`), or, for an
index, only when a variable is looked up. damage() reads the index itself
and compares each data file's length with the end of the last tensor it
holds, without reading the tensors, so a run can check the checkpoints it
would read in milliseconds and name the damaged one.

The index is a LevelDB-style table (the format TensorFlow's tensor bundles
use): a footer of 48 bytes at the end (two block handles, padding, a magic
number), an index block of handles to data blocks, and data blocks of
prefix-compressed key/value entries; the values are BundleEntryProto
messages (the empty key's is the BundleHeaderProto). Only uncompressed
blocks, which is what TensorFlow writes, are read; a table of compressed
blocks is taken as whole if TensorFlow can open it.

The checkpoint state file (`checkpoint`, text protobuf) is read here too:
read_state returns the paths it names, or None when it is missing, and
raises DamagedState when it does not parse (empty, cut short), which
TensorFlow would take for "no checkpoint".
"""

import re
import struct

from . import fileio

_MAGIC = 0xDB4775248B80FB57
_FOOTER_BYTES = 48
_TRAILER_BYTES = 5  # a block's compression type and CRC
_NO_COMPRESSION = 0


class _Truncated(Exception):
    """The table ends before what it points to."""


def _varint(data, position):
    result = shift = 0
    while True:
        if position >= len(data):
            raise _Truncated("a number runs past its block")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift > 63:
            raise _Truncated("a number that never ends")


def _block(data, handle_bytes):
    """The contents of the block a handle points to (its trailer checked for compression)."""
    offset, position = _varint(handle_bytes, 0)
    size, _ = _varint(handle_bytes, position)
    if offset + size + _TRAILER_BYTES > len(data):
        raise _Truncated(f"a block at byte {offset} runs past the end of the file")
    if data[offset + size] != _NO_COMPRESSION:
        return None
    return data[offset : offset + size]


def _entries(block):
    """(key, value) of each entry of a block."""
    if len(block) < 4:
        raise _Truncated("a block too short for its restart count")
    (restarts,) = struct.unpack_from("<I", block, len(block) - 4)
    end = len(block) - 4 - 4 * restarts
    if end < 0:
        raise _Truncated("a block too short for its restart points")
    position, key = 0, b""
    while position < end:
        shared, position = _varint(block, position)
        unshared, position = _varint(block, position)
        value_size, position = _varint(block, position)
        if position + unshared + value_size > end or shared > len(key):
            raise _Truncated("an entry runs past its block")
        key = key[:shared] + block[position : position + unshared]
        position += unshared
        yield key, block[position : position + value_size]
        position += value_size


def _data_extents(index_bytes):
    """({shard: bytes it must hold at least}, number of shards) from an index's bytes;
    None when its blocks are compressed."""
    from tensorflow.core.protobuf import tensor_bundle_pb2

    if len(index_bytes) < _FOOTER_BYTES:
        raise _Truncated(f"{len(index_bytes)} bytes, too short for a table's footer")
    footer = index_bytes[-_FOOTER_BYTES:]
    if struct.unpack("<Q", footer[-8:])[0] != _MAGIC:
        raise _Truncated("no table's footer at its end (cut short?)")
    _, position = _varint(footer, 0)
    _, position = _varint(footer, position)  # the meta-index block: unused
    index_start = position
    _, position = _varint(footer, position)
    _, position = _varint(footer, position)
    index_block = _block(index_bytes, footer[index_start:position])
    if index_block is None:
        return None
    extents, shards = {}, None
    for _, handle in _entries(index_block):
        block = _block(index_bytes, handle)
        if block is None:
            return None
        for key, value in _entries(block):
            if not key:
                shards = tensor_bundle_pb2.BundleHeaderProto.FromString(value).num_shards
                continue
            entry = tensor_bundle_pb2.BundleEntryProto.FromString(value)
            end = entry.offset + entry.size
            extents[entry.shard_id] = max(extents.get(entry.shard_id, 0), end)
    if shards is None:
        raise _Truncated("no header entry")
    return extents, shards


def data_file(prefix, shard, shards):
    return f"{prefix}.data-{shard:05d}-of-{shards:05d}"


def damage(prefix):
    """Why the checkpoint `prefix` is not whole (one phrase naming the file), or None."""
    index = f"{prefix}.index"
    if not fileio.exists(index):
        return f"{index} is missing"
    with fileio.open_binary(index) as f:
        index_bytes = f.read()
    try:
        found = _data_extents(index_bytes)
    except (_Truncated, ValueError) as e:
        return f"{index} is damaged ({e})"
    except Exception as e:  # a BundleEntryProto that does not parse
        if type(e).__name__ != "DecodeError":
            raise
        return f"{index} is damaged ({e})"
    if found is None:
        return _damage_by_tensorflow(prefix)
    extents, shards = found
    for shard in range(shards):
        path = data_file(prefix, shard, shards)
        if not fileio.exists(path):
            return f"{path} is missing"
        size = fileio.file_size(path)
        needed = extents.get(shard, 0)
        if size < needed:
            return f"{path} is cut short ({size} of {needed} bytes)"
    return None


def _damage_by_tensorflow(prefix):
    import tensorflow as tf

    try:
        tf.train.load_checkpoint(prefix)
    except (tf.errors.OpError, ValueError, RuntimeError) as e:
        return f"{prefix}.index is damaged ({str(e).splitlines()[0]})"
    return None


# ---------------------------------------------------------------------------
# The checkpoint state file

STATE_FILE = "checkpoint"
_STATE_LINE = re.compile(r'^(\w+): ("(?:[^"\\]|\\.)*"|[-+0-9.eEinfINFa]+)$')
_STATE_KEYS = (
    "model_checkpoint_path",
    "all_model_checkpoint_paths",
    "all_model_checkpoint_timestamps",
    "last_preserved_timestamp",
)


class DamagedState(ValueError):
    """A checkpoint state file that does not parse (empty, cut short, not written by a Saver)."""


def parse_state(text, path):
    """[checkpoint path as written, ...] of a state file's text, the newest last."""
    listed, newest = [], None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _STATE_LINE.match(line.strip())
        if not match or match.group(1) not in _STATE_KEYS:
            raise DamagedState(f"{path} line {number} is not a checkpoint state: {line[:80]!r}")
        key, value = match.groups()
        if key.endswith("_paths") or key == "model_checkpoint_path":
            if not value.startswith('"'):
                raise DamagedState(f"{path} line {number}: a path without quotes")
            value = value[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
            if key == "model_checkpoint_path":
                newest = value
            else:
                listed.append(value)
    if newest is None:
        raise DamagedState(f"{path} names no checkpoint (empty or cut short)")
    if newest in listed:
        listed.remove(newest)
    return [*listed, newest]


def format_state(names):
    """The text of a state file naming `names` (the newest last), as a Saver writes it."""
    lines = [f'model_checkpoint_path: "{names[-1]}"']
    lines += [f'all_model_checkpoint_paths: "{name}"' for name in names]
    return "\n".join(lines) + "\n"
