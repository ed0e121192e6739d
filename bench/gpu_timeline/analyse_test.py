#!/usr/bin/env python3
"""bench/gpu_timeline/analyse.py on a made-up timeline whose answer is known: ten 100 us steps, each
a kernel launched well ahead, a gap of 10 us of which the host caused 8 (the next kernel's launch
returned 8 us into it), and the optimizer's kernel launched ahead after a 10 us gap of the GPU's own."""
import os
import subprocess
import sys
import tempfile

US = 1000  # ns
rows = []
corr = 0
for i in range(12):
    t0 = i * 100 * US
    for name, start, end, launched in (("gemm_kernel", 0, 30, -5), ("gelu_kernel", 40, 70, 38),
                                       ("adam_kernel", 80, 100, 50)):
        corr += 1
        rows.append(f"R\t{t0 + (launched - 2) * US}\t{t0 + launched * US}\t{corr}\t1\tcudaLaunchKernel")
        rows.append(f"K\t{t0 + start * US}\t{t0 + end * US}\t{corr}\t7\t{name}(float*)")

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "t.tsv")
    with open(path, "w") as f:
        f.write("\n".join(rows) + "\n")
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "analyse.py")
    out = subprocess.run([sys.executable, script, path, "--skip", "2"], capture_output=True, text=True, check=True).stdout
    print(out)
    expected = ["9 steps (after 2 left out)", "wall 0.100 ms, GPU busy 0.080 ms (80.0%), idle 0.020 ms",
                "of which the host's (work not yet launched) 0.008 ms", "3 kernels/copies/fills, 2 gaps over 5 us",
                "0.030      1  gemm_kernel", "0.006      3  cudaLaunchKernel"]
    missing = [e for e in expected if e not in out]
    if missing:
        sys.exit(f"analyse_test: missing from the output: {missing}")
    # too few steps is an error naming the file, not a crash
    bad = subprocess.run([sys.executable, script, path, "--skip", "20"], capture_output=True, text=True)
    if bad.returncode == 0 or "need more than 21 steps" not in bad.stderr:
        sys.exit(f"analyse_test: expected a refusal, got rc {bad.returncode}: {bad.stderr}")
print("analyse_test: ok")
