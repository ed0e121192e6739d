// bfloat16 <-> float conversion on the host (round to nearest even; NaN stays NaN). The one
// definition every CPU backend and test uses, so their bf16 results agree bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace ablate {

inline std::uint16_t float_to_bf16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

inline float bf16_to_float(std::uint16_t b) {
  const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// f rounded to the nearest bf16 value, as a float.
inline float round_to_bf16(float f) { return bf16_to_float(float_to_bf16(f)); }

// Every value as bf16 bits: the host data of a bf16 tensor holding v (for copy_from_host).
inline std::vector<std::uint16_t> to_bf16(const std::vector<float>& v) {
  std::vector<std::uint16_t> b(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) b[i] = float_to_bf16(v[i]);
  return b;
}

}  // namespace ablate
