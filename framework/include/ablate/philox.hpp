// The counter-based RNG behind every random draw in Ablate (dropout masks): Philox4x32-10
// (Salmon et al., SC'11). A draw is a pure function of (seed, step, op id, element index), so
// every backend, CPU or GPU, in any thread order, draws the same mask, and a resumed run draws
// what the uninterrupted run would have. Header-only; usable from CUDA (ABLATE_HD).
#pragma once

#include <cstdint>

#include "ablate/host_device.hpp"

namespace ablate {

// What identifies one random tensor: the run's seed, the optimizer step, and the op's id
// within the step (assigned in program order by the autograd graph).
struct RngKey {
  std::uint64_t seed = 0;
  std::uint64_t step = 0;
  std::uint32_t op_id = 0;
};

struct Philox4 {
  std::uint32_t v[4];
};

// Philox4x32-10 of counter (c0..c3) under key (k0, k1).
ABLATE_HD inline Philox4 philox4x32_10(std::uint32_t c0, std::uint32_t c1, std::uint32_t c2, std::uint32_t c3, std::uint32_t k0,
                                       std::uint32_t k1) {
  constexpr std::uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(kM0) * c0;
    const std::uint64_t p1 = static_cast<std::uint64_t>(kM1) * c2;
    const std::uint32_t hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
    const std::uint32_t hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kW0;
    k1 += kW1;
  }
  return Philox4{{c0, c1, c2, c3}};
}

// The four uniform floats in [0, 1) for elements 4*block .. 4*block+3 of the tensor `key` names.
// Counter = (block low, block high, op_id, step); key = (seed low, seed high ^ step high).
ABLATE_HD inline void philox_uniform4(const RngKey& key, std::uint64_t block, float out[4]) {
  const Philox4 r = philox4x32_10(static_cast<std::uint32_t>(block), static_cast<std::uint32_t>(block >> 32), key.op_id,
                                  static_cast<std::uint32_t>(key.step), static_cast<std::uint32_t>(key.seed),
                                  static_cast<std::uint32_t>(key.seed >> 32) ^ static_cast<std::uint32_t>(key.step >> 32));
  for (int i = 0; i < 4; ++i) out[i] = static_cast<float>(r.v[i] >> 8) * (1.0f / 16777216.0f);  // 24 bits
}

// Whether dropout with drop probability p keeps elements 4*block .. 4*block+3 of the tensor `key`
// names: one Philox draw serves the four (kernels that handle an element each waste three).
ABLATE_HD inline void dropout_keep4(const RngKey& key, std::uint64_t block, float p, bool keep[4]) {
  float u[4];
  philox_uniform4(key, block, u);
  for (int i = 0; i < 4; ++i) keep[i] = u[i] >= p;
}

// Whether dropout with drop probability p keeps element `index` of the tensor `key` names.
ABLATE_HD inline bool dropout_keep(const RngKey& key, std::uint64_t index, float p) {
  bool keep[4];
  dropout_keep4(key, index / 4, p, keep);
  return keep[index % 4];
}

}  // namespace ablate
