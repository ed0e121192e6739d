// An exponential moving average of a run's weights (train.ema: DECAY), kept beside training and
// saved with every checkpoint as RUN/ema-STEP.bin (the checkpoint format, weights only), so that
// `ablate eval RUN --ema` scores the averaged weights and a resumed run continues the average bit
// for bit. Training itself is unchanged: the optimizer never sees the average.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "ablate/parameters.hpp"
#include "train/checkpoint.hpp"

namespace ablate::train {

// RUN/ema-STEP.bin: the average of `run_dir`'s weights at `step`.
std::filesystem::path ema_file(const std::filesystem::path& run_dir, std::int64_t step);

class WeightEma {
 public:
  // Starts the average at the store's current weights. `decay` in (0, 1).
  WeightEma(ParameterStore& store, double decay);
  // After optimizer step `step` (1-based): ema = d ema + (1 - d) weights, with
  // d = min(decay, (1 + step) / (10 + step)) (TensorFlow's ExponentialMovingAverage with
  // num_updates: the first steps are not held at the initial weights). Two elementwise backend
  // calls over the packed weights [N].
  void update(std::int64_t step);
  // Writes ema_file(run_dir, state.step): the store's values are swapped for the average while the
  // file is written, then put back exactly.
  void save(const std::filesystem::path& run_dir, const TrainState& state, const std::string& spec_yaml);
  // Removes every ema-STEP.bin of `run_dir` but the newest (after checkpoint.bin of its step is written).
  static void keep_newest(const std::filesystem::path& run_dir);
  // Reads ema_file(run_dir, step) into the average; call it before loading checkpoint.bin (a
  // weights-only file leaves the store without moments). Throws UsageError naming the file when
  // it is missing.
  void restore(const std::filesystem::path& run_dir, std::int64_t step);

 private:
  ParameterStore& store_;
  double decay_;
  Tensor ema_, tmp_;  // [N]: the average over the packed weights, and scratch of the same size
};

}  // namespace ablate::train
