// DataOrder (data_order.hpp): per-epoch Fisher-Yates shuffles driven by Philox (a Feistel
// bijection for splits too large for a table), cut into fixed batches or into length-bucketed
// batches of a token budget.
#include "train/data_order.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "ablate/error.hpp"
#include "ablate/philox.hpp"

namespace ablate::train {
namespace {
constexpr std::uint32_t kShuffleStream = 0x5348u;       // "SH": the op id of the shuffle draws
constexpr std::uint32_t kBatchShuffleStream = 0x5342u;  // "SB": the shuffle of an epoch's token batches
constexpr std::uint32_t kFeistelStream = 0x5346u;       // "SF": the round keys of a large split's bijection

// Fisher-Yates over v with one Philox uniform per swap from `key`.
template <class T>
void shuffle(std::vector<T>& v, const RngKey& key) {
  const auto n = static_cast<std::int64_t>(v.size());
  float u[4];
  for (std::int64_t i = n - 1; i > 0; --i) {
    const std::int64_t draw = n - 1 - i;
    if (draw % 4 == 0) philox_uniform4(key, static_cast<std::uint64_t>(draw / 4), u);
    auto j = static_cast<std::int64_t>(u[draw % 4] * static_cast<float>(i + 1));
    if (j > i) j = i;  // guards float rounding at the top of the range
    std::swap(v[static_cast<std::size_t>(i)], v[static_cast<std::size_t>(j)]);
  }
}
}  // namespace

DataOrder::DataOrder(std::int64_t examples, std::int64_t batch_size, std::uint64_t seed)
    : examples_(examples), batch_size_(batch_size), seed_(seed) {
  if (examples <= 0) throw Error("training split is empty", "the task must give at least one training example");
  if (batch_size <= 0) throw Error("batch size " + std::to_string(batch_size) + " must be > 0");
}

DataOrder DataOrder::by_tokens(std::vector<std::int64_t> sizes, std::int64_t budget, std::uint64_t seed) {
  DataOrder order(static_cast<std::int64_t>(sizes.size()), 1, seed);
  const std::int64_t largest = *std::max_element(sizes.begin(), sizes.end());
  if (budget < largest)
    throw Error("a batch of " + std::to_string(budget) + " tokens cannot hold the longest training example (" +
                    std::to_string(largest) + " tokens with bos/eos)",
                "raise train.batch_tokens to at least " + std::to_string(largest));
  order.sizes_ = std::move(sizes);
  order.budget_ = budget;
  order.cached_batches_ = order.token_batches(0);  // the first batches read; their count is every epoch's
  order.cached_epoch_ = 0;
  order.batches_per_epoch_ = static_cast<std::int64_t>(order.cached_batches_.size());
  return order;
}

std::int64_t DataOrder::permuted_index(std::int64_t i, std::int64_t n, std::uint64_t seed, std::int64_t epoch) {
  if (n < 1 || i < 0 || i >= n)
    throw Error("DataOrder::permuted_index: position " + std::to_string(i) + " is outside [0, " + std::to_string(n) + ")");
  int bits = 2;
  while (bits < 62 && (std::uint64_t{1} << bits) < static_cast<std::uint64_t>(n)) bits += 2;
  const int half = bits / 2;
  const std::uint64_t mask = (std::uint64_t{1} << half) - 1;
  const RngKey key{seed, static_cast<std::uint64_t>(epoch), kFeistelStream};
  const auto round = [&](std::uint64_t r, int k) {  // the round function: Philox of (half, round) under the key
    const Philox4 p =
        philox4x32_10(static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(r >> 32), key.op_id,
                      static_cast<std::uint32_t>(k) ^ static_cast<std::uint32_t>(key.step), static_cast<std::uint32_t>(key.seed),
                      static_cast<std::uint32_t>(key.seed >> 32) ^ static_cast<std::uint32_t>(key.step >> 32));
    return ((static_cast<std::uint64_t>(p.v[1]) << 32) | p.v[0]) & mask;
  };
  auto x = static_cast<std::uint64_t>(i);
  do {  // cycle walking: a value outside [0, n) goes through the network again
    std::uint64_t left = x >> half, right = x & mask;
    for (int k = 0; k < 4; ++k) {
      const std::uint64_t next = left ^ round(right, k);
      left = right;
      right = next;
    }
    x = (left << half) | right;
  } while (x >= static_cast<std::uint64_t>(n));
  return static_cast<std::int64_t>(x);
}

std::vector<std::int64_t> DataOrder::permutation(std::int64_t epoch) const {
  if (examples_ > kShuffledExamples && sizes_.empty()) {
    std::vector<std::int64_t> p(static_cast<std::size_t>(examples_));
    for (std::int64_t i = 0; i < examples_; ++i) p[static_cast<std::size_t>(i)] = permuted_index(i, examples_, seed_, epoch);
    return p;
  }
  std::vector<std::int64_t> p(static_cast<std::size_t>(examples_));
  std::iota(p.begin(), p.end(), 0);
  shuffle(p, RngKey{seed_, static_cast<std::uint64_t>(epoch), kShuffleStream});
  return p;
}

std::vector<std::vector<std::int64_t>> DataOrder::token_batches(std::int64_t epoch) const {
  std::vector<std::int64_t> p = permutation(epoch);
  const auto size = [this](std::int64_t i) { return sizes_[static_cast<std::size_t>(i)]; };
  std::stable_sort(p.begin(), p.end(), [&](std::int64_t a, std::int64_t b) { return size(a) < size(b); });
  // The sorted sizes are the same every epoch, so are the cuts: only which examples fill them changes.
  std::vector<std::vector<std::int64_t>> batches(1);
  std::int64_t widest = 0;
  for (std::int64_t i : p) {
    const std::int64_t rows = static_cast<std::int64_t>(batches.back().size()) + 1;
    if (rows > 1 && rows * std::max(widest, size(i)) > budget_) {
      batches.emplace_back();
      widest = 0;
    }
    batches.back().push_back(i);
    widest = std::max(widest, size(i));
  }
  shuffle(batches, RngKey{seed_, static_cast<std::uint64_t>(epoch), kBatchShuffleStream});
  return batches;
}

std::vector<std::int64_t> DataOrder::batch(std::int64_t n) {
  if (n < 1) throw Error("DataOrder::batch: batches are numbered from 1, got " + std::to_string(n));
  if (!sizes_.empty()) {
    const std::int64_t epoch = (n - 1) / batches_per_epoch_;
    if (epoch != cached_epoch_) {
      cached_batches_ = token_batches(epoch);
      cached_epoch_ = epoch;
    }
    return cached_batches_[static_cast<std::size_t>((n - 1) % batches_per_epoch_)];
  }
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(batch_size_));
  for (std::int64_t k = 0; k < batch_size_; ++k) {
    const std::int64_t pos = (n - 1) * batch_size_ + k;
    const std::int64_t epoch = pos / examples_;
    if (examples_ > kShuffledExamples) {
      out.push_back(permuted_index(pos % examples_, examples_, seed_, epoch));
      continue;
    }
    if (epoch != cached_epoch_) {
      cached_ = permutation(epoch);
      cached_epoch_ = epoch;
    }
    out.push_back(cached_[static_cast<std::size_t>(pos % examples_)]);
  }
  return out;
}

}  // namespace ablate::train
