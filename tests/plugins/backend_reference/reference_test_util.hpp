// Shared helpers of the reference backend tests: the reference backend as loaded from its
// plugin (the real .so in the built-in plugin dir); host helpers come from backends/backend_test_util.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ablate/backend.hpp"
#include "ablate/bf16.hpp"
#include "backends/backend_test_util.hpp"

namespace ablate::testing {

inline std::shared_ptr<Backend> reference_backend() { return builtin_backend("reference"); }

}  // namespace ablate::testing
