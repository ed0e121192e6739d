#!/usr/bin/python3
"""bench/compare.py: Ablate against PyTorch on the benchmark configs, side by side (bench/README.md).

Runs, per config (A, B, B-bf16), Ablate and each PyTorch peer alternately, one process each, for
--rounds rounds; reads Ablate's tokens/s from its run.h5 and the peers' from their JSON line,
with every process's peak RSS; then checks that the two compute the same thing (an Ablate run
with --dump-reference, dropout 0, retraced by bench/peer_torch.py check). Prints a markdown
table and writes it to results/bench/<timestamp>.md. bench/run.sh builds Ablate and the venv
first and calls this with Debian's python3 (numpy, h5py, yaml).

  compare.py --ablate-bin build/bin/ablate [--size tiny|full] [--configs A,B,B-bf16] [--rounds 3]
             [--steps N] [--check-steps 20] [--threads 2] [--no-torch-release] [--check-only]
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

import h5py
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.path.join(ROOT, "bench", "peer_torch.py")
VENV_PYTHON = os.path.join(ROOT, "bench", ".venv", "bin", "python")
DEBIAN_PYTHON = "/usr/bin/python3"
OPENBLAS_OPENMP = "/usr/lib/x86_64-linux-gnu/openblas-openmp"

CONFIGS = {
    "A": {"spec": "bench/configs/A_enc_dec.yaml", "sets": [], "bf16": False},
    "B": {"spec": "bench/configs/B_decoder_lm.yaml", "sets": [], "bf16": False},
    "B-bf16": {"spec": "bench/configs/B_decoder_lm.yaml", "sets": ["precision=bf16"], "bf16": True},
    # --gpu (issue 9): the cudnn backend in bf16 against PyTorch eager bf16 autocast on the same GPU
    # log.stats=false: the per-layer statistics' probe pass (PyTorch logs nothing; seconds per log at C's length)
    "B-gpu": {"spec": "bench/configs/B_decoder_lm.yaml", "sets": ["backend.plugin=cudnn", "precision=bf16", "log.stats=false"], "bf16": True,
              "gpu": True},
    "C-gpu": {"spec": "bench/configs/C_gpu_large.yaml", "sets": [], "bf16": True, "gpu": True, "no_check": True},
}
GPU_CONFIGS = "B-gpu,C-gpu"
# --size tiny: the same architectures at toy sizes, with sequences of varying length (padding
# masks exercised), for CI: correctness only.
TINY_SETS = {
    "A": ["task.vocab_size=24", "task.min_len=3", "task.max_len=9", "model.d_model=32", "model.heads=4", "model.d_ff=64",
          "train.batch_size=8"],
    "B": ["task.vocab_size=40", "task.min_len=4", "task.max_len=15", "model.d_model=32", "model.heads=4", "model.layers=2",
          "model.d_ff=64", "train.batch_size=4"],
}
TINY_SETS["B-bf16"] = TINY_SETS["B"]
NO_DROPOUT = ["model.dropout=0", "model.attention_dropout=0", "model.embedding_dropout=0"]
# Largest relative loss difference accepted by the check (bench/README.md, "Agreement", has the
# measurements behind them): f32 on both sides differs by rounding only; Ablate's bf16 run is
# compared against the peer's f32, so the bf16 rounding of activations and weights is in it.
TOLERANCE = {False: 2e-4, True: 1e-2}


def run_process(cmd, env=None, cwd=None):
    """Runs cmd to completion; returns (exit code, stdout + stderr, peak RSS in MiB)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=cwd, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, out, usage.ru_maxrss / 1024.0  # ru_maxrss: KiB on Linux


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return None


class Peer:
    """One PyTorch installation (and mode) the benchmark runs peer_torch.py with."""

    def __init__(self, name, python, env, release, compiled=False):
        self.name, self.python, self.env, self.release, self.compiled = name, python, env, release, compiled

    def cmd(self, *args):
        return [self.python, PEER, *args]


