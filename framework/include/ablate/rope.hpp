// The angle of rotary positions (RoPE), defined once for every backend: host code (reference,
// onednn) and CUDA kernels (cudnn) include this header, so all start from the same double angle.
#pragma once

#include <cmath>
#include <cstdint>

#include "ablate/host_device.hpp"

namespace ablate {

// The angle by which rope turns pair i (i < rotary / 2) at `position`: position * base^(-2i/rotary)
// (RoFormer's frequencies).
ABLATE_HD inline double rope_angle(std::int64_t position, std::int64_t i, int rotary, float base) {
  return static_cast<double>(position) * ::pow(static_cast<double>(base), -2.0 * static_cast<double>(i) / rotary);
}

// The angle of pair i at `position` when the caller gives the pair's frequency (rope with given
// frequencies: interpolated or YaRN-style scaled positions): position * freq.
ABLATE_HD inline double rope_frequency_angle(std::int64_t position, float freq) {
  return static_cast<double>(position) * static_cast<double>(freq);
}

}  // namespace ablate
