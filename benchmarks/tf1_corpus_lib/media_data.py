"""Tiny images and audio in the formats the corpus's TF-Slim, vision and speech
repositories read (corpus_media.py), written with numpy and the standard library only.

Every picture and sound is made from a seeded generator, so both sides read the same
bytes; they are small enough that a pipeline runs in seconds on a CPU.
"""

import os
import struct
import wave
import zlib

import numpy as np

from .data import _write


def png_bytes(pixels):
    """A PNG file of an RGB (height, width, 3) or grey (height, width) uint8 array."""
    pixels = np.asarray(pixels, np.uint8)
    colour = 2 if pixels.ndim == 3 else 0
    height, width = pixels.shape[:2]
    rows = pixels.reshape(height, -1)
    raw = b"".join(b"\x00" + row.tobytes() for row in rows)  # filter 0 on every row

    def chunk(kind, body):
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def picture(rng, height, width, channels=3):
    """A smooth random picture: a few coloured gradients and a bright disc."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    planes = []
    for _ in range(channels):
        a, b, c = rng.uniform(-1, 1, 3)
        plane = 128 + 60 * np.sin(a * x / 9 + b * y / 11 + c * 3)
        cy, cx, r = rng.uniform(0.2, 0.8) * height, rng.uniform(0.2, 0.8) * width, height / 5
        plane += 60 * ((y - cy) ** 2 + (x - cx) ** 2 < r * r)
        planes.append(plane)
    image = np.stack(planes, axis=-1) if channels > 1 else planes[0]
    return np.clip(image, 0, 255).astype(np.uint8)


def write_png(root, relative, pixels):
    _write(root, relative, png_bytes(pixels), mode="wb")


def write_wav(root, relative, samples, rate=16000):
    """A mono 16-bit PCM WAV file of float samples in [-1, 1]."""
    path = os.path.join(root, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pcm = (np.clip(samples, -1, 1) * 32767).astype("<i2")
    with wave.open(path, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(rate)
        f.writeframes(pcm.tobytes())


def tone(rng, seconds, rate=16000):
    """A few seconds of sound: two gliding tones under an envelope, and a little noise."""
    t = np.arange(int(seconds * rate)) / rate
    sound = np.zeros_like(t)
    for _ in range(2):
        start, end = rng.uniform(150, 900, 2)
        sound += 0.3 * np.sin(2 * np.pi * (start + (end - start) * t / seconds / 2) * t)
    envelope = np.minimum(1.0, np.minimum(t, seconds - t) * 8)
    return sound * envelope + 0.02 * rng.standard_normal(t.shape)


# ---------------------------------------------------------------------------
# Per repository


def pix2pix_facades(root):
    """affinelayer/pix2pix-tensorflow: facades/{train,val}/N.png, each the pair of pictures
    side by side (A on the left, B on the right), 256 x 512 as its download script leaves
    them."""
    rng = np.random.RandomState(11)
    for split, count in (("train", 3), ("val", 2)):
        for index in range(1, count + 1):
            a, b = picture(rng, 256, 256), picture(rng, 256, 256)
            write_png(root, f"facades/{split}/{index}.png", np.concatenate([a, b], axis=1))


WAVENET_TINY_PARAMS = {
    "filter_width": 2,
    "sample_rate": 16000,
    "dilations": [1, 2, 4, 8, 1, 2, 4, 8],
    "residual_channels": 8,
    "dilation_channels": 8,
    "quantization_channels": 64,
    "skip_channels": 16,
    "use_biases": True,
    "scalar_input": False,
    "initial_filter_width": 2,
}


def wavenet_corpus(root):
    """ibab/tensorflow-wavenet: a folder of .wav files (the README's --data_dir=corpus, VCTK
    recordings at 16 kHz there) and a WaveNet of its
    wavenet_params.json layout with fewer and narrower layers."""
    rng = np.random.RandomState(12)
    for index in range(3):
        write_wav(root, f"corpus/p225/p225_{index + 1:03d}.wav", tone(rng, 0.5))
    import json

    _write(root, "tiny_params.json", json.dumps(WAVENET_TINY_PARAMS, indent=4))


def facenet_faces(root):
    """davidsandberg/facenet: a training set of one folder of aligned faces per identity
    (its README's CASIA-WebFace aligned to 182 pixels, cropped to 160 when training), and
    an LFW set aligned to 160 with its pairs.txt (a header line, then "name n1 n2" for a
    matched pair and "name1 n1 name2 n2" for a mismatched one)."""
    rng = np.random.RandomState(13)
    for person in range(4):
        for index in range(4):
            write_png(
                root, f"data/casia_tiny/{person:07d}/{index + 1:03d}.png", picture(rng, 170, 170)
            )
    people = ["Anna_Berg", "John_Doe", "Maria_Lopez", "Peter_Pan"]
    for name in people:
        for index in range(1, 4):
            write_png(root, f"data/lfw_tiny/{name}/{name}_{index:04d}.png", picture(rng, 160, 160))
    pairs = ["2\t4"]
    for fold in range(2):
        for name in people[fold * 2 : fold * 2 + 2]:
            pairs.append(f"{name}\t1\t{2 + fold}")
        pairs.append(f"{people[fold]}\t3\t{people[3 - fold]}\t1")
        pairs.append(f"{people[2 + fold]}\t2\t{people[1 - fold]}\t3")
    _write(root, "data/pairs_tiny.txt", "\n".join(pairs) + "\n")


def mnist_idx(root):
    """carpedm20/DCGAN-tensorflow: data/mnist/ in MNIST's own idx files (the four its
    download.py fetches: a 16-byte header, then 28 x 28 bytes an image; an 8-byte header,
    then a byte a label). Its loader reshapes them to 60000 and 10000 images, so the files
    have the full count: blurred random strokes, seeded."""
    rng = np.random.RandomState(14)
    for prefix, count in (("train", 60000), ("t10k", 10000)):
        images = np.zeros((count, 28, 28), np.uint8)
        rows, cols = rng.randint(4, 24, (2, count))
        for offset in range(-2, 3):
            images[np.arange(count), rows, np.clip(cols + offset, 0, 27)] = 255
            images[np.arange(count), np.clip(rows + offset, 0, 27), cols] = 200
        labels = rng.randint(0, 10, count).astype(np.uint8)
        header = struct.pack(">IIII", 2051, count, 28, 28)
        _write(root, f"data/mnist/{prefix}-images-idx3-ubyte", header + images.tobytes(), "wb")
        header = struct.pack(">II", 2049, count)
        _write(root, f"data/mnist/{prefix}-labels-idx1-ubyte", header + labels.tobytes(), "wb")


_VOC_OBJECT = """  <object>
    <name>{name}</name>
    <pose>Unspecified</pose>
    <truncated>0</truncated>
    <difficult>0</difficult>
    <bndbox><xmin>{xmin}</xmin><ymin>{ymin}</ymin><xmax>{xmax}</xmax><ymax>{ymax}</ymax></bndbox>
  </object>
