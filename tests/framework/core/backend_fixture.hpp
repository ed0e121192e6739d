// The reference backend, loaded once from the built-in plugin directory, for tests of the
// framework core (autograd, ops, parameters) and helpers to move values in and out of it.
#pragma once

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "ablate/backend.hpp"
#include "plugins/plugin_registry.hpp"

namespace ablate::testing {

inline Backend& reference_backend() {
  static PluginRegistry* registry = [] {
    auto* r = new PluginRegistry();  // intentionally never destroyed: tensors may outlive tests
    r->scan({builtin_plugin_dir()});
    return r;
  }();
  static std::shared_ptr<Backend> backend = registry->create<Backend>("reference");
  return *backend;
}

inline Tensor host_tensor(Backend& be, const Shape& shape, const std::vector<float>& values) {
  Tensor t = be.empty(shape, DType::F32);
  be.copy_from_host(t, values.data());
  return t;
}

inline Tensor host_ids(Backend& be, const Shape& shape, const std::vector<std::int32_t>& values) {
  Tensor t = be.empty(shape, DType::I32);
  be.copy_from_host(t, values.data());
  return t;
}

inline std::vector<float> to_host(Backend& be, const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  be.copy_to_host(out.data(), t);
  return out;
}

// Deterministic values in [-1, 1).
inline std::vector<float> ramp(std::int64_t n, float phase = 0.0f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = std::sin(0.7f * static_cast<float>(i) + phase) * 0.9f;
  return v;
}

}  // namespace ablate::testing
