"""TFRecord files and tf.train.Example bytes, written and read without TensorFlow.

TensorFlow costs seconds of CPU and hundreds of MB to import; the data
preparation scripts need only its file format:

- TFRecord framing: per record, the little-endian uint64 length, the
  masked CRC-32C of those 8 bytes, the data, the masked CRC-32C of the
  data. The checksums are computed with numpy for thousands of records at
  once; the files are byte for byte what tf.io.TFRecordWriter writes.
- tf.train.Example bytes: varint writes protobuf's variable-length
  integers (task_data/pretraining_records.py builds the pre-training
  Examples from them), and example_values decodes any Example's features.
"""

import struct

from . import atomic_write, fileio
from .errors import UsageError

# ---------------------------------------------------------------------------
# tf.train.Example


def varint(value):
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_varint(data, pos):
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(data):
    """Yields (field number, wire type, value) of a protobuf message's bytes.

    Length-delimited values come as bytes; varints as ints; fixed32 as bytes.
    """
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _read_varint(data, pos)
        elif wire_type == 2:
            size, pos = _read_varint(data, pos)
            value, pos = data[pos : pos + size], pos + size
        elif wire_type == 5:
            value, pos = data[pos : pos + 4], pos + 4
        elif wire_type == 1:
            value, pos = data[pos : pos + 8], pos + 8
        else:
            raise ValueError(f"unsupported wire type {wire_type}")
        yield number, wire_type, value


def example_values(record):
    """{feature name: list of values} of a serialized tf.train.Example.

    Decodes the wire format directly, so logging needs no TensorFlow.
    """
    values = {}
    for number, _, features_bytes in _fields(record):
        if number != 1:
            continue
        for entry_number, _, entry in _fields(features_bytes):
            if entry_number != 1:
                continue
            name, feature = "", b""
            for field, _, value in _fields(entry):
                if field == 1:
                    name = value.decode("utf-8")
                elif field == 2:
                    feature = value
            decoded = []
            for kind, _, value_list in _fields(feature):
                for _, wire_type, value in _fields(value_list):
                    if kind == 2:  # float_list, packed or not
                        decoded += [x for (x,) in struct.iter_unpack("<f", value)]
                    elif wire_type == 2:  # packed int64_list
                        pos = 0
                        while pos < len(value):
                            item, pos = _read_varint(value, pos)
                            decoded.append(item - (1 << 64) if item >= 1 << 63 else item)
                    else:
                        decoded.append(value - (1 << 64) if value >= 1 << 63 else value)
            values[name] = decoded
    return values


# ---------------------------------------------------------------------------
# TFRecord files

_CRC32C_POLY = 0x82F63B78  # Castagnoli, bit-reflected
_CRC_MASK_DELTA = 0xA282EAD8
_RECORDS_PER_BATCH = 8192


def crc32c_table():
    import numpy as np

    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _CRC32C_POLY if crc & 1 else crc >> 1
        table.append(crc)
    return np.array(table, dtype=np.uint32)


def masked_crc32c(datas, table):
    """The masked CRC-32C of each byte string, computed for all of them at once.

    The strings are laid out as rows of a zero-padded matrix, longest first;
    the table-driven update runs column by column over the rows still going.
    """
    import numpy as np

    n = len(datas)
    lengths = np.fromiter(map(len, datas), dtype=np.int64, count=n)
    order = np.argsort(-lengths, kind="stable")
    longest = int(lengths[order[0]]) if n else 0
    rows = np.zeros((n, longest), dtype=np.uint8)
    rows[np.arange(longest)[None, :] < lengths[order][:, None]] = np.frombuffer(
        b"".join([datas[i] for i in order]), dtype=np.uint8
    )
    columns = np.ascontiguousarray(rows.T)
    del rows
    # active[c]: how many strings are longer than c (a prefix of the sorted rows).
    active = n - np.cumsum(np.bincount(lengths, minlength=longest + 1))[:longest]
    crc = np.full(n, 0xFFFFFFFF, dtype=np.uint32)
    for column, count in zip(columns, active.tolist()):
        head = crc[:count]
        crc[:count] = table[(head ^ column[:count]) & 0xFF] ^ (head >> 8)
    crc ^= np.uint32(0xFFFFFFFF)
    unsorted = np.empty_like(crc)
    unsorted[order] = crc
    return ((unsorted >> 15) | (unsorted << 17)) + np.uint32(_CRC_MASK_DELTA)


def tfrecord_bytes(datas, table):
    """The TFRecord file bytes of the records `datas`."""
    import numpy as np

    lengths = np.fromiter(map(len, datas), dtype="<u8", count=len(datas))
    length_bytes = lengths.tobytes()
    heads = [length_bytes[8 * i : 8 * i + 8] for i in range(len(datas))]
    head_crcs = masked_crc32c(heads, table).astype("<u4").tobytes()
    data_crcs = masked_crc32c(datas, table).astype("<u4").tobytes()
    parts = []
    for i, data in enumerate(datas):
        parts += (heads[i], head_crcs[4 * i : 4 * i + 4], data, data_crcs[4 * i : 4 * i + 4])
    return b"".join(parts)


