// Shared helpers of the reference backend tests: the reference backend as loaded from its
// plugin (the real .so in the built-in plugin dir), and small host upload/download helpers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ablate/backend.hpp"
#include "ablate/bf16.hpp"
#include "plugins/plugin_registry.hpp"

namespace ablate::testing {

inline std::shared_ptr<Backend> reference_backend() {
  static PluginRegistry* registry = [] {
    auto* r = new PluginRegistry();  // never destroyed (but reachable): tensors may outlive tests
    r->scan({builtin_plugin_dir()});
    return r;
  }();
  static std::shared_ptr<Backend> be = registry->create<Backend>("reference");
  return be;
}

inline Tensor f32_tensor(Backend& be, const Shape& s, const std::vector<float>& v) {
  Tensor t = be.empty(s, DType::F32);
  be.copy_from_host(t, v.data());
  return t;
}

inline Tensor i32_tensor(Backend& be, const Shape& s, const std::vector<std::int32_t>& v) {
  Tensor t = be.empty(s, DType::I32);
  be.copy_from_host(t, v.data());
  return t;
}

inline std::vector<float> host(Backend& be, const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  if (t.dtype() == DType::BF16) {
    std::vector<std::uint16_t> b(v.size());
    be.copy_to_host(b.data(), t);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = bf16_to_float(b[i]);
  } else {
    be.copy_to_host(v.data(), t);
  }
  return v;
}

}  // namespace ablate::testing
