"""The leaderboard: every built-in variant as one arm that changes one component of a base (the
modern and the 2017 recipe, modern.yaml and vaswani_2017.yaml beside this file), each at its own
learning rate and at matched FLOPs, compared by the test bits per byte with ablate compare. From the root:
  /usr/bin/python3 experiments/leaderboard/leaderboard.py run            # runs or resumes, then the table
  /usr/bin/python3 experiments/leaderboard/leaderboard.py table          # docs/leaderboard.md again
  /usr/bin/python3 experiments/leaderboard/leaderboard.py add -p DIR --set model.ffn=reglu
`add` puts a new arm (a plugin of your own) into a base's sweep, runs it (tuned, 3 seeds; the
base's runs are reused) and prints where it ranks. --profile ci runs each spec at its `# ci:` size.
"""
import argparse
import datetime
import json
import math
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
from ablate import flat_spec  # noqa: E402  (the repository's package, python/)

BASES = {"modern": "modern.yaml", "vaswani_2017": "vaswani_2017.yaml"}
TITLES = {"modern": "Modern base (pre-RMSNorm, rotary, SwiGLU, GQA, AdamW + cosine)",
          "vaswani_2017": "2017 base (post-LN, sinusoidal, ReLU, MHA, Adam + inverse sqrt, dropout and label smoothing 0.1)"}
# The component an arm's first key changes, for the table's `kind` column.
KINDS = [("task.tokenizer", "tokenizer"), ("model.block.norm", "norm"), ("model.block", "block"), ("model.positional_encoding", "positions"),
         ("model.ffn", "FFN"), ("model.attention", "attention"), ("train.optimizer", "optimizer"),
         ("train.schedule", "schedule")]
# Bits per byte of the test text (eval.metrics bits_per_byte): the loss per token would favour a
# tokenizer with longer tokens; for the bases' characters (ASCII) it is the loss in bits.
METRIC = "test_bits_per_byte"


def fail(message):
    sys.exit(f"leaderboard.py: {message}")


def ci_sets(spec):
    """The --set options of the spec's `# ci:` line."""
    for line in open(spec):
        if line.startswith("# ci:"):
            return shlex.split(line[len("# ci:"):])
    fail(f"{spec} has no '# ci:' line; expected one with the CI size's --set options")


