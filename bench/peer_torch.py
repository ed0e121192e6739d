#!/usr/bin/env python3
"""bench/peer_torch.py: Ablate's Transformer written in PyTorch, the peer of the benchmark.

The model of an Ablate spec, transcribed from Ablate's source (framework/model/transformer.cpp
and attention.cpp, framework/core/components.cpp, plugins/block_*, ffn_*, positional_encoding_*,
plugins/common/adam_rule.hpp with the backend's adam_update): the same architecture, parameter
names and shapes, initialisation scheme, dropout sites, loss and optimizer. bench/README.md says
what is measured and how.

  peer_torch.py speed RESOLVED_SPEC.yaml [--threads 2] [--steps N] [--warmup N] [--compile] [--bf16] [--device cuda]
      trains on random batches of the spec's exact shapes; prints one JSON line (tokens/s, ...)
  peer_torch.py check DUMP.h5 [--threads 2] [--tolerance R] [--float64]
      loads an `ablate run --dump-reference` file, trains the same steps on the same batches from
      the same initial weights, prints each step's losses and one JSON line; exit 1 when a loss
      differs by more than the relative tolerance

RESOLVED_SPEC is what `ablate validate SPEC --print` prints after its first line (every default
written out). Runs on the current PyTorch (scaled_dot_product_attention, torch.compile) and on
Debian's 1.13 (attention written out).
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

PAD, BOS, EOS, IGNORE = 0, 1, 2, -100  # ablate/task.hpp: reserved ids; HostBatch::kIgnore
HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def linear(d_in, d_out, bias):
    """nn.Linear ([out, in] weight, as Ablate's) with Ablate's init: Xavier-uniform, zero bias."""
    layer = nn.Linear(d_in, d_out, bias=bias)
    nn.init.xavier_uniform_(layer.weight)
    if bias:
        nn.init.zeros_(layer.bias)
    return layer


class Norm(nn.Module):
    """NormLayer: LayerNorm (gamma, beta) or RMSNorm (gamma) over the last dim."""

    def __init__(self, kind, d, eps):
        super().__init__()
        self.eps = eps
        self.gamma = nn.Parameter(torch.ones(d))
        self.beta = nn.Parameter(torch.zeros(d)) if kind == "layer_norm" else None

    def forward(self, x):
        if self.beta is not None:
            return F.layer_norm(x, x.shape[-1:], self.gamma, self.beta, self.eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.gamma


def attend(q, k, v, mask, causal, dropout):
    """softmax(q·k^T / sqrt(Dh), masked) · v over [B, H, T|S, Dh]. mask: bool, True = may attend
    (causal already folded in), or float added to the logits ([.., T, S], -inf = may not), or None
    with `causal` alone."""
    if HAS_SDPA:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout, is_causal=causal and mask is None)
    scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is None and causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).tril()
    if mask is not None and mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, float("-inf"))
    elif mask is not None:  # additive (ALiBi's biases, -inf where masked)
        scores = scores + mask
    probs = F.dropout(torch.softmax(scores, dim=-1), dropout, training=dropout > 0)
    return torch.matmul(probs, v)


class Attention(nn.Module):
    """MultiHeadAttention: self (fused qkv [3D, D]) or cross (q [D, D], kv [2D, D]), then out [D, D]."""

    def __init__(self, m, cross):
        super().__init__()
        d = m["d_model"]
        self.heads, self.dropout, self.cross = m["heads"], float(m["attention_dropout"]), cross
        if cross:
            self.q = linear(d, d, m["qkv_bias"])
            self.kv = linear(d, 2 * d, m["qkv_bias"])
        else:
            self.qkv = linear(d, 3 * d, m["qkv_bias"])
        self.out = linear(d, d, m["out_bias"])

    def forward(self, x, memory, mask, causal, slopes=None):
        b, t, d = x.shape
        if self.cross:
            q, (k, v) = self.q(x), self.kv(memory).split(d, dim=-1)
        else:
            q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.reshape(b, z.shape[1], self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if slopes is not None:  # ALiBi: -m_h |i - j| on every logit, [H, T, T], masked keys -inf
            i = torch.arange(t, device=x.device)
            bias = -slopes[:, None, None] * (i[:, None] - i[None, :]).abs().float()
            allowed = torch.ones(t, t, dtype=torch.bool, device=x.device).tril() if causal else None
            if mask is not None:
                allowed = mask if allowed is None else mask & allowed
            mask = bias if allowed is None else torch.where(allowed, bias, torch.tensor(float("-inf")))
            causal = False
        y = attend(q, k, v, mask, causal, self.dropout if self.training else 0.0)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class FeedForward(nn.Module):
    """FeedForwardLayers: out(Dropout(act(in(x)))), D -> F -> D; parameters "in.*" and "out.*"."""

    def __init__(self, m, ffn):
        super().__init__()
        self.add_module("in", linear(m["d_model"], m["d_ff"], True))  # "in" is a Python keyword: not an attribute
        self.out = linear(m["d_ff"], m["d_model"], True)
        self.dropout = float(m["dropout"])
        if ffn["plugin"] == "relu":
            self.act = F.relu
        elif ffn["plugin"] == "gelu":
            approximate = "tanh" if ffn.get("approximation") == "tanh" else "none"
            self.act = lambda h: F.gelu(h, approximate=approximate)
        else:
            raise SystemExit(f"peer_torch: ffn plugin '{ffn['plugin']}' is not written here (relu, gelu)")

    def forward(self, x):
        return self.out(F.dropout(self.act(self._modules["in"](x)), self.dropout, self.training))


class Layer(nn.Module):
    """One layer: self-attention, optional cross-attention, FFN, each wrapped by the block's norm
    placement, "norm<i>" per sublayer: post_norm Norm(x + Drop(f(x))), pre_norm x + Drop(f(Norm(x)))."""

    def __init__(self, m, cross):
        super().__init__()
        block = m["block"]
        self.pre_norm = block["plugin"] == "pre_norm"
        self.dropout = float(m["dropout"])
        self.self_attn = Attention(m, cross=False)
        self.cross_attn = Attention(m, cross=True) if cross else None
        self.ffn = FeedForward(m, m["ffn"])
        for i in range(3 if cross else 2):
            self.add_module(f"norm{i}", Norm(block.get("norm", "layer_norm"), m["d_model"], float(m["norm_eps"])))

    def sublayer(self, i, x, f):
        norm = self._modules[f"norm{i}"]
        if self.pre_norm:
            return x + F.dropout(f(norm(x)), self.dropout, self.training)
        return norm(x + F.dropout(f(x), self.dropout, self.training))

    def forward(self, x, self_mask, causal, memory, cross_mask, slopes=None):
        x = self.sublayer(0, x, lambda h: self.self_attn(h, None, self_mask, causal, slopes))
        if self.cross_attn is not None:
            x = self.sublayer(1, x, lambda h: self.cross_attn(h, memory, cross_mask, False))
        return self.sublayer(2 if self.cross_attn is not None else 1, x, self.ffn)


def alibi_slopes(heads):
    """ALiBi's slopes [H], from Press et al. 2022 (section 3 and their code's rule for H not a power
    of two): 2^(-8 i / n), i = 1 .. n, for n the largest power of two <= H, then every other slope
    of 2n. Written here from the paper, not from Ablate's plugin, so that the two can disagree."""
    n = 2 ** int(math.floor(math.log2(heads)))
    slopes = [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]
    slopes += [2.0 ** (-8.0 * i / (2 * n)) for i in range(1, 2 * n + 1, 2)][: heads - n]
    return torch.tensor(slopes, dtype=torch.float32)


