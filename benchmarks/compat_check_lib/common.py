"""Paths, the tiny model and float32 helpers shared by both interpreters (Python 3.7 too)."""

import os
import struct

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = os.path.join(REPO, "tests", "data", "vocab_uncased.txt")
GOLDEN = os.path.join(REPO, "tests", "data", "golden")

TINY_CONFIG = {
    "vocab_size": 30522,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
    "max_position_embeddings": 128,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def float32_round(x):
    """The float32 nearest to x, as a Python float, so both codes get identical inputs."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def float32_bits(x):
    return struct.unpack("<i", struct.pack("<f", x))[0]


def float32_ulps(x, y):
    """How many float32 steps apart two values are (same sign assumed)."""
    return abs(float32_bits(x) - float32_bits(y))


def float32_str(x):
    """Shortest decimal text that reads back as the same float32 (numpy's str(float32))."""
    bits = float32_bits(x)
    for digits in range(1, 10):
        text = repr(float(f"{x:.{digits}g}"))
        if float32_bits(float(text)) == bits:
            return text
    return repr(x)
