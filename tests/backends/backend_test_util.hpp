// Shared by every test that runs a backend: the backend plugins of the built-in plugin dir
// (loaded once per test process, kept for its whole life, since tensors may outlive a test),
// and host <-> backend helpers that read BF16 back as floats.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ablate/backend.hpp"
#include "plugins/plugin_registry.hpp"

namespace ablate::testing {

// The registry of the built-in plugin dir, scanned once; never destroyed.
PluginRegistry& builtin_registry();
// The names of the backend plugins found there, in discovery order.
std::vector<std::string> builtin_backend_names();
// Backend `name` with `options`, created once per (name, options) and shared by all callers.
std::shared_ptr<Backend> builtin_backend(const std::string& name, const std::map<std::string, std::string>& options = {});
// A freshly created backend instance (for tests that need one of their own).
std::shared_ptr<Backend> new_builtin_backend(const std::string& name,
                                             const std::map<std::string, std::string>& options = {});

Tensor f32_tensor(Backend& be, const Shape& shape, const std::vector<float>& values);
Tensor i32_tensor(Backend& be, const Shape& shape, const std::vector<std::int32_t>& values);
// The tensor's values as floats (F32 as is, BF16 widened).
std::vector<float> host(Backend& be, const Tensor& t);

}  // namespace ablate::testing