def write_file(path, text):
    """Writes `text` to `path` through a temporary name and a rename: an interrupted write leaves
    the old file, never half a new one."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def set_pairs(sets):
    """(option, value) pairs of a `--set K=V --set K=V ...` list (a `# ci:` line's)."""
    return list(zip(sets[::2], sets[1::2]))


def committed_runs(spec, sets):
    """The base's arms: the spec's sweep.runs, or the profile's `--set sweep.runs=[...]`."""
    import yaml
    runs = yaml.safe_load(open(spec))["sweep"]["runs"]
    for option, value in set_pairs(sets):
        if option == "--set" and value.startswith("sweep.runs="):
            runs = yaml.safe_load(value[len("sweep.runs="):])
    return runs


def effective_spec(args, base, sets):
    """The spec a base's sweep runs: the committed one, or, once `add` gave arms of your own, a spec
    beside the results (added.yaml) that extends it with those arms after the committed ones. The
    added arms and the plugin directories they need are kept in added.json there, once their
    sweep has run (an arm the sweep refuses is not kept)."""
    spec = os.path.join(HERE, BASES[base])
    out = os.path.join(args.out, base)
    record = os.path.join(out, "added.json")
    added = json.load(open(record)) if os.path.exists(record) else {"arms": [], "plugin_paths": []}
    for p in getattr(args, "new_plugin_paths", []):
        if p not in added["plugin_paths"]:
            added["plugin_paths"].append(p)
    for arm in getattr(args, "new_arms", {}).get(base, []):
        if arm not in added["arms"]:
            added["arms"].append(arm)
    if not added["arms"]:
        return spec, sets, added
    os.makedirs(out, exist_ok=True)
    runs = committed_runs(spec, sets) + added["arms"]
    path = os.path.join(out, "added.yaml")
    write_file(path, "# written by experiments/leaderboard/leaderboard.py add: the committed arms and yours\n"  # JSON is YAML's flow style
               f"extends: {json.dumps(spec)}\nsweep:\n  runs: {json.dumps(runs)}\n")
    kept = []  # the profile's sweep.runs are in the file now
    for option, value in set_pairs(sets):
        if not (option == "--set" and value.startswith("sweep.runs=")):
            kept += [option, value]
    return path, kept, added


def call(cmd, check=True):
    print("+ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    rc = subprocess.call(cmd, cwd=ROOT)
    if rc != 0 and check:
        fail(f"{os.path.basename(cmd[0])} {cmd[1]} exited {rc}")
    return rc


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def sweep(args, base):
    """Runs or resumes one base's sweep, then compares every arm its directory holds."""
    sets = ci_sets(os.path.join(HERE, BASES[base])) if args.profile == "ci" else []
    spec, sets, added = effective_spec(args, base, sets)
    out = os.path.join(args.out, base)
    cmd = [args.ablate, "sweep", spec, "--jobs", str(args.jobs), "--threads-per-run", "1", "--out", out, "--no-compare"]
    for p in added["plugin_paths"]:
        cmd += ["-p", p]
    if args.data:  # another copy of the corpus (a test's); the runs are other runs then
        sets = sets + ["--set", f"task.file={os.path.abspath(args.data)}"]
    start = time.time()
    rc = call(cmd + sets, check=False)
    if os.path.isdir(out):  # what the table says of wall time and machine, stopped sweeps' time too
        record = os.path.join(out, "sessions.tsv")
        before = open(record).read() if os.path.exists(record) else ""
        write_file(record, before + f"{datetime.datetime.now(datetime.timezone.utc).date()}\t{time.time() - start:.0f}\t"
                                    f"{os.cpu_count()}\t{cpu_model()}\n")
    if rc != 0:
        fail(f"ablate sweep exited {rc}; run the same command again to resume")
    if added["arms"]:
        write_file(os.path.join(out, "added.json"), json.dumps(added, indent=1))
    # The directory's runs of every version of the spec (arms added by `add` too), by METRIC.
    call([args.ablate, "compare", out, "--metric", METRIC])


def changed(arm, base):
    """The keys where the arm differs from the base (compare keys every arm by all varied keys)."""
    if base is None or arm is base:
        return {}
    return {k: v for k, v in arm["values"].items() if base["values"].get(k) != v}


def arm_label(values):
    return ", ".join(f"{k.split('.', 1)[1] if k.count('.') else k}={v}" for k, v in values.items()) or "base"


def kind_of(values):
    for key in values:
        for prefix, kind in KINDS:
            if key.startswith(prefix):
                return kind
        return "setting"
    return "base"


def chosen_lr(arm):
    """The learning rate the arm's runs trained at (sweep.tune's choice), from their run files."""
    import h5py
    rates = set()
    for r in arm["runs"]:
        try:
            with h5py.File(r["path"], "r") as f:
                text = f.attrs["resolved_spec_yaml"]
                rates.add(flat_spec(text.decode() if isinstance(text, bytes) else text).get("train.optimizer.lr"))
        except OSError:
            continue
    return ", ".join(sorted(str(r) for r in rates if r is not None)) or "—"


def fmt(v, digits, signed=False):
    if v is None:
        return "—"
    return f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"


def rows_of(summary):
    """The arms, the base first, then the others by their change of METRIC (best first)."""
    arms = summary["arms"]
    base = [a for a in arms if a["baseline"]]
    if not base:
        fail("the comparison names no baseline arm; expected the base configuration (the sweep's manifest)")
    rest = sorted((a for a in arms if not a["baseline"]), key=lambda a: (a["delta"] is None, a["delta"] or 0.0))
    return base + rest


def table(summary, mark=None):
    head = ("| rank | arm | kind | Δ test bits/byte [95% CI] | p (Holm) | test bits/byte, mean ± sd (n) | parameters | "
            "FLOPs/token | tokens/s | learning rate |\n|---|---|---|---|---|---|---|---|---|---|\n")
    lines, rank = [], 0
    rows = rows_of(summary)
    for a in rows:
        change = changed(a, rows[0])
        test = a["test"] or {}
        ci = test.get("ci") or [None, None]
        if a["baseline"]:
            where, delta = "base", "0 (the base)"
        else:
            rank += 1
            where = str(rank)
            delta = f"{fmt(a['delta'], 4, True)} [{fmt(ci[0], 4, True)}, {fmt(ci[1], 4, True)}]"
        counts = a["counts"]
        spread = f"{fmt(a['mean'], 4)} ± {fmt(a['std'], 4)} ({a['n']})"
        if counts["diverged"] or counts["failed"] or counts["missing_metric"]:
            spread += f"; {counts['diverged']} diverged, {counts['failed']} failed, {counts['missing_metric']} without it"
        compute = a.get("compute") or {}
        label = arm_label(change)
        if mark and all(a["values"].get(k) == v for k, v in mark.items()):
            label = f"**{label}** (new)"
        lines.append(f"| {where} | {label} | {kind_of(change)} | {delta} | {fmt(test.get('p_holm'), 3)} | {spread} | "
                     f"{compute.get('parameters', '—')} | {fmt(compute.get('flops_per_token'), 0)} | "
                     f"{fmt((a.get('tokens_per_s') or {}).get('mean'), 0)} | {a.get('learning_rate') or chosen_lr(a)} |")
    return head + "\n".join(lines) + "\n"


def ticks(lo, hi):
    """Round values (1, 2 or 5 times a power of ten apart) across [lo, hi], four to ten of them."""
    span = hi - lo
    step = 10 ** math.floor(math.log10(span / 4))
    for m in (1, 2, 5, 10):
        if span / (step * m) <= 10:
            step *= m
            break
    first = math.ceil(lo / step)
    return [i * step for i in range(first, math.floor(hi / step) + 1)]


def figure(summary, path):
    """A forest plot of each arm's Δ METRIC with its 95% interval (SVG, no plotting library)."""
    rows = rows_of(summary)
    arms = [a for a in rows[1:] if a["delta"] is not None]
    if not arms:
        return False
    ends = []
    for a in arms:
        ci = (a["test"] or {}).get("ci") or [None, None]
        ends += [a["delta"]] + [c for c in ci if c is not None]
    lo, hi = min(ends + [0.0]), max(ends + [0.0])
    pad = (hi - lo) * 0.05 or 0.01
    lo, hi = lo - pad, hi + pad
    labels = [arm_label(changed(a, rows[0])) for a in arms]
    left, width, row, top = 20 + 7 * max(len(t) for t in labels), 420, 18, 30  # 11 px sans: under 7 px a character
    height = top + row * len(arms) + 40
    x = lambda v: left + (v - lo) / (hi - lo) * width  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="16">Δ test bits per byte against the base, 95% CI (negative: better; filled: p(Holm) &lt; 0.05)</text>',
           f'<line x1="{x(0):.1f}" y1="{top - 6}" x2="{x(0):.1f}" y2="{height - 34}" stroke="#888"/>']
    for i, a in enumerate(arms):
        y = top + row * i + row / 2
        ci = (a["test"] or {}).get("ci") or [None, None]
        significant = ((a["test"] or {}).get("p_holm") or 1.0) < 0.05
        label = labels[i].replace("&", "&amp;").replace("<", "&lt;")
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
        if ci[0] is not None and ci[1] is not None:
            out.append(f'<line x1="{x(ci[0]):.1f}" y1="{y:.1f}" x2="{x(ci[1]):.1f}" y2="{y:.1f}" stroke="#246"/>')
        fill = "#246" if significant else "white"
        out.append(f'<circle cx="{x(a["delta"]):.1f}" cy="{y:.1f}" r="4" fill="{fill}" stroke="#246"/>')
    for v in ticks(lo, hi):  # the axis
        out.append(f'<line x1="{x(v):.1f}" y1="{height - 34}" x2="{x(v):.1f}" y2="{height - 30}" stroke="#888"/>')
        out.append(f'<text x="{x(v):.1f}" y="{height - 18}" text-anchor="middle">{v:+.3g}</text>')
    out.append("</svg>")
    write_file(path, "\n".join(out) + "\n")
    return True


def results_of(args, base, figures):
    """A base's compared results and the record of its sessions: from its runs under --out when they
    are there (copied beside the figures with each arm's learning rate, so that the table can be
    written again in a checkout without the runs: results/ is not committed), else from that copy. Returns (summary or None,
    sessions.tsv path, the copy's path or, when there is none, what is missing)."""
    out = os.path.join(args.out, base)
    copy = {"summary.json": os.path.join(figures, f"{base}.summary.json"),
            "sessions.tsv": os.path.join(figures, f"{base}.sessions.tsv")}
    local = os.path.join(out, "summary.json")
    if os.path.exists(local):
        os.makedirs(figures, exist_ok=True)
        summary = json.load(open(local))
        for a in summary["arms"]:  # what the copy cannot read from run files
            a["learning_rate"] = chosen_lr(a)
        write_file(copy["summary.json"], json.dumps(summary, indent=1))
        if os.path.exists(os.path.join(out, "sessions.tsv")):
            write_file(copy["sessions.tsv"], open(os.path.join(out, "sessions.tsv")).read())
        elif os.path.exists(copy["sessions.tsv"]):  # an older copy's record is not this one's
            os.remove(copy["sessions.tsv"])
    elif os.path.exists(copy["summary.json"]):
        print(f"leaderboard.py: the {base} base's runs are not in {rel(out)}; its table comes from {rel(copy['summary.json'])}")
        summary = json.load(open(copy["summary.json"]))
    else:
        return None, None, f"{rel(local)}, no {rel(copy['summary.json'])}"
    return summary, copy["sessions.tsv"], rel(copy["summary.json"])


def rel(path):
    """A path as the table shows it: from the repository root when it is inside it."""
    r = os.path.relpath(path, ROOT)
    return path if r.startswith("..") else r


def sessions(path):
    if not os.path.exists(path):
        return "no record of the sessions that ran it"
    rows = [line.rstrip("\n").split("\t") for line in open(path) if line.strip()]
    seconds = sum(float(r[1]) for r in rows)
    machines = sorted({f"{r[3]}, {r[2]} cores" for r in rows})
    dates = sorted({r[0] for r in rows})
    return (f"wall time {seconds / 60:.0f} min over {len(rows)} invocation(s) of `leaderboard.py`, "
            f"{' to '.join([dates[0], dates[-1]] if len(dates) > 1 else dates)}, on {'; '.join(machines)}")


def write_table(args):
    parts = ["<!-- generated by experiments/leaderboard/leaderboard.py table: do not edit by hand -->\n\n",
             "# The leaderboard\n\n",
             "Every built-in variant, each as one arm that changes one component of a base, on one setup, with\n"
             "each arm's learning rate tuned and every arm at the same training FLOPs. The setup, the choices\n"
             "and how to add an arm of your own: experiments/leaderboard/README.md. Regenerate with\n"
             "`/usr/bin/python3 experiments/leaderboard/leaderboard.py table`.\n\n",
             "Δ is the arm's test bits per byte (the loss summed over the test text in bits, per byte of it: comparable\n"
             "across tokenizers; for the bases' characters the loss in bits) minus the base's, paired by seed, with its 95% interval\n"
             "and Holm's p over the base's arms; a negative Δ is better. Ranks follow Δ, and arms whose intervals\n"
             "overlap are not ordered by this table. FLOPs/token are training FLOPs (docs/training.md, \"Compute\");\n"
             "tokens/s were measured with two runs at a time, one thread each, on the machine named under each base.\n"
             "A token is a character, or for a tokenizer arm a subword of several bytes (its windows of 64 tokens\n"
             "hold more text).\n"]
    figures = os.path.join(os.path.dirname(os.path.abspath(args.table)), "leaderboard")
    found = False
    for base in BASES:
        parts.append(f"\n## {TITLES[base]}\n")
        summary, record, origin = results_of(args, base, figures)
        if summary is None:
            parts.append(f"\nNot compared yet (no {origin}): `leaderboard.py run --bases {base}` runs it, "
                         "or resumes where it stopped.\n")
            continue
        found = True
        parts.append(f"\n{sessions(record)}; `ablate compare`'s summary: {origin}.\n\n")
        parts.append(table(summary))
        os.makedirs(figures, exist_ok=True)
        svg = os.path.join(figures, f"{base}.svg")
        if figure(summary, svg):
            parts.append(f"\n![Δ test bits per byte per arm, {base} base]({os.path.relpath(svg, os.path.dirname(os.path.abspath(args.table)))})\n")
        for note in summary.get("notes", []):
            parts.append(f"\n- {note}")
        parts.append("\n")
    if not found:
        fail(f"no base has results under {args.out}; run `leaderboard.py run` first")
    write_file(args.table, "".join(parts))
    print(f"leaderboard.py: wrote {args.table}")


def add(args):
    arm = {}
    for item in args.set:
        if "=" not in item:
            fail(f"--set {item!r}: expected KEY=VALUE, e.g. model.ffn=reglu")
        k, v = item.split("=", 1)
        arm[k] = v
    if not arm:
        fail("add needs the arm: --set KEY=VALUE (one or more, e.g. --set model.ffn=reglu)")
    import yaml
    args.new_arms = {args.base: [{k: yaml.safe_load(v) for k, v in arm.items()}]}
    args.new_plugin_paths = [os.path.abspath(p) for p in args.plugin_path]
    sweep(args, args.base)
    summary = json.load(open(os.path.join(args.out, args.base, "summary.json")))
    print(table(summary, mark=arm))
    ranked = rows_of(summary)[1:]
    for i, a in enumerate(ranked, 1):
        if all(a["values"].get(k) == v for k, v in arm.items()):
            test = a["test"] or {}
            print(f"leaderboard.py: {arm_label(arm)} ranks {i} of {len(ranked)} arms of the {args.base} base: "
                  f"Δ test bits per byte {fmt(a['delta'], 4, True)} (p Holm {fmt(test.get('p_holm'), 3)})")
            return
    fail(f"the arm {arm_label(arm)} is not among the compared arms of {args.out}/{args.base}; see its sweep's output above")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["run", "table", "add"])
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "leaderboard"), help="results directory")
    parser.add_argument("--table", default=os.path.join(ROOT, "docs", "leaderboard.md"), help="the table's file")
    parser.add_argument("--ablate", default=os.path.join(ROOT, "build", "bin", "ablate"))
    parser.add_argument("--profile", choices=["full", "ci"], default="full")
    parser.add_argument("--bases", default=",".join(BASES), help="run: comma-separated bases")
    parser.add_argument("--base", choices=list(BASES), default="modern", help="add: the base to add the arm to")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--data", help="the Bible text to read instead of data/bible_lm/web_en.txt")
    parser.add_argument("-p", "--plugin-path", action="append", default=[], help="a plugin directory (add)")
    parser.add_argument("--set", action="append", default=[], help="add: KEY=VALUE of the new arm")
    args = parser.parse_args()
    args.out = os.path.abspath(args.out)
    if args.command != "table" and not os.access(args.ablate, os.X_OK):
        fail(f"{args.ablate} is not an executable; build first (README) or pass --ablate PATH")
    if args.command == "run":
        for base in args.bases.split(","):
            if base not in BASES:
                fail(f"--bases: unknown base {base!r}; expected some of {', '.join(BASES)}")
            sweep(args, base)
        write_table(args)
    elif args.command == "table":
        write_table(args)
    else:
        add(args)


if __name__ == "__main__":
    main()
