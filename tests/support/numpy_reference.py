"""BERT's math written again in float64 numpy, the independent side of many tests.

Each piece follows the formula the original used, not this repository's code,
so a test that compares against it can fail when the code is wrong.
"""

import re

import numpy as np


def gelu(x):
    """The tanh approximation of GELU, as the original BERT used."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def layer_norm(x, beta=0.0, gamma=1.0, epsilon=1e-12):
    """Normalisation over the last axis with the biased variance, then scale and shift."""
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def learning_rate(step, init_lr, num_train_steps, num_warmup_steps):
    """Linear warmup to init_lr, then linear decay to 0 at num_train_steps."""
    if num_warmup_steps and step < num_warmup_steps:
        return init_lr * step / num_warmup_steps
    return init_lr * (1.0 - min(step, num_train_steps) / num_train_steps)


def clip_by_global_norm(grads, clip_norm=1.0):
    norm = np.sqrt(sum(float(np.sum(np.asarray(g, np.float64) ** 2)) for g in grads))
    return [np.asarray(g) * clip_norm / max(norm, clip_norm) for g in grads]


def adam_step(param, m, v, grad, lr, weight_decay_rate=0.0, beta_1=0.9, beta_2=0.999, eps=1e-6):
    """One AdamWeightDecay update: Adam without bias correction, decay added to the step.

    Returns (param, m, v) after the step; weight_decay_rate=0 for excluded variables.
    """
    m = beta_1 * m + (1 - beta_1) * grad
    v = beta_2 * v + (1 - beta_2) * grad**2
    update = m / (np.sqrt(v) + eps)
    if weight_decay_rate:
        update = update + weight_decay_rate * param
    return param - lr * update, m, v


class Lamb:
    """LAMB in float64, one variable at a time, t counted from 1."""

    def __init__(self, params, weight_decay_rate, exclude, beta_1=0.9, beta_2=0.999, eps=1e-6):
        self.params = {k: np.asarray(v, np.float64) for k, v in params.items()}
        self.m = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.v = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.weight_decay_rate = weight_decay_rate
        self.exclude = exclude
        self.beta_1, self.beta_2, self.eps = beta_1, beta_2, eps

    def adapted(self, name):
        return not any(re.search(pattern, name) for pattern in self.exclude)

    def step(self, grads, learning_rate, t):
        for name, grad in grads.items():
            w = self.params[name]
            self.m[name] = self.beta_1 * self.m[name] + (1 - self.beta_1) * grad
            self.v[name] = self.beta_2 * self.v[name] + (1 - self.beta_2) * np.square(grad)
            m_hat = self.m[name] / (1 - self.beta_1**t)
            v_hat = self.v[name] / (1 - self.beta_2**t)
            r = m_hat / (np.sqrt(v_hat) + self.eps)
            ratio = 1.0
            if self.adapted(name):
                r = r + self.weight_decay_rate * w
                w_norm, r_norm = np.linalg.norm(w), np.linalg.norm(r)
                if w_norm > 0 and r_norm > 0:
                    ratio = w_norm / r_norm
            self.params[name] = w - learning_rate * ratio * r


class AdamWeightDecay:
    """adam_step over named float64 parameters, slots starting at zero."""

    def __init__(self, params, weight_decay_rate, exclude, beta_1=0.9, beta_2=0.999, eps=1e-6):
        self.params = {k: v.astype(np.float64) for k, v in params.items()}
        self.m = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.v = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.weight_decay_rate = weight_decay_rate
        self.exclude = exclude or []
        self.beta_1, self.beta_2, self.eps = beta_1, beta_2, eps

    def decays(self, name):
        return bool(self.weight_decay_rate) and not any(re.search(p, name) for p in self.exclude)

    def step(self, grads, learning_rate):
        for name, grad in grads.items():
            self.params[name], self.m[name], self.v[name] = adam_step(
                self.params[name],
                self.m[name],
                self.v[name],
                grad,
                learning_rate,
                self.weight_decay_rate if self.decays(name) else 0.0,
                self.beta_1,
                self.beta_2,
                self.eps,
            )


def bert(weights, config, ids, mask=None, types=None, matmul=None, last_layer_at_cls=False):
    """Forward pass of BERT from {checkpoint name: array}; the outputs BertModel gives.

    `matmul(x, kernel)`, when given, computes each dense layer's x @ kernel
    (x [..., in]; for an integer version of it). With `last_layer_at_cls`
    the last layer computes its query, output and feed-forward at the first
    position only, as BertModel(pooled_output_only=True) does; its
    sequence_output is then that position's, [batch, 1, hidden].
    """
    matmul = matmul or np.matmul
    w = {name: value.astype(np.float64) for name, value in weights.items()}
    batch, seq = ids.shape
    mask = np.ones_like(ids) if mask is None else mask
    types = np.zeros_like(ids) if types is None else types
    heads = config.num_attention_heads
    head_size = config.hidden_size // heads

    emb = (
        w["bert/embeddings/word_embeddings"][ids]
        + w["bert/embeddings/token_type_embeddings"][types]
        + w["bert/embeddings/position_embeddings"][:seq][None]
    )
    emb = layer_norm(
        emb, w["bert/embeddings/LayerNorm/beta"], w["bert/embeddings/LayerNorm/gamma"]
    )

    def linear(x, scope):
        return matmul(x, w[scope + "/kernel"]) + w[scope + "/bias"]

    def split(x):  # [B, S, N*H] -> [B, N, S, H]
        return x.reshape(batch, seq, heads, head_size).transpose(0, 2, 1, 3)

    # Padding positions may not be attended to: -10000 on their scores.
    adder = (1.0 - mask[:, None, None, :].astype(np.float64)) * -10000.0
    hidden = emb
    layers = []
    for layer in range(config.num_hidden_layers):
        p = f"bert/encoder/layer_{layer}/"
        rows = hidden
        if last_layer_at_cls and layer == config.num_hidden_layers - 1:
            rows = hidden[:, :1]
        q = linear(rows, p + "attention/self/query")
        q = q.reshape(batch, -1, heads, head_size).transpose(0, 2, 1, 3)
        k = split(linear(hidden, p + "attention/self/key"))
        v = split(linear(hidden, p + "attention/self/value"))
        probs = softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_size) + adder)
        context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, rows.shape[1], -1)
        attention = layer_norm(
            linear(context, p + "attention/output/dense") + rows,
            w[p + "attention/output/LayerNorm/beta"],
            w[p + "attention/output/LayerNorm/gamma"],
        )
        intermediate = gelu(linear(attention, p + "intermediate/dense"))
        hidden = layer_norm(
            linear(intermediate, p + "output/dense") + attention,
            w[p + "output/LayerNorm/beta"],
            w[p + "output/LayerNorm/gamma"],
        )
        layers.append(hidden)

    pooled = np.tanh(linear(hidden[:, 0], "bert/pooler/dense"))
    return {
        "embedding_output": emb,
        "all_encoder_layers": layers,
        "sequence_output": hidden,
        "pooled_output": pooled,
    }
