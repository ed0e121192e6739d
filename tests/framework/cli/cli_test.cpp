// Tests for the `ablate` CLI, driven in-process through ablate::cli::run: help, version, exit
// codes, and `ablate plugins` in text and JSON, filtered by kind, with broken plugins present.
#include "cli/cli.hpp"

#include "ablate/abi.hpp"
#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"

namespace ablate::cli {
namespace {

using Result = ablate::testing::CliResult;
using ablate::testing::run_cli;

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

TEST(Cli, HelpListsOnlyWorkingCommandsAndTheExitCodes) {
  const Result r = run_cli({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_TRUE(contains(r.out, "plugins"));
  EXPECT_TRUE(contains(r.out, "2  usage or spec error"));
  EXPECT_TRUE(contains(r.out, "3  plugin error"));
  EXPECT_TRUE(contains(r.out, "4  a run diverged"));
  EXPECT_TRUE(contains(r.out, "  run "));
  EXPECT_TRUE(contains(r.out, "  inspect "));
  EXPECT_TRUE(contains(r.out, "  sweep "));
  EXPECT_TRUE(contains(r.out, "130  a run or sweep was interrupted")) << r.out;
}

TEST(Cli, KeysListsTheSchemaWithTypesAndDefaults) {
  const Result r = run_cli({"keys", "train.optimizer"});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "train.optimizer.groups")) << r.out;
  EXPECT_TRUE(contains(r.out, "1e-3")) << r.out;
  EXPECT_TRUE(contains(run_cli({"keys", "precision"}).out, "f32 | bf16")) << "a terminal gets no Markdown escapes";
  EXPECT_FALSE(contains(r.out, "model.d_model")) << "only the prefix's keys";
  const Result steps = run_cli({"keys", "train.steps"});
  EXPECT_TRUE(contains(steps.out, "required int > 0")) << steps.out;
  const Result typo = run_cli({"keys", "trian"});
  EXPECT_EQ(typo.code, kExitUsage);
  EXPECT_TRUE(contains(typo.err, "no spec key starts with 'trian'") && contains(typo.err, "did you mean 'train'")) << typo.err;
  const Result md = run_cli({"keys", "--markdown"});
  EXPECT_EQ(md.code, kExitOk);
  EXPECT_TRUE(contains(md.out, "| `d_model` | int > 0 | 512 | model width D |")) << md.out;
  EXPECT_EQ(run_cli({"keys", "model", "--markdown"}).code, kExitUsage);
}

TEST(Cli, NoArgumentsPrintsHelpAndIsAUsageError) {
  const Result r = run_cli({});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(contains(r.out, "Usage: ablate <command>"));
}

TEST(Cli, VersionNamesVersionApiAndAbi) {
  const Result r = run_cli({"--version"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_TRUE(contains(r.out, "ablate 0.")) << r.out;
  EXPECT_TRUE(contains(r.out, "plugin API " + std::to_string(kPluginApiVersion))) << r.out;
  EXPECT_TRUE(contains(r.out, ABLATE_ABI_TAG)) << r.out;
}

TEST(Cli, UnknownCommandSuggestsTheClosest) {
  const Result r = run_cli({"plugnis"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(contains(r.err, "unknown command 'plugnis'"));
  EXPECT_TRUE(contains(r.err, "did you mean 'plugins'"));
}

TEST(Cli, BadCommandOptionIsAUsageError) {
  const Result r = run_cli({"plugins", "--colour"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_TRUE(contains(r.err, "unrecognised option '--colour'")) << r.err;
}

TEST(CliPlugins, CommandHelpDescribesItsOptions) {
  const Result r = run_cli({"plugins", "--help"});
  EXPECT_EQ(r.code, kExitOk);
  for (const char* opt : {"--kind", "--json", "--plugin-path", "ABLATE_PLUGIN_PATH"}) EXPECT_TRUE(contains(r.out, opt)) << opt;
}

TEST(CliPlugins, ListsBuiltinAndExtraPluginsWithTheirOptions) {
  const Result r = run_cli({"plugins", "--plugin-path", testing::fixture_dir("fixture_good").string()});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_TRUE(contains(r.out, "schedule/noam  1.0.0"));
  EXPECT_TRUE(contains(r.out, "fixture/echo  2.3.4  Echoes its options (test fixture)"));
  EXPECT_TRUE(contains(r.out, "file: " + std::filesystem::canonical(testing::fixture("fixture_good")).string()));
  EXPECT_TRUE(contains(r.out, "mode   string {fast|slow|exact}, default fast: one of three modes")) << r.out;
  EXPECT_TRUE(contains(r.out, "count  int, required: a required integer")) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CliPlugins, KindFilterShowsOnlyThatKind) {
  const Result r = run_cli({"plugins", "--kind", "fixture", "-p", testing::fixture_dir("fixture_good").string()});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_TRUE(contains(r.out, "fixture/echo"));
  EXPECT_FALSE(contains(r.out, "schedule/"));
  const Result none = run_cli({"plugins", "--kind", "sched"});
  EXPECT_EQ(none.code, kExitUsage);
  EXPECT_TRUE(contains(none.err, "did you mean 'schedule'")) << none.err;
}

TEST(CliPlugins, JsonHasPluginsOptionsAndProblems) {
  const Result r = run_cli({"plugins", "--json", "-p", testing::fixture_dir("fixture_good").string(), "-p",
                            testing::fixture_dir("fixture_abi_mismatch").string()});
  EXPECT_EQ(r.code, kExitPluginError);
  EXPECT_TRUE(contains(r.out, R"("kind": "fixture", "name": "echo", "version": "2.3.4")")) << r.out;
  EXPECT_TRUE(contains(r.out, R"({"name": "count", "type": "int", "default": null, "required": true, "choices": [])"));
  EXPECT_TRUE(contains(r.out, R"("choices": ["fast", "slow", "exact"])"));
  EXPECT_TRUE(contains(r.out, R"("problems": [)"));
  EXPECT_TRUE(contains(r.out, "msvc-19.0/other-stl/Debug"));
  EXPECT_TRUE(contains(r.err, "fixture_abi_mismatch.so"));  // problems also go to stderr
}

TEST(CliPlugins, BrokenPluginOnThePathMakesExitCodeThreeButStillLists) {
  const Result r = run_cli({"plugins", "-p", testing::fixture_dir("fixture_api_mismatch").string()});
  EXPECT_EQ(r.code, kExitPluginError);
  EXPECT_TRUE(contains(r.out, "schedule/constant"));
  EXPECT_TRUE(contains(r.err, "fixture_api_mismatch.so: built for plugin API version 999")) << r.err;
  // A plain library beside plugins (a plugin's helper) is passed over with a note; named alone, refused.
  const Result helper = run_cli({"plugins", "-p", testing::fixture_dir("not_a_plugin").string()});
  EXPECT_EQ(helper.code, kExitOk) << helper.err;
  EXPECT_TRUE(contains(helper.err, "note: skipped " + testing::fixture("not_a_plugin").string())) << helper.err;
  const Result json = run_cli({"plugins", "--json", "-p", testing::fixture_dir("not_a_plugin").string()});
  EXPECT_TRUE(contains(json.out, "\"skipped\": [\"" + testing::fixture("not_a_plugin").string() + "\"]")) << json.out;
  const Result named = run_cli({"plugins", "-p", testing::fixture("not_a_plugin").string()});
  EXPECT_EQ(named.code, kExitPluginError);
  EXPECT_TRUE(contains(named.err, "not_a_plugin.so: not an Ablate plugin")) << named.err;
}

}  // namespace
}  // namespace ablate::cli
