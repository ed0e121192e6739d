// Tests for the plugin host: discovery and listing, option passing, and every refusal
// (API/ABI mismatch, malformed record, not a plugin, truncated or garbage file, undefined
// symbol, duplicate (kind, name), unknown plugin, throwing factory, wrong interface).
#include "plugin_host/plugin_registry.hpp"

#include <cstdlib>

#include "fixture_echo.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"

namespace ablate {
namespace {
namespace fs = std::filesystem;
using testing::error_of;
using testing::fixture;
using testing::FixtureEcho;
using testing::TempDir;

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

TEST(PluginRegistry, ScansBuiltinDirectoryNextToTheExecutable) {
  EXPECT_EQ(builtin_plugin_dir(), fs::path(ABLATE_BUILTIN_PLUGIN_DIR).lexically_normal());
  PluginRegistry r;
  r.scan({builtin_plugin_dir()});
  EXPECT_TRUE(r.problems().empty());
  std::vector<std::string> ids;
  for (const PluginDescriptor* d : r.list("schedule")) ids.push_back(d->id());
  EXPECT_EQ(ids, (std::vector<std::string>{"schedule/constant", "schedule/cosine", "schedule/inverse_sqrt", "schedule/linear",
                                           "schedule/noam", "schedule/wsd"}));
  ids.clear();
  for (const PluginDescriptor* d : r.list("optimizer")) ids.push_back(d->id());
  EXPECT_EQ(ids, (std::vector<std::string>{"optimizer/adafactor", "optimizer/adam", "optimizer/adamw", "optimizer/lion",
                                           "optimizer/muon", "optimizer/sgd"}));
}

TEST(PluginRegistry, LoadReadsInfoRecordAndOptions) {
  PluginRegistry r;
  const PluginDescriptor& d = r.load(fixture("fixture_good"));
  EXPECT_EQ(d.kind, "fixture");
  EXPECT_EQ(d.name, "echo");
  EXPECT_EQ(d.version, "2.3.4");
  EXPECT_EQ(d.description, "Echoes its options (test fixture)");
  EXPECT_EQ(d.api_version, kPluginApiVersion);
  EXPECT_EQ(d.abi_tag, ABLATE_ABI_TAG);
  EXPECT_EQ(d.path, fs::canonical(fixture("fixture_good")));
  ASSERT_EQ(d.options.size(), 5u);
  EXPECT_EQ(d.options[1].name, "count");
  EXPECT_EQ(d.options[1].type, OptionType::Int);
  EXPECT_FALSE(d.options[1].default_value.has_value());
  EXPECT_EQ(d.options[3].choices, (std::vector<std::string>{"fast", "slow", "exact"}));
  EXPECT_EQ(d.options[2].default_value, "0.5");
}

TEST(PluginRegistry, CreatePassesResolvedOptionsToTheFactory) {
  PluginRegistry r;
  r.load(fixture("fixture_good"));
  auto echo = r.create<FixtureEcho>("echo", {{"count", "7"}, {"mode", "exact"}, {"flag", "yes"}});
  EXPECT_EQ(echo->echo(), "flag=1 count=7 scale=0.5 mode=exact label=");
  EXPECT_THROW(r.create<FixtureEcho>("echo", {{"count", "7"}, {"mode", "quick"}}), UsageError);
  EXPECT_THROW(r.create<FixtureEcho>("echo", {}), UsageError);  // count is required
}

TEST(PluginRegistry, SameFileReachedTwiceIsNotADuplicate) {
  PluginRegistry r;
  r.scan({testing::fixture_dir("fixture_good"), fixture("fixture_good")});
  EXPECT_TRUE(r.problems().empty());
  EXPECT_EQ(r.list().size(), 1u);
}

TEST(PluginRegistry, RefusesApiVersionMismatchNamingBothVersions) {
  PluginRegistry r;
  const std::string e = error_of<PluginError>([&] { r.load(fixture("fixture_api_mismatch")); });
  EXPECT_TRUE(contains(e, "fixture_api_mismatch.so")) << e;
  EXPECT_TRUE(contains(e, "plugin API version 999")) << e;
  EXPECT_TRUE(contains(e, "this ablate uses plugin API version " + std::to_string(kPluginApiVersion))) << e;
  EXPECT_TRUE(r.list().empty());
}

TEST(PluginRegistry, APluginBuiltForAnotherApiIsReportedAsSuchNotAsUnknown) {
  PluginRegistry r;
  r.scan({fixture("fixture_api_mismatch")});
  ASSERT_NE(r.refused("fixture", "future"), nullptr) << "its kind and name are read whatever its API";
  const std::string e = error_of<PluginError>([&] { r.find("fixture", "future"); });
  EXPECT_TRUE(contains(e, "built for plugin API version 999")) << e;
  EXPECT_TRUE(contains(e, "rebuild the plugin against this Ablate")) << e;
  EXPECT_FALSE(contains(e, "unknown")) << e;
}

TEST(PluginRegistry, RefusesAbiTagMismatchNamingBothTags) {
  PluginRegistry r;
  const std::string e = error_of<PluginError>([&] { r.load(fixture("fixture_abi_mismatch")); });
  EXPECT_TRUE(contains(e, "'msvc-19.0/other-stl/Debug'")) << e;
  EXPECT_TRUE(contains(e, std::string("'") + ABLATE_ABI_TAG + "'")) << e;
  EXPECT_TRUE(r.list().empty());
}

TEST(PluginRegistry, RefusesMalformedInfoRecord) {
  PluginRegistry r;
  const std::string e = error_of<PluginError>([&] { r.load(fixture("fixture_malformed")); });
  // A default that does not parse: the message says which option, its default and why, and the
  // hint what to fix (not "rebuild against this Ablate": that would not help).
  EXPECT_TRUE(contains(e, "option 'steps' declares the default 'many'")) << e;
  EXPECT_TRUE(contains(e, "expected an integer")) << e;
  EXPECT_TRUE(contains(e, "fix the default (or the type/choices) of 'steps'")) << e;
  EXPECT_FALSE(contains(e, "rebuild the plugin against this Ablate")) << e;
}

TEST(PluginRegistry, RefusesASharedLibraryThatIsNotAPlugin) {
  PluginRegistry r;
  const std::string e = error_of<PluginError>([&] { r.load(fixture("not_a_plugin")); });
  EXPECT_TRUE(contains(e, "not an Ablate plugin")) << e;
  EXPECT_TRUE(contains(e, "ablate_plugin_info")) << e;
}

TEST(PluginRegistry, RefusesAFileThatIsNotELF) {
  TempDir tmp;
  const fs::path garbage = tmp.path() / "garbage.so";
  std::ofstream(garbage) << "this is a text file, not a shared library\n";
  const fs::path empty = tmp.path() / "empty.so";
  std::ofstream(empty).flush();
  PluginRegistry r;
  EXPECT_TRUE(contains(error_of<PluginError>([&] { r.load(garbage); }), "not an ELF file"));
  EXPECT_TRUE(contains(error_of<PluginError>([&] { r.load(empty); }), "not an ELF file"));
}

TEST(PluginRegistry, RefusesTruncatedPluginsAtEveryLengthWithoutCrashing) {
  TempDir tmp;
  const fs::path good = fixture("fixture_good");
  const auto size = fs::file_size(good);
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Cut inside the ELF header, the program headers, the loaded segments and the section table.
  for (const std::uintmax_t cut : {std::uintmax_t{20}, std::uintmax_t{63}, std::uintmax_t{200}, std::uintmax_t{4096}, size / 3,
                                   size / 2, size - 64, size - 1}) {
    const fs::path truncated = tmp.path() / ("cut_" + std::to_string(cut) + ".so");
    std::ofstream(truncated, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(cut));
    PluginRegistry r;
    const std::string e = error_of<PluginError>([&] { r.load(truncated); });
    EXPECT_TRUE(contains(e, "truncated") || contains(e, "corrupt")) << "cut at " << cut << ": " << e;
  }
}

TEST(PluginRegistry, RefusesPluginWithUndefinedSymbolAtLoadTime) {
  PluginRegistry r;
  const std::string e = error_of<PluginError>([&] { r.load(fixture("fixture_undefined")); });
  EXPECT_TRUE(contains(e, "the dynamic loader refused it")) << e;
  EXPECT_TRUE(contains(e, "ablate_fixture_function_that_does_not_exist")) << e;
}

TEST(PluginRegistry, DuplicateKindAndNameNamesBothFilesAndCannotBeUsed) {
  PluginRegistry r;
  r.scan({testing::fixture_dir("fixture_good"), testing::fixture_dir("fixture_duplicate")});
  ASSERT_EQ(r.problems().size(), 1u);
  const std::string problem = r.problems()[0].message;
  EXPECT_TRUE(contains(problem, "duplicate plugin fixture/echo")) << problem;
  EXPECT_TRUE(contains(problem, "fixture_good.so")) << problem;
  EXPECT_TRUE(contains(problem, "fixture_duplicate.so")) << problem;
  const std::string e = error_of<PluginError>([&] { r.find("fixture", "echo"); });
  EXPECT_TRUE(contains(e, "defined by more than one file")) << e;
  EXPECT_TRUE(contains(e, "fixture_good.so") && contains(e, "fixture_duplicate.so")) << e;
  EXPECT_THROW(r.create("fixture", "echo", {{"count", "1"}}), PluginError);
}

TEST(PluginRegistry, APluginOfOnesOwnNamedLikeABuiltInIsToldToTakeAnotherName) {
  testing::TempDir dir;
  fs::copy_file(fs::path(ABLATE_BUILTIN_PLUGIN_DIR) / "schedule_noam.so", dir.path() / "my_noam.so");
  PluginRegistry r;
  r.scan({ABLATE_BUILTIN_PLUGIN_DIR, dir.path()});
  const std::string e = error_of<PluginError>([&] { r.find("schedule", "noam"); });
  EXPECT_TRUE(contains(e, "defined by more than one file")) << e;
  EXPECT_TRUE(contains(e, "the built-in directory is always searched: give yours another name")) << e;
  // Two files of one's own: either can leave the path.
  fs::copy_file(dir.path() / "my_noam.so", dir.path() / "my_noam_2.so");
  PluginRegistry own;
  own.scan({dir.path()});
  EXPECT_TRUE(contains(error_of<PluginError>([&] { own.find("schedule", "noam"); }), "remove all but one of them"));
}

TEST(PluginRegistry, UnknownPluginListsAvailableNamesAndSuggestsTheClosest) {
  PluginRegistry r;
  r.scan({ABLATE_BUILTIN_PLUGIN_DIR});
  const std::string e = error_of<PluginError>([&] { r.find("schedule", "nom"); });
  EXPECT_TRUE(contains(e, "unknown schedule plugin 'nom'")) << e;
  EXPECT_TRUE(contains(e, "did you mean 'noam'")) << e;
  EXPECT_TRUE(contains(e, "constant, cosine, inverse_sqrt, linear, noam, wsd")) << e;
  const std::string k = error_of<PluginError>([&] { r.find("schedul", "noam"); });
  EXPECT_TRUE(contains(k, "no plugin of kind 'schedul'")) << k;
  EXPECT_TRUE(contains(k, "did you mean kind 'schedule'")) << k;
  // Case does not hide the suggestion; the hint says how to add a plugin of one's own.
  const std::string c = error_of<PluginError>([&] { r.find("schedule", "NOAM"); });
  EXPECT_TRUE(contains(c, "did you mean 'noam'")) << c;
  EXPECT_TRUE(contains(c, "-p DIR, ABLATE_PLUGIN_PATH")) << c;
}

TEST(PluginRegistry, APluginRefusedForItsAbiIsReportedAsSuchNotAsUnknown) {
  PluginRegistry r;
  r.scan({fixture("fixture_abi_mismatch")});
  ASSERT_NE(r.refused("fixture", "foreign"), nullptr);
  const std::string e = error_of<PluginError>([&] { r.find("fixture", "foreign"); });
  EXPECT_TRUE(contains(e, "ABI tag 'msvc-19.0/other-stl/Debug' differs")) << e;
  EXPECT_TRUE(contains(e, "CMAKE_BUILD_TYPE")) << e;
  EXPECT_FALSE(contains(e, "unknown")) << e;
}

TEST(PluginRegistry, FactoryFailuresBecomePluginErrors) {
  PluginRegistry r;
  r.load(fixture("fixture_throwing"));
  const std::string thrown = error_of<PluginError>([&] { r.create("fixture", "throwing", {{"mode", "std"}}); });
  EXPECT_TRUE(contains(thrown, "fixture/throwing")) << thrown;
  EXPECT_TRUE(contains(thrown, "fixture refuses to be created")) << thrown;
  const std::string odd = error_of<PluginError>([&] { r.create("fixture", "throwing", {{"mode", "int"}}); });
  EXPECT_TRUE(contains(odd, "non-standard exception")) << odd;
  const std::string null = error_of<PluginError>([&] { r.create("fixture", "throwing", {{"mode", "null"}}); });
  EXPECT_TRUE(contains(null, "returned no component")) << null;
}

TEST(PluginRegistry, TypedCreateRefusesAnObjectOfTheWrongInterface) {
  PluginRegistry r;
  r.load(fixture("fixture_impostor"));
  EXPECT_NE(r.create("fixture", "impostor"), nullptr);  // untyped creation works
  const std::string e = error_of<PluginError>([&] { r.create<FixtureEcho>("impostor"); });
  EXPECT_TRUE(contains(e, "does not implement the 'fixture' interface")) << e;
}

TEST(PluginRegistry, ScanCollectsEveryBrokenFileAndKeepsTheGoodOnes) {
  PluginRegistry r;
  r.scan({testing::fixture_dir("fixture_good"), testing::fixture_dir("fixture_api_mismatch"),
          testing::fixture_dir("not_a_plugin"), "/nonexistent/ablate/plugins"});
  EXPECT_EQ(r.list().size(), 1u);
  ASSERT_EQ(r.problems().size(), 2u);
  EXPECT_TRUE(contains(r.problems()[0].message, "plugin API version 999"));
  EXPECT_TRUE(contains(r.problems()[1].message, "/nonexistent/ablate/plugins: plugin search path entry does not exist"));
  // A plain library in a plugin directory (a plugin's helper) is passed over, not a problem ...
  EXPECT_EQ(r.skipped(), std::vector<fs::path>{fixture("not_a_plugin")});
  // ... but named as a file of its own, it is one.
  PluginRegistry named;
  named.scan({fixture("not_a_plugin")});
  ASSERT_EQ(named.problems().size(), 1u);
  EXPECT_TRUE(contains(named.problems()[0].message, "not an Ablate plugin"));
  EXPECT_FALSE(named.problems()[0].hint.empty());
  EXPECT_TRUE(named.skipped().empty());
}

TEST(PluginSearchPath, BuiltinThenEnvironmentThenExtra) {
  ASSERT_EQ(::setenv("ABLATE_PLUGIN_PATH", "/first::/second", 1), 0);
  const auto path = plugin_search_path({"/third"});
  ::unsetenv("ABLATE_PLUGIN_PATH");
  ASSERT_EQ(path.size(), 4u);
  EXPECT_EQ(path[0], builtin_plugin_dir());
  EXPECT_EQ(path[1], "/first");
  EXPECT_EQ(path[2], "/second");
  EXPECT_EQ(path[3], "/third");
}

}  // namespace
}  // namespace ablate
