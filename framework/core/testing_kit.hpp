// The registry behind the plugin test kit (ablate/testing/kit.hpp), for Ablate's own tests: the
// in-tree test helpers (tests/backends/backend_test_util.cpp) share it instead of keeping a second one.
#pragma once

#include "plugin_host/plugin_registry.hpp"

namespace ablate::testing {

// The kit's process-wide registry: the plugins `ablate` finds (builtin_plugin_dir(), then
// ABLATE_PLUGIN_PATH) plus those added with load_plugins(). Created at first use, never destroyed.
PluginRegistry& kit_registry();

}  // namespace ablate::testing
