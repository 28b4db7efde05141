"""Trains the speed-test classifier on two logical CPUs and on one, for test_gradient_accumulation.

Usage: speed_worker.py OUTPUT_DIR. Device set-up is process-wide, hence a
process of its own. Writes checkpoints to OUTPUT_DIR/mirrored (two
replicas, --num_accumulation_steps=2, bf16) and OUTPUT_DIR/single (one
device, same flags), and OUTPUT_DIR/mirrored_fp16 / single_fp16 (fp16 with
loss scaling), all after 2 steps of the same global batch.
"""

import process_setup  # noqa: F401 (quiet TensorFlow on CPU, the repo importable)

# isort: split
import os
import sys

import mirrored
import speed_helpers
from absl import logging


def main(output_dir):
    logging.set_verbosity(logging.WARNING)
    mirrored.split_cpu(2)
    flags = dict(num_accumulation_steps=2, precision="bf16", learning_rate=3e-3, batch_size=8)
    speed_helpers.train(
        os.path.join(output_dir, "mirrored"), 2, distribution_strategy="mirrored", **flags
    )
    speed_helpers.train(os.path.join(output_dir, "single"), 2, **flags)
    # float16 with loss scaling: the scale lives on both replicas.
    flags = dict(precision="fp16", learning_rate=3e-3, batch_size=8)
    speed_helpers.train(
        os.path.join(output_dir, "mirrored_fp16"), 2, distribution_strategy="mirrored", **flags
    )
    speed_helpers.train(os.path.join(output_dir, "single_fp16"), 2, **flags)


if __name__ == "__main__":
    main(sys.argv[1])
