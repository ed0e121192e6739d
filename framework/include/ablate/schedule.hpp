// Kind "schedule": a learning-rate schedule, lr as a function of the optimizer step.
// The built-in plugins (constant, noam, cosine, wsd, inverse_sqrt, linear) live in plugins/schedule_*; the out-of-tree
// example in examples/schedule_step shows how a researcher adds one.
#pragma once

#include <cstdint>

#include "ablate/plugin.hpp"

namespace ablate {

class BOOST_SYMBOL_VISIBLE Schedule : public Component {
 public:
  static constexpr const char* kKind = "schedule";
  // Learning rate for optimizer step `step` (1-based: the first update uses step 1).
  virtual double learning_rate(std::int64_t step) const = 0;
};

}  // namespace ablate
