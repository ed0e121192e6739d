// `ablate run --profile`: where a training step's time goes. The run's HostedBackend
// (hosted_backend.hpp) times every op call (per op kind, forward and backward apart) while a
// training step is open; OpProfile adds them up and prints a table of milliseconds per step, share
// of the step and, for the GEMM-shaped ops, GFLOP/s. Time in a step outside every backend op is
// the framework's own (autograd graph, batching, the host side of the loss) and is shown as such.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>

namespace ablate::train {

// The op rows of the profile, one per op and direction.
enum class ProfiledOp : std::uint8_t {
  LinearFwd,
  LinearBwd,
  MatmulFwd,
  MatmulBwd,
  AttentionFwd,
  AttentionBwd,
  LayerNormFwd,
  LayerNormBwd,
  RmsNormFwd,
  RmsNormBwd,
  ActivationFwd,
  ActivationBwd,
  AddFwd,
  AddBwd,
  MulFwd,
  MulBwd,
  DropoutFwd,
  DropoutBwd,
  DropoutAddFwd,
  LinearDropoutFwd,  // linear with its dropout (OptionalOp::linear_dropout)
  LinearDropoutBwd,
  EmbeddingFwd,
  EmbeddingBwd,
  HeadsFwd,
  HeadsBwd,
  RopeFwd,
  RopeBwd,
  SliceFwd,
  SliceBwd,
  RowwiseFwd,
  RowwiseBwd,
  IndexFwd,  // compare, permute
  IndexBwd,
  CrossEntropy,
  Axpy,
  SumSquares,
  AdamUpdate,
  MemAlloc,  // empty: a new tensor
  MemFill,
  MemCopy,  // copies (and from/to the host), KV-cache writes
  MemCast,
  Count
};

class OpProfile {
 public:
  using Clock = std::chrono::steady_clock;

  // Ops are counted only between begin_step() and end_step() (training steps; evaluation,
  // probes and logging are left out). The first step of the process is warm-up (it allocates
  // memory and creates oneDNN primitives) and is not counted.
  void begin_step();
  void end_step();
  bool in_step() const { return in_step_; }
  void add(ProfiledOp op, double seconds, double flops);

  // The table: per op row, ms per step, share of the step time, calls per step, GFLOP/s; then
  // the framework's time outside the backend and the step total.
  std::string report() const;

 private:
  struct Row {
    double seconds = 0.0, flops = 0.0;
    std::int64_t calls = 0;
  };
  std::array<Row, static_cast<std::size_t>(ProfiledOp::Count)> rows_{};
  std::int64_t steps_ = 0;
  bool warmed_up_ = false;
  double step_seconds_ = 0.0;
  Clock::time_point step_start_{};
  bool in_step_ = false;
};

// A row's name and pass, as the table prints them ("linear (fwd)").
std::string profiled_op_label(ProfiledOp op);

}  // namespace ablate::train