class Positions(nn.Module):
    """positional_encoding/learned (weight [max_len, D], N(0, 0.02)), /sinusoidal (fixed table), or
    /alibi (nothing added to the embeddings; `slopes` [H] for every self-attention's logits)."""

    def __init__(self, pe, d, max_positions, heads):
        super().__init__()
        self.learned = pe["plugin"] == "learned"
        self.slopes = alibi_slopes(heads) if pe["plugin"] == "alibi" else None
        if self.learned:
            self.weight = nn.Parameter(torch.empty(int(pe["max_len"]), d).normal_(0.0, 0.02))
        elif pe["plugin"] == "sinusoidal":
            pos = torch.arange(max_positions, dtype=torch.float64)[:, None]
            j = torch.arange(d)
            angle = pos / torch.pow(float(pe["base"]), (j - j % 2).double() / d)
            self.register_buffer("table", torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle)).float(), persistent=False)
        elif self.slopes is None:
            raise SystemExit(f"peer_torch: positional_encoding '{pe['plugin']}' is not written here (learned, sinusoidal, alibi)")

    def forward(self, x):
        if self.slopes is not None:
            return x
        return x + (self.weight if self.learned else self.table)[: x.shape[1]]


class Stack(nn.Module):
    """An encoder or decoder: embedding [V, D] (* sqrt(D)), positions, optional embedding norm,
    embedding dropout, layers, and the final norm of a pre-norm stack."""

    def __init__(self, m, vocab, layers, cross, max_positions):
        super().__init__()
        d = m["d_model"]
        self.scale = math.sqrt(d) if m["scale_embedding"] else 1.0
        self.dropout = float(m["embedding_dropout"])
        self.embedding = nn.Embedding(vocab, d)
        nn.init.normal_(self.embedding.weight, 0.0, d ** -0.5)
        self.positions = Positions(m["positional_encoding"], d, max_positions, m["heads"])
        self.embedding_norm = Norm("layer_norm", d, float(m["embedding_norm_eps"])) if m["embedding_norm"] else None
        self.layers = nn.ModuleList(Layer(m, cross) for _ in range(layers))
        wants_final = m["block"]["plugin"] == "pre_norm"
        self.final_norm = None
        if wants_final and m["final_norm"] and layers > 0:
            self.final_norm = Norm(m["block"].get("norm", "layer_norm"), d, float(m["norm_eps"]))

    def forward(self, ids, self_mask, causal, memory=None, cross_mask=None):
        x = self.positions(self.embedding(ids) * self.scale)
        if self.embedding_norm is not None:
            x = self.embedding_norm(x)
        x = F.dropout(x, self.dropout, self.training)
        for layer in self.layers:
            x = layer(x, self_mask, causal, memory, cross_mask, self.positions.slopes)
        return self.final_norm(x) if self.final_norm is not None else x


