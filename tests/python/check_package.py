# What ablate_package_test.sh checks of the `ablate` package on a sweep folder:
#  - it is imported from the pip-installed copy, not from the checkout;
#  - load_sweep: a row per run per step logged in either table, every value equal to run.h5's
#    (h5py), the arm labels and keys of `ablate compare`'s summary.json;
#  - docs/examples/notebook.md's first block, run on this sweep, prints compare's arm means;
#  - flat_spec reads every run's resolved spec as PyYAML does (scalars compared as YAML values);
#  - attention() and run_scalars() against h5py.
#   check_package.py SWEEP_DIR NOTEBOOK_MD
import contextlib
import io
import json
import math
import os
import re
import sys

import h5py
import numpy as np
import yaml

import ablate

sweep, notebook = sys.argv[1], sys.argv[2]
assert "site" in ablate.__file__.split(os.sep), f"imported from {ablate.__file__}, not the installed copy"
summary = json.load(open(os.path.join(sweep, "summary.json")))

runs = ablate.load_sweep(sweep)
assert runs.attrs["keys"] == summary["keys"], (runs.attrs["keys"], summary["keys"])
assert sorted(runs["arm"].unique()) == sorted(a["label"] for a in summary["arms"]), runs["arm"].unique()
paths = ablate.run_files(sweep)
assert len(paths) == 4 and sorted(runs["path"].unique()) == sorted(os.path.abspath(p) for p in paths)
for path in paths:
    rows = runs[runs["path"] == os.path.abspath(path)]
    with h5py.File(path, "r", swmr=True) as f:
        assert rows["seed"].iloc[0] == f.attrs["seed"] and rows["run_id"].iloc[0] == f.attrs["run_id"]
        steps = set()
        for split in ("train", "eval"):
            g = f[f"metrics/{split}"]
            steps |= set(g["step"][:].tolist())
            for name in g:
                if name == "step":
                    continue
                got = rows.set_index("step")[f"{split}/{name}"].reindex(g["step"][:]).to_numpy()
                want = g[name][:].astype("float64")
                assert np.array_equal(got, want, equal_nan=True), (path, split, name)
        assert sorted(rows["step"]) == sorted(steps), (path, len(rows), len(steps))
        # the spec, as PyYAML reads it
        text = f.attrs["resolved_spec_yaml"]
        text = text.decode() if isinstance(text, bytes) else text

        def as_yaml(node):
            if isinstance(node, dict):
                return {k: as_yaml(v) for k, v in node.items()}
            return None if node is None else "" if node == "" else yaml.safe_load(str(node))
        assert as_yaml(ablate._spec.parse(text)) == yaml.safe_load(text), path
        # attention and per-run scalars
        step = int(f["attention/steps"][0])
        a = ablate.attention(path, "decoder", 0, step, kind="cross")
        assert a.dtype == np.float32 and np.array_equal(a, f["attention/decoder/cross/layer_0"][0]), a.shape
        s = ablate.run_scalars(path)
        total = dict(zip([k.decode() if isinstance(k, bytes) else k for k in f.attrs["parameter_kinds"]],
                         f.attrs["parameter_counts"]))["total"]
        assert s["parameters/total"] == total and s["step"] == f.attrs["step"], s
        assert s["flops"] == f["metrics/train/flops"][-1], s

# The notebook's first block, on this sweep: its table's means are compare's.
block = re.search(r"```python\n(.*?)```", open(notebook).read(), re.S).group(1)
block = block.replace('"results/quickstart"', repr(sweep)).replace("target = 0.99", "target = 0.9")
printed = io.StringIO()
scope = {}
with contextlib.redirect_stdout(printed):
    exec(block, scope)
table = scope["table"]
assert summary["summary"] == "steps_to:0.9", summary["summary"]
checked = 0
for arm in summary["arms"]:
    if arm["counts"]["censored"]:
        continue  # compare keeps a run that never got there as censored; the notebook drops it
    assert math.isclose(table.loc[arm["label"], "mean"], arm["mean"], rel_tol=1e-12), (arm["label"], arm["mean"])
    assert arm["label"] in printed.getvalue()
    checked += 1
assert checked >= 1, "no arm reached the target in every run: the check compared nothing"
print(f"ablate package: {len(runs)} rows of {len(paths)} runs equal run.h5's; notebook means equal compare's "
      f"for {checked} arm(s)")
