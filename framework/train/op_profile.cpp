// The run's view of its backend plugin and the per-op profile of `ablate run --profile` (op_profile.hpp).
#include "train/op_profile.hpp"

#include "plugins/plugin_call.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace ablate::train {
namespace {

struct OpName {
  const char* op;
  const char* direction;
};

constexpr OpName kNames[] = {
    {"linear", "fwd"},        {"linear", "bwd"},     {"matmul", "fwd"},      {"matmul", "bwd"},
    {"attention", "fwd"},     {"attention", "bwd"},  {"layer_norm", "fwd"},  {"layer_norm", "bwd"},
    {"rms_norm", "fwd"},      {"rms_norm", "bwd"},   {"activation", "fwd"},  {"activation", "bwd"},
    {"add", "fwd"},           {"add", "bwd"},        {"mul", "fwd"},         {"mul", "bwd"},
    {"dropout", "fwd"},       {"dropout", "bwd"},    {"embedding", "fwd"},   {"embedding", "bwd"},
    {"split/merge heads", "fwd"}, {"split/merge heads", "bwd"}, {"rope", "fwd"}, {"rope", "bwd"},
    {"slice/concat last", "fwd"}, {"slice/concat last", "bwd"}, {"softmax/sum/exp/sigmoid", "fwd"},
    {"softmax/sum/exp/sigmoid", "bwd"}, {"cross_entropy", "fwd+bwd"},
    {"axpy", "bwd"},          {"sum_squares", "optim"}, {"adam_update", "optim"},
    {"memory (alloc, fill, copy, cast)", "-"},
};
static_assert(std::size(kNames) == static_cast<std::size_t>(ProfiledOp::Count), "one name per profiled op");

double d(std::int64_t v) { return static_cast<double>(v); }

// 2 * rows * in * out: one GEMM of a linear layer.
double linear_flops(const Tensor& x, const Tensor& w) { return 2.0 * d(x.shape().rows()) * d(w.shape()[0]) * d(w.shape()[1]); }

// 2 * Bt * M * N * K of c[Bt, M, N] = op(a) · op(b).
double matmul_flops(const Tensor& c, const Tensor& a, bool trans_a) {
  const Shape& s = a.shape();
  const std::int64_t k = trans_a ? s[s.rank() - 2] : s.last();
  return 2.0 * d(c.numel()) * d(k);
}

// q·k^T and p·v, dense (a causal mask is not subtracted): 4 * B * H * T * S * Dh.
double attention_flops(const Tensor& q, const Tensor& k) {
  return 4.0 * d(q.shape().rows()) * d(k.shape()[k.shape().rank() - 2]) * d(q.shape().last());
}

}  // namespace

void OpProfile::begin_step() {
  in_step_ = warmed_up_;
  warmed_up_ = true;
  step_start_ = Clock::now();
}

void OpProfile::end_step() {
  if (!in_step_) return;
  in_step_ = false;
  step_seconds_ += std::chrono::duration<double>(Clock::now() - step_start_).count();
  ++steps_;
}

void OpProfile::add(ProfiledOp op, double seconds, double flops) {
  if (!in_step_) return;
  Row& r = rows_[static_cast<std::size_t>(op)];
  r.seconds += seconds;
  r.flops += flops;
  ++r.calls;
}

std::string OpProfile::report() const {
  if (steps_ == 0) return "profile: no training step was timed\n";
  const double steps = static_cast<double>(steps_);
  std::vector<std::size_t> order;
  double backend_seconds = 0.0;
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    backend_seconds += rows_[i].seconds;
    if (rows_[i].calls > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rows_[a].seconds > rows_[b].seconds; });

  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "profile of %lld training steps after the first: %.1f ms per step (evaluation, probes, logging not included)\n",
                static_cast<long long>(steps_), 1e3 * step_seconds_ / steps);
  out += line;
  std::snprintf(line, sizeof line, "%-34s %-7s %10s %7s %10s %9s\n", "op", "pass", "ms/step", "share", "calls/step", "GFLOP/s");
  out += line;
  const auto row = [&](const char* op, const char* pass, double seconds, double calls, double flops) {
    char gflops[16] = "";
    if (flops > 0.0 && seconds > 0.0) std::snprintf(gflops, sizeof gflops, "%.1f", flops / seconds / 1e9);
    std::snprintf(line, sizeof line, "%-34s %-7s %10.2f %6.1f%% %10.1f %9s\n", op, pass, 1e3 * seconds / steps,
                  step_seconds_ > 0.0 ? 100.0 * seconds / step_seconds_ : 0.0, calls / steps, gflops);
    out += line;
  };
  for (std::size_t i : order) row(kNames[i].op, kNames[i].direction, rows_[i].seconds, d(rows_[i].calls), rows_[i].flops);
  row("outside the backend (graph, batch)", "-", std::max(0.0, step_seconds_ - backend_seconds), 0.0, 0.0);
  double flops = 0.0;
  for (const Row& r : rows_) flops += r.flops;
  row("step", "all", step_seconds_, 0.0, flops);
  return out;
}

