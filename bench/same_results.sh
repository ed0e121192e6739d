#!/usr/bin/env bash
# Do two builds of Ablate compute the same thing? Trains the quickstart (and a pre-norm / learned /
# GELU variant) and every tutorial spec at the size of its "# ci:" line with each executable, then
# compares every numeric dataset of the run files bit for bit (timings aside) and names what differs.
# For refactors that must not change results.   Usage: bench/same_results.sh OLD_ABLATE NEW_ABLATE [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: bench/same_results.sh OLD_ABLATE NEW_ABLATE [OUT_DIR]" >&2; exit 2; }
old=$(realpath "$1"); new=$(realpath "$2"); out=${3:-$(mktemp -d)}
export OMP_NUM_THREADS=2

train() {  # train ABLATE ROOT: every spec into ROOT/<name>
  local bin=$1 root=$2
  mkdir -p "$root"
  "$bin" run experiments/quickstart.yaml --set train.steps=150 --set eval.every=50 --out "$root/quickstart" \
    --progress quiet > "$root/quickstart.log" 2>&1 || echo "quickstart failed ($bin)"
  "$bin" run experiments/quickstart.yaml --set train.steps=150 --set eval.every=50 --set model.block=pre_norm \
    --set model.positional_encoding=learned --set model.ffn=gelu --out "$root/quickstart_variant" --progress quiet \
    > "$root/quickstart_variant.log" 2>&1 || echo "quickstart_variant failed ($bin)"
  for spec in experiments/tutorials/*.yaml; do
    local name ci
    name=$(basename "$spec" .yaml)
    [ "$name" = toy_pair_convergence ] && continue  # trains until a loss threshold: minutes
    ci=$(grep '^# ci:' "$spec" | sed 's/^# ci://')
    grep -q '^sweep:' "$spec" && ci="$ci --set sweep=null"
    # shellcheck disable=SC2086
    "$bin" run "$spec" $ci --out "$root/$name" --progress quiet > "$root/$name.log" 2>&1 || echo "$name failed ($bin)"
  done
}

train "$old" "$out/old"
train "$new" "$out/new"
/usr/bin/python3 - "$out/old" "$out/new" <<'PY'
import glob, os, sys
import h5py, numpy as np
a_root, b_root = sys.argv[1], sys.argv[2]
differ = 0
names = sorted({os.path.basename(os.path.dirname(f)) for root in (a_root, b_root)
                for f in glob.glob(os.path.join(root, "*", "run.h5"))})
for name in names:
    fa, fb = os.path.join(a_root, name, "run.h5"), os.path.join(b_root, name, "run.h5")
    if not (os.path.exists(fa) and os.path.exists(fb)):
        print(f"{name}: DIFFERS: only one build wrote a run file (see its .log)")
        differ += 1
        continue
    diffs = []
    with h5py.File(fa, "r") as ha, h5py.File(fb, "r") as hb:
        def visit(path, obj):
            if not isinstance(obj, h5py.Dataset) or any(s in path for s in ("elapsed", "tokens_per_s", "time")):
                return
            if path not in hb:
                diffs.append(path + " (missing)")
                return
            x, y = obj[()], hb[path][()]
            if x.dtype.kind in "fiu" and (x.shape != y.shape or not np.array_equal(x, y, equal_nan=True)):
                diffs.append(path)
        ha.visititems(visit)
    print(f"{name}: " + ("identical" if not diffs else "DIFFERS in " + ", ".join(diffs)))
    differ += bool(diffs)
sys.exit(1 if differ else 0)
PY