class Transformer(nn.Module):
    """model.arch encoder_decoder or decoder; logits [B, T, V] through the tied decoder embedding
    (or output.weight/bias when model.tie_embeddings is false). Parameter names are Ablate's."""

    def __init__(self, m, vocab, max_positions):
        super().__init__()
        if m["arch"] not in ("encoder_decoder", "decoder"):
            raise SystemExit(f"peer_torch: model.arch '{m['arch']}' is not written here (encoder_decoder, decoder)")
        self.causal = bool(m["causal"])
        self.encoder = Stack(m, vocab, m["encoder_layers"], False, max_positions) if m["arch"] == "encoder_decoder" else None
        self.decoder = Stack(m, vocab, m["decoder_layers"], self.encoder is not None, max_positions)
        self.output = None if m["tie_embeddings"] else linear(m["d_model"], vocab, True)

    def forward(self, src, tgt_in, src_lengths=None, tgt_lengths=None):
        """Lengths None: every sequence is full length, no padding mask (what Ablate's masks
        then amount to)."""
        src_mask = None if src_lengths is None else key_mask(src_lengths, src.shape[1])
        memory = self.encoder(src, src_mask, False) if self.encoder is not None else None
        self_mask = None
        if tgt_lengths is not None:
            t = tgt_in.shape[1]
            self_mask = key_mask(tgt_lengths, t)
            if self.causal:
                self_mask = self_mask & torch.ones(t, t, dtype=torch.bool).tril()
        h = self.decoder(tgt_in, self_mask, self.causal, memory, src_mask)
        return self.output(h) if self.output is not None else F.linear(h, self.decoder.embedding.weight)