HostedBackend::HostedBackend(std::shared_ptr<Backend> inner, std::shared_ptr<OpProfile> profile)
    : inner_(std::move(inner)), profile_(std::move(profile)), sync_each_op_(!caps().host_addressable) {}

BackendCaps HostedBackend::caps() const {
  return plugin_call(*inner_, "caps", [&] { return inner_->caps(); });
}
void HostedBackend::synchronize() {
  plugin_call(*inner_, "synchronize", [&] { inner_->synchronize(); });
}

template <typename F>
void HostedBackend::timed(ProfiledOp op, double flops, F&& call) {
  const auto start = profile_ ? OpProfile::Clock::now() : OpProfile::Clock::time_point{};
  try {
    call();
    if (profile_ && profile_->in_step() && sync_each_op_) inner_->synchronize();
  } catch (...) {
    const OpName& name = kNames[static_cast<std::size_t>(op)];
    throw_plugin_fault(*inner_, std::string(name.op) + " (" + name.direction + ")");
  }
  if (!profile_ || !profile_->in_step()) return;
  profile_->add(op, std::chrono::duration<double>(OpProfile::Clock::now() - start).count(), flops);
}

Tensor HostedBackend::empty(const Shape& shape, DType dtype) {
  Tensor t;
  timed(ProfiledOp::Memory, 0.0, [&] { t = inner_->empty(shape, dtype); });
  return t;
}
void HostedBackend::fill(Tensor& y, float value) {
  timed(ProfiledOp::Memory, 0.0, [&] { inner_->fill(y, value); });
}
void HostedBackend::copy_from_host(Tensor& dst, const void* src) {
  timed(ProfiledOp::Memory, 0.0, [&] { inner_->copy_from_host(dst, src); });
}
void HostedBackend::copy_to_host(void* dst, const Tensor& src) {
  timed(ProfiledOp::Memory, 0.0, [&] { inner_->copy_to_host(dst, src); });
}
void HostedBackend::copy(Tensor& dst, const Tensor& src) {
  timed(ProfiledOp::Memory, 0.0, [&] { inner_->copy(dst, src); });
}
void HostedBackend::cast(Tensor& y, const Tensor& x) {
  timed(ProfiledOp::Memory, 0.0, [&] { inner_->cast(y, x); });
}
void HostedBackend::write_time_slice(Tensor& dst, const Tensor& src, std::int64_t offset) {
  timed(ProfiledOp::Memory, 0.0, [&] { inner_->write_time_slice(dst, src, offset); });
}

