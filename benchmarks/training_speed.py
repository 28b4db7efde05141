"""Training and inference speed of the scripts' models against a plain implementation.

For one BERT configuration (flags) and one task - `finetune` (run_classifier's
model_fn: pooled output, classifier, AdamWeightDecay), `pretrain`
(run_pretraining's model_fn: masked LM + next sentence) or `inference`
(run_classifier's model_fn in PREDICT mode) - this runs each variant in its
own child process and reports examples/sec and examples per CPU-second of
the process (timed after warm-up steps; the second is less distorted when
other jobs share the CPU),
achieved model FLOP/s, the share of this machine's measured matmul peak, and
the child's peak resident memory:

  plain      benchmarks/plain_bert.py: independent straightforward TF1 code
             with the original's structure, float32, no XLA, one step per
             session.run (the yardstick);
  fp32       the project's script model_fn through engine.Estimator, defaults;
  xla        ... with --use_xla;
  bf16       ... with --precision=bf16;
  bf16_xla   ... with both;
  fp16       ... with --precision=fp16 (loss scaling; CPUs have no fast fp16);
  accN       ... fp32 with --num_accumulation_steps=N (N in the name).

The peak is measured in the same run: a 2048x2048 float32 and bfloat16
matmul (tf.matmul in a session, best of 3 timings of 10 runs). Model FLOPs
are counted from the matmuls (training = 3x forward; see BENCHMARKS.md).
Inputs are random token ids held in memory, so no input file is needed.

    .venv/bin/python benchmarks/training_speed.py --task=finetune \\
        --num_hidden_layers=6 --hidden_size=384 --num_attention_heads=6 \\
        --intermediate_size=1536 --seq_length=128 --batch_size=32 \\
        --steps=6 --warmup_steps=2 --variants=plain,fp32,xla,bf16,bf16_xla
"""

import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from absl import app, flags, logging

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from speed_common import (  # noqa: E402
    CLASSIFIER_KEYS,
    PRETRAIN_KEYS,
    StepTimer,
    bert_config,
    dataset_fn,
    forward_flops_per_example,
    measure_matmul_peak,
    synthetic_inputs,
)

FLAGS = flags.FLAGS
flags.DEFINE_enum("task", "finetune", ["finetune", "pretrain", "inference"], "What to time.")
flags.DEFINE_list(
    "variants", ["plain", "fp32", "xla", "bf16", "bf16_xla"], "Variants to run, in order."
)
flags.DEFINE_integer("num_hidden_layers", 6, "Transformer layers.")
flags.DEFINE_integer("hidden_size", 384, "Hidden width.")
flags.DEFINE_integer("num_attention_heads", 6, "Attention heads.")
flags.DEFINE_integer("intermediate_size", 1536, "Feed-forward width.")
flags.DEFINE_integer("vocab_size", 30522, "Vocabulary size.")
flags.DEFINE_integer("seq_length", 128, "Sequence length.")
flags.DEFINE_integer("batch_size", 32, "Global batch size (per optimizer step).")
flags.DEFINE_integer("predictions_per_seq", 20, "Masked positions per sequence (pretrain).")
flags.DEFINE_integer("num_labels", 2, "Classes (finetune, inference).")
flags.DEFINE_integer("steps", 6, "Timed steps (batches for inference).")
flags.DEFINE_integer("warmup_steps", 2, "Untimed steps first (XLA compiles here).")
flags.DEFINE_bool("measure_peak", True, "Measure the 2048x2048 matmul peak first.")
flags.DEFINE_string("child_variant", None, "Internal: run one variant and print JSON.")


def _config_dict():
    return dict(
        vocab_size=FLAGS.vocab_size,
        hidden_size=FLAGS.hidden_size,
        num_hidden_layers=FLAGS.num_hidden_layers,
        num_attention_heads=FLAGS.num_attention_heads,
        intermediate_size=FLAGS.intermediate_size,
    )