def key_mask(lengths, s):
    """[B, 1, 1, S] bool: key j < lengths[b] may be attended to."""
    return (torch.arange(s)[None, :] < lengths[:, None])[:, None, None, :]


def parameter_role(name, shape):
    """Ablate's ParameterRole of a parameter (framework/core/optimizer.cpp), from its name and shape."""
    parts = name.split(".")
    if any("norm" in part for part in parts):
        return "norm"
    if "layers" in parts and not {"self_attn", "cross_attn", "ffn"} & set(parts):
        return "norm"
    if "embedding" in parts or "positions" in parts:
        return "embedding" if len(shape) >= 2 else "vector"
    if len(shape) < 2:
        return "vector"
    return "output" if {"output", "classifier"} & set(parts) else "matrix"


class Lion(torch.optim.Optimizer):
    """Lion (Chen et al. 2023, Algorithm 2), written from the paper: plugins/optimizer_lion's peer."""

    def __init__(self, params, lr, betas, weight_decay):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                m = self.state[p].setdefault("m", torch.zeros_like(p))
                g = p.grad if p.grad is not None else torch.zeros_like(p)
                c = m * b1 + g * (1 - b1)
                p.mul_(1 - group["lr"] * group["weight_decay"]).add_(torch.sign(c), alpha=-group["lr"])
                m.mul_(b2).add_(g, alpha=1 - b2)


class Muon(torch.optim.Optimizer):
    """Muon as modded-nanogpt writes it (Nesterov momentum, 5 Newton-Schulz steps of the quintic), the
    update at AdamW's RMS (0.2 sqrt(max(rows, cols)), Liu et al. 2025) for role "matrix"; AdamW
    for the rest: plugins/optimizer_muon's peer."""

    def __init__(self, named_params, lr, momentum, betas, eps, weight_decay, ns_steps=5):
        named = list(named_params)
        self.roles = {id(p): parameter_role(n, tuple(p.shape)) for n, p in named}
        super().__init__([p for _, p in named], dict(lr=lr, momentum=momentum, betas=betas, eps=eps,
                                                     weight_decay=weight_decay, ns_steps=ns_steps))

    @staticmethod
    def orthogonalise(g, steps):
        a, b, c = 3.4445, -4.7750, 2.0315
        x = g / (g.norm() + 1e-7)
        tall = x.shape[0] > x.shape[1]
        if tall:
            x = x.T
        for _ in range(steps):
            s = x @ x.T
            x = a * x + (b * s + c * s @ s) @ x
        return x.T if tall else x

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, wd = group["lr"], group["weight_decay"]
            for p in group["params"]:
                g = p.grad if p.grad is not None else torch.zeros_like(p)
                state = self.state[p]
                if self.roles[id(p)] == "matrix":
                    m = state.setdefault("m", torch.zeros_like(p))
                    mu = group["momentum"]
                    m.mul_(mu).add_(g, alpha=1 - mu)
                    u = g * (1 - mu) + m * mu
                    shape = p.shape
                    x = self.orthogonalise(u.reshape(-1, shape[-1]), group["ns_steps"]).reshape(shape)
                    p.mul_(1 - lr * wd).add_(x, alpha=-lr * 0.2 * max(x.reshape(-1, shape[-1]).shape) ** 0.5)
                    continue
                b1, b2 = group["betas"]
                t = state["t"] = state.get("t", 0) + 1
                m = state.setdefault("m", torch.zeros_like(p))
                v = state.setdefault("v", torch.zeros_like(p))
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p.mul_(1 - lr * wd)
                p.addcdiv_(m / (1 - b1 ** t), (v / (1 - b2 ** t)).sqrt_().add_(group["eps"]), value=-lr)