bool HostedBackend::supports(OptionalOp op) const {
  return plugin_call(*inner_, "supports", [&] { return inner_->supports(op); });
}
void HostedBackend::rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) {
  timed(ProfiledOp::RopeFwd, 0.0, [&] { inner_->rope_forward(y, x, positions, rotary, base); });
}
void HostedBackend::rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) {
  timed(ProfiledOp::RopeBwd, 0.0, [&] { inner_->rope_backward(dx, dy, positions, rotary, base); });
}
void HostedBackend::slice_last_forward(Tensor& y, const Tensor& x, std::int64_t offset) {
  timed(ProfiledOp::SliceFwd, 0.0, [&] { inner_->slice_last_forward(y, x, offset); });
}
void HostedBackend::slice_last_backward(Tensor& dx, const Tensor& dy, std::int64_t offset) {
  timed(ProfiledOp::SliceBwd, 0.0, [&] { inner_->slice_last_backward(dx, dy, offset); });
}
void HostedBackend::softmax_last_forward(Tensor& y, const Tensor& x) {
  timed(ProfiledOp::RowwiseFwd, 0.0, [&] { inner_->softmax_last_forward(y, x); });
}
void HostedBackend::softmax_last_backward(Tensor& dx, const Tensor& dy, const Tensor& y) {
  timed(ProfiledOp::RowwiseBwd, 0.0, [&] { inner_->softmax_last_backward(dx, dy, y); });
}
void HostedBackend::sum_last_forward(Tensor& y, const Tensor& x) {
  timed(ProfiledOp::RowwiseFwd, 0.0, [&] { inner_->sum_last_forward(y, x); });
}
void HostedBackend::sum_last_backward(Tensor& dx, const Tensor& dy) {
  timed(ProfiledOp::RowwiseBwd, 0.0, [&] { inner_->sum_last_backward(dx, dy); });
}
void HostedBackend::pointwise_forward(Tensor& y, const Tensor& x, Pointwise f) {
  timed(ProfiledOp::RowwiseFwd, 0.0, [&] { inner_->pointwise_forward(y, x, f); });
}
void HostedBackend::pointwise_backward(Tensor& dx, const Tensor& dy, const Tensor& y, Pointwise f) {
  timed(ProfiledOp::RowwiseBwd, 0.0, [&] { inner_->pointwise_backward(dx, dy, y, f); });
}