def find_peers(args):
    """The PyTorch rows: the venv's current release (eager, compiled) and Debian's 1.13; with
    --gpu, the CUDA PyTorch of --torch-python (eager, compiled)."""
    peers, notes = [], []
    if args.gpu:
        version = subprocess.run([args.torch_python, "-c", "import torch; assert torch.cuda.is_available(); "
                                  "print(torch.__version__)"], capture_output=True, text=True)
        if version.returncode != 0:
            notes.append(f"CUDA PyTorch: none in {args.torch_python} ({version.stderr.strip()[-200:]})")
        else:
            v = version.stdout.strip()
            peers.append(Peer(f"PyTorch {v} eager (CUDA)", args.torch_python, dict(os.environ), release=True))
            if not args.check_only:
                peers.append(Peer(f"PyTorch {v} compiled (CUDA)", args.torch_python, dict(os.environ), release=True,
                                  compiled=True))
        return peers, notes
    if args.no_torch_release:
        notes.append("current PyTorch release: skipped (--no-torch-release)")
    elif not os.path.exists(VENV_PYTHON):
        notes.append(f"current PyTorch release: skipped ({VENV_PYTHON} missing; bench/run.sh creates it)")
    else:
        version = subprocess.run([VENV_PYTHON, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True)
        if version.returncode != 0:
            notes.append(f"current PyTorch release: skipped (import torch failed in the venv: {version.stderr.strip()[-200:]})")
        else:
            v = version.stdout.strip()
            peers.append(Peer(f"PyTorch {v} eager", VENV_PYTHON, dict(os.environ), release=True))
            if not args.check_only:
                peers.append(Peer(f"PyTorch {v} compiled", VENV_PYTHON, dict(os.environ), release=True, compiled=True))
    env = dict(os.environ)
    blas = "pthread OpenBLAS"
    if os.path.isdir(OPENBLAS_OPENMP):
        env["LD_LIBRARY_PATH"] = OPENBLAS_OPENMP + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        blas = "OpenBLAS openmp"
    version = subprocess.run([DEBIAN_PYTHON, "-c", "import torch; print(torch.__version__)"], capture_output=True, text=True,
                             env=env)
    if version.returncode != 0:
        notes.append("Debian PyTorch: skipped (python3-torch not installed: apt-get install python3-torch libopenblas0-openmp)")
    else:
        peers.append(Peer(f"PyTorch {version.stdout.strip()} Debian ({blas})", DEBIAN_PYTHON, env, release=False))
        if blas != "OpenBLAS openmp":
            notes.append("Debian PyTorch runs on the pthread OpenBLAS (libopenblas0-openmp missing): slower and noisy")
    return peers, notes


def config_sets(name, args, extra=()):
    sets = list(CONFIGS[name]["sets"])
    if not CONFIGS[name].get("gpu"):
        sets.append(f"backend.threads={args.threads}")
    if args.size == "tiny":
        sets += TINY_SETS[name]
    return sets + list(extra)


def set_args(sets):
    return [a for s in sets for a in ("--set", s)]


def resolved_spec(args, name, sets, path):
    """`ablate validate --print` of a config with its overrides, written to `path` (the peer's input)."""
    out = subprocess.run([args.ablate_bin, "validate", os.path.join(ROOT, CONFIGS[name]["spec"]), "--print", *set_args(sets)],
                         capture_output=True, text=True, check=True).stdout
    text = out.split("\n", 1)[1]  # the first line says "SPEC: valid"
    with open(path, "w") as f:
        f.write(text)
    return yaml.safe_load(text)


def tokens_per_step(spec):
    """Target tokens of a step (non-pad positions, eos included) when every sequence has max_len tokens."""
    return int(spec["train"]["batch_size"]) * (int(spec["task"]["max_len"]) + 1)


def flops_per_step(spec):
    """Matmul FLOPs of one training step: 3x the forward's (backward = input and weight gradients),
    attention score and value products counted in full (causal masking not subtracted)."""
    m = spec["model"]
    d, f, b = int(m["d_model"]), int(m["d_ff"]), int(spec["train"]["batch_size"])
    vocab, length = int(spec["task"]["vocab_size"]), int(spec["task"]["max_len"])
    t = length + 1  # decoder positions: bos + target
    fwd = 0
    if m["arch"] == "encoder_decoder":
        s = length
        fwd += int(m["encoder_layers"]) * (2 * b * s * (4 * d * d + 2 * d * f) + 4 * b * s * s * d)
        cross = 2 * b * t * 2 * d * d + 2 * b * s * 2 * d * d + 4 * b * t * s * d  # q + out, kv of the memory, attention
        fwd += int(m["decoder_layers"]) * cross
    fwd += int(m["decoder_layers"]) * (2 * b * t * (4 * d * d + 2 * d * f) + 4 * b * t * t * d)
    fwd += 2 * b * t * d * vocab  # output projection
    return 3 * fwd


def ablate_speed(args, name, sets, spec, workdir, label, binary=None):
    """One Ablate training process: tokens/s after the first log interval (from run.h5's
    elapsed_s, so logging's own time counts), and its peak RSS. `binary`: another build's ablate
    (--ablate-before), run with its own lib/ directory first on the library path."""
    out_dir = os.path.join(workdir, label)
    env = None
    if binary:
        env = dict(os.environ)
        lib = os.path.join(os.path.dirname(os.path.abspath(binary)), "..", "lib")
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    code, out, rss = run_process([binary or args.ablate_bin, "run", os.path.join(ROOT, CONFIGS[name]["spec"]),
                                  *set_args(sets), "--out", out_dir, "--progress", "quiet"], env=env)
    if code != 0:
        raise RuntimeError(f"ablate run failed ({code}):\n{out}")
    with h5py.File(os.path.join(out_dir, "run.h5"), "r") as f:
        steps = f["metrics/train/step"][:]
        elapsed = f["metrics/train/elapsed_s"][:]
    if len(steps) < 2:
        raise RuntimeError("ablate run logged fewer than 2 train rows: raise train.steps or lower log.every")
    tokens = (steps[-1] - steps[0]) * tokens_per_step(spec)
    return tokens / (elapsed[-1] - elapsed[0]), rss


def peer_speed(args, peer, spec_path, bf16):
    cmd = peer.cmd("speed", spec_path, "--threads", str(args.threads))
    if peer.compiled:
        cmd.append("--compile")
    if bf16:
        cmd.append("--bf16")
    if args.gpu:
        cmd += ["--device", "cuda"]
    code, out, rss = run_process(cmd, env=peer.env)
    result = last_json(out)
    if result is None or not result.get("ok"):
        return None, rss, (result or {}).get("error") or out.strip()[-300:]
    return result["tokens_per_s"], rss, None


def agreement(args, name, peers, workdir):
    """Ablate with --dump-reference (dropout 0) and each eager peer retracing it: rows of results."""
    sets = config_sets(name, args, NO_DROPOUT + [f"train.steps={args.check_steps}", f"log.every={args.check_steps}",
                                                  f"eval.every={args.check_steps}"])
    dump = os.path.join(workdir, f"{name}_reference.h5")
    code, out, _ = run_process([args.ablate_bin, "run", os.path.join(ROOT, CONFIGS[name]["spec"]), *set_args(sets), "--out",
                                os.path.join(workdir, f"{name}_reference_run"), "--progress", "quiet", "--dump-reference", dump])
    if code != 0:
        raise RuntimeError(f"ablate run --dump-reference failed ({code}):\n{out}")
    tolerance = TOLERANCE[CONFIGS[name]["bf16"]]
    rows = []
    for peer in peers:
        if peer.compiled:
            continue
        code, out, _ = run_process(peer.cmd("check", dump, "--threads", str(args.threads), "--tolerance", str(tolerance)),
                                   env=peer.env)
        result = last_json(out)
        if result is None:
            raise RuntimeError(f"{peer.name} check gave no result ({code}):\n{out}")
        if args.verbose:
            print(out)
        rows.append((peer.name, result))
    return rows


def spread(values):
    m = statistics.median(values)
    return f"{min(values):,.0f}–{max(values):,.0f} (±{50 * (max(values) - min(values)) / m:.1f}%)"


def matmul_peak(args):
    """The plain oneDNN f32 and bf16 matmul GFLOP/s (median) that ablate_op_bench measures here and
    now; the bf16 one is None on a CPU without bf16 instructions."""
    op_bench = os.path.join(os.path.dirname(args.ablate_bin), "ablate_op_bench")
    out = subprocess.run([op_bench, "--threads", str(args.threads), "--reps", "5", "--only", "plain"], capture_output=True,
                         text=True, check=True).stdout
    found = re.search(r"peak = the better plain matmul, ([0-9.]+) GFLOP/s median", out)
    if not found:
        raise RuntimeError(f"no peak line in the output of {op_bench}:\n{out}")
    low = re.search(r"bf16 peak = the better plain bf16 matmul, ([0-9.]+) GFLOP/s median", out)
    return float(found.group(1)), float(low.group(1)) if low else None


def gpu_matmul_peak(args):
    """bf16 matmul TFLOP/s of the GPU, measured here and now: torch.matmul of two 8192 x 8192 bf16
    matrices (cuBLAS), the median of 20 after a warm-up; reported in GFLOP/s like matmul_peak."""
    script = ("import torch, statistics\n"
              "a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16); b = torch.randn_like(a)\n"
              "for _ in range(5): a @ b\n"
              "times = []\n"
              "for _ in range(20):\n"
              "    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)\n"
              "    s.record(); a @ b; e.record(); e.synchronize(); times.append(s.elapsed_time(e) / 1e3)\n"
              "print(2 * 8192 ** 3 / statistics.median(times) / 1e9)\n"
              "print(torch.cuda.get_device_name())\n")
    out = subprocess.run([args.torch_python, "-c", script], capture_output=True, text=True, check=True).stdout.split("\n")
    return float(out[0]), out[1]


def machine():
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ablate-bin", required=True, help="the ablate executable (ablate_op_bench beside it)")
    p.add_argument("--size", choices=["tiny", "full"], default="full", help="tiny: toy shapes, correctness only (CI)")
    p.add_argument("--configs", default="A,B,B-bf16", help="comma-separated, of " + ", ".join(CONFIGS))
    p.add_argument("--rounds", type=int, default=3, help="alternating Ablate / PyTorch rounds per config")
    p.add_argument("--steps", type=int, help="training steps of each speed run (default: the config's train.steps)")
    p.add_argument("--bf16-steps", type=int,
                   help="training steps of each B-bf16 speed run (default: --steps on a CPU with bf16 instructions; "
                        "8, 5 of them warm-up, on one without, where PyTorch's bf16 takes minutes per step)")
    p.add_argument("--bf16-rounds", type=int,
                   help="rounds of B-bf16 (default: --rounds with bf16 instructions, 1 without; see --bf16-steps)")
    p.add_argument("--check-steps", type=int, default=20, help="steps of the agreement check")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--ablate-before", metavar="BIN",
                   help="another build's ablate (say, main before a change), timed in the same rounds as its own row")
    p.add_argument("--no-torch-release", action="store_true", help="only Debian's python3-torch (no venv)")
    p.add_argument("--check-only", action="store_true", help="the agreement check only (implied by --size tiny)")
    p.add_argument("--out", default=os.path.join(ROOT, "results", "bench"), help="where the markdown report goes")
    p.add_argument("--verbose", action="store_true", help="print every step of the checks")
    p.add_argument("--gpu", action="store_true",
                   help=f"the GPU benchmark (configs {GPU_CONFIGS}, cudnn backend, bf16) against CUDA PyTorch eager bf16")
    p.add_argument("--torch-python", default=VENV_PYTHON if os.path.exists(VENV_PYTHON) else "python3",
                   help="--gpu: the Python whose PyTorch has CUDA (default: bench/.venv, else python3)")
    args = p.parse_args()
    if args.gpu and args.configs == "A,B,B-bf16":
        args.configs = GPU_CONFIGS
    args.check_only = args.check_only or args.size == "tiny"
    names = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        p.error(f"unknown config(s) {unknown}; expected some of {', '.join(CONFIGS)}")

    peers, notes = find_peers(args)
    if not peers:
        print("no PyTorch to compare with:\n  " + "\n  ".join(notes))
        return 77  # ctest's skip code (bench.peer_agreement)
    started = datetime.datetime.now()
    version = subprocess.run([args.ablate_bin, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    lines = [f"# Ablate vs PyTorch, {started:%Y-%m-%d %H:%M}", "",
             f"- machine: {machine()}; {args.threads} threads; size {args.size}",
             f"- ablate: {version[0] if version else args.ablate_bin}",
             f"- command: `{' '.join(sys.argv)}`"] + [f"- note: {n}" for n in notes]
    peak = bf16_peak = None
    speed_rows = []
    workdir = tempfile.mkdtemp(prefix="ablate_bench_")
    failed = False
    try:
        if not args.check_only:
            if args.gpu:
                peak, gpu_name = gpu_matmul_peak(args)
                lines.append(f"- GPU: {gpu_name}; matmul peak (torch bf16 8192^3, median): {peak / 1e3:.1f} TFLOP/s")
            else:
                # Measured before every config and once after the last: a shared machine's speed drifts
                # over a run, and a peak caught in a slow minute would inflate every MFU. The highest
                # of the measurements is the peak (MFU errs low), and every one is reported.
                peaks = [matmul_peak(args)]
                peak, bf16_peak = peaks[0]
                peak_line = len(lines)
                lines += ["", ""]
                if args.ablate_before:
                    before = subprocess.run([args.ablate_before, "--version"], capture_output=True, text=True,
                                            env=dict(os.environ, LD_LIBRARY_PATH=os.path.join(
                                                os.path.dirname(os.path.abspath(args.ablate_before)), "..", "lib")))
                    lines.append(f"- Ablate (before): `{args.ablate_before}` ({before.stdout.strip().splitlines()[0] if before.stdout.strip() else '?'}), "
                                 "run in each round after Ablate; its ratio column is Ablate / before")
                if args.bf16_steps is None and bf16_peak is None:
                    args.bf16_steps = 8
                if args.bf16_rounds is None:
                    args.bf16_rounds = args.rounds if bf16_peak else 1
                if any(CONFIGS[n]["bf16"] for n in names):
                    steps_text = f"{args.bf16_steps} steps" if args.bf16_steps else "the config's steps"
                    lines.append(f"- bf16 configs: {args.bf16_rounds} round(s) of {steps_text}" +
                                 ("" if bf16_peak else " (5 of warm-up), as PyTorch's bf16 takes minutes per step on a CPU "
                                  "without bf16 instructions"))
            for name in names:
                bf16 = CONFIGS[name]["bf16"]
                steps = (args.bf16_steps or args.steps) if bf16 and not args.gpu else args.steps
                rounds = args.bf16_rounds if bf16 and not args.gpu else args.rounds
                extra = [f"train.steps={steps}"] if steps else []
                sets = config_sets(name, args, extra)
                spec_path = os.path.join(workdir, f"{name}.yaml")
                spec = resolved_spec(args, name, sets, spec_path)
                results = {"Ablate": ([], [])}
                errors = {}
                for r in range(rounds):
                    tps, rss = ablate_speed(args, name, sets, spec, workdir, f"{name}_ablate_{r}")
                    results["Ablate"][0].append(tps)
                    results["Ablate"][1].append(rss)
                    print(f"{name} round {r + 1}: Ablate {tps:,.0f} tokens/s, {rss:,.0f} MiB", flush=True)
                    if args.ablate_before:
                        tps, rss = ablate_speed(args, name, sets, spec, workdir, f"{name}_before_{r}", args.ablate_before)
                        results.setdefault("Ablate (before)", ([], []))
                        results["Ablate (before)"][0].append(tps)
                        results["Ablate (before)"][1].append(rss)
                        print(f"{name} round {r + 1}: Ablate (before) {tps:,.0f} tokens/s, {rss:,.0f} MiB", flush=True)
                    for peer in peers:
                        tps, rss, error = peer_speed(args, peer, spec_path, CONFIGS[name]["bf16"])
                        if error:
                            errors[peer.name] = error
                            print(f"{name} round {r + 1}: {peer.name} failed: {error}", flush=True)
                            continue
                        results.setdefault(peer.name, ([], []))
                        results[peer.name][0].append(tps)
                        results[peer.name][1].append(rss)
                        print(f"{name} round {r + 1}: {peer.name} {tps:,.0f} tokens/s, {rss:,.0f} MiB", flush=True)
                speed_rows.append((name, spec, results, errors))
                if not args.gpu:
                    peaks.append(matmul_peak(args))
            if not args.gpu:
                f32s, bf16s = [p[0] for p in peaks], [p[1] for p in peaks if p[1]]
                peak, bf16_peak = max(f32s), max(bf16s) if bf16s else None
                listed = lambda values: ", ".join(f"{v:.1f}" for v in values)
                lines[peak_line] = (f"- matmul peak (ablate_op_bench, plain oneDNN f32, median): {peak:.1f} GFLOP/s, the highest "
                                    f"of {len(f32s)} measurements in this run (before each config and after the last: "
                                    f"{listed(f32s)})")
                lines[peak_line + 1] = (f"- bf16 matmul peak (plain oneDNN bf16, median): {bf16_peak:.1f} GFLOP/s, the highest "
                                        f"of {listed(bf16s)}; bf16 rows' MFU is against it" if bf16_peak else
                                        "- no bf16 instructions: bf16 rows' MFU is against the f32 peak")
        agreements = []
        for name in names:
            if CONFIGS[name].get("no_check"):  # too large to retrace on the CPU
                continue
            rows = agreement(args, name, peers, workdir)
            agreements.append((name, rows))
            failed |= not all(r["ok"] for _, r in rows)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    if speed_rows:
        lines += ["", "## Speed", "",
                  "tokens/s: target tokens (eos included) per second after the warm-up (the first log interval); "
                  "median of the rounds and min–max. Peer: the faster current-release PyTorch row (eager or compiled), "
                  "else Debian's. MFU: analytic matmul FLOPs per step (bench/README.md) x steps/s over the matmul peak.", "",
                  "| config | implementation | tokens/s (median) | min–max | Ablate / this | MFU | peak RSS (MiB) |",
                  "|---|---|---:|---|---:|---:|---:|"]
        for name, spec, results, errors in speed_rows:
            medians = {k: statistics.median(v[0]) for k, v in results.items() if v[0]}
            measured = [p for p in peers if p.name in medians]
            candidates = [p.name for p in measured if p.release] or [p.name for p in measured]
            peer = max(candidates, key=medians.get) if candidates else None
            flops = flops_per_step(spec)
            for impl, (tps, rss) in results.items():
                if not tps:
                    continue
                med = medians[impl]
                ratio = "" if impl == "Ablate" else f"{medians['Ablate'] / med:.2f}x"
                row_peak = bf16_peak if CONFIGS[name]["bf16"] and not args.gpu and bf16_peak else peak
                mfu = med / tokens_per_step(spec) * flops / (row_peak * 1e9)
                label = impl + (" (peer)" if impl == peer else "")
                lines.append(f"| {name} | {label} | {med:,.0f} | {spread(tps)} | {ratio} | {100 * mfu:.1f}% | {max(rss):,.0f} |")
            for impl, error in errors.items():
                if impl not in medians:
                    lines.append(f"| {name} | {impl} | failed: {error.replace('|', '/')} | | | | |")
    lines += ["", "## Agreement", "",
              f"Ablate run with --dump-reference (dropout 0, {args.check_steps} steps), retraced by bench/peer_torch.py "
              "check from the same initial weights on the same batches; B-bf16: Ablate in bf16 against the peer in f32.", "",
              "| config | peer | steps | first loss | Ablate last loss | peer last loss | max abs diff | max rel diff | tolerance "
              "| agrees |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for name, rows in agreements:
        for peer_name, r in rows:
            lines.append(f"| {name} | {peer_name} | {r['steps']} | {r['first_loss']:.5f} | {r['ablate_last_loss']:.5f} | "
                         f"{r['last_loss']:.5f} | {r['max_abs']:.2e} | "
                         f"{r['max_rel']:.2e} | {r['tolerance']:.0e} | {'yes' if r['ok'] else '**NO**'} |")
    report = "\n".join(lines) + "\n"
    print(report)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{started:%Y%m%d-%H%M%S}.md")
    with open(path, "w") as f:
        f.write(report)
    print(f"written to {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
