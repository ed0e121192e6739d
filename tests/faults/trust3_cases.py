# Fault corpus cases (tests/faults/), trust round 3: a trained run's files never mislabelled or
# half-written, every option refusing what it cannot use, and refusals in clear words.
import json
import os
import shutil
import struct
import subprocess
import time

import h5py

from corpus import EXIT_FAILED, EXIT_OK, EXIT_PLUGIN, EXIT_USAGE, TINY, expect


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

    def run_of_an_older_build():  # a spec key added since a run trained does not make it "two runs"
        trained()
        d = os.path.join(c.work, "t3_older_build")
        if not os.path.exists(d):
            shutil.copytree(runs[1], d)
        path = os.path.join(d, "checkpoint.bin")
        data = open(path, "rb").read()
        version = struct.unpack("<I", data[8:12])[0]
        at = 24 + (97 if version == 1 else 105)  # magic, version, reserved, payload length; then the state
        n = struct.unpack("<Q", data[at:at + 8])[0]
        spec = data[at + 8:at + 8 + n].decode()
        older = "".join(line for line in spec.splitlines(True) if not line.startswith("  ema:"))
        assert older != spec, "the checkpoint's spec has no train.ema line to take out"
        payload = data[24:at] + struct.pack("<Q", len(older.encode())) + older.encode() + data[at + 8 + n:len(data) - 8]
        h = 0xcbf29ce484222325
        for b in payload:
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
        with open(path, "wb") as f:
            f.write(data[:16] + struct.pack("<Q", len(payload)) + payload + struct.pack("<Q", h))
        h = 0xcbf29ce484222325
        for b in older.encode():
            h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
        with h5py.File(os.path.join(d, "run.h5"), "a") as f:
            f.attrs["run_id"] = f"{h:016x}"[:12]
        code, out = c.run(["eval", d, "--split", "eval"])
        expect(code, out, EXIT_OK, "recorded:")
        code, out = c.run(["export", d])
        expect(code, out, EXIT_OK)
        return None
    c.case("mislabel", "eval_of_a_run_an_older_build_trained", run_of_an_older_build)

    # a run pins its data: it keeps the vocabularies it read text with (tokenizer-ROLE.bin), so a
    # corpus edited after training is a warning naming it where only text is read (export,
    # translate: the same output as before the edit), and refused where the run's examples would
    # be read from it (eval of a split, resume), never re-read as the run's own
    def translation_run(name, stop_after=None):
        """A tiny translation run of its own corpus copy, trained in c.work/NAME: (dir, corpus, run args)."""
        corpus = os.path.join(c.work, f"{name}.tsv")
        shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "experiments", "data",
                                 "tutorial_eng_cmn.tsv"), corpus)
        spec = c.spec(name, TINY.replace(
            "task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
            "task: {plugin: translation, file: " + corpus + ", target_tokens: char}"))
        d = os.path.join(c.work, name)
        shutil.rmtree(d, ignore_errors=True)
        args = ["run", spec, "--out", d, "--progress", "quiet"]
        code, out = c.run(args + (["--stop-after", str(stop_after)] if stop_after else []))
        assert code == 0, out[-600:]
        return d, corpus, args

    def edited_corpus(command):
        def fn():
            d, corpus, args = translation_run(f"t3_pinned_{command}", 2 if command == "resume" else None)
            original = os.path.join(d, "input.tsv")  # the text translated before and after the edit
            shutil.copy(corpus, original)
            translate = ["translate", d, "--input", original]
            before = c.run(translate)[1] if command == "translate" else None
            with open(corpus) as f:
                text = f.read()
            with open(corpus, "w") as f:
                f.write(text.replace("student", "zebra"))  # ids would change meaning if rebuilt, as sed -i would
            export = os.path.join(d, "model_after_the_edit.safetensors")
            cmd = {"eval": ["eval", d, "--split", "eval"], "export": ["export", d, "--out", export],
                   "translate": translate, "resume": args + ["--resume"]}[command]
            code, out = c.run(cmd)
            changed = "task.file " + corpus + " changed since the run read it"
            if command in ("eval", "resume"):
                expect(code, out, EXIT_USAGE, changed, "splits drawn anew")
                assert not os.path.exists(os.path.join(d, "evals")), "an evaluation was written"
                return None
            expect(code, out, EXIT_OK, "warning: " + changed, "tokenizer-source.bin, tokenizer-target.bin")
            if command == "translate":
                def translations(text):
                    return [line for line in text.splitlines() if not line.startswith(("warning: ", "note: "))]
                assert translations(out) == translations(before), "another translation than before the edit"
            else:
                with open(export, "rb") as f:
                    meta = f.read(20000)
                assert b"student" in meta and b"zebra" not in meta, "the export's vocabulary is not the run's"
            return None
        c.case("mislabel", f"{command}_after_the_corpus_was_edited", fn)

    for command in ("eval", "export", "translate", "resume"):
        edited_corpus(command)

    # a run's kept vocabulary files swapped or damaged: refused naming the file, never read as the run's
    def swapped_vocabularies(damage):
        def fn():
            d = translation_run(f"t3_swapped_{damage}")[0]
            source = os.path.join(d, "tokenizer-source.bin")
            if damage == "roles":
                shutil.copy(os.path.join(d, "tokenizer-target.bin"), source)
                words = ("tokenizer-source.bin holds task/translation 'role=target;'", "role source")
            else:
                with open(source, "ab") as f:
                    f.write(b"3:abc")
                words = ("tokenizer-source.bin is damaged", "content hash")
            code, out = c.run(["export", d, "--out", os.path.join(d, "m.safetensors")])
            expect(code, out, EXIT_USAGE, *words)
            assert not os.path.exists(os.path.join(d, "m.safetensors")), "an export was written"
            return None
        c.case("mislabel", f"run_with_its_vocabulary_files_{damage}", fn)

    for damage in ("roles", "edited"):
        swapped_vocabularies(damage)

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
    def eval_data_says_what_it_left_out():  # a score over fewer examples than the file holds says so
        d = text_run("translate")
        data_file = os.path.join(c.work, "t3_long_pairs.tsv")
        with open(data_file, "w") as f:
            f.write("i am a student .\t我是学生。\n" + "student " * 300 + "\t我是学生。\n")
        code, out = c.run(["eval", d, "--data", data_file])
        expect(code, out, EXIT_OK, "1 of the 2 examples of " + data_file + " are left out by the run's task",
               "longer than max_len")
        with open(os.path.join(d, "evals", "t3_long_pairs", "scores.json")) as f:
            s = json.load(f)
        assert (s["file_examples"], s["dropped_examples"], s["examples"]) == (2, 1, 1), f"scores.json: {s}"
        assert "longer than max_len" in s["dropped_why"], s["dropped_why"]
        return None
    c.case("clear", "eval_data_reports_the_examples_it_left_out", eval_data_says_what_it_left_out)
    clear("eval_data_directory", lambda: ["eval", runs[1], "--data", c.work], "is a directory")
    clear("eval_data_dev_zero", lambda: ["eval", runs[1], "--data", "/dev/zero"], "is not a regular file")
    clear("translate_input_directory", lambda: ["translate", runs[1], "--input", c.work], "--input", "is a directory")

    # token batches sort every example by size: 1e10 of them cannot be ordered in memory (fixed
    # batches of a split that large are permuted without a table, and pass)
    clear("train_examples_1e10", lambda: ["validate", c.spec("t3"), "--set", "task.train_examples=10000000000",
                                          "--set", "train.batch_tokens=64"],
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
