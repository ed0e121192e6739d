// The reference backend for tests of the framework core (autograd, ops, parameters), and
// deterministic test values. Loading and host helpers: backends/backend_test_util.hpp.
#pragma once

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "backends/backend_test_util.hpp"

namespace ablate::testing {

inline Backend& reference_backend() { return *builtin_backend("reference"); }

// Deterministic values in [-0.9, 0.9].
inline std::vector<float> ramp(std::int64_t n, float phase = 0.0f) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = std::sin(0.7f * static_cast<float>(i) + phase) * 0.9f;
  return v;
}

}  // namespace ablate::testing