void HostedBackend::linear_forward(Tensor& y, Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b,
                                      Activation act) {
  timed(ProfiledOp::LinearFwd, linear_flops(x, w), [&] { inner_->linear_forward(y, pre, x, w, b, act); });
}
void HostedBackend::linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x,
                                       const Tensor& w, const Tensor* pre, const Tensor& y, Activation act) {
  const double flops = linear_flops(x, w) * ((dx ? 1.0 : 0.0) + (dw ? 1.0 : 0.0));
  timed(ProfiledOp::LinearBwd, flops, [&] { inner_->linear_backward(dx, dw, db, dy, x, w, pre, y, act); });
}
void HostedBackend::matmul_forward(Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, float alpha) {
  timed(ProfiledOp::MatmulFwd, matmul_flops(c, a, trans_a), [&] { inner_->matmul_forward(c, a, b, trans_a, trans_b, alpha); });
}
void HostedBackend::matmul_backward(Tensor* da, Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b,
                                       bool trans_a, bool trans_b, float alpha) {
  const double flops = matmul_flops(dc, a, trans_a) * ((da ? 1.0 : 0.0) + (db ? 1.0 : 0.0));
  timed(ProfiledOp::MatmulBwd, flops, [&] { inner_->matmul_backward(da, db, dc, a, b, trans_a, trans_b, alpha); });
}
void HostedBackend::attention_forward(Tensor& out, Tensor& lse, Tensor* probs, const Tensor& q, const Tensor& k,
                                         const Tensor& v, const AttentionParams& params) {
  timed(ProfiledOp::AttentionFwd, attention_flops(q, k), [&] { inner_->attention_forward(out, lse, probs, q, k, v, params); });
}
void HostedBackend::attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout, const Tensor& out,
                                          const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                                          const AttentionParams& params) {
  timed(ProfiledOp::AttentionBwd, 2.0 * attention_flops(q, k),
        [&] { inner_->attention_backward(dq, dk, dv, dout, out, lse, q, k, v, params); });
}
void HostedBackend::layer_norm_forward(Tensor& y, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& gamma,
                                          const Tensor& beta, float eps) {
  timed(ProfiledOp::LayerNormFwd, 0.0, [&] { inner_->layer_norm_forward(y, mean, rstd, x, gamma, beta, eps); });
}
void HostedBackend::layer_norm_backward(Tensor* dx, Tensor* dgamma, Tensor* dbeta, const Tensor& dy, const Tensor& x,
                                           const Tensor& mean, const Tensor& rstd, const Tensor& gamma) {
  timed(ProfiledOp::LayerNormBwd, 0.0, [&] { inner_->layer_norm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma); });
}
void HostedBackend::rms_norm_forward(Tensor& y, Tensor& rstd, const Tensor& x, const Tensor& gamma, float eps) {
  timed(ProfiledOp::RmsNormFwd, 0.0, [&] { inner_->rms_norm_forward(y, rstd, x, gamma, eps); });
}
void HostedBackend::rms_norm_backward(Tensor* dx, Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                                         const Tensor& gamma) {
  timed(ProfiledOp::RmsNormBwd, 0.0, [&] { inner_->rms_norm_backward(dx, dgamma, dy, x, rstd, gamma); });
}
void HostedBackend::activation_forward(Tensor& y, const Tensor& x, Activation act) {
  timed(ProfiledOp::ActivationFwd, 0.0, [&] { inner_->activation_forward(y, x, act); });
}
void HostedBackend::activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, Activation act) {
  timed(ProfiledOp::ActivationBwd, 0.0, [&] { inner_->activation_backward(dx, dy, x, act); });
}
void HostedBackend::add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) {
  timed(ProfiledOp::AddFwd, 0.0, [&] { inner_->add_forward(y, a, b, alpha, beta); });
}
void HostedBackend::add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) {
  timed(ProfiledOp::AddBwd, 0.0, [&] { inner_->add_backward(da, db, dy, alpha, beta); });
}
void HostedBackend::mul_forward(Tensor& y, const Tensor& a, const Tensor& b) {
  timed(ProfiledOp::MulFwd, 0.0, [&] { inner_->mul_forward(y, a, b); });
}
void HostedBackend::mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) {
  timed(ProfiledOp::MulBwd, 0.0, [&] { inner_->mul_backward(da, db, dy, a, b); });
}
void HostedBackend::axpy(Tensor& y, const Tensor& x, float alpha) {
  timed(ProfiledOp::Axpy, 0.0, [&] { inner_->axpy(y, x, alpha); });
}
void HostedBackend::dropout_forward(Tensor& y, const Tensor& x, float p, const RngKey& rng) {
  timed(ProfiledOp::DropoutFwd, 0.0, [&] { inner_->dropout_forward(y, x, p, rng); });
}
void HostedBackend::dropout_backward(Tensor& dx, const Tensor& dy, float p, const RngKey& rng) {
  timed(ProfiledOp::DropoutBwd, 0.0, [&] { inner_->dropout_backward(dx, dy, p, rng); });
}
void HostedBackend::embedding_forward(Tensor& y, const Tensor& ids, const Tensor& table) {
  timed(ProfiledOp::EmbeddingFwd, 0.0, [&] { inner_->embedding_forward(y, ids, table); });
}
void HostedBackend::embedding_backward(Tensor& dtable, const Tensor& dy, const Tensor& ids) {
  timed(ProfiledOp::EmbeddingBwd, 0.0, [&] { inner_->embedding_backward(dtable, dy, ids); });
}
void HostedBackend::split_heads_forward(Tensor& y, const Tensor& x, int parts, int part) {
  timed(ProfiledOp::HeadsFwd, 0.0, [&] { inner_->split_heads_forward(y, x, parts, part); });
}
void HostedBackend::split_heads_backward(Tensor& dx, const Tensor& dy, int parts, int part) {
  timed(ProfiledOp::HeadsBwd, 0.0, [&] { inner_->split_heads_backward(dx, dy, parts, part); });
}
void HostedBackend::merge_heads_forward(Tensor& y, const Tensor& x) {
  timed(ProfiledOp::HeadsFwd, 0.0, [&] { inner_->merge_heads_forward(y, x); });
}
void HostedBackend::merge_heads_backward(Tensor& dx, const Tensor& dy) {
  timed(ProfiledOp::HeadsBwd, 0.0, [&] { inner_->merge_heads_backward(dx, dy); });
}
void HostedBackend::cross_entropy_forward(Tensor& loss, Tensor& dlogits, Tensor& stats, const Tensor& logits,
                                             const Tensor& targets, std::int32_t ignore_index, float label_smoothing) {
  timed(ProfiledOp::CrossEntropy, 0.0,
        [&] { inner_->cross_entropy_forward(loss, dlogits, stats, logits, targets, ignore_index, label_smoothing); });
}
void HostedBackend::sum_squares(Tensor& total, const Tensor& x) {
  timed(ProfiledOp::SumSquares, 0.0, [&] { inner_->sum_squares(total, x); });
}
void HostedBackend::adam_update(Tensor& w, Tensor& m, Tensor& v, Tensor* w_low, const Tensor& grad,
                                   const AdamParams& params) {
  timed(ProfiledOp::AdamUpdate, 0.0, [&] { inner_->adam_update(w, m, v, w_low, grad, params); });
}

}  // namespace ablate::train