class Adafactor(torch.optim.Optimizer):
    """Adafactor in Hugging Face's order (Shazeer & Stern 2018): beta2 = 1 - t^decay_rate, row and
    column means of g^2 for a matrix, the update clipped to RMS clip_threshold, the step lr *
    max(eps2, RMS(w)), decay at that step: plugins/optimizer_adafactor's peer."""

    def __init__(self, params, lr, beta1, decay_rate, clip_threshold, eps1, eps2, scale_parameter, weight_decay):
        super().__init__(params, dict(lr=lr, beta1=beta1, decay_rate=decay_rate, clip=clip_threshold, eps1=eps1, eps2=eps2,
                                      scale=scale_parameter, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                g = (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1, p.shape[-1])
                state = self.state[p]
                t = state["t"] = state.get("t", 0) + 1
                beta2 = 1.0 - t ** group["decay_rate"]
                g2 = g * g
                if g.shape[0] > 1 and g.shape[1] > 1:
                    rows = state.setdefault("rows", torch.zeros(g.shape[0], dtype=g.dtype))
                    cols = state.setdefault("cols", torch.zeros(g.shape[1], dtype=g.dtype))
                    rows.mul_(beta2).add_(g2.mean(dim=1), alpha=1 - beta2)
                    cols.mul_(beta2).add_(g2.mean(dim=0), alpha=1 - beta2)
                    r = ((rows + group["eps1"]) / (rows + group["eps1"]).mean()).rsqrt()
                    u = g * r[:, None] * (cols + group["eps1"]).rsqrt()[None, :]
                else:
                    v = state.setdefault("v", torch.zeros_like(g))
                    v.mul_(beta2).add_(g2, alpha=1 - beta2)
                    u = g * (v + group["eps1"]).rsqrt()
                w = p.view(-1, p.shape[-1])
                alpha = group["lr"] * (max(group["eps2"], float(w.pow(2).mean().sqrt())) if group["scale"] else 1.0)
                u = u * (alpha / max(1.0, float(u.pow(2).mean().sqrt()) / group["clip"]))
                if group["beta1"] > 0:
                    m = state.setdefault("m", torch.zeros_like(g))
                    u = m.mul_(group["beta1"]).add_(u, alpha=1 - group["beta1"])
                w.mul_(1 - alpha * group["weight_decay"]).sub_(u)


def make_optimizer(named_params, train):
    o = train["optimizer"]
    if o.get("groups"):
        raise SystemExit("peer_torch: train.optimizer.groups is not written here")
    named = list(named_params)
    params = [p for _, p in named]
    lr, wd = float(o["lr"]), float(o["weight_decay"])
    rule = o["plugin"]
    if rule == "lion":
        return Lion(params, lr, (float(o["beta1"]), float(o["beta2"])), wd)
    if rule == "sgd":  # torch.optim.SGD: L2 decay in the gradient, dampening 0, as Ablate's
        return torch.optim.SGD(params, lr=lr, momentum=float(o["momentum"]), nesterov=bool(o["nesterov"]), weight_decay=wd)
    if rule == "adafactor":
        return Adafactor(params, lr, float(o["beta1"]), float(o["decay_rate"]), float(o["clip_threshold"]), float(o["eps1"]),
                         float(o["eps2"]), bool(o["scale_parameter"]), wd)
    if rule == "muon":
        if o.get("scale", "rms") != "rms":
            raise SystemExit("peer_torch: muon's scale 'jordan' is not written here (rms)")
        return Muon(named, lr, float(o["momentum"]), (float(o["beta1"]), float(o["beta2"])), float(o["eps"]), wd,
                    int(o["ns_steps"]))
    # Adam: L2 added to the gradient; AdamW: decoupled decay of the old weight (Ablate's conventions).
    optimizer = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}.get(rule)
    if optimizer is None:
        raise SystemExit(f"peer_torch: optimizer '{rule}' is not written here (adam, adamw, lion, sgd, muon, adafactor)")
    kwargs = dict(lr=lr, betas=(float(o["beta1"]), float(o["beta2"])), eps=float(o["eps"]), weight_decay=wd)
    try:
        return optimizer(params, fused=True, **kwargs)  # one fused kernel for all parameters (CPU: PyTorch >= 2.4)
    except (TypeError, RuntimeError):
        return optimizer(params, **kwargs)  # older PyTorch: its per-parameter loop


def loss_of(model, batch, smoothing):
    """Mean cross entropy over the non-ignored targets, label-smoothed as Ablate's."""
    logits = model(batch["src"], batch["tgt_in"], batch.get("src_lengths"), batch.get("tgt_lengths"))
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["tgt_out"].reshape(-1), ignore_index=IGNORE,
                           label_smoothing=smoothing)