def _run_plain(task, data):
    import plain_bert
    import tensorflow as tf

    cfg = dict(_config_dict(), dropout=0.1)
    keys = PRETRAIN_KEYS if task == "pretrain" else CLASSIFIER_KEYS
    graph = tf.Graph()
    with graph.as_default():
        dataset = dataset_fn(data, keys)({"batch_size": FLAGS.batch_size})
        features = tf.compat.v1.data.make_one_shot_iterator(dataset).get_next()
        if task == "inference":
            _, logits = plain_bert.classifier_loss(cfg, features, FLAGS.num_labels, False)
            fetch = tf.nn.softmax(logits)
        else:
            if task == "pretrain":
                loss = plain_bert.pretraining_loss(cfg, features, True)
            else:
                loss, _ = plain_bert.classifier_loss(cfg, features, FLAGS.num_labels, True)
            fetch = plain_bert.train_op(loss)
        init = tf.compat.v1.global_variables_initializer()
    with tf.compat.v1.Session(graph=graph) as session:
        session.run(init)
        for _ in range(FLAGS.warmup_steps):
            session.run(fetch)
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(FLAGS.steps):
            session.run(fetch)
        return time.perf_counter() - start, time.process_time() - cpu_start


def _run_ours(task, variant, data):
    from bert_lib import engine

    # The engine's settings, and the model's (as each script passes them).
    speed = dict(
        use_xla="xla" in variant,
        num_accumulation_steps=int(variant[3:]) if variant.startswith("acc") else 1,
    )
    model_options = dict(
        precision="bf16" if "bf16" in variant else "fp16" if "fp16" in variant else "fp32",
        num_accumulation_steps=speed["num_accumulation_steps"],
    )
    config = bert_config(_config_dict(), FLAGS.seq_length)
    total = FLAGS.warmup_steps + FLAGS.steps
    if task == "pretrain":
        import run_pretraining as script

        model_fn = script.model_fn_builder(
            config, None, 5e-5, 1000, 100, False, False, **model_options
        )
        keys = PRETRAIN_KEYS
    else:
        import run_classifier as script

        model_fn = script.model_fn_builder(
            config, FLAGS.num_labels, None, 5e-5, 1000, 100, False, False, **model_options
        )
        keys = CLASSIFIER_KEYS
    with tempfile.TemporaryDirectory() as model_dir:
        run_config = engine.RunConfig(
            model_dir=model_dir,
            save_checkpoints_steps=100 * total,
            log_step_count_steps=100 * total,
            save_summary_steps=0,
            **speed,
        )
        estimator = engine.Estimator(
            model_fn,
            run_config,
            train_batch_size=FLAGS.batch_size,
            predict_batch_size=FLAGS.batch_size,
        )
        if task == "inference":
            batches = 0
            start = None
            predictions = estimator.predict(
                dataset_fn(data, keys, repeat=False), yield_single_examples=False
            )
            for _ in predictions:
                batches += 1
                if batches == FLAGS.warmup_steps:
                    start, cpu_start = time.perf_counter(), time.process_time()
            return time.perf_counter() - start, time.process_time() - cpu_start
        timer = StepTimer(FLAGS.warmup_steps, FLAGS.steps)
        estimator.train(dataset_fn(data, keys), max_steps=total, hooks=[timer])
        return timer.total()


def _child(variant):
    logging.set_verbosity(logging.WARNING)
    task = FLAGS.task
    batches = FLAGS.warmup_steps + FLAGS.steps if task == "inference" else 8
    data = synthetic_inputs(
        batches * FLAGS.batch_size,
        FLAGS.seq_length,
        FLAGS.vocab_size,
        FLAGS.predictions_per_seq,
        FLAGS.num_labels,
    )
    if variant == "plain":
        seconds, cpu_seconds = _run_plain(task, data)
    else:
        seconds, cpu_seconds = _run_ours(task, variant, data)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(
        "RESULT "
        + json.dumps(
            {
                "variant": variant,
                "seconds": seconds,
                "examples_per_sec": FLAGS.steps * FLAGS.batch_size / seconds,
                "examples_per_cpu_sec": FLAGS.steps * FLAGS.batch_size / cpu_seconds,
                "peak_rss_mb": peak_mb,
            }
        )
    )


