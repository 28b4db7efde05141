"""What the speed benchmarks share: synthetic inputs, FLOP counts, the matmul peak, machine facts.

training_speed.py, peer_speed.py and step_profile.py time the same models
on the same kind of input; this module is the one copy of that plumbing.
Nothing here imports TensorFlow at module level, so a child process that
times another framework can import it too.
"""

import os
import subprocess
import time

CLASSIFIER_KEYS = ["input_ids", "input_mask", "segment_ids", "label_ids", "is_real_example"]
PRETRAIN_KEYS = [
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
]


def bert_config(sizes, seq_length):
    """The modeling.BertConfig the speed benchmarks time: `sizes` holds vocab_size,
    hidden_size, num_hidden_layers, num_attention_heads and intermediate_size (other
    keys are ignored); positions for max(512, seq_length), two segment types."""
    import modeling

    return modeling.BertConfig(
        vocab_size=sizes["vocab_size"],
        hidden_size=sizes["hidden_size"],
        num_hidden_layers=sizes["num_hidden_layers"],
        num_attention_heads=sizes["num_attention_heads"],
        intermediate_size=sizes["intermediate_size"],
        max_position_embeddings=max(512, seq_length),
        type_vocab_size=2,
    )


def forward_flops_per_example(task, cfg, seq, predictions, num_labels):
    """Multiply-add FLOPs (2 per MAC) of the matmuls in one example's forward pass.

    `cfg` holds hidden_size, intermediate_size, num_hidden_layers and
    vocab_size. Training costs 3x this (the backward pass is about two
    forward passes).
    """
    h, i = cfg["hidden_size"], cfg["intermediate_size"]
    per_layer = 2 * seq * (4 * h * h + 2 * h * i) + 2 * 2 * seq * seq * h
    flops = cfg["num_hidden_layers"] * per_layer + 2 * h * h  # + pooler
    if task == "pretrain":
        flops += predictions * (2 * h * h + 2 * h * cfg["vocab_size"]) + 2 * h * 2
    else:
        flops += 2 * h * num_labels
    return flops


