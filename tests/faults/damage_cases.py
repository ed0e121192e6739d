# Fault corpus cases (tests/faults/): damaged run files and checkpoints, unwritable or full output
# places, and kills at random points of a run and a sweep, resumed to the uninterrupted results.
import json
import os
import shutil
import subprocess
import time

import h5py

from corpus import EXIT_FAILED, EXIT_OK, EXIT_USAGE, TINY, expect, run_file_state


# ---- damaged run files and checkpoints: reported, never fatal; the other runs go on
def run_file_cases(c, trials):
    import random
    good = os.path.join(c.work, "rf_good")
    code, out = c.run(["run", c.spec("rf_good"), "--out", good, "--progress", "quiet",
                       "--set", "train.steps=8", "--set", "log.every=2", "--set", "eval.every=4"])
    assert code == 0, "the reference run failed: " + out[-400:]
    data = open(os.path.join(good, "run.h5"), "rb").read()
    checkpoint = open(os.path.join(good, "checkpoint.bin"), "rb").read()

    def damaged_dir(name, content):
        d = os.path.join(c.work, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "run.h5"), "wb") as f:
            f.write(content)
        return d

    def reported(name, content):
        def fn():
            d = damaged_dir(name, content)
            code, out = c.run(["inspect", d])
            assert code in (0, 1), f"inspect: exit {code}: {out[-600:]}"  # 0: the damage missed what is read
            expect(code, out, code)  # no signal, no sanitizer report
            if code == 1:
                assert d in out, "inspect's error does not name the file: " + out[-400:]
            cmp = os.path.join(c.work, name + "_cmp")
            code, out = c.run(["compare", good, d, "--out", cmp])
            expect(code, out, EXIT_OK)
            with open(os.path.join(cmp, "summary.json"), encoding="utf-8") as f:  # whatever the damage quoted
                json.load(f)
            if "skipping unreadable run file" in out:
                assert "unreadable run file(s) left out" in out, "the table does not count the unreadable run: " + out[-600:]
            return None
        c.case("run_file", name, fn)

    rng = random.Random(17)
    for t in range(trials):
        b = bytearray(data)
        for _ in range(20):
            b[rng.randrange(len(b))] = rng.randrange(256)
        reported(f"flipped_20_bytes.{t}", bytes(b))
    for size in (0, 7, 512, len(data) // 2, len(data) - 1):
        reported(f"truncated_at_{size}", data[:size])
    reported("not_hdf5", b"this is not an HDF5 file\n" * 10)

    def refused_attribute():  # sound HDF5, one value the schema refuses: the error names the file
        d = damaged_dir("rf_bad_mask", data)
        with h5py.File(os.path.join(d, "run.h5"), "r+") as f:
            slot = f["attention"].attrs["slots"][0]
            f["attention"][slot.decode() if isinstance(slot, bytes) else slot].attrs["mask"] = "diagonal"
        code, out = c.run(["inspect", d])
        expect(code, out, EXIT_FAILED, "unknown attention mask 'diagonal'", d)
        return None
    c.case("run_file", "attribute_value_refused", refused_attribute)

    def foreign_hdf5():
        d = os.path.join(c.work, "rf_foreign")
        os.makedirs(d, exist_ok=True)
        with h5py.File(os.path.join(d, "run.h5"), "w") as f:
            f["x"] = [1.0, 2.0]
        code, out = c.run(["inspect", d])
        expect(code, out, EXIT_FAILED, "run.h5")
        return None
    c.case("run_file", "hdf5_from_elsewhere", foreign_hdf5)

    def run_file_is_a_directory():
        d = os.path.join(c.work, "rf_dir")
        os.makedirs(os.path.join(d, "run.h5"), exist_ok=True)
        code, out = c.run(["inspect", os.path.join(d, "run.h5")])
        expect(code, out, EXIT_USAGE, "is a directory")
        return None
    c.case("run_file", "run_h5_is_a_directory", run_file_is_a_directory)

    def nonsense(name, edit, *needles):
        def fn():
            d = damaged_dir(name, data)
            with h5py.File(os.path.join(d, "run.h5"), "r+") as f:
                edit(f)
            code, out = c.run(["inspect", d])
            expect(code, out, EXIT_OK, *needles)
            return None
        c.case("run_file", name, fn)

    def set_attr(key, value):
        def edit(f):
            del f.attrs[key]
            f.attrs[key] = value
        return edit

    def decreasing(f):
        s = f["metrics/eval/step"]
        s[...] = s[...][::-1]

    def all_nan(f):
        f["metrics/train/loss"][...] = float("nan")

    nonsense("spec_not_yaml", set_attr("resolved_spec_yaml", "{{{ not: yaml"), "warning: the resolved spec")
    nonsense("step_2p62", lambda f: f.attrs.modify("step", 2 ** 62), "warning: the run's step 4611686018427387904 is outside")
    nonsense("eval_steps_decreasing", decreasing, "warning: eval metrics: 1 of 2 stored rows are left out")
    nonsense("train_loss_all_nan", all_nan, "warning: train metric loss is NaN in all")

    def checkpoint_damaged(name, content):
        def fn():
            d = os.path.join(c.work, "ck_" + name)
            shutil.copytree(good, d)
            with h5py.File(os.path.join(d, "run.h5"), "r+") as f:  # as if stopped mid-run
                f.attrs.modify("status", f.attrs["status"].__class__(b"interrupted"))
            with open(os.path.join(d, "checkpoint.bin"), "wb") as f:
                f.write(content)
            before = open(os.path.join(d, "run.h5"), "rb").read()
            code, out = c.run(["run", c.spec("rf_good"), "--out", d, "--progress", "quiet", "--resume",
                               "--set", "train.steps=8", "--set", "log.every=2", "--set", "eval.every=4"])
            assert code in (EXIT_FAILED, EXIT_USAGE), f"exit {code}: {out[-600:]}"
            expect(code, out, code, "checkpoint", "checkpoint.bin")
            assert open(os.path.join(d, "run.h5"), "rb").read() == before, "a refused resume changed run.h5"
            return None
        c.case("checkpoint", name, fn)

    for size in (0, 10, 31, len(checkpoint) // 2, len(checkpoint) - 1):
        checkpoint_damaged(f"truncated_at_{size}", checkpoint[:size])
    b = bytearray(checkpoint)
    for _ in range(20):
        b[rng.randrange(24, len(b))] ^= 0x5A
    checkpoint_damaged("flipped_20_bytes", bytes(b))
    checkpoint_damaged("not_a_checkpoint", b"hello" * 100)


# ---- the environment: unwritable or full output places; kills at random points of run and sweep
def same_metrics(a, b):
    """None if run files a and b hold the same metrics/stats (wall-clock columns aside), else why."""
    skip = {"tokens_per_s", "elapsed_s"}
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        for group in ("metrics/train", "metrics/eval"):
            for name in fa[group]:
                if name in skip:
                    continue
                x, y = fa[group][name][()], fb[group][name][()]
                if x.shape != y.shape or not (x == y).all():
                    return f"{group}/{name} differs: {x[:6]} vs {y[:6]}"
    return None


def environment_cases(c, trials):
    import random
    import signal

    def out_is_a_file():
        f = os.path.join(c.work, "out_is_a_file")
        open(f, "w").close()
        code, out = c.run(["run", c.spec("env_file"), "--out", f, "--progress", "quiet"])
        expect(code, out, EXIT_USAGE, "cannot create the run directory", f)
        return None
    c.case("environment", "output_path_is_a_file", out_is_a_file)

    def mounted(name, options):
        d = os.path.join(c.work, name)
        os.makedirs(d, exist_ok=True)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", d], capture_output=True)
        return d if p.returncode == 0 else None

    def read_only_output():
        d = mounted("ro_mount", "ro,size=1m")
        if d is None:
            return None  # not permitted here (not root): nothing to check
        try:
            code, out = c.run(["run", c.spec("env_ro"), "--out", os.path.join(d, "run"), "--progress", "quiet"])
            expect(code, out, EXIT_USAGE, "cannot create the run directory", "Read-only file system")
        finally:
            subprocess.run(["umount", d])
        return None
    c.case("environment", "read_only_output", read_only_output)

    def full_disk():
        d = mounted("full_mount", "size=160k")
        if d is None:
            return None
        try:
            run = os.path.join(d, "run")
            code, out = c.run(["run", c.spec("env_full"), "--out", run, "--progress", "quiet",
                               "--set", "train.steps=40", "--set", "log.every=1", "--set", "eval.every=10"])
            assert code in (EXIT_FAILED,), f"a full disk: exit {code}: {out[-600:]}"
            expect(code, out, code, "No space left on device")
            if os.path.exists(os.path.join(run, "run.h5")):
                state = run_file_state(run)  # h5py can read it, and it says what happened
                assert state is not None and state[0] in ("failed", "running"), f"run.h5 after a full disk: {state}"
        finally:
            subprocess.run(["umount", d])
        return None
    c.case("environment", "full_disk", full_disk)

    # Kills: SIGKILL (a lost machine) or SIGTERM (Ctrl-C) at a random moment, then resume until
    # done: the results must equal the uninterrupted run's, nothing lost, nothing repeated. On the
    # oneDNN backend, what researchers train on (and 3x faster than the reference under ASan).
    long_run = ["--set", "train.steps=600", "--set", "log.every=10", "--set", "eval.every=100", "--set", "backend=onednn"]
    ref = os.path.join(c.work, "kill_ref")
    start = time.monotonic()
    code, out = c.run(["run", c.spec("kill"), "--out", ref, "--progress", "quiet"] + long_run)
    duration = time.monotonic() - start
    rng = random.Random(5)
    for t in range(trials):
        sig = (signal.SIGKILL, signal.SIGTERM)[t % 2]

        def killed_run(t=t, sig=sig):
            assert code == 0, "the reference run failed: " + out[-400:]
            d = os.path.join(c.work, f"kill_run_{t}")
            args = ["run", c.spec("kill"), "--out", d, "--progress", "quiet"] + long_run
            rc, first = c.killed(args, sig, rng.uniform(0.05, 0.9) * duration)
            # A SIGTERM after the work is done (while the process exits) ends it the default way.
            finished = rc == -signal.SIGTERM and (run_file_state(d) or ("",))[0] == "completed"
            assert rc in (0, 130, -signal.SIGKILL) or finished, f"{sig.name}: exit {rc}: {first[-400:]}"
            for _ in range(3):  # resume until completed (a kill before the first checkpoint restarts)
                state = run_file_state(d, swmr=True)
                if state and state[0] == "completed":
                    break
                started = state is not None or os.path.exists(os.path.join(d, "checkpoint.bin"))
                r, o = c.run(["run", c.spec("kill"), "--out", d, "--progress", "quiet"] + (["--resume"] if started else []) +
                             long_run)
                expect(r, o, EXIT_OK)
            assert run_file_state(d)[0] == "completed", f"not completed after resuming: {run_file_state(d)}"  # plain h5py
            return same_metrics(os.path.join(ref, "run.h5"), os.path.join(d, "run.h5"))
        c.case("kill", f"run_{sig.name}_{t}", killed_run)

    sweep_spec = c.spec("kill_sweep", TINY.replace("name: fault_tiny", "name: kill_sweep"),
                        "sweep:\n  grid: {model.block: [pre_norm, post_norm]}\n  seeds: [1]\n")
    sweep_ref = os.path.join(c.work, "kill_sweep_ref")
    sweep_args = ["--progress", "lines", "--no-compare"] + long_run
    scode, sout = c.run(["sweep", sweep_spec, "--out", sweep_ref] + sweep_args)
    same = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "framework", "sweep", "same_results.py")
    for t in range(trials):
        sig = (signal.SIGKILL, signal.SIGTERM)[t % 2]

        def killed_sweep(t=t, sig=sig):
            assert scode == 0, "the reference sweep failed: " + sout[-400:]
            d = os.path.join(c.work, f"kill_sweep_{t}")
            args = ["sweep", sweep_spec, "--out", d] + sweep_args
            rc, first = c.killed(args, sig, rng.uniform(0.05, 1.8) * duration, group=sig == signal.SIGKILL)
            finished = rc == -signal.SIGTERM and "2 done" in first  # as for a run: after the sweep's end
            assert rc in (0, 130, -signal.SIGKILL) or finished, f"{sig.name}: exit {rc}: {first[-400:]}"
            r, o = c.run(["sweep", sweep_spec, "--out", d] + sweep_args)
            expect(r, o, EXIT_OK, "2 done")
            check = subprocess.run(["/usr/bin/python3", same, sweep_ref, d], capture_output=True, text=True)
            assert check.returncode == 0, "results differ from the uninterrupted sweep: " + check.stdout + check.stderr
            return None
        c.case("kill", f"sweep_{sig.name}_{t}", killed_sweep)
