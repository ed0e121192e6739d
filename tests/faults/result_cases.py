# Fault corpus cases (tests/faults/): what results record: a failed sweep child is counted, results
# know the code that made them, bf16 says what ran, a sweep of thousands of points.
import os
import shutil

import h5py

from corpus import EXIT_FAILED, EXIT_OK, EXIT_USAGE, TINY, expect, run_file_state


# ---- sweeps: a child run that fails is recorded, listed and counted, with exit 1
def sweep_cases(c):
    def child_fails_at_once():
        spec = c.spec("sweep_fail", TINY.replace("name: fault_tiny", "name: sweep_fail"),
                      "sweep:\n  grid: {model.block: [pre_norm, post_norm]}\n  seeds: [1]\n")
        out_dir = os.path.join(c.work, "sweep_fail")
        code, out = c.run(["sweep", spec, "--out", out_dir, "--progress", "lines", "--no-compare"])
        expect(code, out, EXIT_OK, "2 done")
        run = sorted(d for d in os.listdir(out_dir) if d.startswith("block=pre_norm"))[0]
        run_dir = os.path.join(out_dir, run)
        with h5py.File(os.path.join(run_dir, "run.h5"), "r+") as f:  # as if stopped mid-run...
            f.attrs.modify("status", f.attrs["status"].__class__(b"interrupted"))
        open(os.path.join(run_dir, "checkpoint.bin"), "wb").close()  # ...with an empty checkpoint
        code, out = c.run(["sweep", spec, "--out", out_dir, "--progress", "lines", "--no-compare"])
        expect(code, out, EXIT_FAILED, "1 failed run(s)", "checkpoint", "1 failed")
        state = run_file_state(run_dir)
        assert state and state[0] == "failed" and "checkpoint" in state[1], f"run.h5 after the failed resume: {state}"
        code, out = c.run(["sweep", spec, "--out", out_dir, "--status"])
        assert "1 failed" in out, "--status does not count the failed run: " + out[-400:]
        return None
    c.case("sweep", "child_fails_at_once", child_fails_at_once)


