"""run_classifier.py with chosen pieces of a 16-bit model in float32, or noise on its gradients.

Bisects a bf16 (or fp16) run's outcome one kind of 16-bit tensor at a time,
on the run itself: the same seed draws the same head, dropout masks and
batches as the plain script (the pieces add casts, not random ops), so a
change in the result is the change of arithmetic. --float32_parts takes the
names of precision_trace.py: qk (Q K^T), av (attention probabilities times
V), dense (every dense matmul of the encoder), act (the feed-forward
activation), dense_grads (the dense matmuls' gradients, from float32
copies of their inputs). --gradient_noise=r multiplies each element of
every gradient by (1 + r * a standard normal draw) before clipping: noise
of a chosen size and no bias, to set beside what 16-bit arithmetic does to
a gradient (bf16's error is about 0.015 of each kind's gradient norm).
--log_every_step logs the training loss at every step (the engine's
progress line; the loss is fetched every step anyway, so the run is
unchanged). --full_last_layer computes the last layer at every position in
training, as a full-length run does, instead of at [CLS] only.
--stop_at_step=K trains to step K of the same schedule and stops (a
checkpoint is written there); a second run into the same --output_dir, at
another --precision if you like, resumes from it, on the same batches (the
engine saves the input position), to the end. Every other flag is run_classifier.py's.

  .venv/bin/python benchmarks/precision_bisect.py --float32_parts=qk,av \\
      --task_name=mrpc --data_dir=benchmarks/real_text/next_sentence_pairs ... \\
      --precision=bf16 --dynamic_padding=true --group_by_length=true --tf_random_seed=1
"""

import functools
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def install_gradient_noise(relative):
    """Patches optimization.apply_clipped_gradients to blur each gradient element by
    `relative` (its random ops come after the model's, so the model draws as before)."""
    import tensorflow as tf

    import optimization

    apply_clipped_gradients = optimization.apply_clipped_gradients

    def noisy(optimizer, grads, tvars, global_step, **kwargs):
        grads = [
            None
            if g is None
            else tf.convert_to_tensor(g) * (1.0 + relative * tf.random.normal(tf.shape(g)))
            for g in grads
        ]
        return apply_clipped_gradients(optimizer, grads, tvars, global_step, **kwargs)

    optimization.apply_clipped_gradients = noisy


def log_every_step():
    """Makes the engine log the loss of every training step."""
    from bert_lib.engine import config

    init = config.RunConfig.__init__

    def every_step(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.log_step_count_steps = 1

    config.RunConfig.__init__ = every_step


def full_last_layer():
    """Training computes the last layer at every position (the loss is the same function)."""
    import run_classifier

    create_model = run_classifier.create_model

    def full(*args, **kwargs):
        kwargs["pooled_output_only_in_training"] = False
        return create_model(*args, **kwargs)

    run_classifier.create_model = full


def stop_at_step(step):
    """Training stops at `step`, the learning-rate schedule unchanged."""
    from bert_lib.engine import estimator

    train = estimator.Estimator.train

    def train_to(self, input_fn, max_steps=None, steps=None, hooks=None):
        if max_steps is not None:
            max_steps = min(max_steps, step)
        return train(self, input_fn, max_steps=max_steps, steps=steps, hooks=hooks)

    estimator.Estimator.train = train_to


def main():
    parts, noise, patches = [], 0.0, []
    argv = [sys.argv[0]]
    for arg in sys.argv[1:]:
        if arg.startswith("--float32_parts="):
            parts = [p for p in arg.split("=", 1)[1].split(",") if p]
        elif arg.startswith("--gradient_noise="):
            noise = float(arg.split("=", 1)[1])
        elif arg == "--log_every_step":
            patches.append(log_every_step)
        elif arg == "--full_last_layer":
            patches.append(full_last_layer)
        elif arg.startswith("--stop_at_step="):
            patches.append(functools.partial(stop_at_step, int(arg.split("=", 1)[1])))
        else:
            argv.append(arg)
    unknown = set(parts) - {"qk", "av", "dense", "act", "dense_grads"}
    if unknown:
        raise SystemExit(f"ERROR: --float32_parts: unknown {sorted(unknown)}")
    import precision_trace
    from absl import flags

    import run_classifier
    from bert_lib import script_flags

    precision_trace.install_float32_parts(parts)
    if noise:
        install_gradient_noise(noise)
    for patch in patches:
        patch()
    sys.argv = argv
    for name in ("data_dir", "task_name", "vocab_file", "bert_config_file", "output_dir"):
        flags.mark_flag_as_required(name)
    script_flags.run_main(run_classifier.main)


if __name__ == "__main__":
    main()
