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

namespace ablate::train {

// The op rows of the profile, one per op and direction.
enum class ProfiledOp : std::uint8_t {
  LinearFwd, LinearBwd, MatmulFwd, MatmulBwd, AttentionFwd, AttentionBwd, LayerNormFwd, LayerNormBwd,
  RmsNormFwd, RmsNormBwd, ActivationFwd, ActivationBwd, AddFwd, AddBwd, MulFwd, MulBwd, DropoutFwd,
  DropoutBwd, EmbeddingFwd, EmbeddingBwd, HeadsFwd, HeadsBwd, RopeFwd, RopeBwd, SliceFwd, SliceBwd, RowwiseFwd, RowwiseBwd,
  CrossEntropy, Axpy,
  SumSquares, AdamUpdate,
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
  void fill(Tensor& y, float value) override;
  void copy_from_host(Tensor& dst, const void* src) override;
  void copy_to_host(void* dst, const Tensor& src) override;
  void copy(Tensor& dst, const Tensor& src) override;
  void synchronize() override;
  void linear_forward(Tensor& y, Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b, Activation act) override;
  void linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w,
                       const Tensor* pre, const Tensor& y, Activation act) override;
  void matmul_forward(Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, float alpha) override;
  void matmul_backward(Tensor* da, Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b, bool trans_a,
                       bool trans_b, float alpha) override;
  void attention_forward(Tensor& out, Tensor& lse, Tensor* probs, const Tensor& q, const Tensor& k, const Tensor& v,
                         const AttentionParams& params) override;
  void attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout, const Tensor& out, const Tensor& lse,
                          const Tensor& q, const Tensor& k, const Tensor& v, const AttentionParams& params) override;
  void layer_norm_forward(Tensor& y, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                          float eps) override;
  void layer_norm_backward(Tensor* dx, Tensor* dgamma, Tensor* dbeta, const Tensor& dy, const Tensor& x,
                           const Tensor& mean, const Tensor& rstd, const Tensor& gamma) override;
  void rms_norm_forward(Tensor& y, Tensor& rstd, const Tensor& x, const Tensor& gamma, float eps) override;
  void rms_norm_backward(Tensor* dx, Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                         const Tensor& gamma) override;
  void activation_forward(Tensor& y, const Tensor& x, Activation act) override;
  void activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, Activation act) override;
  void add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) override;
  void add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) override;
  void mul_forward(Tensor& y, const Tensor& a, const Tensor& b) override;
  void mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) override;
  void axpy(Tensor& y, const Tensor& x, float alpha) override;
  void dropout_forward(Tensor& y, const Tensor& x, float p, const RngKey& rng) override;
  void dropout_backward(Tensor& dx, const Tensor& dy, float p, const RngKey& rng) override;
  void embedding_forward(Tensor& y, const Tensor& ids, const Tensor& table) override;
  void embedding_backward(Tensor& dtable, const Tensor& dy, const Tensor& ids) override;
  void split_heads_forward(Tensor& y, const Tensor& x, int parts, int part) override;
  void split_heads_backward(Tensor& dx, const Tensor& dy, int parts, int part) override;
  void merge_heads_forward(Tensor& y, const Tensor& x) override;
  void merge_heads_backward(Tensor& dx, const Tensor& dy) override;
  void write_time_slice(Tensor& dst, const Tensor& src, std::int64_t offset) override;
  void cross_entropy_forward(Tensor& loss, Tensor& dlogits, Tensor& stats, const Tensor& logits, const Tensor& targets,
                             std::int32_t ignore_index, float label_smoothing) override;
  void sum_squares(Tensor& total, const Tensor& x) override;
  void adam_update(Tensor& w, Tensor& m, Tensor& v, Tensor* w_low, const Tensor& grad, const AdamParams& params) override;
  void cast(Tensor& y, const Tensor& x) override;
  // The optional ops: announced as the plugin announces them, forwarded like the others.
  bool supports(OptionalOp op) const override;
  void rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) override;
  void rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) override;
  void slice_last_forward(Tensor& y, const Tensor& x, std::int64_t offset) override;
  void slice_last_backward(Tensor& dx, const Tensor& dy, std::int64_t offset) override;
  void softmax_last_forward(Tensor& y, const Tensor& x) override;
  void softmax_last_backward(Tensor& dx, const Tensor& dy, const Tensor& y) override;
  void sum_last_forward(Tensor& y, const Tensor& x) override;
  void sum_last_backward(Tensor& dx, const Tensor& dy) override;
  void pointwise_forward(Tensor& y, const Tensor& x, Pointwise f) override;
  void pointwise_backward(Tensor& dx, const Tensor& dy, const Tensor& y, Pointwise f) override;

 private:
  // Runs `call` on the inner backend, timed into `op` with `flops` of work.
  template <typename F>
  void timed(ProfiledOp op, double flops, F&& call);

  std::shared_ptr<Backend> inner_;
  std::shared_ptr<OpProfile> profile_;
  bool sync_each_op_;
};

}  // namespace ablate::train
