#!/usr/bin/env python3
"""Where a training step's time goes on the GPU, from the tracer's TSV (gpu_timeline.cpp).

Steps are cut at the end of each optimizer update (the kernel whose name contains --marker, one per
step), the first --skip steps (warm-up: plans, allocations) left out. Per step: wall time, the time the
GPU was busy (the union of kernels, copies and fills), its idle time, and how much of that idle time
the host caused: a gap is the host's when the work that ends it had not been launched yet when the
gap began. Standard library only (the GPU machine has no pandas).

  python3 bench/gpu_timeline/analyse.py OUT/c.tsv [--skip 5] [--top 15]
"""
import argparse
import bisect
import collections
import shutil
import statistics
import subprocess
import sys


def read(path):
    work, calls = [], {}  # work: (start, end, kind, corr, label); calls: corr -> (start, end, name)
    api = []  # (start, end, name, thread)
    with open(path) as f:
        for line in f:
            kind, start, end, corr, extra, label = (line.rstrip("\n").split("\t", 5) + [""])[:6]
            start, end, corr = int(start), int(end), int(corr)
            if kind in "KCS":
                work.append((start, end, kind, corr, label if kind == "K" else kind + " " + label))
            else:
                api.append((start, end, label, extra))
                # a runtime call and the driver call it makes share the correlation id: keep the outer one
                if corr not in calls or start < calls[corr][0]:
                    calls[corr] = (start, end, label)
    work.sort()
    api.sort()
    return work, calls, api


def demangled(names):
    """name -> readable name: demangled by c++filt where the machine has it, namespaces and the
    argument list left out, template arguments kept (they tell a kernel's variants apart)."""
    names = sorted(names)
    plain = names
    if shutil.which("c++filt"):
        run = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
        if run.returncode == 0 and len(run.stdout.splitlines()) == len(names):
            plain = run.stdout.splitlines()
    out = {}
    for name, text in zip(names, plain):
        for noise in ("(anonymous namespace)::", "backend_cudnn::kernels::", "__nv_bfloat16", "void "):
            text = text.replace(noise, "bf16" if noise == "__nv_bfloat16" else "")
        depth = 0
        for i, ch in enumerate(text):  # cut the argument list: the first "(" outside template brackets
            depth += (ch == "<") - (ch == ">")
            if ch == "(" and depth == 0 and i > 0:
                text = text[:i]
                break
        out[name] = text
    return out


def short(name, width=90):
    return name if len(name) <= width else name[: width - 3] + "..."


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("tsv")
    p.add_argument("--marker", default="adam_kernel", help="a kernel launched once per step, at its end")
    p.add_argument("--skip", type=int, default=5, help="steps left out at the start")
    p.add_argument("--top", type=int, default=15)
    a = p.parse_args()
    work, calls, api = read(a.tsv)
    ends = [e for s, e, k, c, n in work if k == "K" and a.marker in n]
    if len(ends) < a.skip + 2:
        sys.exit(f"analyse: {len(ends)} '{a.marker}' kernels in {a.tsv}: need more than {a.skip + 1} steps")
    windows = list(zip(ends[a.skip:-1], ends[a.skip + 1:]))
    starts = [w[0] for w in work]
    rows = []
    by_name = collections.defaultdict(lambda: [0, 0])
    host_calls = collections.defaultdict(lambda: [0, 0])
    for lo, hi in windows:
        i = bisect.bisect_left(starts, lo)
        busy = idle = host_idle = 0
        cursor, launches, gaps = lo, 0, 0
        while i < len(work) and work[i][0] < hi:
            s, e, kind, corr, name = work[i]
            launches += 1
            by_name[name][0] += min(e, hi) - s
            by_name[name][1] += 1
            if s > cursor:  # a gap in which the GPU ran nothing
                gap = s - cursor
                idle += gap
                gaps += gap > 5000
                launched = calls.get(corr, (0, 0, ""))[1]  # when the launch call returned
                host_idle += min(gap, max(0, launched - cursor))
            busy += max(0, min(e, hi) - max(s, cursor))
            cursor = max(cursor, e)
            i += 1
        j = bisect.bisect_left(api, (lo,))
        while j < len(api) and api[j][0] < hi:
            s, e, name, thread = api[j]
            host_calls[name][0] += e - s
            host_calls[name][1] += 1
            j += 1
        rows.append((hi - lo, busy, idle, host_idle, launches, gaps))
    n = len(rows)
    med = lambda k: statistics.median(r[k] for r in rows) / 1e6  # ms
    print(f"{n} steps (after {a.skip} left out), medians per step:")
    print(f"  wall {med(0):.3f} ms, GPU busy {med(1):.3f} ms ({100 * med(1) / med(0):.1f}%), idle {med(2):.3f} ms, "
          f"of which the host's (work not yet launched) {med(3):.3f} ms")
    print(f"  {statistics.median(r[4] for r in rows):.0f} kernels/copies/fills, "
          f"{statistics.median(r[5] for r in rows):.0f} gaps over 5 us")
    print(f"\nGPU work by name (ms per step, launches per step), top {a.top}:")
    readable = demangled(by_name)
    for name, (t, c) in sorted(by_name.items(), key=lambda kv: -kv[1][0])[: a.top]:
        print(f"  {t / n / 1e6:8.3f} {c / n:6.0f}  {short(readable[name])}")
    print(f"\nhost time in CUDA calls (ms per step, calls per step; overlapping runtime/driver rows both counted), "
          f"top {a.top}:")
    for name, (t, c) in sorted(host_calls.items(), key=lambda kv: -kv[1][0])[: a.top]:
        print(f"  {t / n / 1e6:8.3f} {c / n:6.0f}  {name}")


if __name__ == "__main__":
    main()
