#!/usr/bin/env bash
# ctest analysis.scaling_fit: `ablate compare --scale` on a real scale ladder (two FFNs x four sizes
# x two seeds of a tiny copy model, sweep.zip over d_model and d_ff): the power-law fit of each
# series in summary.json against scipy's curve_fit on the same points, the parameter counts against
# the runs' own, and the scaling figure written (docs/analysis.md, "Across model sizes").
#   scaling_fit_test.sh ABLATE_BIN
set -euo pipefail
ablate="$1"
if ! reason=$(/usr/bin/python3 -c 'import scipy, h5py, numpy' 2>&1); then
  echo "SKIP: Debian's python3 cannot import scipy, h5py and numpy (scripts/setup.sh installs python3-scipy): ${reason##*$'\n'}"
  exit 77
fi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cat >"$out/scale.yaml" <<'YAML'
name: scale_ladder_test
task: {plugin: copy, vocab_size: 16, min_len: 4, max_len: 6, train_examples: 4000, eval_examples: 128}
model: {arch: encoder_decoder, d_model: 16, heads: 2, layers: 1, d_ff: 64, dropout: 0.0}
backend: {plugin: onednn, threads: 1}
train: {steps: 60, batch_size: 32, optimizer: {lr: 3.0e-3}}
log: {every: 20}
eval: {every: 60, batches: 2, metrics: [loss]}
sweep:
  grid: {model.ffn: [relu, gelu]}
  zip: {model.d_model: [16, 32, 64, 96], model.d_ff: [32, 64, 128, 192]}
  seeds: [1, 2]
YAML
"$ablate" sweep "$out/scale.yaml" --jobs 2 --threads-per-run 1 --out "$out/sweep" --progress quiet >"$out/sweep.log" 2>&1 ||
  { cat "$out/sweep.log"; exit 1; }
"$ablate" compare "$out/sweep" --metric loss --scale model.d_model,model.d_ff --out "$out/cmp" >"$out/compare.txt"
grep -q "Across model sizes (model.d_model · model.d_ff)" "$out/compare.txt"
test -s "$out/cmp/scaling.png"
/usr/bin/python3 - "$out" <<'PY'
import glob, json, sys
import h5py, numpy as np
from scipy.optimize import curve_fit
out = sys.argv[1]
s = json.load(open(f"{out}/cmp/summary.json"))["scaling"]
assert s["keys"] == ["model.d_model", "model.d_ff"], s["keys"]
params = {}  # non-embedding parameters by (d_model, ffn), from the run files
for f in glob.glob(f"{out}/sweep/*/run.h5"):
    with h5py.File(f, "r") as h:
        counts = dict(zip([k.decode() if isinstance(k, bytes) else k for k in h.attrs["parameter_kinds"]], h.attrs["parameter_counts"]))
        spec = h.attrs["resolved_spec_yaml"]
        d = int(spec.split("d_model: ")[1].split("\n")[0])
        params[d] = counts["non_embedding"]
law = lambda n, e, a, alpha: e + a * n ** -alpha
failed = False
for series in s["series"]:
    n = np.array([p["n"] for p in series["points"]], float)
    y = np.array([p["mean"] for p in series["points"]], float)
    for p in series["points"]:
        assert p["n"] == params[int(p["size"].split(" · ")[0])], (p, params)
    (e, a, alpha), _ = curve_fit(law, n, y, p0=[series["E"], series["A"], series["alpha"]], maxfev=20000)
    # the same minimum: equal residuals, and parameters within the fit's flatness
    rss_ours = float(np.sum((y - law(n, series["E"], series["A"], series["alpha"])) ** 2))
    rss_scipy = float(np.sum((y - law(n, e, a, alpha)) ** 2))
    ok = rss_ours <= rss_scipy * (1 + 1e-6) + 1e-12 and abs(series["alpha"] - alpha) <= 1e-3 * max(1, alpha) \
        and abs(series["E"] - e) <= 1e-3 * max(1, abs(e))
    # from a start far from the optimum too (scipy's own search)
    (e2, a2, alpha2), _ = curve_fit(law, n / n[0], y, p0=[y.min() / 2, y.max(), 0.5], maxfev=20000)
    ok = ok and abs(alpha2 - series["alpha"]) <= 1e-3 * max(1, alpha2)
    print(f"{series['label']}: ablate E {series['E']:.6g} A {series['A']:.6g} alpha {series['alpha']:.6g} (rss {rss_ours:.3g});",
          f"scipy E {e:.6g} A {a:.6g} alpha {alpha:.6g} (rss {rss_scipy:.3g}), from afar alpha {alpha2:.6g}:",
          "agree" if ok else "DIFFER")
    failed |= not ok
    lo, hi = series["alpha_interval"]
    assert lo is not None and lo <= series["alpha"] <= hi, series["alpha_interval"]
assert any("ranking" in st for st in s["statements"]), s["statements"]
sys.exit(1 if failed else 0)
PY