"""


def pascal_voc(root):
    """balancap/SSD-Tensorflow: a VOC2007 folder as Pascal VOC ships it (JPEGImages/N.jpg
    and Annotations/N.xml: the picture's size and each object's class and box), which
    tf_convert_data.py turns into its TFRecords. The JPEGs are TensorFlow's encoding."""
    import tensorflow as tf

    rng = np.random.RandomState(15)
    names = ["person", "car", "dog", "bicycle"]
    for index in range(4):
        height, width = 96, 128
        jpeg = tf.io.encode_jpeg(picture(rng, height, width), quality=90).numpy()
        stem = f"{index + 1:06d}"
        _write(root, f"VOC2007/JPEGImages/{stem}.jpg", jpeg, "wb")
        objects = ""
        for k in range(2):
            x0, y0 = rng.randint(0, width // 2), rng.randint(0, height // 2)
            x1, y1 = x0 + rng.randint(16, width // 2), y0 + rng.randint(16, height // 2)
            objects += _VOC_OBJECT.format(
                name=names[(index + k) % 4], xmin=x0, ymin=y0, xmax=x1, ymax=y1
            )
        xml = (
            f"<annotation>\n  <folder>VOC2007</folder>\n  <filename>{stem}.jpg</filename>\n"
            f"  <size><width>{width}</width><height>{height}</height><depth>3</depth></size>\n"
            f"  <segmented>0</segmented>\n{objects}</annotation>\n"
        )
        _write(root, f"VOC2007/Annotations/{stem}.xml", xml)
    # The README's OUTPUT_DIR, which the conversion writes into but does not make.
    os.makedirs(os.path.join(root, "tfrecords"), exist_ok=True)
