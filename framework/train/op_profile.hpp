// The run's view of its backend plugin, HostedBackend: every op forwarded to the plugin, and what
// the plugin throws turned into a PluginFault naming it (plugins/plugin_call.hpp). And `ablate run
// --profile`: where a training step's time goes. With a profile, HostedBackend also times every
// op call (per op kind, forward and backward apart) while a training
// step is open; OpProfile adds them up and prints a table of milliseconds per step, share of
// the step and, for the GEMM-shaped ops, GFLOP/s. Time in a step outside every backend op is
// the framework's own (autograd graph, batching, the host side of the loss) and is shown as such.
// On a device backend (not host-addressable) each op is followed by synchronize(), so the
// profile serialises the stream: the per-op times are right, the step time is pessimistic.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "ablate/backend.hpp"
#include "ablate/backend_ops.hpp"

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
  CrossEntropy,
  Axpy,
  SumSquares,
  AdamUpdate,
  Memory,  // empty, fill, copies, cast, KV-cache writes
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

// A Backend that forwards every call to `inner` (a plugin's backend), turns what it throws into a
// PluginFault, and with a `profile` (may be null) times the call into it.
class HostedBackend final : public Backend {
 public:
  HostedBackend(std::shared_ptr<Backend> inner, std::shared_ptr<OpProfile> profile);

  BackendCaps caps() const override;
  Tensor empty(const Shape& shape, DType dtype) override;
  void synchronize() override;
  bool supports(OptionalOp op) const override;  // as the plugin announces it
  // Every other op, forwarded (ablate/backend_ops.hpp).
#define ABLATE_HOSTED_OP(name, params, args) void name params override;
  ABLATE_BACKEND_OPS(ABLATE_HOSTED_OP)
#undef ABLATE_HOSTED_OP

 private:
  // Runs `call` on the inner backend, timed into `op` with `flops` of work.
  template <typename F>
  void timed(ProfiledOp op, double flops, F&& call);

  std::shared_ptr<Backend> inner_;
  std::shared_ptr<OpProfile> profile_;
  bool sync_each_op_;
};

}  // namespace ablate::train
