#!/usr/bin/python3
# The fault corpus (issue "Trust"): bad inputs and faulty plugins run through the real `ablate`
# executable. Each case asserts the documented exit code, a message naming the problem and where,
# no death by signal, no sanitizer report, and run files that h5py can read afterwards. Prints
# one summary line: cases, passed, by category. Debian's python3 (h5py) runs it.
# Usage: fault_corpus.py ABLATE FIXTURE_DIR [--long] [-k SUBSTRING]
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
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
        p = subprocess.run([self.ablate] + args, capture_output=True, text=True, env=self.env(), timeout=300,
                           stdin=subprocess.DEVNULL)  # a command that reads stdin (translate, generate) sees it empty
        return p.returncode, p.stdout + p.stderr

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
        return p.returncode, out.decode(errors="replace")

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
        print(f"fault corpus: {len(self.results)} cases, {passed} passed ({by}); {figures}")
        return passed == len(self.results)


def expect(code, out, want_code, *needles):
    assert code >= 0 and code < 128, f"died by a signal (exit {code}): {out[-600:]}"
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


# ---- plugins that throw, from every call, each way
def plugin_fault_cases(c):
    ffn_dir = os.path.join(c.fixtures, "fixture_faulty_ffn")
    sched_dir = os.path.join(c.fixtures, "fixture_faulty_schedule")
    calls = [("ffn", "create", None), ("ffn", "build", None), ("ffn", "forward", 1), ("ffn", "backward", 1),
             ("schedule", "learning_rate", 3)]
    for kind, at, step in calls:
        for throws in ("ablate", "std", "int"):
            def fn(kind=kind, at=at, step=step, throws=throws):
                name = f"{kind}_{at}_{throws}"
                if kind == "ffn":
                    sets = ["model.ffn=faulty", f"model.ffn.at={at}", f"model.ffn.throws={throws}"]
                    plugin_dir, plugin = ffn_dir, "ffn/faulty 1.0.0 ("
                else:
                    sets = ["train.schedule=faulty", f"train.schedule.at={at}", f"train.schedule.throws={throws}"]
                    plugin_dir, plugin = sched_dir, "schedule/faulty 1.0.0 ("
                out_dir = os.path.join(c.work, name)
                args = ["run", c.spec(name), "--out", out_dir, "--progress", "quiet", "-p", plugin_dir]
                for s in sets:
                    args += ["--set", s]
                code, out = c.run(args)
                what = {"ablate": "fixture fault in", "std": "plugin-defined exception",
                        "int": "non-standard exception of type int"}[throws]
                needles = [plugin, f"failed in {at}", what]
                if step is not None:
                    needles.append(f"at step {step} (training)")
                if at == "create" and throws == "ablate":  # the documented refusal: a spec error at the key
                    needles = ["model.ffn: ffn plugin 'faulty' refuses its options: " + what]
                expect(code, out, EXIT_USAGE if at == "create" and throws == "ablate" else EXIT_PLUGIN, *needles)
                state = run_file_state(out_dir)
                if step is None:  # failed before training: no run directory is left behind
                    assert state is None, f"a run file was written for a run that never started: {state}"
                else:
                    assert state is not None, "no run.h5 after a failure in a run"
                    assert state[0] == "failed", f"run.h5 says {state[0]}, expected failed"
                    assert plugin in state[1] and what in state[1], f"run.h5 reason lacks the fault: {state[1]!r}"
                return None
            c.case("plugin_fault", f"{kind}.{at}.{throws}", fn)


