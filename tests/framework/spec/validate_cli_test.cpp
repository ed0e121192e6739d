// Tests for `ablate validate` (framework/cli/cmd_validate.cpp) driven in-process with the real
// built-in plugins: a valid spec, --print, --set, error lines with positions, exit codes.
#include "cli/cli.hpp"

#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/spec/spec_test_util.hpp"

namespace ablate::cli {
namespace {

using spec::testing::contains;
using spec::testing::write_file;

using Result = ablate::testing::CliResult;
using ablate::testing::run_cli;

// A spec on the built-in plugins only (task/copy, plugins/task_copy).
const char* kSpec =
    "name: cli\n"
    "task: copy\n"
    "backend: reference\n"
    "train:\n"
    "  steps: 5\n"
    "  schedule: {plugin: noam, warmup: 10}\n";

TEST(SpecCli, HelpDescribesTheCommand) {
  const Result r = run_cli({"validate", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const char* opt : {"--set", "--plugin-path", "--print", "FILE:LINE:COLUMN"}) EXPECT_TRUE(contains(r.out, opt)) << opt;
  EXPECT_TRUE(contains(run_cli({"--help"}).out, "validate")) << "listed by ablate --help";
}

TEST(SpecCli, UnknownTaskPluginIsExit2WithItsPosition) {
  ablate::testing::TempDir dir;
  std::string spec = kSpec;
  spec.replace(spec.find("task: copy"), 10, "task: nocopy");
  const auto file = write_file(dir.path() / "s.yaml", spec).string();
  const Result r = run_cli({"validate", file});
  EXPECT_EQ(r.code, kExitUsage) << r.err;
  EXPECT_TRUE(contains(r.err, file + ":2:7: task: unknown task plugin 'nocopy'")) << r.err;
  EXPECT_TRUE(contains(r.err, file + ": invalid")) << r.err;
  EXPECT_FALSE(contains(r.err, "model.block")) << "the built-in block plugin post_norm exists\n" << r.err;
}

TEST(SpecCli, SpecErrorsAreListedOnePerLine) {
  ablate::testing::TempDir dir;
  const auto file =
      write_file(dir.path() / "s.yaml", "name: x\ntask: copy\nmodel: {arch: encoder-decoder}\ntrain: {steps: 0}\n").string();
  const Result r = run_cli({"validate", file, "--set", "model.d_modl=3"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(contains(r.err, "--set model.d_modl=3: model.d_modl: unknown key path")) << r.err;
  const Result e = run_cli({"validate", file});
  EXPECT_TRUE(contains(e.err, file + ":3:15: model.arch: 'encoder-decoder' is not one of encoder, decoder, encoder_decoder"))
      << e.err;
  EXPECT_TRUE(contains(e.err, "\n" + file + ":4:16: train.steps: 0 is out of range")) << e.err;
}

TEST(SpecCli, ValidSpecPrintsTheResolvedSpec) {
  // task/fixture_copy (tests/framework/spec/fixture_task.cpp) stands in for the real task plugins.
  ablate::testing::TempDir dir;
  const auto file = write_file(dir.path() / "s.yaml", kSpec).string();
  const Result r = run_cli({"validate", file, "--plugin-path", ABLATE_SPEC_FIXTURE_DIR, "--print", "--set",
                            "task={plugin: fixture_copy, vocab_size: 12}", "--set", "train.schedule.warmup=20", "--set",
                            "model.block=pre_norm"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(r.out.starts_with(file + ": valid\n")) << r.out;
  for (const char* line :
       {"task: {plugin: fixture_copy, length: 16, vocab_size: 12}", "block: {plugin: pre_norm, norm: layer_norm}",
        "schedule: {plugin: noam, d_model: 512, factor: 1.0, warmup: 20}", "backend: {plugin: reference, optional_ops: all}",
        "positional_encoding: {plugin: sinusoidal, base: 10000}", "steps: 5"})
    EXPECT_TRUE(contains(r.out, line)) << line << "\n" << r.out;

  // The printed spec is itself a valid spec that resolves to the same text.
  const std::string resolved = r.out.substr(r.out.find('\n') + 1);
  const auto again_file = write_file(dir.path() / "resolved.yaml", resolved).string();
  const Result again = run_cli({"validate", again_file, "-p", ABLATE_SPEC_FIXTURE_DIR, "--print"});
  EXPECT_EQ(again.code, kExitOk) << again.err;
  EXPECT_EQ(again.out.substr(again.out.find('\n') + 1), resolved);
}

TEST(SpecCli, PluginPathsOfTheSpecAreSearched) {
  ablate::testing::TempDir dir;
  const auto rel = std::filesystem::relative(ABLATE_SPEC_FIXTURE_DIR, dir.path()).string();
  const auto file = write_file(dir.path() / "s.yaml", std::string(kSpec) + "plugin_paths: [" + rel + "]\n").string();
  const Result r = run_cli({"validate", file, "--set", "task={plugin: fixture_copy, vocab_size: 3}"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, file + ": valid\n");
}

TEST(SpecCli, ExampleSpecsAreValid) {
  // experiments/ specs must validate cleanly against the built-in plugins (task/copy included).
  for (const auto& [name, runs] :
       {std::pair{"base/copy_small.yaml", ""}, std::pair{"quickstart.yaml", " (and the 16 runs of its sweep)"}}) {
    const std::string file = std::string(ABLATE_SPEC_EXPERIMENTS_DIR) + "/" + name;
    const Result r = run_cli({"validate", file});
    EXPECT_EQ(r.code, kExitOk) << name << "\n" << r.err;
    EXPECT_EQ(r.out, file + ": valid" + runs + "\n") << name;
  }
  // The recipes are bases: valid once a child names the task and the steps.
  for (const char* name : {"recipes/vaswani_2017.yaml", "recipes/modern.yaml"}) {
    const std::string file = std::string(ABLATE_SPEC_EXPERIMENTS_DIR) + "/" + name;
    const Result r = run_cli({"validate", file, "--set", "task={plugin: copy}", "--set", "train.steps=1000"});
    EXPECT_EQ(r.code, kExitOk) << name << "\n" << r.err;
    EXPECT_EQ(run_cli({"validate", file}).code, kExitUsage) << name << ": a recipe alone names no task";
  }
}

TEST(SpecCli, MissingSpecArgumentIsAUsageError) {
  const Result r = run_cli({"validate"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(contains(r.err, "no spec file given")) << r.err;
}

}  // namespace
}  // namespace ablate::cli
