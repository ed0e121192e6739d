// The deterministic split of the text tasks (splits.hpp).
#include "splits.hpp"

#include <cmath>
#include <numeric>
#include <string>
#include <utility>

#include "ablate/error.hpp"

namespace ablate_text {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

SplitCounts split_counts(std::int64_t n, double valid_fraction, double test_fraction) {
  // ceil(f * n), forgiving the rounding of f * n (0.07 * 100 = 7.000000000000001 is 7).
  const auto part = [n](double f) { return static_cast<std::int64_t>(std::ceil(f * static_cast<double>(n) - 1e-9)); };
  if (!(valid_fraction >= 0.0 && valid_fraction < 1.0) || !(test_fraction >= 0.0 && test_fraction < 1.0))
    throw ablate::Error("valid_fraction and test_fraction must be in [0, 1), got " + std::to_string(valid_fraction) + " and " +
                            std::to_string(test_fraction),
                        "they are the fractions of the examples held out for evaluation and testing");
  const std::int64_t n_test = part(test_fraction), n_valid = part(valid_fraction);
  if (n_test + n_valid >= n)
    throw ablate::Error(std::to_string(n) + " examples leave no training data after " + std::to_string(n_test) + " test and " +
                            std::to_string(n_valid) + " eval examples; expected more examples or smaller fractions",
                        "lower valid_fraction / test_fraction, raise max_examples or max_len, or use a larger file");
  return {n - n_test - n_valid, n_valid, n_test};
}

SplitIndices split_indices(std::int64_t n, double valid_fraction, double test_fraction, std::uint64_t seed) {
  [[maybe_unused]] const auto [n_train, n_valid, n_test] = split_counts(n, valid_fraction, test_fraction);
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  std::uint64_t state = seed;
  for (std::size_t i = order.size(); i-- > 1;) std::swap(order[i], order[splitmix64(state) % (i + 1)]);
  SplitIndices s;
  const auto first = order.begin();
  s.test.assign(first, first + n_test);
  s.eval.assign(first + n_test, first + n_test + n_valid);
  s.train.assign(first + n_test + n_valid, order.end());
  if (n_valid == 0) s.eval = s.train;  // valid_fraction 0: evaluate on the train examples themselves
  return s;
}

SplitIndices contiguous_split_indices(std::int64_t n, double valid_fraction, double test_fraction) {
  const auto [n_train, n_valid, n_test] = split_counts(n, valid_fraction, test_fraction);
  const auto range = [](std::int64_t from, std::int64_t to) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(to - from));
    std::iota(v.begin(), v.end(), from);
    return v;
  };
  SplitIndices s;
  s.train = range(0, n_train);
  s.eval = n_valid == 0 ? s.train : range(n_train, n_train + n_valid);
  s.test = range(n - n_test, n);
  return s;
}

}  // namespace ablate_text
