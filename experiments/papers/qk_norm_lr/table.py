"""The table of experiments/papers/qk_norm_lr/README.md, from the sweep's run files and
`ablate compare`'s summary.json (never edited by hand):
  /usr/bin/python3 experiments/papers/qk_norm_lr/table.py results/qk_norm_lr [ABLATE_BINARY]
Per learning rate and qk_norm: final test log-perplexity (mean ± sd over seeds, n, diverged runs),
the smallest attention entropy of any head at the last statistics row (Wortsman et al.'s symptom:
attention logits grow, a head's attention collapses onto one key), and QK-norm's paired difference
from `ablate compare` of each learning rate's runs (Δ, 95% CI, p paired by seed), p(Holm) over
the learning rates compared. Then each setting's learning-rate sensitivity as
Wortsman et al. define it: the mean over the learning rates of min(loss, L0) − the best loss, with
L0 = ln V (a uniform guess; a diverged run counts as L0).
"""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python"))
import ablate  # noqa: E402  (python/: run files as pandas DataFrames)
import h5py  # noqa: E402
import numpy as np  # noqa: E402

sweep = sys.argv[1]
binary = sys.argv[2] if len(sys.argv) > 2 else "build/bin/ablate"


def compared(lr, folders):
    """`ablate compare` of one learning rate's runs: QK-layernorm against none, paired by seed."""
    out = os.path.join(sweep, "compare", f"lr={lr:g}")
    if not os.path.exists(os.path.join(out, "summary.json")):
        subprocess.run([binary, "compare", *folders, "--metric", "test_loss", "--baseline", "model.attention.qk_norm=none",
                        "--out", out], check=True, capture_output=True)
    arms = json.load(open(os.path.join(out, "summary.json")))["arms"]
    return next((a for a in arms if a["values"].get("model.attention.qk_norm") == "layer_norm"), None)


runs = ablate.load_sweep(sweep)
rows = {}
for path, run in runs.groupby("path"):
    lr = float(run["train.optimizer.lr"].iloc[0])
    qk = run["model.attention.qk_norm"].iloc[0]
    status = run["status"].iloc[0]
    test = run["eval/test_loss"].dropna() if "eval/test_loss" in run else []
    loss = float(test.iloc[-1]) if len(test) and status == "completed" else math.nan
    with h5py.File(path, "r", swmr=True) as f:
        entropies = []
        f["stats/attention_entropy"].visititems(
            lambda name, obj: entropies.append(float(np.nanmin(obj[-1]))) if isinstance(obj, h5py.Dataset) and len(obj) else None)
    rows.setdefault((qk, lr), []).append({"loss": loss, "status": status, "entropy": min(entropies) if entropies else math.nan,
                                          "folder": os.path.dirname(path)})

with h5py.File(runs["path"].iloc[0], "r", swmr=True) as f:
    spec_text = f.attrs["resolved_spec_yaml"]
d_model = int(ablate.flat_spec(spec_text.decode() if isinstance(spec_text, bytes) else spec_text)["model.d_model"])
V = ablate.run_scalars(runs["path"].iloc[0])["parameters/embeddings"] // d_model  # tied character embeddings [V, D]
L0 = math.log(V)
print(f"| lr | no QK-norm: test log-ppl | diverged | min head entropy | QK-layernorm: test log-ppl | diverged | "
      f"min head entropy | Δ (QK − none) [95% CI] | p | p(Holm) |")
print("|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
lrs = sorted({lr for _, lr in rows})


def cell(qk, lr):
    rs = rows.get((qk, lr), [])
    losses = [r["loss"] for r in rs if math.isfinite(r["loss"])]
    diverged = sum(r["status"] == "diverged" for r in rs)
    ent = [r["entropy"] for r in rs if math.isfinite(r["entropy"])]
    text = "—" if not losses else f"{np.mean(losses):.3f} ± {np.std(losses, ddof=1):.3f} (n {len(losses)})" \
        if len(losses) > 1 else f"{losses[0]:.3f} (n 1)"
    return text, f"{diverged}/{len(rs)}", f"{min(ent):.2f}" if ent else "—"


tests = {}
for lr in lrs:
    arm = compared(lr, [r["folder"] for qk in ("none", "layer_norm") for r in rows.get((qk, lr), [])])
    if arm and arm.get("test") and arm["test"].get("ci") and arm["test"]["ci"][0] is not None:
        tests[lr] = arm
# Holm over the learning rates compared (each `ablate compare` saw one comparison).
order = sorted(tests, key=lambda lr: tests[lr]["test"]["p"])
holm, running = {}, 0.0
for k, lr in enumerate(order):
    running = max(running, min(1.0, (len(order) - k) * tests[lr]["test"]["p"]))
    holm[lr] = running
for lr in lrs:
    a, b = cell("none", lr), cell("layer_norm", lr)
    if lr in tests:
        t = tests[lr]["test"]
        d = f"{tests[lr]['delta']:+.3f} [{t['ci'][0]:+.3f}, {t['ci'][1]:+.3f}]"
        p, ph = f"{t['p']:.2g}", f"{holm[lr]:.2g}"
    else:
        d, p, ph = "—", "—", "—"
    print(f"| {lr:g} | {a[0]} | {a[1]} | {a[2]} | {b[0]} | {b[1]} | {b[2]} | {d} | {p} | {ph} |")

print()
for qk in ("none", "layer_norm"):
    per_lr = []
    for lr in lrs:
        losses = [min(r["loss"], L0) if math.isfinite(r["loss"]) else L0 for r in rows.get((qk, lr), [])]
        per_lr.append(np.mean(losses) if losses else math.nan)
    best = np.nanmin(per_lr)
    print(f"LR sensitivity ({qk}): {np.nanmean([x - best for x in per_lr]):.3f} nats "
          f"(best {best:.3f} at lr {lrs[int(np.nanargmin(per_lr))]:g}; L0 = ln {V} = {L0:.3f})")
