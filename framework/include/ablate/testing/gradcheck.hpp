// gradcheck: compares the gradients autograd computes for a function of Vars with central
// finite differences. For plugin authors: check a new component (or op) on any backend with
//   auto r = ablate::testing::gradcheck(backend, [&](Graph& g, const std::vector<Var>& in) {
//     return my_component.forward(g, in[0]); }, {input_tensor});
//   EXPECT_TRUE(r.ok) << r.report;
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ablate/autograd.hpp"
#include "ablate/parameters.hpp"

namespace ablate::testing {

struct GradcheckOptions {
  double eps = 1e-2;   // finite-difference step (F32 values: not much smaller)
  double rtol = 2e-2;  // |analytic - numeric| <= atol + rtol * max(|analytic|, |numeric|)
  double atol = 1e-3;
  std::uint64_t seed = 1;                    // for the random output weights and the graph's RNG (dropout)
  std::int64_t max_elements_per_input = 48;  // checks a deterministic subset of larger inputs
};

struct GradcheckResult {
  bool ok = true;
  double max_abs_error = 0.0;
  std::int64_t checked = 0;  // number of input elements compared
  std::string report;        // the mismatches (input, element, analytic, numeric), if any
};

// f builds a value from `inputs` (F32 tensors, all treated as differentiable leaves). The check
// uses L = sum(r ⊙ f(x)) with fixed random r; f must be deterministic given the graph's seed.
using GradcheckFn = std::function<Var(Graph&, const std::vector<Var>&)>;
GradcheckResult gradcheck(Backend& backend, const GradcheckFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options = {});

// The same for parameters: what backward accumulates into each Parameter::grad of `store` (F32
// values) against central differences, on up to max_elements_per_input elements of each. f reads
// the parameters through Graph::parameter, e.g. [&](Graph& g) { return block.forward(g, g.constant(x), s); }.
// Zeroes the store's gradients first; leaves the values as they were.
GradcheckResult parameter_gradcheck(Backend& backend, ParameterStore& store, const std::function<Var(Graph&)>& f,
                                    const GradcheckOptions& options = {});

}  // namespace ablate::testing