# ---- command lines and plugin directories that make no sense
def cli_cases(c):
    def case(name, args, want, *needles, setup=None):
        def fn():
            if setup:
                setup()
            code, out = c.run(args)
            expect(code, out, want, *needles)
            return None
        c.case("cli", name, fn)

    spec = c.spec("cli_tiny")
    for value in ("-1", "1e300", "nan"):
        case("inspect_interval_" + value, ["inspect", spec, "--follow", "--interval", value], EXIT_USAGE,
             "--interval", "out of range")
    case("sweep_dry_run_and_status", ["sweep", spec, "--dry-run", "--status"], EXIT_USAGE, "--dry-run and --status")
    case("run_empty_path", ["run", ""], EXIT_USAGE, "the spec file path is empty")
    bad_dir = os.path.join(c.work, "bad_plugins")

    def make_bad_plugins():
        os.makedirs(bad_dir, exist_ok=True)
        for name, target in (("loop.so", "loop.so"), ("zero.so", "/dev/zero")):
            if not os.path.lexists(os.path.join(bad_dir, name)):
                os.symlink(target, os.path.join(bad_dir, name))
    case("plugins_symlink_loop_and_device", ["plugins", "-p", bad_dir], EXIT_PLUGIN,
         "loop.so: cannot be followed", "zero.so: is not a regular file", setup=make_bad_plugins)
    sweep_dir = os.path.join(c.work, "damaged_manifest")

    def make_damaged_manifest():  # one finished run, and a sweep.yaml that is not a manifest
        code, out = c.run(["run", spec, "--out", os.path.join(sweep_dir, "run"), "--progress", "quiet"])
        assert code == 0, out[-600:]
        with open(os.path.join(sweep_dir, "sweep.yaml"), "w") as f:
            f.write("format: [not, a, manifest\n")
    case("compare_damaged_manifest", ["compare", sweep_dir, "--out", os.path.join(c.work, "damaged_manifest_cmp")], EXIT_OK,
         "warning:", "sweep.yaml", "the first arm is the baseline", setup=make_damaged_manifest)
    case("compare_bad_summary", ["compare", sweep_dir, "--summary", "steps_to:soon"], EXIT_USAGE,
         "--summary 'steps_to:soon'", "steps_to:TARGET needs a number")
    ffn_dir = os.path.join(c.fixtures, "fixture_faulty_ffn")
    case("plugin_reads_undeclared_option", ["validate", spec, "-p", ffn_dir, "--set", "model.ffn=faulty",
                                            "--set", "model.ffn.at=undeclared"], EXIT_PLUGIN,
         "plugin ffn/faulty 1.0.0 (", "failed in create", "reads option 'never_declared', which it never declared")


# ---- using a trained run (ablate eval / export / generate / translate): refused with the reason,
# nothing written
def trained_run_cases(c):
    run_dir = os.path.join(c.work, "trained_copy")

    def train():
        if not os.path.exists(os.path.join(run_dir, "checkpoint.bin")):
            code, out = c.run(["run", c.spec("trained_copy"), "--out", run_dir, "--progress", "quiet"])
            assert code == 0, out[-600:]

    def case(name, args, *needles, absent=None, setup=None):
        def fn():
            train()
            if setup:
                setup()
            code, out = c.run(args)
            expect(code, out, EXIT_USAGE, *needles)
            assert absent is None or not os.path.exists(absent), f"{absent} was written"
            return None
        c.case("trained_run", name, fn)

    empty = os.path.join(c.work, "not_a_run")
    os.makedirs(empty, exist_ok=True)
    case("eval_no_checkpoint", ["eval", empty], "no checkpoint in", "not_a_run")
    case("eval_beam_zero", ["eval", run_dir, "--split", "eval", "--beam", "0"], "--beam must be >= 1",
         absent=os.path.join(run_dir, "evals"))
    case("eval_sets_a_model_key", ["eval", run_dir, "--set", "model.d_model=64"], "only execution keys",
         absent=os.path.join(run_dir, "evals"))
    case("eval_missing_split", ["eval", run_dir, "--split", "test"], "no examples in its test split",
         absent=os.path.join(run_dir, "evals"))
    case("eval_data_missing_file", ["eval", run_dir, "--data", os.path.join(c.work, "absent.tsv")], "--data",
         "no such file", absent=os.path.join(run_dir, "evals"))
    case("eval_data_task_reads_no_files", ["eval", run_dir, "--data", c.spec("any_file")], "reads no data files",
         absent=os.path.join(run_dir, "evals"))
    weights_only = os.path.join(c.work, "weights_only")

    def copy_checkpoint():
        os.makedirs(weights_only, exist_ok=True)
        shutil.copy(os.path.join(run_dir, "checkpoint.bin"), weights_only)
    case("eval_without_run_file", ["eval", weights_only, "--split", "eval"], "run.h5 is missing",
         absent=os.path.join(weights_only, "evals"), setup=copy_checkpoint)
    taken = os.path.join(c.work, "taken.safetensors")
    with open(taken, "w") as f:
        f.write("mine")
    case("export_over_a_file", ["export", run_dir, "--out", taken], "already exists")
    case("generate_with_a_seq2seq_model", ["generate", run_dir, "--prompt", "3 4"], "decoder-only language model")
    case("translate_a_task_without_text", ["translate", run_dir], "has no text")
    case("translate_beam_zero", ["translate", run_dir, "--beam", "0"], "--beam must be >= 1")
    case("translate_max_len_negative", ["translate", run_dir, "--max-len", "-3"], "--max-len must be >= 0")