def main(argv):
    del argv
    if FLAGS.child_variant:
        _child(FLAGS.child_variant)
        return
    logging.set_verbosity(logging.WARNING)
    with open("/proc/loadavg") as f:
        load_before = f.read().split()[0]
    peak = measure_matmul_peak() if FLAGS.measure_peak else {}
    cfg = _config_dict()
    flops = forward_flops_per_example(
        FLAGS.task, cfg, FLAGS.seq_length, FLAGS.predictions_per_seq, FLAGS.num_labels
    )
    if FLAGS.task != "inference":
        flops *= 3
    passthrough = [a for a in sys.argv[1:] if not a.startswith("--variants")]
    rows = []
    for variant in FLAGS.variants:
        cmd = [sys.executable, os.path.abspath(__file__), f"--child_variant={variant}"]
        proc = subprocess.run(cmd + passthrough, capture_output=True, text=True)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if proc.returncode != 0 or not lines:
            sys.stderr.write(proc.stderr[-3000:])
            raise SystemExit(f"variant {variant} failed (exit {proc.returncode})")
        row = json.loads(lines[-1][len("RESULT ") :])
        rows.append(row)
        print(
            f"{variant}: {row['examples_per_sec']:.2f} examples/sec, "
            f"{row['examples_per_cpu_sec']:.2f} examples per CPU-second",
            flush=True,
        )
    with open("/proc/loadavg") as f:
        load_after = f.read().split()[0]
    plain = [r for r in rows if r["variant"] == "plain"]
    print()
    print(
        f"task={FLAGS.task} layers={cfg['num_hidden_layers']} hidden={cfg['hidden_size']} "
        f"heads={cfg['num_attention_heads']} intermediate={cfg['intermediate_size']} "
        f"seq={FLAGS.seq_length} batch={FLAGS.batch_size} steps={FLAGS.steps} "
        f"warmup={FLAGS.warmup_steps}; load average before/after {load_before}/{load_after}"
    )
    print(f"model GFLOP per example: {flops / 1e9:.3f}")
    if peak:
        print(
            "matmul 2048^3 peak: "
            + ", ".join(
                f"{k} {peak[k]:.0f} GFLOP/s ({peak[k + '_per_cpu_sec']:.0f} per CPU-second)"
                for k in ("float32", "bfloat16")
            )
        )
    print(
        "| variant | examples/sec | vs plain | examples/CPU-sec | vs plain | model GFLOP/s "
        "| % of fp32 peak (CPU time) | % of bf16 peak (CPU time) | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        gflops = row["examples_per_sec"] * flops / 1e9
        ratio = ratio_cpu = "-"
        if plain:
            ratio = f"{row['examples_per_sec'] / plain[0]['examples_per_sec']:.2f}x"
            ratio_cpu = f"{row['examples_per_cpu_sec'] / plain[0]['examples_per_cpu_sec']:.2f}x"
        # Shares of the peak by CPU time: model FLOP per CPU-second over the
        # matmul's FLOP per CPU-second, both measured in this run.
        cpu_gflops = row["examples_per_cpu_sec"] * flops / 1e9
        fp32 = f"{100 * cpu_gflops / peak['float32_per_cpu_sec']:.0f}%" if peak else "-"
        bf16 = f"{100 * cpu_gflops / peak['bfloat16_per_cpu_sec']:.0f}%" if peak else "-"
        print(
            f"| {row['variant']} | {row['examples_per_sec']:.2f} | {ratio} | "
            f"{row['examples_per_cpu_sec']:.2f} | {ratio_cpu} | {gflops:.1f} | "
            f"{fp32} | {bf16} | {row['peak_rss_mb']:.0f} |"
        )


if __name__ == "__main__":
    app.run(main)
