// The train / eval / test split of the text tasks (translation, language_model over a file,
// classification), in one of two orders. Random: a deterministic shuffle of the example indices
// (Fisher-Yates driven by splitmix64, the same on every machine and standard library), then
// test = the first ceil(test_fraction * n), eval = the next ceil(valid_fraction * n), train = the
// rest, each part in the shuffled order. Contiguous (a language model's windows of one text):
// train = the first indices, eval = the stretch after them, test = the last ceil(test_fraction * n),
// in file order, so no held-out window has a training neighbour. In both, valid_fraction 0 holds
// nothing out for eval: the eval part is the train part itself (toy experiments that memorise a
// handful of pairs, as the tutorials do).
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
// The contiguous split of 0 .. n-1: train | eval | test in that order. Throws as split_indices.
SplitIndices contiguous_split_indices(std::int64_t n, double valid_fraction, double test_fraction);
// How many of n examples each part of a split holds: test ceil(test_fraction * n), eval
// ceil(valid_fraction * n) (0: the eval part is the train part), train the rest. Throws as
// split_indices. For splits too large to list (token shards).
struct SplitCounts {
  std::int64_t train = 0, eval = 0, test = 0;
};
SplitCounts split_counts(std::int64_t n, double valid_fraction, double test_fraction);

}  // namespace ablate_text