def write_tfrecords(records, output_files, progress=None, flag=None):
    """Writes records round-robin as TFRecord files, byte for byte as TensorFlow would.

    All files appear under their names only once all are complete (see
    atomic_write); a failed write is one UsageError naming the file.
    `progress`, if given, is updated with the number of records written.
    """
    table = crc32c_table()
    written = 0
    with atomic_write.atomic_files(output_files, "wb", flag=flag) as files:
        for k, f in enumerate(files):
            mine = records[k :: len(output_files)]
            for start in range(0, len(mine), _RECORDS_PER_BATCH):
                batch = mine[start : start + _RECORDS_PER_BATCH]
                f.write(tfrecord_bytes(batch, table))
                written += len(batch)
                if progress is not None:
                    progress.update(written)


def read_records(path):
    """Yields the records of a TFRecord file, checking every length and checksum.

    Raises UsageError naming the file, the record and its byte offset at the
    first damaged or truncated record, where tf.data would only say
    "corrupted record at N". Checksums are checked a batch of records at a
    time.
    """
    table = crc32c_table()
    size = fileio.file_size(path)
    index = offset = 0
    with fileio.open_binary(path) as f:
        while True:
            batch, offsets = [], []
            while len(batch) < _RECORDS_PER_BATCH:
                head = f.read(12)
                if not head:
                    break
                (length,) = struct.unpack("<Q", head[:8].ljust(8, b"\0"))
                if len(head) < 12 or offset + 16 + length > size:
                    # A length running past the end: a cut file or a damaged length.
                    batch.append((head[:8], head[8:12], b"", b""))
                    offsets.append(offset)
                    break
                batch.append((head[:8], head[8:], f.read(length), f.read(4)))
                offsets.append(offset)
                offset += 16 + length
            if not batch:
                return
            head_ok = masked_crc32c([b[0] for b in batch], table).astype("<u4").tobytes()
            data_ok = masked_crc32c([b[2] for b in batch], table).astype("<u4").tobytes()
            for k, (_, head_crc, data, data_crc) in enumerate(batch):
                if head_ok[4 * k : 4 * k + 4] != head_crc:
                    what = "its length fails its checksum" if len(head_crc) == 4 else "cut short"
                    raise _damaged(path, index, offsets[k], what)
                if len(data_crc) < 4:
                    raise _damaged(path, index, offsets[k], "cut short")
                if data_ok[4 * k : 4 * k + 4] != data_crc:
                    raise _damaged(path, index, offsets[k], "its data fails its checksum")
                yield data
                index += 1


def check_framing(paths, seconds=10.0):
    """Walks the record headers of local TFRecord files, skipping the data, so that a file
    cut short or a damaged length is found before training, not when training reaches it.

    Each header's length and its checksum are read and the records must end
    exactly at the end of the file (the data's checksums are left to the
    reading). Files are checked in order until `seconds` have passed; remote
    files (gs://...) are skipped. Returns how many files were checked.
    Raises UsageError naming the file, the record and its byte offset.
    """
    import time

    table = crc32c_table()
    deadline = time.monotonic() + seconds
    checked = 0
    for path in paths:
        if fileio.is_remote(path) or time.monotonic() > deadline:
            continue
        _check_file_framing(path, table)
        checked += 1
    return checked


def _check_file_framing(path, table):
    size = fileio.file_size(path)
    heads, offsets = [], []
    offset = index = 0
    with open(path, "rb") as f:
        while offset < size:
            head = f.read(12)
            heads.append(head)
            offsets.append(offset)
            (length,) = struct.unpack("<Q", head[:8].ljust(8, b"\0"))
            if len(head) < 12 or offset + 16 + length > size:
                _check_heads(path, heads, offsets, index - len(heads) + 1, table)
                raise _damaged(path, index, offset, "cut short")
            offset += 16 + length
            f.seek(offset)
            index += 1
            if len(heads) == _RECORDS_PER_BATCH:
                _check_heads(path, heads, offsets, index - len(heads), table)
                heads, offsets = [], []
    _check_heads(path, heads, offsets, index - len(heads), table)


def _check_heads(path, heads, offsets, first_index, table):
    """Each complete 12-byte header's length must match its checksum."""
    heads = [head for head in heads if len(head) == 12]
    if not heads:
        return
    sums = masked_crc32c([head[:8] for head in heads], table).astype("<u4").tobytes()
    for k, head in enumerate(heads):
        if sums[4 * k : 4 * k + 4] != head[8:]:
            raise _damaged(path, first_index + k, offsets[k], "its length fails its checksum")


class DamagedRecord(UsageError):
    """A damaged record of a TFRecord file; `offset` is where the record starts (where
    tf.data says "corrupted record at <offset>")."""

    def __init__(self, message, offset):
        super().__init__(message)
        self.offset = offset


def _damaged(path, index, offset, what):
    return DamagedRecord(
        f"{path}: record {index} (at byte {offset}) is corrupt: {what}; "
        "the file is damaged or not a TFRecord file",
        offset,
    )
