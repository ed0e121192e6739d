// The finite-difference gradient checker for backend ops, shared by the backend test programs.
// It returns a result (instead of only failing an EXPECT) so a test can prove it has teeth:
// a deliberately broken backward must be REPORTED as failing.
#pragma once

#include <string>

#include "backends/op_cases.hpp"

namespace ablate::testing {

struct GradCheckOptions {
  double h = 1e-2;        // step of the 4-point central difference (error O(h^4))
  double rtol = 3e-3;     // allowed |fd - analytic| relative to |fd| ...
  double atol = 1e-3;     // ... plus this fraction of the tensor's largest gradient magnitude
  int max_elements = 40;  // checked elements per input (a fixed random subset above that)
  double kink_retry = 8;  // a failing element is retried once with step h / kink_retry (ReLU kinks)
};

struct GradCheckResult {
  bool ok = true;
  int checked = 0;
  int failed = 0;
  int retried = 0;     // elements that passed only with the smaller step
  double worst = 0;    // largest |fd - analytic| / allowed (<= 1 passes)
  std::string report;  // one line per failing element (the first few) and a summary
};

// For L = sum over grad outputs of (upstream ⊙ output), compares the case's backward (run in
// F32 on `backend`, minus the gradient pre-fill) with d L / d input by central differences of
// forward runs. The case must have a backward.
GradCheckResult check_gradients(Backend& backend, const OpCase& c, const GradCheckOptions& options = {});

}  // namespace ablate::testing