# ---- data files a task cannot use: a spec error at `task` naming the file (and line), never a crash
def data_file_cases(c):
    def refused(name, content, plugin, *needles, extra=""):
        def fn():
            path = os.path.join(c.work, name + ".data")
            with open(path, "wb") as f:
                f.write(content)
            task = {"classification": f"{{plugin: classification, file: {path}{extra}}}",
                    "translation": f"{{plugin: translation, file: {path}{extra}}}",
                    "language_model": f"{{plugin: language_model, file: {path}{extra}}}"}[plugin]
            arch = "encoder" if plugin == "classification" else "decoder" if plugin == "language_model" else "encoder_decoder"
            text = TINY.replace("task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
                                "task: " + task).replace("arch: encoder_decoder", "arch: " + arch)
            code, out = c.run(["validate", c.spec(name, text)])
            expect(code, out, EXIT_USAGE, f"task: task plugin '{plugin}' refuses its options", path, *needles)
            return None
        c.case("data_file", name, fn)

    good = "".join(f"text number {i}\t{'pos' if i % 2 else 'neg'}\n" for i in range(30)).encode()
    refused("classification_empty", b"", "classification")
    refused("classification_missing_column", b"just text without a label\n" * 5, "classification", ":1:")
    refused("classification_invalid_utf8", good + b"bad \xff\xfe text\tpos\n", "classification", ":31:", "UTF-8")
    refused("classification_nul_byte", good + b"nul \x00 here\tneg\n", "classification", ":31: a NUL byte")
    refused("classification_one_class", "".join(f"text {i}\tpos\n" for i in range(30)).encode(), "classification")
    refused("translation_1mb_line", b"a\tb\n" * 10 + b"x" * (1 << 20) + b"\ty\n", "translation", ":11: a line of 1048578 bytes")
    refused("language_model_empty", b"", "language_model")


