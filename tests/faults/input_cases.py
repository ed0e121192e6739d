# Fault corpus cases (tests/faults/): bad inputs refused before any work: data files a task cannot
# use, plugin files that are not plugins, specs that cannot train, spec files that are not specs.
import os
import struct
import subprocess

from corpus import EXIT_OK, EXIT_PLUGIN, EXIT_USAGE, TINY, expect


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
    refused("language_model_invalid_utf8_with_a_tokenizer", b"fine text here\nnot caf\xe9\n" * 20, "language_model",
            ":2: invalid UTF-8 at byte 8", extra=", tokenizer: {plugin: sentencepiece, vocab_size: 40}")


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
    def refused(name, sets, *needles, text=TINY, run=True, want=EXIT_USAGE):
        def fn():
            spec = c.spec(name, text)
            args = []
            for s in sets:
                args += ["--set", s]
            code, out = c.run(["validate", spec] + args)
            expect(code, out, want, *needles)
            if not run:  # `ablate run` trains the base configuration only
                return None
            out_dir = os.path.join(c.work, name)
            code, out = c.run(["run", spec, "--out", out_dir, "--progress", "quiet"] + args)
            expect(code, out, want, *needles)
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
    # what a component refuses only when the model is built: validate builds it dry (nothing
    # allocated), so `validate` refuses it as the run does (the plugin's error, exit 3) before
    # anything runs, and sizes are counted, not guessed
    t5 = "model.positional_encoding={plugin: t5_relative_bias, buckets: %s, max_distance: %s}"
    for name, buckets, distance in (("t5_buckets_0", "0", "128"), ("t5_buckets_1e12", "1000000000000", "128"),
                                    ("t5_max_distance_negative", "32", "-5"), ("t5_max_distance_0", "32", "0")):
        refused(name, [t5 % (buckets, distance)], "positional_encoding/t5_relative_bias", "failed in build",
                "buckets " + buckets + ", max_distance " + distance, want=EXIT_PLUGIN)
    refused("swiglu_hidden_negative", ["model.ffn={plugin: swiglu, hidden: -1}"], "ffn/swiglu", "failed in build",
            "hidden -1", want=EXIT_PLUGIN)
    refused("swiglu_of_d_ff_1", ["model.ffn=swiglu", "model.d_ff=1"], "ffn/swiglu", "d_ff 1", want=EXIT_PLUGIN)
    refused("swiglu_hidden_1e12", ["model.ffn={plugin: swiglu, hidden: 1000000000000}"],
            "model: training this model needs about", "of memory")
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
    refused("share_embeddings_with_two_vocabularies", ["model.share_embeddings=true"],
            "model.share_embeddings: true, but task plugin 'translation' gives its source and target ids from two "
            "vocabularies", "translation: joint_vocabulary: true",
            text=TINY.replace("task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
                              "task: {plugin: translation, file: " + tsv + "}"))
    refused("share_embeddings_in_a_decoder", ["model.arch=decoder", "model.share_embeddings=true"],
            "model.share_embeddings: true with model.arch decoder, which has one embedding table")
    lm_txt = os.path.join(c.work, "tiny_lm.txt")
    with open(lm_txt, "w") as f:
        f.write("the quick brown fox jumps over the lazy dog\n" * 40)
    lm = TINY.replace("task: {plugin: copy, vocab_size: 8, min_len: 2, max_len: 4, train_examples: 64, eval_examples: 16}",
                      "task: {plugin: language_model, file: " + lm_txt + ", context: 16}").replace("encoder_decoder", "decoder")
    refused("lm_split_seed_of_a_contiguous_split", ["task.split_seed=3"], "task: task plugin 'language_model' refuses its options",
            "split_seed shuffles the windows of split: random", "set split: random", text=lm)
    refused("lm_split_unknown", ["task.split=shuffled"], "task.split: 'shuffled' is not a valid value", "contiguous, random",
            text=lm)
    refused("lm_eval_lengths_of_a_random_split", ["task.split=random", "eval.lengths=[32]"],
            "eval.lengths: task plugin 'language_model' makes no eval examples of length 32", "split: contiguous", text=lm)
    # task.tokenizer (docs/data.md): the tokenizer's own options, text that cannot hold a vocabulary
    sp = lm.replace("context: 16}", "context: 16, tokenizer: {plugin: sentencepiece, vocab_size: 40}}")
    for name, value in (("tokenizer_vocab_size_0", "0"), ("tokenizer_vocab_size_2p31", "2147483648")):
        refused(name, ["task.tokenizer.vocab_size=" + value],
                "task.tokenizer: tokenizer plugin 'sentencepiece' refuses its options",
                "vocab_size must be in [8, 1048576], got " + value, text=sp)
    refused("tokenizer_vocabulary_larger_than_the_text", ["task.tokenizer.vocab_size=5000"],
            "task: task plugin 'language_model' refuses its options", "tokenizer/sentencepiece", "training failed",
            "lower it to the value named", text=sp)
    one_char = os.path.join(c.work, "one_char.txt")
    with open(one_char, "w") as f:
        f.write("a" * 60 + "\n" * 1 + ("a" * 60 + "\n") * 40)
    refused("tokenizer_corpus_of_one_repeated_character", ["task.file=" + one_char], "training failed", text=sp)
    # subword sampling (alpha, nbest): its ranges, and the tasks that cannot sample
    for name, value in (("tokenizer_sampling_alpha_negative", "-0.1"), ("tokenizer_sampling_alpha_above_one", "1.5")):
        refused(name, ["task.tokenizer.alpha=" + value], "task.tokenizer: tokenizer plugin 'sentencepiece' refuses its options",
                "alpha must be in (0, 1] (0: no sampling), got " + value, text=sp)
    refused("tokenizer_sampling_nbest_with_bpe", ["task.tokenizer.alpha=0.1", "task.tokenizer.nbest=8"],
            "nbest applies to unigram sampling, got 8 with model_type bpe", text=sp)
    refused("tokenizer_sampling_nbest_one", ["task.tokenizer.model_type=unigram", "task.tokenizer.alpha=0.1",
                                             "task.tokenizer.nbest=1"],
            "nbest must be -1 (the whole lattice) or >= 2, got 1", text=sp)
    refused("tokenizer_sampling_in_a_language_model", ["task.tokenizer.alpha=0.1"],
            "task: task plugin 'language_model' refuses its options", "task.tokenizer samples segmentations (alpha)",
            "subword sampling applies to translation and classification", text=sp)

    def tokenize_with_sampling():  # shards hold one segmentation: refused before anything is trained or written
        out = os.path.join(c.work, "tokenized_sampled")
        code, log = c.run(["tokenize", "--tokenizer", "{plugin: sentencepiece, vocab_size: 40, alpha: 0.1}",
                           "--train", lm_txt, "--out", out, lm_txt])
        expect(code, log, EXIT_USAGE, "the tokenizer samples segmentations (alpha), but shards hold one segmentation")
        assert not os.path.exists(out), "nothing written"
        return None
    c.case("spec", "tokenize_with_sampling", tokenize_with_sampling)
    refused("tokenizer_unknown", ["task.tokenizer=bpe"], "task.tokenizer: unknown tokenizer plugin 'bpe'",
            "expected one of char, sentencepiece, word", text=sp)
    refused("tokenizer_with_the_tasks_own_tokens", ["task.tokens=word"], "tokens: not with task.tokenizer", text=sp)
    refused("tokenizer_on_a_synthetic_task", ["task.tokenizer=char"], "this task reads no text, so it takes no tokenizer")
    # token shards (task.shards, docs/data.md): a bad shard is refused naming the file, before training
    shard_dir = os.path.join(c.work, "shards")
    os.makedirs(shard_dir, exist_ok=True)

    def shard(name, tokens, magic=20240520, version=1, cut=0):
        body = struct.pack("<256i", magic, version, len(tokens), *([0] * 253)) + struct.pack(f"<{len(tokens)}H", *tokens)
        with open(os.path.join(shard_dir, name), "wb") as f:
            f.write(body[: len(body) - cut])
        return os.path.join(shard_dir, name)

    good = shard("good.bin", [i % 90 for i in range(2000)])
    sh = lm.replace("file: " + lm_txt + ", context: 16", "shards: " + good + ", shard_vocab_size: 100, context: 16")
    refused("shard_wrong_magic", ["task.shards=" + shard("magic.bin", [1] * 100, magic=7)],
            "magic.bin is not a token shard", "`ablate tokenize`", text=sh)
    refused("shard_wrong_version", ["task.shards=" + shard("version.bin", [1] * 100, version=3)],
            "version.bin: shard version 3; expected 1 (uint16 tokens) or 2 (uint32)", text=sh)
    refused("shard_truncated_body", ["task.shards=" + shard("cut.bin", [1] * 100, cut=10)],
            "cut.bin: the header counts 100 tokens", "truncated", text=sh)
    refused("shard_glob_matching_nothing", ["task.shards=" + os.path.join(shard_dir, "none_*.bin")],
            "task/language_model: shards: '", "matches no file", text=sh)
    refused("shard_without_a_vocabulary", ["task.shard_vocab_size=0"], "need shard_vocab_size, got 0", text=sh)
    refused("shard_held_out_shard_also_a_training_shard", ["task.shards=" + os.path.join(shard_dir, "good*.bin"),
                                                            "task.eval_shards=" + good],
            "good.bin is matched by two of shards / eval_shards / test_shards", text=sh)

    def id_past_the_vocabulary():  # known only when the window is read: the run fails naming shard and token
        spec = c.spec("shard_id_past_the_vocabulary", sh)
        out_dir = os.path.join(c.work, "shard_id_past_the_vocabulary")
        code, out = c.run(["run", spec, "--out", out_dir, "--progress", "quiet", "--set", "task.shard_vocab_size=80"])
        expect(code, out, EXIT_PLUGIN, "good.bin: token", "is id 8", "outside the shard_vocab_size of 80")
        return None
    c.case("spec", "shard_id_past_the_vocabulary", id_past_the_vocabulary)

    def another_tokenizer():  # shards made with one tokenizer, a spec naming another
        text = os.path.join(c.work, "shard_text.txt")
        with open(text, "w") as f:
            f.write("the quick brown fox jumps over the lazy dog\n" * 40)
        out = os.path.join(c.work, "tokenized")
        if not os.path.exists(out):
            code, log = c.run(["tokenize", "--tokenizer", "char", "--train", text, "--out", out, text])
            assert code == EXIT_OK, log[-600:]
        spec = c.spec("shard_of_another_tokenizer", sh.replace("shards: " + good + ", shard_vocab_size: 100",
                                                                "shards: " + os.path.join(out, "*.bin") +
                                                                ", tokenizer: {plugin: char, lowercase: true}"))
        code, log = c.run(["validate", spec])
        expect(code, log, EXIT_USAGE, "tokenizer-text.bin holds tokenizer/char with options 'lowercase=false;",
               "but the spec's task.tokenizer is tokenizer/char with options 'lowercase=true;")
        return None
    c.case("spec", "shard_of_another_tokenizer", another_tokenizer)
    # sweep.tune (docs/sweeps.md): seeds that would choose and judge, and choices the runs cannot give
    tuned = TINY + "sweep:\n  grid: {model.block: [pre_norm, post_norm]}\n  seeds: [3, 4]\n  tune:\n" \
        "    grid: {train.optimizer.lr: [1.0e-3, 3.0e-3]}\n    seeds: [1, 2]\n"
    refused("tune_seeds_overlapping_the_sweeps", ["sweep.tune.seeds=[1, 3]"],
            "sweep.tune.seeds: seed 3 is also in sweep.seeds", text=tuned, run=False)
    refused("tune_key_also_an_arm_axis", ["sweep.tune.grid={model.block: [pre_norm]}"],
            "sweep.tune.grid.model.block: also an axis of the sweep", text=tuned, run=False)

    def tune_refused_by_the_sweep(name, sets, *needles):  # known once the tuning runs are planned
        def fn():
            spec = c.spec(name, tuned)
            out_dir = os.path.join(c.work, name)
            args = [a for s in sets for a in ("--set", s)]
            code, out = c.run(["sweep", spec, "--out", out_dir, "--progress", "quiet"] + args)
            expect(code, out, EXIT_USAGE, *needles)
            assert not os.path.exists(out_dir), "a refused tuned sweep left its directory"
            return None
        c.case("spec", name, fn)

    tune_refused_by_the_sweep("tune_on_a_test_metric", ["sweep.tune.metric=test_loss"],
                              "sweep.tune.metric: 'test_loss' cannot select a setting")
    tune_refused_by_the_sweep("tune_eta_one", ["sweep.tune.eta=1", "sweep.tune.first_rung=2"],
                              "sweep.tune.eta: 1 keeps every setting at every rung")
    tune_refused_by_the_sweep("tune_first_rung_not_an_eval_step", ["sweep.tune.eta=2", "sweep.tune.first_rung=4"],
                              "sweep.tune.first_rung: 4 for run", "expected an evaluation step below train.steps")
    refused("accumulate_zero", ["train.accumulate=0"], "train.accumulate: 0 is out of range; expected an integer > 0")
    refused("batch_tokens_below_the_longest_example", ["train.batch_tokens=4"],
            "train.batch_tokens: 4 tokens cannot hold the task's longest example (5 tokens", "expected at least 5")
    refused("eval_lengths_zero", ["eval.lengths=[0]"], "eval.lengths[0]: '0' is not a length; expected an integer >= 1")
    refused("warmup_not_below_steps", ["train.schedule=cosine", "train.schedule.warmup=6"],
            "train.schedule: schedule plugin 'cosine' refuses its options", "warmup 6",
            "total_steps 6 is train.steps")
    # The optimizer (docs/training.md, "Optimizers"): its options beside lr, weight_decay and groups.
    refused("optimizer_unknown", ["train.optimizer=adamx"], "train.optimizer: unknown optimizer plugin 'adamx'",
            "did you mean 'adam'?")
    refused("optimizer_unknown_option", ["train.optimizer.beta3=0.9"],
            "train.optimizer.beta3: optimizer plugin 'adam' has no option 'beta3'; expected one of beta1, beta2, eps")
    refused("optimizer_beta_out_of_range", ["train.optimizer=lion", "train.optimizer.beta1=1.0"],
            "train.optimizer: optimizer plugin 'lion' refuses its options", "beta1 and beta2 must be in [0, 1)")
    refused("optimizer_negative_weight_decay", ["train.optimizer.weight_decay=-0.1"],
            "train.optimizer.weight_decay: -0.1 is out of range; expected a number >= 0")
    refused("optimizer_old_betas_key", ["train.optimizer.betas=[0.9, 0.99]"],
            "train.optimizer.betas: a list is not a plugin option value", "the options beta1 and beta2")
    refused("optimizer_old_name_key", [], "train.optimizer: no `plugin:` key", "write `plugin: NAME`, not `name: NAME`",
            text=TINY.replace("schedule: {plugin: constant}}", "schedule: {plugin: constant}, optimizer: {name: adamw}}"))
    refused("optimizer_group_named_default", ["train.optimizer.groups=[{name: default, roles: [norm]}]"],
            "train.optimizer.groups[0].name: 'default' names the group of the parameters no rule takes")
    refused("optimizer_group_unknown_role", ["train.optimizer.groups=[{name: g, roles: [bias]}]"],
            "'bias' is not a parameter role; expected a list of matrix, vector, embedding, norm, output")
    # Branches (docs/training.md, "Branches"): points inside the run, a start before the end, steps not budgets.
    refused("branch_point_at_the_end", ["train.branch_points=[2, 6]"],
            "train.branch_points: lists step 6, not before train.steps 6")
    refused("branch_point_twice", ["train.branch_points=[2, 2]"], "train.branch_points: lists a step twice")
    refused("branch_from_at_the_end", ["train.branch_from={run: elsewhere, step: 6}"],
            "train.branch_from.step: 6 is not before train.steps 6")
    refused("branch_from_without_run", ["train.branch_from={step: 2}"], "train.branch_from.run:")
    refused("branch_from_with_a_budget", ["train.branch_from={run: elsewhere, step: 2}", "train.budget.tokens=100"],
            "train.budget: is set with train.branch_from; expected train.steps alone")

    def branch_from_no_run():  # known when the run starts: refused before its directory exists
        spec = c.spec("branch_from_no_run", TINY)
        out_dir = os.path.join(c.work, "branch_from_no_run")
        code, out = c.run(["run", spec, "--out", out_dir, "--progress", "quiet", "--set",
                           "train.branch_from={run: " + os.path.join(c.work, "nowhere") + ", step: 2}"])
        expect(code, out, EXIT_USAGE, "train.branch_from: cannot start from", "nowhere is not a directory")
        assert not os.path.exists(out_dir), "a refused branch left its directory"
        return None
    c.case("spec", "branch_from_no_run", branch_from_no_run)


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

    def piped_spec():  # `cat spec.yaml | ablate validate /dev/stdin`: a pipe has no canonical path
        p = subprocess.run([c.ablate, "validate", "/dev/stdin"], input=TINY, capture_output=True, text=True,
                           env=c.env(), timeout=300)
        expect(p.returncode, p.stdout + p.stderr, EXIT_USAGE, "'/dev/stdin' is not a regular file")
        return None
    c.case("spec_file", "spec_through_a_pipe", piped_spec)
