# What tensorboard_test.sh asks of the event files, read with TensorBoard's own EventAccumulator
# (tests/.venv) and the run file with h5py:
#   run RUN_DIR EVENTS_DIR   every scalar equals run.h5's row (same steps, float32 values), each
#                            step once; the spec and samples texts hold run.h5's texts
#   same DIR_A DIR_B         the two folders' event files hold the same scalars and texts
#   live EVENTS_DIR STEP S   within S seconds a train/loss scalar at step >= STEP can be read
#   runs LOGDIR NAME...      TensorBoard's run selector (its multiplexer) lists exactly these runs,
#                            each with its train/loss
import sys
import time

import h5py
import numpy as np
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def load(d):
    ea = EventAccumulator(d, size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    return ea


def scalars(ea):
    out = {}
    for tag in ea.Tags()["scalars"]:
        events = ea.Scalars(tag)
        steps = [e.step for e in events]
        assert len(steps) == len(set(steps)), f"{tag}: a step shown twice: {steps}"
        out[tag] = {e.step: np.float32(e.value) for e in events}
    return out


def texts(ea):
    return {tag: {e.step: e.tensor_proto.string_val[0].decode() for e in ea.Tensors(tag)} for tag in ea.Tags()["tensors"]}


def expect(tag, got, steps, values):
    want = {int(s): np.float32(v) for s, v in zip(steps, values) if np.isfinite(v)}
    assert got.get(tag, {}) == want, f"{tag}: event file {sorted(got.get(tag, {}).items())[:5]}... run.h5 {sorted(want.items())[:5]}..."
    return len(want)


def check_run(run_dir, events_dir):
    ea = load(events_dir)
    got = scalars(ea)
    n = 0
    with h5py.File(f"{run_dir}/run.h5", "r") as f:
        for split in ("train", "eval"):
            g = f[f"metrics/{split}"]
            for name in g:
                if name != "step":
                    n += expect(f"{split}/{name}", got, g["step"][:], g[name][:])
        steps = f["stats/steps"][:]
        for name in ("residual_norm", "grad_norm"):
            table = f[f"stats/{name}"]
            for c, column in enumerate(table.attrs["columns"]):
                column = column.decode() if isinstance(column, bytes) else column
                n += expect(f"stats/{name}/{column}", got, steps, table[:, c])
        def entropy(name, obj):
            nonlocal n
            if isinstance(obj, h5py.Dataset):
                stack, kind, layer = name.split("/")
                for h in range(obj.shape[1]):
                    n += expect(f"attention_entropy/{stack}.{kind}.{layer}/head_{h}", got, steps, obj[:, h])
        f["stats/attention_entropy"].visititems(entropy)
        assert n == sum(len(v) for v in got.values()), "the event file has scalars run.h5 does not"
        t = texts(ea)
        spec = f.attrs["resolved_spec_yaml"]
        spec = spec.decode() if isinstance(spec, bytes) else spec
        assert all("    " + line in t["spec"][0] for line in spec.splitlines() if line), "the spec text lacks the resolved spec"
        sample_steps = f["samples/steps"][:]
        assert len(sample_steps) > 0, "the run recorded no samples: the check needs a task with text"
        assert sorted(t["samples"]) == sorted(int(s) for s in sample_steps), (sorted(t["samples"]), sample_steps)
        for r, s in enumerate(sample_steps):
            for p in f["samples/prediction"][r]:
                p = p.decode() if isinstance(p, bytes) else p
                assert p.replace("|", "\\|") in t["samples"][int(s)], f"step {s}: prediction {p!r} not in the samples text"
    print(f"{events_dir}: {n} scalars equal run.h5's rows; spec and {len(sample_steps)} samples texts present")


def check_same(a, b):
    ea, eb = load(a), load(b)
    assert scalars(ea) == scalars(eb), "the scalars differ"
    ta, tb = texts(ea), texts(eb)
    assert ta == tb, f"the texts differ: {sorted(ta)} {sorted(tb)}"
    print(f"{a} and {b}: the same {sum(len(v) for v in scalars(ea).values())} scalars and {len(ta)} text tags")


def check_live(d, step, seconds):
    deadline = time.time() + float(seconds)
    while time.time() < deadline:
        try:
            loss = load(d).Scalars("train/loss")
            if loss and loss[-1].step >= int(step):
                print(f"{d}: read train/loss at step {loss[-1].step} while the run trains")
                return
        except Exception:  # noqa: BLE001  the folder or file not there yet (a slow start), no scalar yet
            pass
        time.sleep(0.2)
    sys.exit(f"{d}: no train/loss at step >= {step} within {seconds} s")


def check_runs(logdir, *names):
    from tensorboard.backend.event_processing.plugin_event_multiplexer import EventMultiplexer

    m = EventMultiplexer()
    m.AddRunsFromDirectory(logdir)
    m.Reload()
    assert sorted(m.Runs()) == sorted(names), (sorted(m.Runs()), sorted(names))
    for run in names:
        assert m.Tensors(run, "train/loss"), f"{run}: no train/loss"
    print(f"{logdir}: runs {', '.join(sorted(names))}")


mode, *args = sys.argv[1:]
{"run": check_run, "same": check_same, "live": check_live, "runs": check_runs}[mode](*args)