def load_yaml(text):
    import yaml  # python3-yaml (Debian) or pyyaml (the venv)
    return yaml.safe_load(text)


def train_step(model, optimizer, batch, train, forward, bf16):
    optimizer.zero_grad(set_to_none=True)
    device_type = next(model.parameters()).device.type
    with torch.autocast(device_type, dtype=torch.bfloat16, enabled=bf16):
        loss = forward(model, batch, float(train["label_smoothing"]))
    loss.backward()
    if float(train["clip_grad_norm"]) > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), float(train["clip_grad_norm"]))
    optimizer.step()
    return loss


def speed(args, spec):
    task, m, train = spec["task"], spec["model"], spec["train"]
    if "vocab_size" not in task or "max_len" not in task:
        raise SystemExit("peer_torch speed: needs a synthetic task with vocab_size and max_len "
                         "(copy, reverse, sort, language_model)")
    torch.set_num_threads(args.threads)
    torch.manual_seed(int(train["seed"]))
    vocab, length, b = int(task["vocab_size"]), int(task["max_len"]), int(train["batch_size"])
    lm = m["arch"] == "decoder"
    device = torch.device(args.device)
    model = Transformer(m, vocab, length + 1).to(device)
    model.train()
    optimizer = make_optimizer(model.named_parameters(), train)
    forward = loss_of
    if args.compile:
        forward = torch.compile(loss_of)

    def batch():
        """Token values do not change the work; shapes do: sources and targets of max_len tokens."""
        tgt = torch.randint(3, vocab, (b, length))
        return {"src": None if lm else tgt.clone().to(device),
                "tgt_in": torch.cat([torch.full((b, 1), BOS), tgt], dim=1).to(device),
                "tgt_out": torch.cat([tgt, torch.full((b, 1), EOS)], dim=1).to(device)}

    tokens_per_step = b * (length + 1)  # non-pad target positions, eos included: Ablate's target tokens
    losses = []
    try:
        for _ in range(args.warmup):
            losses.append(train_step(model, optimizer, batch(), train, forward, args.bf16).item())
        start = time.perf_counter()
        for _ in range(args.steps):  # .item() waits for the step, on a GPU too
            losses.append(train_step(model, optimizer, batch(), train, forward, args.bf16).item())
        seconds = time.perf_counter() - start
    except Exception as e:  # torch.compile's failures surface at the first call
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}".splitlines()[0][:300]}))
        return 1
    print(json.dumps({"ok": True, "torch": torch.__version__, "compiled": args.compile, "bf16": args.bf16,
                      "threads": args.threads, "device": str(device),
                      "fused_adam": bool(optimizer.defaults.get("fused")),
                      "warmup": args.warmup, "steps": args.steps, "seconds": seconds, "tokens_per_step": tokens_per_step,
                      "tokens_per_s": tokens_per_step * args.steps / seconds, "first_loss": losses[0], "last_loss": losses[-1]}))
    return 0