# ---- plugin files that are not plugins: reported naming the file (exit 3), never a crash
def plugin_file_cases(c):
    def refused(name, content, *needles):
        def fn():
            d = os.path.join(c.work, "plugin_files_" + name)
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, name + ".so"), "wb") as f:
                f.write(content)
            code, out = c.run(["plugins", "-p", d])
            expect(code, out, EXIT_PLUGIN, os.path.join(d, name + ".so"), *needles)
            return None
        c.case("plugin_file", name, fn)

    refused("empty", b"")
    refused("garbage", bytes(range(256)) * 40)
    with open(os.path.join(c.fixtures, "fixture_good", "fixture_good.so"), "rb") as f:
        good = f.read()
    refused("truncated", good[: len(good) // 2])


# ---- what can be known before training is a spec error (exit 2) of `validate` and of `run`,
# naming the keys, with no run directory left behind
def spec_cases(c):
    def refused(name, sets, *needles, text=TINY, run=True):
        def fn():
            spec = c.spec(name, text)
            args = []
            for s in sets:
                args += ["--set", s]
            code, out = c.run(["validate", spec] + args)
            expect(code, out, EXIT_USAGE, *needles)
            if not run:  # `ablate run` trains the base configuration only
                return None
            out_dir = os.path.join(c.work, name)
            code, out = c.run(["run", spec, "--out", out_dir, "--progress", "quiet"] + args)
            expect(code, out, EXIT_USAGE, *needles)
            assert not os.path.exists(out_dir), "`ablate run` left a run directory for a spec error"
            return None
        c.case("spec", name, fn)

    refused("learned_positions_shorter_than_task", ["model.positional_encoding=learned",
                                                   "model.positional_encoding.max_len=4"],
            "model.positional_encoding: positional_encoding plugin 'learned' represents 4 positions",
            "(task: copy) has sequences of 5", "expected a limit of at least 5")
    refused("kv_heads_not_dividing_heads", ["model.attention.kv_heads=3"],
            "model.attention: attention plugin 'mha' refuses the model's sizes", "kv_heads 3 must divide model.heads 2")
    refused("vocab_size_0", ["task.vocab_size=0"], "task: task plugin 'copy' refuses its options", "vocab_size must be > 3")
    for name, value in (("d_model_2p31", "2147483648"), ("d_model_2p63", "9223372036854775807")):
        refused(name, ["model.heads=1", "model.d_model=" + value], "model: training this model needs about",
                "of memory; expected a smaller model.d_model")
    refused("vocab_size_2p63", ["task.vocab_size=9223372036854775807"], "model: training this model needs about")
    refused("eval_metrics_empty", ["eval.metrics=[]"], "eval.metrics: [] is empty; expected at least one of")
    for bad in (".", ".."):
        refused("name_" + {".": "dot", "..": "dotdot"}[bad], ["name=" + bad], "name: '" + bad + "' is not a valid name")
    refused("early_stopping_on_unevaluated_metric", ["train.early_stopping.metric=bleu"],
            "train.early_stopping.metric: 'bleu' is not evaluated for this task")
    refused("plugin_paths_missing", ["plugin_paths=[no_such_dir]"], "plugin_paths[0]: '", "does not exist")
    refused("grid_typo_in_plugin_name", [], "unknown ffn plugin 'GELU'", "did you mean 'gelu'",
            text=TINY + "sweep:\n  grid: {model.ffn: [relu, GELU]}\n  seeds: [1]\n", run=False)
    tsv = os.path.join(c.work, "tiny.tsv")
    with open(tsv, "w") as f:
        for i in range(40):
            f.write(f"word{i} other{i} a\tpalabra{i} otra{i} b\n")
    refused("translation_vocabulary_all_unk", [], "task: task plugin 'translation' refuses its options", "min_freq 2 leaves",
            "lower min_freq",
            text=TINY.replace("task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
                              "task: {plugin: translation, file: " + tsv + ", min_freq: 2}"))
    refused("eval_lengths_of_a_text_task", ["eval.lengths=[8, 16]"],
            "eval.lengths: task plugin 'translation' makes no eval examples of length 8",
            text=TINY.replace("task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
                              "task: {plugin: translation, file: " + tsv + "}"))
    refused("eval_lengths_zero", ["eval.lengths=[0]"], "eval.lengths[0]: '0' is not a length; expected an integer >= 1")
    refused("warmup_not_below_steps", ["train.schedule=cosine", "train.schedule.warmup=6"],
            "train.schedule: schedule plugin 'cosine' refuses its options", "warmup 6",
            "total_steps 6 is train.steps")


# ---- spec files that are not specs: refused before (or instead of) reading them whole
def spec_file_cases(c):
    def refused(name, content, *needles, path=None):
        def fn():
            p = path if path is not None else os.path.join(c.work, name + ".yaml")
            if content is not None:
                with open(p, "wb") as f:
                    f.write(content)
            code, out = c.run(["validate", p])
            expect(code, out, EXIT_USAGE, *needles)
            return None
        c.case("spec_file", name, fn)

    refused("two_documents", TINY.encode() + b"---\nname: other\n", "holds 2 YAML documents")
    refused("invalid_utf8", TINY.encode().replace(b"name: fault_tiny", b"name: fault\xff"), ":1:12: invalid UTF-8")
    os.makedirs(os.path.join(c.work, "a_dir"), exist_ok=True)
    refused("extends_directory", b"extends: a_dir\n" + TINY.encode(), "extends: '", "is a directory")
    refused("extends_urandom", b"extends: /dev/urandom\n" + TINY.encode(), "'/dev/urandom' is not a regular file")
    refused("spec_is_dev_zero", None, "'/dev/zero' is not a regular file", path="/dev/zero")
    refused("too_large", TINY.encode() + b"# " + b"x" * (1 << 20) + b"\n", "bytes; expected at most 1048576")
    refused("empty_path", None, "the spec file path is empty", path="")
    refused("missing", None, "it does not exist", path=os.path.join(c.work, "no_such.yaml"))


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
            code, out = c.run(["compare", good, d, "--out", os.path.join(c.work, name + "_cmp")])
            expect(code, out, EXIT_OK)
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
    # done: the results must equal the uninterrupted run's, nothing lost, nothing repeated.
    long_run = ["--set", "train.steps=600", "--set", "log.every=10", "--set", "eval.every=100"]
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
            assert rc in (0, 130, -signal.SIGKILL), f"{sig.name}: exit {rc}: {first[-400:]}"
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
            assert rc in (0, 130, -signal.SIGKILL), f"{sig.name}: exit {rc}: {first[-400:]}"
            r, o = c.run(["sweep", sweep_spec, "--out", d] + sweep_args)
            expect(r, o, EXIT_OK, "2 done")
            check = subprocess.run(["/usr/bin/python3", same, sweep_ref, d], capture_output=True, text=True)
            assert check.returncode == 0, "results differ from the uninterrupted sweep: " + check.stdout + check.stderr
            return None
        c.case("kill", f"sweep_{sig.name}_{t}", killed_sweep)


# ---- trust, round 3: a trained run's files are never mislabelled or half-written, every option
# refuses what it cannot use, and what is refused says why
def trust3_cases(c):
    runs = {seed: os.path.join(c.work, f"t3_seed{seed}") for seed in (1, 2)}

    def trained():
        for seed, d in runs.items():
            if not os.path.exists(os.path.join(d, "checkpoint.bin")):
                code, out = c.run(["run", c.spec("t3"), "--out", d, "--progress", "quiet", "--set", f"train.seed={seed}"])
                assert code == 0, out[-600:]

    def run_id(d):
        with h5py.File(os.path.join(d, "run.h5"), "r") as f:
            v = f.attrs["run_id"]
            return v.decode() if isinstance(v, bytes) else str(v)

    def eval_names(d):
        with h5py.File(os.path.join(d, "run.h5"), "r") as f:
            n = f["evals/checkpoint_step"].shape[0]
            return [x.decode().rstrip("\0") if isinstance(x, bytes) else str(x) for x in f["evals/name"][:n]]

    def mixed(name, checkpoint_of, run_file_of):
        """A run folder holding one run's checkpoint.bin and another's run.h5."""
        trained()
        d = os.path.join(c.work, name)
        if not os.path.exists(d):
            os.makedirs(d)
            shutil.copy(os.path.join(runs[checkpoint_of], "checkpoint.bin"), d)
            shutil.copy(os.path.join(runs[run_file_of], "run.h5"), d)
        return d

    # mislabelled: eval, export, translate and generate refuse a folder of two runs, naming both
    for name, ck, rf in (("checkpoint_of_seed2", 2, 1), ("run_file_of_seed2", 1, 2)):
        for command in ("eval", "export", "translate", "generate"):
            def fn(name=name, ck=ck, rf=rf, command=command):
                d = mixed("t3_" + name, ck, rf)
                args = {"eval": ["eval", d, "--split", "eval"], "export": ["export", d],
                        "translate": ["translate", d], "generate": ["generate", d, "--prompt", "3 4"]}[command]
                code, out = c.run(args)
                expect(code, out, EXIT_USAGE, "holds two runs", run_id(runs[ck]), run_id(runs[rf]))
                assert not os.path.exists(os.path.join(d, "evals")), "an evaluation was written"
                assert not os.path.exists(os.path.join(d, "model.safetensors")), "an export was written"
                return None
            c.case("mislabel", f"{command}_{name}", fn)

    def eval_of_runs_goes_on():  # a folder of runs: the bad one listed, the good one evaluated
        trained()
        top = os.path.join(c.work, "t3_runs")
        if not os.path.exists(top):
            os.makedirs(top)
            shutil.copytree(runs[1], os.path.join(top, "good"))
            os.makedirs(os.path.join(top, "bad"))
            shutil.copy(os.path.join(runs[2], "checkpoint.bin"), os.path.join(top, "bad"))
            shutil.copy(os.path.join(runs[1], "run.h5"), os.path.join(top, "bad"))
        code, out = c.run(["eval", top, "--split", "eval"])
        expect(code, out, EXIT_FAILED, "1 run(s) evaluated", "could not be evaluated", "bad: ", "holds two runs")
        assert "eval" in eval_names(os.path.join(top, "good")), "the good run was not evaluated"
        return None
    c.case("mislabel", "eval_of_runs_goes_on_past_a_bad_one", eval_of_runs_goes_on)

    # a run pins its data: a corpus edited after training is refused, naming it, never re-read as its own
    def edited_corpus(command):
        def fn():
            corpus = os.path.join(c.work, f"t3_corpus_{command}.tsv")
            shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "experiments", "data",
                                     "tutorial_eng_cmn.tsv"), corpus)
            spec = c.spec(f"t3_pinned_{command}", TINY.replace(
                "task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
                "task: {plugin: translation, file: " + corpus + ", target_tokens: char}"))
            d = os.path.join(c.work, f"t3_pinned_{command}")
            shutil.rmtree(d, ignore_errors=True)
            args = ["run", spec, "--out", d, "--progress", "quiet"]
            code, out = c.run(args + (["--stop-after", "2"] if command == "resume" else []))
            assert code == 0, out[-600:]
            with open(corpus) as f:
                text = f.read()
            with open(corpus, "w") as f:
                f.write(text.replace("student", "zebra"))  # ids change meaning, as sed -i would
            cmd = {"eval": ["eval", d, "--split", "eval"], "export": ["export", d],
                   "translate": ["translate", d, "--input", corpus], "resume": args + ["--resume"]}[command]
            code, out = c.run(cmd)
            expect(code, out, EXIT_USAGE, "task.file " + corpus + " changed since the run read it", "vocabularies")
            assert not os.path.exists(os.path.join(d, "evals")), "an evaluation was written"
            assert not os.path.exists(os.path.join(d, "model.safetensors")), "an export was written"
            return None
        c.case("mislabel", f"{command}_after_the_corpus_was_edited", fn)

    for command in ("eval", "export", "translate", "resume"):
        edited_corpus(command)

    # half-written: an evaluation is on disk with its record or not at all
    def can_trace():
        """Whether strace can trace here (installed by scripts/setup.sh; a container without ptrace
        refuses it, like the mount cases' missing privilege): the kill cases say so and check nothing."""
        assert shutil.which("strace"), "strace is missing (scripts/setup.sh installs it)"
        ok = subprocess.run(["strace", "-qq", "-o", "/dev/null", "true"], capture_output=True).returncode == 0
        if not ok:
            print("note: strace cannot trace here (no ptrace): the kill-at-a-system-call cases check nothing")
        return ok

    def strace(args, syscall, when):
        """`ablate ARGS` killed by SIGKILL on entering its `when`-th `syscall` (strace's fault injection)."""
        p = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", f"inject={syscall}:signal=SIGKILL:when={when}",
                            c.ablate] + args, capture_output=True, text=True, env=c.env(), timeout=300,
                           stdin=subprocess.DEVNULL)
        return p.returncode, p.stdout + p.stderr

    def copy_of(seed, name):
        trained()
        d = os.path.join(c.work, name)
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(runs[seed], d)
        return d

    def eval_killed_before_its_record():
        if not can_trace():
            return None
        d = copy_of(1, "t3_eval_killed")
        code, out = strace(["eval", d, "--split", "eval"], "rename", 2)  # predictions in place, scores.json not
        assert code != 0, f"the eval was not killed (exit {code}): {out[-400:]}"
        assert os.path.exists(os.path.join(d, "evals", "eval", "predictions.tsv")), "the kill came at another moment"
        assert "eval" not in eval_names(d), "a record without its files"
        code, out = c.run(["eval", d, "--split", "eval"])  # the leftover is replaced, not "already holds"
        expect(code, out, EXIT_OK, "does not record it")
        assert eval_names(d).count("eval") == 1, f"records: {eval_names(d)}"
        return None
    c.case("half_written", "eval_killed_before_its_record_is_redone", eval_killed_before_its_record)

    def eval_files_without_record():  # scores.json and predictions in place, the record never written
        done = copy_of(1, "t3_eval_done")
        code, out = c.run(["eval", done, "--split", "eval"])
        expect(code, out, EXIT_OK)
        d = copy_of(1, "t3_eval_unrecorded")
        shutil.copytree(os.path.join(done, "evals"), os.path.join(d, "evals"))
        code, out = c.run(["eval", d, "--split", "eval"])
        expect(code, out, EXIT_OK, "does not record it")
        assert eval_names(d) == ["eval"], f"records: {eval_names(d)}"
        code, out = c.run(["eval", d, "--split", "eval"])  # now recorded: never written over
        expect(code, out, EXIT_USAGE, "records an evaluation named 'eval' already")
        return None
    c.case("half_written", "eval_files_without_record_are_replaced", eval_files_without_record)

    def eval_out_elsewhere_is_never_replaced():  # another run's evaluation in --out is not a leftover
        done = copy_of(1, "t3_eval_out_a")
        other = os.path.join(c.work, "t3_shared_eval")
        shutil.rmtree(other, ignore_errors=True)
        code, out = c.run(["eval", done, "--split", "eval", "--out", other])
        expect(code, out, EXIT_OK)
        d = copy_of(2, "t3_eval_out_b")
        code, out = c.run(["eval", d, "--split", "eval", "--out", other])
        expect(code, out, EXIT_USAGE, "already holds an evaluation")
        return None
    c.case("half_written", "eval_out_of_another_run_is_kept", eval_out_elsewhere_is_never_replaced)

    def plot_killed_leaves_no_partial_figure():
        if not can_trace():
            return None
        d = copy_of(1, "t3_plot")
        figures = os.path.join(c.work, "t3_plot_figures")
        shutil.rmtree(figures, ignore_errors=True)
        code, out = strace(["plot", d, "--out", figures], "rename", 2)
        assert code != 0, f"the plot was not killed (exit {code}): {out[-400:]}"
        names = os.listdir(figures) if os.path.isdir(figures) else []
        pngs = [f for f in names if f.endswith(".png")]
        assert any(".png.tmp." in f for f in names), f"the kill did not come while a figure was written: {names}"
        assert len(pngs) <= 1, f"more figures than were finished before the kill: {names}"
        for f in pngs:
            with open(os.path.join(figures, f), "rb") as fh:
                data = fh.read()
            assert data.startswith(b"\x89PNG") and data.endswith(b"IEND\xaeB`\x82"), f"{f} is a truncated PNG"
        return None
    c.case("half_written", "plot_killed_leaves_no_partial_figure", plot_killed_leaves_no_partial_figure)

    def compare_killed_is_marked_incomplete():
        if not can_trace():
            return None
        trained()
        top = os.path.join(c.work, "t3_compare_runs")
        if not os.path.exists(top):
            os.makedirs(top)
            for seed, d in runs.items():
                shutil.copytree(d, os.path.join(top, f"seed{seed}"))
        out_dir = os.path.join(c.work, "t3_compare_out")
        shutil.rmtree(out_dir, ignore_errors=True)
        code, out = c.run(["compare", top, "--out", out_dir])
        expect(code, out, EXIT_OK)
        assert not os.path.exists(os.path.join(out_dir, "INCOMPLETE.txt")), "a whole set is marked incomplete"
        code, out = strace(["compare", top, "--out", out_dir, "--metric", "loss"], "rename", 3)
        assert code != 0, f"the comparison was not killed (exit {code}): {out[-400:]}"
        assert os.path.exists(os.path.join(out_dir, "INCOMPLETE.txt")), "a half-written set is not marked"
        code, out = c.run(["compare", top, "--out", out_dir])
        expect(code, out, EXIT_OK)
        assert not os.path.exists(os.path.join(out_dir, "INCOMPLETE.txt")), "the marker outlived a whole set"
        return None
    c.case("half_written", "compare_killed_is_marked_incomplete", compare_killed_is_marked_incomplete)

    # every option refuses what it cannot use (exit 2, naming it, before any work)
    def refused(name, args_of, *needles, want=EXIT_USAGE):
        def fn():
            trained()
            code, out = c.run(args_of())
            expect(code, out, want, *needles)
            return None
        c.case("option", name, fn)

    for value in ("nan", "inf", "-inf"):
        refused(f"eval_length_penalty_{value}", lambda v=value: ["eval", runs[1], "--split", "eval", "--beam", "2",
                                                                 "--length-penalty", v], "--length-penalty must be a finite")
        refused(f"translate_length_penalty_{value}", lambda v=value: ["translate", runs[1], "--length-penalty", v],
                "--length-penalty must be a finite")
    refused("eval_beam_1e9", lambda: ["eval", runs[1], "--split", "eval", "--beam", "1000000000"], "--beam must be >= 1 and <= 1024")
    refused("generate_seed_negative", lambda: ["generate", runs[1], "--prompt", "a", "--seed", "-1"], "--seed must be >= 0")
    refused("compare_baseline_empty", lambda: ["compare", runs[1], "--baseline", ""], "--baseline is given an empty value")
    refused("plugins_kind_empty", lambda: ["plugins", "--kind", ""], "--kind is given an empty value")
    refused("export_out_empty", lambda: ["export", runs[1], "--out", ""], "--out is given an empty value")
    refused("eval_data_and_split", lambda: ["eval", runs[1], "--data", c.spec("t3_any"), "--split", "eval"],
            "--data and --split eval name two things")
    refused("validate_softcap_1e308", lambda: ["validate", c.spec("t3"), "--set", "model.attention.logit_softcap=1e308"],
            "model.attention", "within f32's range")

    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "experiments", "data")
    text_runs = {
        "translate": ("t3_mt", TINY.replace(
            "task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
            "task: {plugin: translation, file: " + os.path.join(data, "tutorial_eng_cmn.tsv") + ", target_tokens: char}")),
        "generate": ("t3_lm", TINY.replace(
            "task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
            "task: {plugin: language_model, file: " + os.path.join(data, "keyword_sentiment.tsv") +
            ", tokens: char, context: 32}").replace("arch: encoder_decoder", "arch: decoder"))}

    def text_run(kind):  # a run with text and sinusoidal positions (no position limit of their own)
        name, text = text_runs[kind]
        d = os.path.join(c.work, name)
        if not os.path.exists(os.path.join(d, "checkpoint.bin")):
            code, out = c.run(["run", c.spec(name, text), "--out", d, "--progress", "quiet"])
            assert code == 0, out[-600:]
        return d

    def decoding_too_long(name, kind, args_of, *needles):
        def fn():
            d = text_run(kind)
            start = time.monotonic()
            code, out = c.run(args_of(d))
            expect(code, out, EXIT_USAGE, *needles)
            assert time.monotonic() - start < 30, f"took {time.monotonic() - start:.0f} s"
            return None
        c.case("option", name, fn)

    line = os.path.join(c.work, "t3_long_line.txt")
    with open(line, "w") as f:
        f.write("the cat " * 131072 + "\n")  # a 1 MB line
    decoding_too_long("translate_1mb_line", "translate", lambda d: ["translate", d, "--input", line],
                      "line 1 has", "sets no limit", "of this machine's memory")
    decoding_too_long("generate_max_tokens_1e9", "generate", lambda d: ["generate", d, "--prompt", "go", "--max-tokens",
                                                                        "1000000000"], "--max-tokens", "sets no limit")
    decoding_too_long("generate_1mb_prompt", "generate", lambda d: ["generate", d, "--input", line],
                      "prompt 1 has", "sets no limit")

    def sweep_baseline_of_no_arm():
        spec = c.spec("t3_sweep", TINY.replace("name: fault_tiny", "name: t3_sweep"),
                      "sweep:\n  grid: {model.block: [pre_norm, post_norm]}\n  seeds: [1]\n")
        out_dir = os.path.join(c.work, "t3_sweep")
        code, out = c.run(["sweep", spec, "--out", out_dir, "--baseline", "model.block=rezero"])
        expect(code, out, EXIT_USAGE, "--baseline", "model.block=rezero' matches no arm")
        assert not os.path.exists(out_dir), "runs were started for a sweep whose comparison cannot be made"
        return None
    c.case("option", "sweep_baseline_of_no_arm_before_any_run", sweep_baseline_of_no_arm)

    def stdout_full(name, args_of):
        def fn():
            trained()
            with open("/dev/full", "w") as full:
                p = subprocess.run([c.ablate] + args_of(), stdout=full, stderr=subprocess.PIPE, text=True, env=c.env(),
                                   timeout=300, stdin=subprocess.DEVNULL)
            expect(p.returncode, p.stderr, EXIT_FAILED, "cannot write to standard output", "No space left on device")
            return None
        c.case("option", "stdout_full_" + name, fn)

    stdout_full("keys", lambda: ["keys"])
    stdout_full("plugins_json", lambda: ["plugins", "--json"])
    stdout_full("validate_print", lambda: ["validate", c.spec("t3"), "--print"])
    stdout_full("inspect", lambda: ["inspect", runs[1]])
    stdout_full("sweep_dry_run", lambda: ["sweep", c.spec("t3"), "--dry-run"])

    # clear words
    def clear(name, args_of, *needles, want=EXIT_USAGE, limit=20.0):
        def fn():
            trained()
            start = time.monotonic()
            code, out = c.run(args_of())
            expect(code, out, want, *needles)
            assert time.monotonic() - start < limit, f"took {time.monotonic() - start:.1f} s"
            return None
        c.case("clear", name, fn)

    lm = TINY.replace("task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
                      "task: {plugin: language_model, file: /dev/zero}").replace("arch: encoder_decoder", "arch: decoder")
    clear("task_file_dev_zero", lambda: ["validate", c.spec("t3_dev_zero", lm)], "/dev/zero' is not a regular file")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n" for i in range(8))
    clear("yaml_alias_bomb", lambda: ["validate", c.spec("t3_bomb", bomb)], "once its aliases (*name) are expanded")
    clear("eval_data_directory", lambda: ["eval", runs[1], "--data", c.work], "is a directory")
    clear("eval_data_dev_zero", lambda: ["eval", runs[1], "--data", "/dev/zero"], "is not a regular file")
    clear("translate_input_directory", lambda: ["translate", runs[1], "--input", c.work], "--input", "is a directory")

    clear("train_examples_1e10", lambda: ["validate", c.spec("t3"), "--set", "task.train_examples=10000000000"],
          "for the order of 10000000000 train examples", "task.train_examples")

    def compare_of_failed_runs():  # every run of the baseline arm failed: no verdict, no best arm
        trained()
        top = os.path.join(c.work, "t3_failed_runs")
        ffn = os.path.join(c.fixtures, "fixture_faulty_ffn")
        for seed in (1, 2):
            d = os.path.join(top, f"faulty{seed}")
            if not os.path.exists(d):
                code, out = c.run(["run", c.spec("t3"), "--out", d, "--progress", "quiet", "-p", ffn, "--set",
                                   f"train.seed={seed}", "--set", "model.ffn=faulty", "--set", "model.ffn.at=forward"])
                assert code == EXIT_PLUGIN, out[-400:]
        if not os.path.exists(os.path.join(top, "relu")):
            shutil.copytree(runs[1], os.path.join(top, "relu"))
        out_dir = os.path.join(c.work, "t3_failed_cmp")
        code, out = c.run(["compare", top, "--out", out_dir, "--baseline", "model.ffn=faulty"])
        expect(code, out, EXIT_OK, "Nothing to compare against: the baseline arm faulty has no value", "2 failed")
        with open(os.path.join(out_dir, "report.md")) as f:
            report = f.read()
        assert "Nothing to compare against" in report, "report.md draws a conclusion: " + report[-600:]
        assert "No arm differs" not in out + report and "best arm" not in out + report, "a conclusion from failed runs"
        code, out = c.run(["compare", os.path.join(top, "faulty1"), os.path.join(top, "faulty2"), "--out", out_dir + "2"])
        expect(code, out, EXIT_USAGE, "no final metrics")  # every run failed: said, nothing written
        return None
    c.case("clear", "compare_of_failed_runs_concludes_nothing", compare_of_failed_runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ablate")
    ap.add_argument("fixtures")
    ap.add_argument("--long", action="store_true", help="more trials of the random cases (run by hand)")
    ap.add_argument("-k", default="", help="only cases whose category/name contains this")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ablate_faults_")
    try:
        c = Corpus(os.path.abspath(a.ablate), os.path.abspath(a.fixtures), work, a.k, a.long)
        plugin_fault_cases(c)
        cli_cases(c)
        trained_run_cases(c)
        data_file_cases(c)
        plugin_file_cases(c)
        spec_cases(c)
        spec_file_cases(c)
        sweep_cases(c)
        code_cases(c)
        precision_cases(c)
        trust3_cases(c)
        run_file_cases(c, 60 if c.long else 12)
        environment_cases(c, 20 if c.long else 3)
        ok = c.summary()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
