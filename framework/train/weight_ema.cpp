// WeightEma (weight_ema.hpp): the average over the store's packed weights, saved and restored by
// swapping it into the store around the checkpoint code, so the file format stays the one format.
#include "train/weight_ema.hpp"

#include <algorithm>
#include <system_error>

#include "ablate/backend.hpp"
#include "ablate/error.hpp"

namespace ablate::train {
namespace fs = std::filesystem;

fs::path ema_file(const fs::path& run_dir, std::int64_t step) { return step_file(run_dir, "ema", step); }

WeightEma::WeightEma(ParameterStore& store, double decay) : store_(store), decay_(decay) {
  if (!(decay > 0.0 && decay < 1.0)) throw Error("train.ema: the decay must be in (0, 1), got " + std::to_string(decay));
  const Tensor& value = store_.packed().value;  // [N]
  Backend& be = store_.backend();
  ema_ = be.empty(value.shape(), DType::F32);
  tmp_ = be.empty(value.shape(), DType::F32);
  be.copy(ema_, value);
}

void WeightEma::update(std::int64_t step) {
  const double warm = (1.0 + static_cast<double>(step)) / (10.0 + static_cast<double>(step));
  const auto d = static_cast<float>(std::min(decay_, warm));
  Backend& be = store_.backend();
  be.add_forward(tmp_, ema_, store_.packed().value, d, 1.0f - d);
  be.copy(ema_, tmp_);
}

void WeightEma::save(const fs::path& run_dir, const TrainState& state, const std::string& spec_yaml) {
  Backend& be = store_.backend();
  Tensor value = store_.packed().value;  // the store's own [N], its parameters are views of it
  be.copy(tmp_, value);
  be.copy(value, ema_);
  try {
    save_checkpoint(ema_file(run_dir, state.step), store_, state, spec_yaml, false);
  } catch (...) {
    be.copy(value, tmp_);
    throw;
  }
  be.copy(value, tmp_);
}

void WeightEma::keep_newest(const fs::path& run_dir) { train::keep_newest(run_dir, "ema", 1); }

void WeightEma::restore(const fs::path& run_dir, std::int64_t step) {
  const fs::path file = ema_file(run_dir, step);
  std::error_code ec;
  if (!fs::exists(file, ec))
    throw UsageError("train.ema is set, but " + file.string() + " (the average at the checkpoint's step) is missing",
                     "the run was trained without train.ema, or the file was removed: resume without train.ema, or "
                     "train afresh");
  load_checkpoint(file, store_);
  store_.backend().copy(ema_, store_.packed().value);
}

}  // namespace ablate::train