def check(args):
    import h5py
    import numpy as np
    torch.set_num_threads(args.threads)
    with h5py.File(args.dump, "r") as f:
        spec = load_yaml(f.attrs["spec"])
        params = {name: np.asarray(ds) for name, ds in f["params"].items()}
        batches = {name: np.asarray(ds) for name, ds in f["batches"].items()}
        reference = np.asarray(f["loss"], dtype=np.float64)
        lrs = np.asarray(f["lr"], dtype=np.float64)
    m, train = spec["model"], spec["train"]
    dropouts = {k: float(m[k]) for k in ("dropout", "attention_dropout", "embedding_dropout")}
    if any(dropouts.values()):
        raise SystemExit(f"peer_torch check: the dump's run has dropout {dropouts}; dropout masks cannot be retraced. "
                         "Dump with --set model.dropout=0 --set model.attention_dropout=0 --set model.embedding_dropout=0")
    vocab = params["decoder.embedding.weight"].shape[0]
    max_positions = max(batches[k].shape[2] for k in ("src", "tgt_in") if k in batches)
    model = Transformer(m, vocab, max_positions)
    ours = dict(model.named_parameters())
    if set(ours) != set(params):
        raise SystemExit(f"peer_torch check: parameters differ from the dump's: only here {sorted(set(ours) - set(params))}, "
                         f"only in the dump {sorted(set(params) - set(ours))}")
    with torch.no_grad():
        for name, p in ours.items():
            if tuple(p.shape) != params[name].shape:
                raise SystemExit(f"peer_torch check: {name} is {tuple(p.shape)} here, {params[name].shape} in the dump")
            p.copy_(torch.from_numpy(params[name]))
    if args.float64:
        model.double()
    model.train()
    optimizer = make_optimizer(model.named_parameters(), train)
    max_abs = max_rel = 0.0
    losses = []
    for s in range(len(reference)):
        lengths = {k: torch.from_numpy(batches[k][s]).long() for k in ("src_lengths", "tgt_lengths") if k in batches}
        t = int(lengths["tgt_lengths"].max())  # Ablate pads each batch to its longest example
        batch = {"tgt_in": torch.from_numpy(batches["tgt_in"][s, :, :t]).long(),
                 "tgt_out": torch.from_numpy(batches["tgt_out"][s, :, :t]).long(), "tgt_lengths": lengths["tgt_lengths"]}
        batch["src"] = None
        if "src" in batches:
            batch["src"] = torch.from_numpy(batches["src"][s, :, : int(lengths["src_lengths"].max())]).long()
            batch["src_lengths"] = lengths["src_lengths"]
        for group in optimizer.param_groups:
            group["lr"] = float(lrs[s])  # the run's schedule, step by step
        loss = train_step(model, optimizer, batch, train, loss_of, False).item()
        losses.append(loss)
        diff = abs(loss - float(reference[s]))
        max_abs, max_rel = max(max_abs, diff), max(max_rel, diff / abs(float(reference[s])))
        print(f"step {s + 1:3d}  ablate {reference[s]:.7f}  peer {loss:.7f}  diff {diff:.2e}")
    ok = max_rel <= args.tolerance
    print(json.dumps({"ok": ok, "torch": torch.__version__, "steps": len(reference), "float64": args.float64, "max_abs": max_abs,
                      "max_rel": max_rel, "tolerance": args.tolerance, "first_loss": losses[0], "last_loss": losses[-1],
                      "ablate_last_loss": float(reference[-1])}))
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    s = sub.add_parser("speed", help="tokens/s on random batches of the spec's shapes")
    s.add_argument("spec", help="resolved spec YAML (ablate validate SPEC --print, without its first line)")
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--steps", type=int, default=None, help="timed steps (default: train.steps minus the warm-up)")
    s.add_argument("--warmup", type=int, default=None, help="untimed first steps (default: log.every)")
    s.add_argument("--compile", action="store_true", help="torch.compile the forward and loss")
    s.add_argument("--bf16", action="store_true", help="torch.autocast(device, bfloat16) around forward and loss")
    s.add_argument("--device", default="cpu", help="cpu (default) or cuda: where the peer trains")
    c = sub.add_parser("check", help="retrace an `ablate run --dump-reference` file and compare losses")
    c.add_argument("dump")
    c.add_argument("--threads", type=int, default=2)
    c.add_argument("--tolerance", type=float, default=2e-4, help="largest relative loss difference accepted (bench/README.md)")
    c.add_argument("--float64", action="store_true", help="compute in float64 (to measure f32 rounding on either side)")
    args = p.parse_args()
    if args.mode == "speed":
        spec = load_yaml(open(args.spec).read())
        args.warmup = int(spec["log"]["every"]) if args.warmup is None else args.warmup
        args.steps = int(spec["train"]["steps"]) - args.warmup if args.steps is None else args.steps
        return speed(args, spec)
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