def synthetic_inputs(
    num_examples, seq, vocab, predictions=20, num_labels=2, full_length=False, seed=0
):
    """Random model inputs for `num_examples` examples, as numpy arrays by feature name.

    Lengths are drawn from [seq/2, seq] unless `full_length` (every example
    fills all `seq` positions, the shape the peer benchmark compares at).
    The second half of each example is segment 1. Every key of
    CLASSIFIER_KEYS and PRETRAIN_KEYS is there.
    """
    import numpy as np

    rng = np.random.RandomState(seed)
    n = num_examples
    if full_length:
        lengths = np.full(n, seq)
    else:
        lengths = rng.randint(seq // 2, seq + 1, size=n)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
    return {
        "input_ids": (rng.randint(1, vocab, size=(n, seq)) * mask).astype(np.int32),
        "input_mask": mask,
        "segment_ids": ((np.arange(seq)[None, :] > lengths[:, None] // 2) * mask).astype(np.int32),
        "label_ids": rng.randint(0, num_labels, size=n).astype(np.int32),
        "masked_lm_positions": np.sort(
            rng.randint(1, seq // 2, size=(n, predictions)), axis=1
        ).astype(np.int32),
        "masked_lm_ids": rng.randint(1, vocab, size=(n, predictions)).astype(np.int32),
        "masked_lm_weights": np.ones((n, predictions), np.float32),
        "next_sentence_labels": rng.randint(0, 2, size=(n, 1)).astype(np.int32),
        "is_real_example": np.ones(n, np.int32),
    }


def dataset_fn(data, keys, repeat=True):
    """An input_fn(params) over the in-memory arrays `data[keys]`, batched by params."""
    import tensorflow as tf

    def input_fn(params):
        d = tf.data.Dataset.from_tensor_slices({k: data[k] for k in keys})
        if repeat:
            d = d.repeat()
        return d.batch(params["batch_size"], drop_remainder=True)

    return input_fn


class StepTimer:
    """Engine hook: wall and CPU seconds of each training step after `warmup` steps.

    `window_seconds()` gives the steps' times; `total()` the wall and CPU
    seconds from the end of the warm-up to the end of step warmup + steps.
    """

    def __init__(self, warmup, steps):
        self.warmup, self.steps = warmup, steps
        self.count = 0
        self.marks = []  # (wall, cpu) after warm-up and after each timed step

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        del session, coord

    def before_run(self, run_context):
        del run_context

    def after_run(self, run_context, run_values):
        del run_context, run_values
        self.count += 1
        if self.warmup <= self.count <= self.warmup + self.steps:
            self.marks.append((time.perf_counter(), time.process_time()))

    def end(self, session):
        del session

    def step_seconds(self):
        """[(wall, cpu)] of each timed step."""
        return [(b[0] - a[0], b[1] - a[1]) for a, b in zip(self.marks[:-1], self.marks[1:])]

    def total(self):
        """(wall, cpu) seconds of all timed steps."""
        first, last = self.marks[0], self.marks[-1]
        return last[0] - first[0], last[1] - first[1]


def measure_matmul_peak(n=2048, dtypes=("float32", "bfloat16")):
    """GFLOP/s of an n x n matmul per dtype (best of 3 timings of 10 runs).

    Also GFLOP per CPU-second ("<dtype>_per_cpu_sec"), which a busy machine
    distorts less than wall time (on an idle 2-core machine, wall GFLOP/s is
    about twice GFLOP per CPU-second).
    """
    import numpy as np
    import tensorflow as tf

    result = {}
    for name in dtypes:
        dtype = tf.as_dtype(name)
        graph = tf.Graph()
        with graph.as_default():
            rng = np.random.RandomState(0)
            a = tf.Variable(tf.cast(rng.standard_normal((n, n)).astype(np.float32), dtype))
            b = tf.Variable(tf.cast(rng.standard_normal((n, n)).astype(np.float32), dtype))
            # Reduce to a scalar so fetching the result costs nothing.
            product = tf.reduce_sum(tf.cast(tf.matmul(a, b)[:1, :1], tf.float32))
            init = tf.compat.v1.global_variables_initializer()
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(init)
            session.run(product)
            best = best_cpu = float("inf")
            for _ in range(3):
                start, cpu_start = time.perf_counter(), time.process_time()
                for _ in range(10):
                    session.run(product)
                best = min(best, (time.perf_counter() - start) / 10)
                best_cpu = min(best_cpu, (time.process_time() - cpu_start) / 10)
        result[name] = 2.0 * n**3 / best / 1e9
        result[name + "_per_cpu_sec"] = 2.0 * n**3 / best_cpu / 1e9
    return result


def load_average():
    """The 1-, 5- and 15-minute load averages, as printed in /proc/loadavg."""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine_facts():
    """One line about this CPU from lscpu: model, CPU count and the precision-relevant flags."""
    from original_speed import SIMD_FLAGS, parse_lscpu

    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return f"{os.cpu_count()} CPUs (lscpu unavailable)"
    model, flags = parse_lscpu(text)
    have = ", ".join(f"{flag} {'yes' if flag in flags else 'no'}" for flag in SIMD_FLAGS)
    return f"{model}, {os.cpu_count()} CPUs; {have}"


def median(values):
    """The median of a non-empty list of numbers."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def time_in_turns(calls, rounds, count, shuffler=None):
    """{name: ([wall ms a call], [CPU ms a call])}, one entry per round, of the callables
    `calls` ({name: call()}) timed in turns: each round runs `count` calls of each, one
    contender after the other (in an order `shuffler`, a random.Random, shuffles anew
    each round; else as given), so that a machine's drift over minutes falls on all
    alike and a ratio can be taken within a round."""
    per = {name: ([], []) for name in calls}
    order = list(calls)
    for _ in range(rounds):
        if shuffler is not None:
            shuffler.shuffle(order)
        for name in order:
            call = calls[name]
            wall, cpu = time.perf_counter(), time.process_time()
            for _ in range(count):
                call()
            per[name][0].append((time.perf_counter() - wall) * 1000.0 / count)
            per[name][1].append((time.process_time() - cpu) * 1000.0 / count)
    return per
