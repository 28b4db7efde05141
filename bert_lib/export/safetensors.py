"""Safetensors files with numpy alone: Hugging Face's weights format.

An 8-byte little-endian header length, a JSON header giving each tensor's
dtype, shape and [begin, end) byte offsets into the data that follows, and
the little-endian tensor bytes.
"""

import json
import struct

import numpy as np

from ..plumbing.errors import UsageError

# safetensors dtype codes and their numpy dtypes (little-endian).
_ST_DTYPES = {
    "F64": "<f8",
    "F32": "<f4",
    "F16": "<f2",
    "BF16": "<u2",  # widened to float32 on reading
    "I64": "<i8",
    "I32": "<i4",
    "I16": "<i2",
    "I8": "i1",
    "U8": "u1",
    "BOOL": "?",
}
_NP_TO_ST = {np.dtype(v): k for k, v in _ST_DTYPES.items() if k != "BF16"}


def read_safetensors(path):
    """Returns {name: numpy array} from a .safetensors file, and its __metadata__.

    BF16 tensors are widened to float32 (exactly: bfloat16 is the top half of
    a float32). Raises ValueError naming the file and key for a malformed file.
    """
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise UsageError(f"{path}: too short for a safetensors file")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > len(data) - 8:
        raise UsageError(f"{path}: header length {header_len} exceeds the file size")
    try:
        header = json.loads(data[8 : 8 + header_len].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise UsageError(f"{path}: the safetensors header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise UsageError(f"{path}: the safetensors header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    buffer = memoryview(data)[8 + header_len :]
    tensors = {}
    for name, entry in header.items():
        try:
            dtype_code, shape, (begin, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        except (TypeError, KeyError, ValueError):
            raise UsageError(f"{path}: tensor {name} has a malformed header entry") from None
        if dtype_code not in _ST_DTYPES:
            raise UsageError(f"{path}: tensor {name} has unsupported dtype {dtype_code}")
        if not all(isinstance(n, int) and n >= 0 for n in [*shape, begin, end]):
            raise UsageError(f"{path}: tensor {name} has a malformed shape or data_offsets")
        dtype = np.dtype(_ST_DTYPES[dtype_code])
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(buffer) or end - begin != count * dtype.itemsize:
            raise UsageError(
                f"{path}: tensor {name} has data_offsets [{begin}, {end}] that do not fit its "
                f"shape {shape} and dtype {dtype_code} in {len(buffer)} bytes of data"
            )
        array = np.frombuffer(buffer[begin:end], dtype=dtype).reshape(shape)
        if dtype_code == "BF16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = array.astype(array.dtype.newbyteorder("="))
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes {name: numpy array} as a .safetensors file (names sorted, data contiguous).

    The header is padded with spaces to a multiple of 8 bytes, so every
    tensor starts 8-byte aligned.
    """
    header, offset, order = {}, 0, sorted(tensors)
    for name in order:
        array = tensors[name]
        if array.dtype not in _NP_TO_ST:
            raise ValueError(f"{path}: tensor {name} has dtype {array.dtype}, not storable")
        header[name] = {
            "dtype": _NP_TO_ST[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + array.nbytes],
        }
        offset += array.nbytes
    if metadata:
        header["__metadata__"] = dict(metadata)
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for name in order:
            f.write(np.ascontiguousarray(tensors[name], tensors[name].dtype.newbyteorder("<")))
