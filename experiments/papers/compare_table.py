"""A paper README's table from `ablate compare`'s summary.json, so tables are generated, never
edited by hand:
  /usr/bin/python3 experiments/papers/compare_table.py results/<name>/summary.json [--paper 'ARM=TEXT' ...]
  /usr/bin/python3 experiments/papers/compare_table.py A/summary.json B/summary.json ...   # metrics side by side
Prints a Markdown table (arm, mean ± sample sd (n), Δ against the baseline with its 95% interval,
p and Holm's p of compare's test, and a column of the paper's number per arm when --paper gives
it), then the main effects of a factorial design when compare estimated them. --setting KEY adds a
column with each arm's value of a spec key (as its runs' run.h5 record it: a tuned learning rate). The numbers are
summary.json's, rounded for reading; the test is the one compare chose (paired by seed where the
seeds pair, else Welch's), named under the table.
"""
import argparse
import json
import os
import sys


def number(v, digits):
    return "—" if v is None else f"{v:.{digits}f}"


def signed(v, digits):
    return "—" if v is None else f"{v:+.{digits}f}"


def short(x):
    """A setting's number as a README writes it: 3e-4, 1e-2, 0.2, 512."""
    if x == 0 or abs(x) >= 0.1:
        return f"{x:g}"
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"


def setting(arm, key):
    """The arm's value of a dotted spec key, from its runs' resolved specs as `ablate compare` flattens
    them (python/ablate's flat_spec; a plugin key is its plugin's name), "mixed" when they differ."""
    import h5py  # Debian's python3-h5py, needed for --setting only

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import ablate

    values = set()
    for run in arm.get("runs", []):
        with h5py.File(run["path"], "r") as f:
            text = f.attrs["resolved_spec_yaml"]
        value = ablate.flat_spec(text.decode() if isinstance(text, bytes) else text).get(key)
        try:
            values.add(short(float(value)))
        except (TypeError, ValueError):  # absent or null: —; a word (a plugin's name): itself
            values.add("—" if value in (None, "null") else value)
    return values.pop() if len(values) == 1 else "mixed" if values else "—"


def wide(summaries, d):
    """One row per arm, one column per summary (its metric's mean ± sd, n): lengths side by side."""
    print("| arm | " + " | ".join(s["value"] for s in summaries) + " |")
    print("|---|" + "---:|" * len(summaries))
    for arm in summaries[0]["arms"]:
        cells = []
        for s in summaries:
            a = next(x for x in s["arms"] if x["label"] == arm["label"])
            if a.get("mean") is None:
                cells.append(f"n/a ({a['counts']['missing_metric']} runs without it)")
                continue
            sd = f" ± {a['std']:.{d}f}" if a.get("std") is not None and a["n"] > 1 else ""
            cells.append(f"{a['mean']:.{d}f}{sd} (n {a['n']})")
        print(f"| {arm['label']} | " + " | ".join(cells) + " |")
    print()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("summary", nargs="+", help="summary.json; several (one metric each, the same arms): a wide "
                        "table of each metric's mean ± sd, then the last one's Δ and tests")
    parser.add_argument("--paper", action="append", default=[], help="ARM=TEXT: the paper's number for an arm")
    parser.add_argument("--digits", type=int, default=2)
    parser.add_argument("--setting", action="append", default=[], help="KEY: a column of each arm's value of a "
                        "spec key (e.g. train.optimizer.lr, tuned per arm)")
    args = parser.parse_args()
    paper = dict(p.split("=", 1) for p in args.paper)
    d = args.digits
    if len(args.summary) > 1:
        wide([json.load(open(path)) for path in args.summary], d)
    s = json.load(open(args.summary[-1]))
    head = "| arm | " + "".join(f"{k} | " for k in args.setting) + f"{s['value']} | Δ vs baseline [95% CI] | p | p(Holm) |"
    rule = "|---|" + "---:|" * len(args.setting) + "---:|---|---:|---:|"
    if paper:
        head, rule = head + " paper |", rule + "---|"
    print(head)
    print(rule)
    tests = set()
    for arm in s["arms"]:
        t = arm.get("test") or {}
        if t.get("name"):
            tests.add(t["name"])
        sd = f" ± {arm['std']:.{d}f}" if arm.get("std") is not None and arm["n"] > 1 else ""
        value = f"{number(arm.get('mean'), d)}{sd} (n {arm['n']})"
        if arm["baseline"]:
            delta, p, holm = "baseline", "—", "—"
        else:
            ci = t.get("ci") or [None, None]
            delta = f"{signed(arm.get('delta'), d)} [{signed(ci[0], d)}, {signed(ci[1], d)}]"
            p = "—" if t.get("p") is None else f"{t['p']:.2g}"
            holm = "—" if t.get("p_holm") is None else f"{t['p_holm']:.2g}"
        settings = "".join(f"{setting(arm, k)} | " for k in args.setting)
        row = f"| {arm['label']} | {settings}{value} | {delta} | {p} | {holm} |"
        if paper:
            row += f" {paper.get(arm['label'], '—')} |"
        print(row)
    print(f"\n{s['metric']} ({s['summary']}), {'higher' if s['higher_is_better'] else 'lower'} is better; "
          f"test: {', '.join(sorted(tests)) or 'none'}; Holm over the arms tested against the baseline.")
    f = s.get("factorial") or {}
    if f.get("defined"):
        print(f"\n| main effect | estimate [95% CI] | p |\n|---|---|---:|")
        for e in f["main_effects"]:
            print(f"| {e['factor']}: {e['level']} − {e['reference']} | {signed(e['estimate'], d)} "
                  f"[{signed(e['ci'][0], d)}, {signed(e['ci'][1], d)}] | {e['p']:.2g} |")
        for term in f.get("terms", []):
            if "×" in term["name"]:
                print(f"\ninteraction {term['name']}: F {term['F']:.2f}, p {term['p']:.2g}")


if __name__ == "__main__":
    main()
