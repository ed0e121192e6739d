# Fault corpus cases (tests/faults/): faulty plugins throwing from every call, command lines that
# make no sense, and commands on a trained run (eval, export, generate, translate) refused with why.
import os
import shutil

from corpus import EXIT_OK, EXIT_PLUGIN, EXIT_USAGE, TINY, expect, run_file_state


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
    case("dump_reference_of_token_batches",
         ["run", spec, "--out", os.path.join(c.work, "dump_tokens"), "--set", "train.batch_tokens=64",
          "--dump-reference", os.path.join(c.work, "dump_tokens.h5")], EXIT_USAGE,
         "--dump-reference records batches of train.batch_size rows", "without train.batch_tokens")
    text = os.path.join(c.work, "tokenize_text.txt")
    not_a_tokenizer = os.path.join(c.work, "not_a_tokenizer.bin")

    def make_text():
        with open(text, "w") as f:
            f.write("the quick brown fox\n" * 10)
        with open(not_a_tokenizer, "w") as f:
            f.write("ablate-vocabulary 1\n3:fox")
    tok = os.path.join(c.work, "tokenize_out")
    case("tokenize_no_input", ["tokenize", "--tokenizer", "char", "--train", text, "--out", tok], EXIT_USAGE,
         "no INPUT file to encode", setup=make_text)
    case("tokenize_both_tokenizers", ["tokenize", "--tokenizer", "char", "--tokenizer-file", not_a_tokenizer, "--out", tok,
                                      text], EXIT_USAGE, "either --tokenizer (with --train) or --tokenizer-file",
         setup=make_text)
    case("tokenize_not_a_tokenizer_file", ["tokenize", "--tokenizer-file", not_a_tokenizer, "--out", tok, text], EXIT_USAGE,
         "is not a tokenizer file of Ablate", setup=make_text)
    case("tokenize_input_is_a_directory", ["tokenize", "--tokenizer", "char", "--train", text, "--out", tok, c.work],
         EXIT_USAGE, "is a directory", setup=make_text)
    case("tokenize_unknown_tokenizer_option", ["tokenize", "--tokenizer", "{plugin: char, alpha: 0.5}", "--train", text,
                                               "--out", tok, text], EXIT_USAGE, "alpha", setup=make_text)
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
    case("export_tensorboard_without_run_file", ["export", empty, "--format", "tensorboard"], "run.h5",
         "not_a_run", absent=os.path.join(empty, "events.out.tfevents"))
    case("export_unknown_format", ["export", run_dir, "--format", "onnx"], "expected safetensors, tensorboard or hf")
    case("export_hf_of_a_seq2seq_model", ["export", run_dir, "--format", "hf"], "model.arch encoder_decoder",
         "no counterpart", absent=os.path.join(run_dir, "hf"))
    # --format hf of decoder-only runs: a component without a transformers counterpart is named;
    # a folder that holds files is not written into (the file there stays as it was)
    lm_text = TINY.replace("task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
                           "task: {plugin: language_model, vocab_size: 12, min_len: 6, max_len: 12, train_examples: 64, "
                           "eval_examples: 16}").replace("arch: encoder_decoder", "arch: decoder")
    assert lm_text != TINY
    llama_dir, post_norm_dir = os.path.join(c.work, "trained_llama"), os.path.join(c.work, "trained_post_norm_lm")
    llama = c.spec("trained_llama", lm_text.replace(
        "dropout: 0.0}", "dropout: 0.0, block: {plugin: pre_norm, norm: rms_norm}, positional_encoding: rotary, "
        "ffn: swiglu, scale_embedding: false}"))
    post_norm = c.spec("trained_post_norm_lm", lm_text.replace("dropout: 0.0}", "dropout: 0.0, scale_embedding: false}"))
    occupied = os.path.join(c.work, "hf_occupied")

    def train_lms():
        for spec, out in ((llama, llama_dir), (post_norm, post_norm_dir)):
            if not os.path.exists(os.path.join(out, "checkpoint.bin")):
                code, text = c.run(["run", spec, "--out", out, "--progress", "quiet"])
                assert code == 0, text[-600:]
        os.makedirs(occupied, exist_ok=True)
        with open(os.path.join(occupied, "notes.txt"), "w") as f:
            f.write("mine")
    case("export_hf_of_a_post_norm_model", ["export", post_norm_dir, "--format", "hf"], "model.block post_norm",
         "no counterpart", absent=os.path.join(post_norm_dir, "hf"), setup=train_lms)
    case("export_hf_into_a_folder_with_files", ["export", llama_dir, "--format", "hf", "--out", occupied],
         "is not an empty folder", absent=os.path.join(occupied, "config.json"), setup=train_lms)
    exported = os.path.join(c.work, "exported_tensorboard")

    def export_once():
        if not os.path.isdir(exported):
            code, out = c.run(["export", run_dir, "--format", "tensorboard", "--out", exported])
            assert code == 0, out[-600:]
    case("export_tensorboard_twice", ["export", run_dir, "--format", "tensorboard", "--out", exported],
         "already holds a TensorBoard event file", setup=export_once)
    case("generate_with_a_seq2seq_model", ["generate", run_dir, "--prompt", "3 4"], "decoder-only language model")
    words = os.path.join(c.work, "words.txt")  # the run's task has no text: a line is token ids
    with open(words, "w") as f:
        f.write("a b\n")
    case("translate_words_for_a_task_without_text", ["translate", run_dir, "--input", words], "'a' is not a token id")
    # A branch (train.branch_from, docs/training.md "Branches") that would not continue its run:
    # refused before its directory exists.
    stable = os.path.join(c.work, "branch_stable")

    def train_stable():
        if not os.path.exists(os.path.join(stable, "checkpoint.bin")):
            code, out = c.run(["run", c.spec("branch_stable"), "--out", stable, "--progress", "quiet",
                               "--set", "train.branch_points=[2]"])
            assert code == 0, out[-600:]

    def branch(name, sets, *needles, run=stable):
        out_dir = os.path.join(c.work, name)
        args = ["run", c.spec(name), "--out", out_dir, "--progress", "quiet",
                "--set", "train.branch_from={run: " + run + ", step: 2}"]
        for s in sets:
            args += ["--set", s]
        case(name, args, *needles, absent=out_dir, setup=train_stable)

    branch("branch_from_a_run_without_points", [], "does not exist (the run keeps no branch points)", run=run_dir)
    branch("branch_from_a_missing_point", ["train.branch_from.step=4"], "step-0000000004.bin does not exist",
           "it keeps steps 2")
    branch("branch_with_another_model", ["model.d_model=32"], "differs from this one in more than train.steps",
           "d_model: 16', now '  d_model: 32'")
    branch("branch_with_another_schedule_before_the_point", ["train.schedule=cosine"],
           "at step 1 train.schedule gives learning rate", "the run's (constant) gave")
    other = os.path.join(c.work, "branch_other_seed")

    def copy_points_into_another_run():  # the stable run's points copied into a run of seed 2
        train_stable()
        if not os.path.exists(os.path.join(other, "checkpoint.bin")):
            code, out = c.run(["run", c.spec("branch_other_seed"), "--out", other, "--progress", "quiet",
                               "--set", "train.seed=2"])
            assert code == 0, out[-600:]
            shutil.copytree(os.path.join(stable, "branch-points"), os.path.join(other, "branch-points"))
    out_dir = os.path.join(c.work, "branch_from_points_of_another_run")
    case("branch_from_points_of_another_run",
         ["run", c.spec("branch_from_points_of_another_run"), "--out", out_dir, "--progress", "quiet",
          "--set", "train.branch_from={run: " + other + ", step: 2}"],
         "holds another run's state than", "remove what was copied in", absent=out_dir, setup=copy_points_into_another_run)
    case("translate_beam_zero", ["translate", run_dir, "--beam", "0"], "--beam must be >= 1")
    case("translate_max_len_negative", ["translate", run_dir, "--max-len", "-3"], "--max-len must be >= 0")
