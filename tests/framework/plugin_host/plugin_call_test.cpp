// Tests of the host's calls into plugin code (plugins/plugin_call.hpp): whatever a plugin throws
// becomes a PluginFault naming the plugin (kind/name version and file) and the call; a fault of
// an inner plugin (the backend under a block) keeps its own name; HostedBackend names the
// backend and the op; backward functions a plugin records are attributed to that plugin.
#include <gtest/gtest.h>

#include "ablate/ops.hpp"
#include "fixture_echo.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "plugin_host/plugin_call.hpp"
#include "plugin_host/plugin_registry.hpp"
#include "train/hosted_backend.hpp"

namespace ablate {
namespace {

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }
using testing::fixture;

struct OwnError : std::exception {
  const char* what() const noexcept override { return "own error"; }
};

class PluginCallTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry.load(fixture("fixture_good"));
    echo = registry.create<testing::FixtureEcho>("echo", {{"count", "1"}});
  }
  // The PluginFault that plugin_call(echo, "echo", f) throws.
  PluginFault fault_of(const std::function<void()>& f) {
    try {
      plugin_call(*echo, "echo", f);
    } catch (const PluginFault& e) {
      return e;
    }
    ADD_FAILURE() << "no PluginFault";
    return PluginFault("", "", "", "", "");
  }
  PluginRegistry registry;
  std::shared_ptr<testing::FixtureEcho> echo;
};

TEST_F(PluginCallTest, EveryKindOfThrowBecomesAFaultNamingThePluginAndTheCall) {
  const std::string file = std::filesystem::canonical(fixture("fixture_good")).string();
  const PluginFault a = fault_of([] { throw Error("bad input", "fix it"); });
  EXPECT_EQ(std::string(a.what()), "plugin fixture/echo 2.3.4 (" + file + ") failed in echo: bad input");
  EXPECT_EQ(a.hint(), "fix it");
  EXPECT_EQ(a.plugin(), "fixture/echo 2.3.4 (" + file + ")");
  const PluginFault s = fault_of([] { throw OwnError(); });
  EXPECT_TRUE(contains(s.what(), "failed in echo: own error (ablate::(anonymous namespace)::OwnError)")) << s.what();
  const PluginFault i = fault_of([] { throw 7; });
  EXPECT_TRUE(contains(i.what(), "non-standard exception of type int")) << i.what();
  EXPECT_FALSE(i.hint().empty());
}

TEST_F(PluginCallTest, AnInnerPluginsFaultKeepsItsName) {
  auto inner = registry.create<testing::FixtureEcho>("echo", {{"count", "2"}});
  const PluginFault f = fault_of([&] { plugin_call(*inner, "inner_call", [] { throw Error("deep"); }); });
  EXPECT_TRUE(contains(f.what(), "failed in inner_call: deep")) << f.what();
}

TEST_F(PluginCallTest, ContextIsAddedOnceAndTheRunningPluginIsTracked) {
  EXPECT_EQ(running_plugin(), nullptr);
  plugin_call(*echo, "echo", [&] { EXPECT_EQ(running_plugin(), echo.get()); });
  EXPECT_EQ(running_plugin(), nullptr);
  const PluginFault f = fault_of([] { throw Error("x"); }).with_context("at step 3 (training)").with_context("later");
  EXPECT_EQ(f.context(), "at step 3 (training)");
  EXPECT_TRUE(contains(f.what(), "failed in echo at step 3 (training): x")) << f.what();
}

TEST(HostedBackend, ABackendErrorNamesTheBackendPluginAndTheOp) {
  PluginRegistry registry;
  registry.scan({builtin_plugin_dir()});
  train::HostedBackend be(registry.create<Backend>("reference"), nullptr);
  // Arguments the contract accepts, which the plugin refuses itself: an id outside the table.
  Tensor y = be.empty({2, 3}, DType::F32), ids = be.empty({2}, DType::I32), table = be.empty({5, 3}, DType::F32);
  const std::int32_t bad[2] = {1, 99};
  be.copy_from_host(ids, bad);
  be.fill(table, 0.5f);
  try {
    be.embedding_forward(y, ids, table);
    FAIL() << "an id outside the table was accepted";
  } catch (const PluginFault& e) {
    EXPECT_TRUE(contains(e.what(), "plugin backend/reference ")) << e.what();
    EXPECT_TRUE(contains(e.what(), "failed in embedding (fwd): ")) << e.what();
  }
}

// The contract is checked by the hosted backend's own public op, before the plugin runs: a
// mismatched call is the caller's mistake, not the backend plugin's.
TEST(HostedBackend, AContractViolationIsTheCallersErrorNotTheBackendPlugins) {
  PluginRegistry registry;
  registry.scan({builtin_plugin_dir()});
  train::HostedBackend be(registry.create<Backend>("reference"), nullptr);
  Tensor y = be.empty({2, 3}, DType::F32), x = be.empty({2, 4}, DType::F32), w = be.empty({3, 5}, DType::F32);
  try {
    be.linear_forward(y, nullptr, x, w, nullptr, Activation::None);
    FAIL() << "a mismatched linear was accepted";
  } catch (const PluginFault& e) {
    FAIL() << "attributed to the backend plugin: " << e.what();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "Backend::linear_forward: ")) << e.what();
  }
}

TEST(HostedBackend, ABackwardFunctionAPluginRecordedIsAttributedToIt) {
  PluginRegistry registry;
  registry.scan({builtin_plugin_dir()});
  registry.load(fixture("fixture_good"));
  auto echo = registry.create<testing::FixtureEcho>("echo", {{"count", "1"}});
  train::HostedBackend be(registry.create<Backend>("reference"), nullptr);
  Graph g(be, 1, 1);
  Tensor t = be.empty({1}, DType::F32);
  be.fill(t, 1.0f);
  Var x = g.leaf(t);
  Var y = plugin_call(*echo, "forward", [&] {  // as a component's forward would
    Var out = g.result(ops::scale(g, x, 2.0f).value(), {&x});
    g.record(out, [](const Tensor&) { throw Error("broken gradient"); });
    return out;
  });
  try {
    g.backward(y);
    FAIL() << "backward did not throw";
  } catch (const PluginFault& e) {
    EXPECT_TRUE(contains(e.what(), "plugin fixture/echo 2.3.4 (")) << e.what();
    EXPECT_TRUE(contains(e.what(), "failed in backward: broken gradient")) << e.what();
  }
}

}  // namespace
}  // namespace ablate
