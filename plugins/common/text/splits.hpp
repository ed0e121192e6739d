// The train / eval / test split of the text tasks (translation, language_model over a file,
// classification): a deterministic shuffle of the example indices (Fisher-Yates driven by
// splitmix64, the same on every machine and standard library), then test = the first
// ceil(test_fraction * n), eval = the next ceil(valid_fraction * n), train = the rest. Each part
// keeps the shuffled order. valid_fraction 0 holds nothing out for eval: the eval part is the
// train part itself (toy experiments that memorise a handful of pairs, as the tutorials do).
#pragma once

#include <cstdint>
#include <vector>

namespace ablate_text {

// The splitmix64 generator (Steele, Lea, Flood 2014): advances `state`, returns the next value.
std::uint64_t splitmix64(std::uint64_t& state);

struct SplitIndices {
  std::vector<std::int64_t> train, eval, test;
};

// Throws ablate::Error unless both fractions are in [0, 1) and the train part is non-empty.
SplitIndices split_indices(std::int64_t n, double valid_fraction, double test_fraction, std::uint64_t seed);

}  // namespace ablate_text
