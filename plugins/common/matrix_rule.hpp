// What the per-matrix optimizer rules (plugins/optimizer_muon, optimizer_adafactor) share: a
// parameter seen as the matrix [rows, cols] they work on, and a sum of squares read back to the
// host (Muon's Frobenius norm, Adafactor's RMS): one synchronisation each.
#pragma once

#include <cstdint>
#include <utility>

#include "ablate/backend.hpp"

namespace ablate_plugins {

// A parameter of shape s as [rows, cols]: cols its last dim, rows the rest (a vector is [1, n]).
inline std::pair<std::int64_t, std::int64_t> rows_cols(const ablate::Shape& s) { return {s.numel() / s.last(), s.last()}; }

// sum(x^2) on the host, through `total` (an f32 [1] scratch tensor of the backend's).
inline double host_sum_squares(ablate::Backend& be, const ablate::Tensor& x, ablate::Tensor& total) {
  be.fill(total, 0.0f);
  be.sum_squares(total, x);
  float out = 0.0f;
  be.copy_to_host(&out, total);
  return out;
}

}  // namespace ablate_plugins
