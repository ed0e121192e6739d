# The fault corpus's shared machinery (tests/faults/): the Corpus runner that runs `ablate`, times,
# records and sums up each case, the TINY spec, the documented exit codes, and the checks every
# case module uses (expect, run_file_state). fault_corpus.py is the entry point.
import os
import subprocess
import time

import h5py

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PLUGIN, EXIT_DIVERGED = 0, 1, 2, 3, 4

# A run that takes well under a second: 1+1 layers, d_model 16, 6 steps, one evaluation.
TINY = """name: fault_tiny
task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}
model: {arch: encoder_decoder, d_model: 16, heads: 2, layers: 1, d_ff: 32, dropout: 0.0}
backend: reference
train: {steps: 6, batch_size: 8, schedule: {plugin: constant}}
log: {every: 2, attention: {every: 0}}
eval: {every: 6, batches: 1}
"""


class Corpus:
    def __init__(self, ablate, fixtures, work, only, long):
        self.ablate, self.fixtures, self.work, self.only, self.long = ablate, fixtures, work, only, long
        self.results = []  # (category, name, problem or None)

    def spec(self, name, text=TINY, extra=""):
        path = os.path.join(self.work, name + ".yaml")
        with open(path, "w") as f:
            f.write(text + extra)
        return path

    @staticmethod
    def env():
        return dict(os.environ, OMP_WAIT_POLICY="PASSIVE", OMP_NUM_THREADS="1")

    def run(self, args):
        p = subprocess.run([self.ablate] + args, capture_output=True, env=self.env(), timeout=300,
                           stdin=subprocess.DEVNULL)  # a command that reads stdin (translate, generate) sees it empty
        return p.returncode, decoded(p.stdout + p.stderr)

    def killed(self, args, sig, after, group=False):
        """Starts `ablate ARGS`, sends `sig` after `after` seconds (to its whole process group with
        `group`: the sweep and its runs at once, like a lost machine); its exit code and output."""
        p = subprocess.Popen([self.ablate] + args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env(),
                             start_new_session=group)
        time.sleep(after)
        if group:
            os.killpg(p.pid, sig)
        else:
            p.send_signal(sig)
        out = p.communicate(timeout=300)[0]
        return p.returncode, decoded(out)

    def case(self, category, name, fn):
        if self.only and self.only not in category + "/" + name:
            return
        start = time.monotonic()
        try:
            problem = fn()
        except AssertionError as e:
            problem = str(e) or "assertion failed"
        except subprocess.TimeoutExpired:
            problem = "hang: no exit within 300 s"
        except Exception as e:  # the case itself broke: a failure too, never a pass
            problem = f"{type(e).__name__}: {e}"
        self.results.append((category, name, problem))
        took = f" ({time.monotonic() - start:.1f} s)"
        print(("ok   " if problem is None else "FAIL ") + category + "/" + name + took + ("" if problem is None else ": " + problem))

    def summary(self):
        cats = {}
        for c, _, p in self.results:
            n, ok = cats.get(c, (0, 0))
            cats[c] = (n + 1, ok + (p is None))
        passed = sum(1 for r in self.results if r[2] is None)
        by = ", ".join(f"{c} {ok}/{n}" for c, (n, ok) in sorted(cats.items()))
        problems = [p for _, _, p in self.results if p is not None]
        kinds = {  # the failures the issue counts, by what the case saw
            "crashes": sum("died by a signal" in p or "sanitizer report" in p for p in problems),
            "hangs": sum(p.startswith("hang") for p in problems),
            "silent accepts": sum(p.startswith("exit 0, expected") for p in problems),
            "data lost": sum("differ" in p or "changed" in p for p in problems),
        }
        figures = ", ".join(f"{k} {v}" for k, v in kinds.items())
        # The failures once more, last: a log cut to its tail (CI's) still says which case and why.
        for c, name, p in self.results:
            if p is not None:
                print(f"FAILED {c}/{name}: {p[-500:]}")
        print(f"fault corpus: {len(self.results)} cases, {passed} passed ({by}); {figures}")
        return passed == len(self.results)


NOT_UTF8 = "[fault corpus: the output above is not valid UTF-8]"


def decoded(raw):
    """What a command printed, as text; bytes that are not UTF-8 (a damaged file's, echoed) are
    replaced and marked, and expect() fails on the mark: Ablate prints valid UTF-8 only."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode(errors="replace") + "\n" + NOT_UTF8


def expect(code, out, want_code, *needles):
    assert code >= 0 and code < 128, f"died by a signal (exit {code}): {out[-600:]}"
    assert NOT_UTF8 not in out, "output is not valid UTF-8: " + out[-600:]
    assert "Sanitizer" not in out and "runtime error:" not in out, "sanitizer report: " + out[-1200:]
    assert code == want_code, f"exit {code}, expected {want_code}: {out[-600:]}"
    for n in needles:
        assert n in out, f"message lacks {n!r}: {out[-600:]}"


def run_file_state(run_dir, swmr=False):
    """(status, reason) of run_dir/run.h5, read with h5py (swmr: as a live reader does, also a file
    whose writer was killed); None when there is no run file."""
    path = os.path.join(run_dir, "run.h5")
    if not os.path.exists(path):
        return None
    with h5py.File(path, "r", swmr=swmr) as f:
        attrs = f.attrs
        dec = lambda v: v.decode() if isinstance(v, bytes) else str(v)
        return dec(attrs["status"]), dec(attrs["reason"])
