"""Prints the on-paper GPU plan of BENCHMARKS.md: FLOPs, activation memory, batch, examples/s.

Nothing is measured here; every figure follows from the formulas below, so
the table can be checked and recomputed for other models or devices.

  forward FLOPs per example (matmuls, 2 per multiply-add), L layers, width H,
  feed-forward I, sequence S:
      L * (2*S*(4*H^2 + 2*H*I) + 4*S^2*H)      (+ 2*H^2 pooler, small heads)
  training FLOPs = 3 x forward (the backward pass costs two forward passes).
  pretraining adds the masked-LM head: P * (2*H^2 + 2*H*V) forward, for P
  predictions and a vocabulary of V.

  activation memory per example kept for the backward pass, per layer, with
  a attention heads (bytes; 16-bit activations, 1-byte dropout masks, as in
  Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models"): 34*S*H + 5*a*S^2. float32 doubles it.

  weights, gradients and Adam slots in float32: 16 bytes per parameter, plus
  a 16-bit copy of the weights under mixed precision (2 bytes).

    .venv/bin/python benchmarks/gpu_plan.py
"""

MODELS = {
    "BERT-Base": dict(layers=12, hidden=768, heads=12, intermediate=3072, params=110e6),
    "BERT-Large": dict(layers=24, hidden=1024, heads=16, intermediate=4096, params=340e6),
}
VOCAB = 30522
PREDICTIONS = {128: 20, 384: 60, 512: 80}
H100_BF16_DENSE = 989e12
UTILISATION = 0.35
GPU_GB = (16, 40, 80)
# Kept free on every GPU for cuDNN/cuBLAS workspaces, the framework and fragmentation.
RESERVED_GB = 2.0


def forward_flops(m, seq):
    h, i = m["hidden"], m["intermediate"]
    return m["layers"] * (2 * seq * (4 * h * h + 2 * h * i) + 4 * seq * seq * h) + 2 * h * h


def mlm_head_flops(m, seq):
    h = m["hidden"]
    return PREDICTIONS[seq] * (2 * h * h + 2 * h * VOCAB)


def activation_bytes(m, seq, bytes_scale=1.0):
    per_layer = 34 * seq * m["hidden"] + 5 * m["heads"] * seq * seq
    return bytes_scale * m["layers"] * per_layer


def main():
    print(
        "| model | seq | fwd GFLOP/ex | train GFLOP/ex (fine-tune) | + MLM head (pretrain) "
        "| activations MB/ex bf16 (fp32) | max batch 16/40/80 GB, bf16 | "
        "examples/s at 35% of H100 (fine-tune / pretrain) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, m in MODELS.items():
        static = m["params"] * (16 + 2)
        for seq in (128, 384, 512):
            fwd = forward_flops(m, seq)
            train = 3 * fwd
            pretrain = 3 * (fwd + mlm_head_flops(m, seq))
            act = activation_bytes(m, seq)
            batches = []
            for gb in GPU_GB:
                free = gb * 1e9 - RESERVED_GB * 1e9 - static
                batches.append(str(max(0, int(free // act))))
            rate = UTILISATION * H100_BF16_DENSE
            print(
                f"| {name} | {seq} | {fwd / 1e9:.1f} | {train / 1e9:.1f} | "
                f"{pretrain / 1e9:.1f} | {act / 1e6:.0f} ({2 * act / 1e6:.0f}) | "
                f"{' / '.join(batches)} | {rate / train:,.0f} / {rate / pretrain:,.0f} |"
            )
    print()
    for name, m in MODELS.items():
        print(
            f"{name}: weights+grads+Adam fp32 {m['params'] * 16 / 1e9:.2f} GB, "
            f"+ bf16 weight copy {m['params'] * 2 / 1e9:.2f} GB"
        )


if __name__ == "__main__":
    main()
