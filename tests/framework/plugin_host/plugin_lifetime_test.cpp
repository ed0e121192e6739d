// Lifetime tests: an object made by a plugin keeps the plugin's library mapped until the object
// is destroyed, even after the registry that loaded it is gone; then the library is unmapped.
// Under ASan (ABLATE_SANITIZE=ON) a use-after-unload would crash these tests.
#include <dlfcn.h>

#include "fixture_echo.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "plugin_host/plugin_registry.hpp"

namespace ablate {
namespace {

// Whether the dynamic loader currently has `file` mapped (RTLD_NOLOAD never loads it).
bool is_mapped(const std::filesystem::path& file) {
  void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  ::dlclose(handle);
  return true;
}

TEST(PluginLifetime, ObjectOutlivesRegistryAndKeepsItsLibraryMapped) {
  const auto file = std::filesystem::canonical(testing::fixture("fixture_good"));
  ASSERT_FALSE(is_mapped(file));
  std::shared_ptr<testing::FixtureEcho> echo;
  {
    PluginRegistry registry;
    registry.load(file);
    ASSERT_TRUE(is_mapped(file));
    echo = registry.create<testing::FixtureEcho>("echo", {{"count", "3"}});
  }
  // The registry is gone; the object still runs plugin code (its vtable lives in the library).
  EXPECT_TRUE(is_mapped(file));
  EXPECT_EQ(echo->echo(), "flag=0 count=3 scale=0.5 mode=fast label=");
  echo.reset();  // destructor (plugin code) runs first, then the last library reference goes
  EXPECT_FALSE(is_mapped(file));
}

TEST(PluginLifetime, CopiesShareOneLibraryReference) {
  const auto file = std::filesystem::canonical(testing::fixture("fixture_good"));
  auto registry = std::make_unique<PluginRegistry>();
  registry->load(file);
  auto a = registry->create<testing::FixtureEcho>("echo", {{"count", "1"}});
  auto b = registry->create<testing::FixtureEcho>("echo", {{"count", "2"}});
  registry.reset();
  a.reset();
  EXPECT_TRUE(is_mapped(file));
  EXPECT_EQ(b->echo(), "flag=0 count=2 scale=0.5 mode=fast label=");
  b.reset();
  EXPECT_FALSE(is_mapped(file));
}

TEST(PluginLifetime, RegistryUnloadsLibrariesItCreatedNothingFrom) {
  const auto file = std::filesystem::canonical(testing::fixture("fixture_good"));
  {
    PluginRegistry registry;
    registry.scan({file.parent_path()});
    EXPECT_TRUE(is_mapped(file));
  }
  EXPECT_FALSE(is_mapped(file));
}

}  // namespace
}  // namespace ablate
