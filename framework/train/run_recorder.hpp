// The bridge between a training run and its run file (framework/results/run_file.hpp): declares
// the file's layout from the experiment (metric names, the probe batch, one attention slot per
// layer and kind, greedy-decoding logs, per-layer statistics), and records the probe passes.
// The probe pass runs on its own no-gradient, no-dropout graph: it never changes training.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "results/run_file.hpp"
#include "results/tensorboard.hpp"
#include "train/experiment.hpp"

namespace ablate::train {

class RunRecorder {
 public:
  // The probe: the first log.attention.probe_examples examples of the eval split (with the task's
  // text of each side). `samples`: decoded examples per samples row (0: none).
  RunRecorder(Experiment& experiment, std::vector<std::string> train_metrics, std::vector<std::string> eval_metrics,
              std::int64_t samples = 0);

  const results::RunLayout& layout() const { return layout_; }

  // Starts a new run file (refusing an existing one), or continues a stopped run's file from its
  // checkpoint step (rows logged after it are dropped).
  void create(const std::filesystem::path& file, const results::RunInfo& info);
  void resume(const std::filesystem::path& file, std::int64_t step);

  // Each row goes to the run file and, with log.tensorboard, to the run's TensorBoard event file.
  void train(std::int64_t step, const std::vector<double>& values);
  void eval(std::int64_t step, const std::map<std::string, double>& values);
  void samples(std::int64_t step, const results::SamplesLog& log);
  // One probe pass at `step`, recorded as per-layer statistics (with the gradients of that step's
  // backward) and/or as the probe's attention of every layer and kind plus its greedy decoding.
  void probe(std::int64_t step, bool stats, bool attention);
  void state(const results::RunState& s) { writer_->set_state(s); }
  void flush();

 private:
  // One probe forward pass: the captured attention (host copies, slot order) and layer outputs.
  struct ProbePass {
    std::vector<std::vector<float>> attention;  // per slot: [E, H, Q, K]
    model::ForwardCapture capture;
  };
  ProbePass probe_pass(std::int64_t step);
  void record_stats(std::int64_t step, const ProbePass& pass);
  void record_attention(std::int64_t step, const ProbePass& pass);

  Experiment& ex_;
  results::RunLayout layout_;
  model::DeviceBatch probe_batch_;
  std::vector<std::int32_t> src_lengths_, tgt_lengths_;  // of the probe, per stack's queries
  std::vector<std::string> layers_;                      // parameter layer names, stats columns
  std::optional<results::RunWriter> writer_;
  std::optional<results::EventFile> events_;  // log.tensorboard: beside the run file
};

}  // namespace ablate::train
