// DataOrder (data_order.hpp): per-epoch Fisher-Yates shuffles driven by Philox.
#include "train/data_order.hpp"

#include <numeric>
#include <string>
#include <utility>

#include "ablate/error.hpp"
#include "ablate/philox.hpp"

namespace ablate::train {
namespace {
constexpr std::uint32_t kShuffleStream = 0x5348u;  // "SH": the op id of the shuffle draws
}

DataOrder::DataOrder(std::int64_t examples, std::int64_t batch_size, std::uint64_t seed)
    : examples_(examples), batch_size_(batch_size), seed_(seed) {
  if (examples <= 0) throw Error("training split is empty", "the task must give at least one training example");
  if (batch_size <= 0) throw Error("batch size " + std::to_string(batch_size) + " must be > 0");
}

std::vector<std::int64_t> DataOrder::permutation(std::int64_t epoch) const {
  std::vector<std::int64_t> p(static_cast<std::size_t>(examples_));
  std::iota(p.begin(), p.end(), 0);
  const RngKey key{seed_, static_cast<std::uint64_t>(epoch), kShuffleStream};
  float u[4];
  for (std::int64_t i = examples_ - 1; i > 0; --i) {  // Fisher-Yates, one uniform per swap
    const std::int64_t draw = examples_ - 1 - i;
    if (draw % 4 == 0) philox_uniform4(key, static_cast<std::uint64_t>(draw / 4), u);
    auto j = static_cast<std::int64_t>(u[draw % 4] * static_cast<float>(i + 1));
    if (j > i) j = i;  // guards float rounding at the top of the range
    std::swap(p[static_cast<std::size_t>(i)], p[static_cast<std::size_t>(j)]);
  }
  return p;
}

std::vector<std::int64_t> DataOrder::batch(std::int64_t step) {
  if (step < 1) throw Error("DataOrder::batch: steps are 1-based, got " + std::to_string(step));
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(batch_size_));
  for (std::int64_t k = 0; k < batch_size_; ++k) {
    const std::int64_t pos = (step - 1) * batch_size_ + k;
    const std::int64_t epoch = pos / examples_;
    if (epoch != cached_epoch_) {
      cached_ = permutation(epoch);
      cached_epoch_ = epoch;
    }
    out.push_back(cached_[static_cast<std::size_t>(pos % examples_)]);
  }
  return out;
}

}  // namespace ablate::train