# ---- results know the code that made them: a changed plugin library reruns, refuses, warns
def code_cases(c):
    def plugin_copy(name):
        d = os.path.join(c.work, name)
        os.makedirs(d, exist_ok=True)
        so = os.path.join(d, "fixture_faulty_schedule.so")
        shutil.copy(os.path.join(c.fixtures, "fixture_faulty_schedule", "fixture_faulty_schedule.so"), so)
        return d, so

    def change(so):  # new code, same plugin: a byte appended to the library changes its hash only
        with open(so, "ab") as f:
            f.write(b"\0")

    def sweep_reruns_changed_code():
        plugins, so = plugin_copy("code_sweep_plugins")
        spec = c.spec("code_sweep", TINY.replace("name: fault_tiny", "name: code_sweep").replace(
            "schedule: {plugin: constant}", "schedule: {plugin: faulty}"),
            f"plugin_paths: [{plugins}]\nsweep:\n  grid: {{model.block: [pre_norm, post_norm]}}\n  seeds: [1]\n")
        out_dir = os.path.join(c.work, "code_sweep")
        args = ["sweep", spec, "--out", out_dir, "--progress", "lines", "--no-compare"]
        code, out = c.run(args)
        expect(code, out, EXIT_OK, "2 done")
        code, out = c.run(args)
        expect(code, out, EXIT_OK, "0 to run", "2 already done")
        change(so)
        # --status and --dry-run look only, and say which runs the sweep will rerun
        code, out = c.run(["sweep", spec, "--out", out_dir, "--status"])
        expect(code, out, EXIT_OK, "2 done (2 by other code: the sweep reruns them)",
               "made by other code, the sweep reruns it: now schedule/faulty 1.0.0 ")
        code, out = c.run(["sweep", spec, "--out", out_dir, "--dry-run"])
        expect(code, out, EXIT_OK, "(made by other code: the sweep reruns it)")
        assert not os.path.exists(os.path.join(out_dir, ".attempts")), "--status or --dry-run moved a run"
        code, out = c.run(args + ["--keep-stale"])
        expect(code, out, EXIT_OK, "0 to run", "warning: kept (--keep-stale) a run made by other code",
               "schedule/faulty 1.0.0 ")
        code, out = c.run(args)
        expect(code, out, EXIT_OK, "rerunning run block=pre_norm", "it was made by other code (now schedule/faulty 1.0.0 ",
               "(was 1.0.0 ", "2 to run", "2 done")
        attempts = os.listdir(os.path.join(out_dir, ".attempts"))
        assert len(attempts) == 2, f"the old folders were not kept under .attempts/: {attempts}"
        return None

    def resume_refuses_changed_code():
        plugins, so = plugin_copy("code_resume_plugins")
        spec = c.spec("code_resume", TINY.replace("schedule: {plugin: constant}", "schedule: {plugin: faulty}"),
                      f"plugin_paths: [{plugins}]\n")
        out_dir = os.path.join(c.work, "code_resume")
        code, out = c.run(["run", spec, "--out", out_dir, "--progress", "quiet", "--stop-after", "2"])
        expect(code, out, EXIT_OK)
        change(so)
        before = open(os.path.join(out_dir, "run.h5"), "rb").read()
        code, out = c.run(["run", spec, "--out", out_dir, "--progress", "quiet", "--resume"])
        expect(code, out, EXIT_USAGE, "the run was made by other code; now: schedule/faulty 1.0.0 ", "(was 1.0.0 ")
        assert open(os.path.join(out_dir, "run.h5"), "rb").read() == before, "the refused resume changed run.h5"
        # Other code and another spec (as a run of an older Ablate, whose spec lacks a newer key): the code first.
        code, out = c.run(["run", spec, "--out", out_dir, "--progress", "quiet", "--resume", "--set", "train.seed=7"])
        expect(code, out, EXIT_USAGE, "the run was made by other code (another Ablate build or changed plugins), and "
               "its spec differs from this one", "seed", "code now: schedule/faulty 1.0.0 ")
        assert open(os.path.join(out_dir, "run.h5"), "rb").read() == before, "the refused resume changed run.h5"
        return None

    def compare_warns_on_pooled_code():
        plugins, so = plugin_copy("code_compare_plugins")
        base = TINY.replace("schedule: {plugin: constant}", "schedule: {plugin: faulty}")
        dirs = []
        for seed in (1, 2):
            spec = c.spec(f"code_compare_{seed}", base, f"plugin_paths: [{plugins}]\n")
            d = os.path.join(c.work, f"code_compare_{seed}")
            code, out = c.run(["run", spec, "--out", d, "--progress", "quiet", "--set", f"train.seed={seed}"])
            expect(code, out, EXIT_OK)
            dirs.append(d)
            change(so)
        code, out = c.run(["compare"] + dirs + ["--out", os.path.join(c.work, "code_compare_report")])
        expect(code, out, EXIT_OK, "pools runs made by different code", dirs[0], dirs[1])
        return None

    c.case("code", "sweep_reruns_changed_code", sweep_reruns_changed_code)
    c.case("code", "resume_refuses_changed_code", resume_refuses_changed_code)
    c.case("code", "compare_warns_on_pooled_code", compare_warns_on_pooled_code)


# ---- what ran is said: bf16 on a backend without bf16 arithmetic is recorded as such
def precision_cases(c):
    def bf16_on_reference():
        out_dir = os.path.join(c.work, "bf16_reference")
        code, out = c.run(["run", c.spec("bf16_reference"), "--out", out_dir, "--progress", "quiet", "--set", "precision=bf16"])
        expect(code, out, EXIT_OK, "bf16 (f32 arithmetic on bf16-rounded values")
        with h5py.File(os.path.join(out_dir, "run.h5"), "r") as f:
            p = f.attrs["precision"]
            p = p.decode() if isinstance(p, bytes) else str(p)
        assert p.startswith("bf16 (f32 arithmetic"), f"run.h5 precision is {p!r}"
        return None
    c.case("spec", "bf16_on_reference_says_what_ran", bf16_on_reference)

    points = 10000 if c.long else 2000

    def large_sweep_dry_run():
        vals = ",".join(str(0.001 + i * 1e-8) for i in range(points))
        spec = c.spec("sweep_10k", TINY, "sweep:\n  grid: {train.optimizer.lr: [" + vals + "]}\n  seeds: [1]\n")
        code, out = c.run(["sweep", spec, "--dry-run", "--out", os.path.join(c.work, "sweep_10k")])
        expect(code, out, EXIT_OK, f"{points} runs")
        return None
    c.case("sweep", f"dry_run_of_{points}_points", large_sweep_dry_run)
