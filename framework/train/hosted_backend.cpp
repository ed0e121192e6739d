// HostedBackend (hosted_backend.hpp): the run's view of its backend plugin, forwarding, timing
// and attributing what the plugin throws.
#include "train/hosted_backend.hpp"

#include <string_view>
#include <utility>

#include "plugin_host/plugin_call.hpp"

namespace ablate::train {
namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

// The profile row of each op (rows group ops: split and merge heads, the row-wise optional ops,
// the memory ops). A constant expression: an op of the list without a row does not compile.
struct OpRow {
  std::string_view op;
  ProfiledOp row;
};
constexpr OpRow kRows[] = {
    {"fill", ProfiledOp::MemFill},
    {"copy_from_host", ProfiledOp::MemCopy},
    {"copy_to_host", ProfiledOp::MemCopy},
    {"copy", ProfiledOp::MemCopy},
    {"cast", ProfiledOp::MemCast},
    {"write_time_slice", ProfiledOp::MemCopy},
    {"linear_forward", ProfiledOp::LinearFwd},
    {"linear_backward", ProfiledOp::LinearBwd},
    {"matmul_forward", ProfiledOp::MatmulFwd},
    {"matmul_backward", ProfiledOp::MatmulBwd},
    {"attention_forward", ProfiledOp::AttentionFwd},
    {"attention_backward", ProfiledOp::AttentionBwd},
    {"layer_norm_forward", ProfiledOp::LayerNormFwd},
    {"layer_norm_backward", ProfiledOp::LayerNormBwd},
    {"rms_norm_forward", ProfiledOp::RmsNormFwd},
    {"rms_norm_backward", ProfiledOp::RmsNormBwd},
    {"activation_forward", ProfiledOp::ActivationFwd},
    {"activation_backward", ProfiledOp::ActivationBwd},
    {"add_forward", ProfiledOp::AddFwd},
    {"add_backward", ProfiledOp::AddBwd},
    {"mul_forward", ProfiledOp::MulFwd},
    {"mul_backward", ProfiledOp::MulBwd},
    {"axpy", ProfiledOp::Axpy},
    {"dropout_forward", ProfiledOp::DropoutFwd},
    {"dropout_backward", ProfiledOp::DropoutBwd},
    {"embedding_forward", ProfiledOp::EmbeddingFwd},
    {"embedding_backward", ProfiledOp::EmbeddingBwd},
    {"split_heads_forward", ProfiledOp::HeadsFwd},
    {"split_heads_backward", ProfiledOp::HeadsBwd},
    {"merge_heads_forward", ProfiledOp::HeadsFwd},
    {"merge_heads_backward", ProfiledOp::HeadsBwd},
    {"cross_entropy_forward", ProfiledOp::CrossEntropy},
    {"sum_squares", ProfiledOp::SumSquares},
    {"adam_update", ProfiledOp::AdamUpdate},
    {"rope_forward", ProfiledOp::RopeFwd},
    {"rope_backward", ProfiledOp::RopeBwd},
    {"slice_last_forward", ProfiledOp::SliceFwd},
    {"slice_last_backward", ProfiledOp::SliceBwd},
    {"softmax_last_forward", ProfiledOp::RowwiseFwd},
    {"softmax_last_backward", ProfiledOp::RowwiseBwd},
    {"sum_last_forward", ProfiledOp::RowwiseFwd},
    {"sum_last_backward", ProfiledOp::RowwiseBwd},
    {"pointwise_forward", ProfiledOp::RowwiseFwd},
    {"pointwise_backward", ProfiledOp::RowwiseBwd},
    {"dropout_add_forward", ProfiledOp::DropoutAddFwd},
    {"rope_frequencies_forward", ProfiledOp::RopeFwd},
    {"rope_frequencies_backward", ProfiledOp::RopeBwd},
    {"compare_forward", ProfiledOp::IndexFwd},
    {"permute_forward", ProfiledOp::IndexFwd},
    {"permute_backward", ProfiledOp::IndexBwd},
    {"linear_dropout_forward", ProfiledOp::LinearDropoutFwd},
    {"linear_dropout_backward", ProfiledOp::LinearDropoutBwd},
};
consteval ProfiledOp row_of(std::string_view op) {
  for (const OpRow& r : kRows)
    if (r.op == op) return r.row;
  throw "an op of ABLATE_BACKEND_OPS has no row in kRows";
}

// The floating-point work of a call, for GFLOP/s: the GEMM-shaped ops by their signatures (each
// as backend.hpp declares it), every other op 0.
// linear: 2 * rows * in * out per GEMM (backward: one for dx, one for dw).
double work(Tensor&, Tensor*, const Tensor& x, const Tensor& w, const Tensor*, Activation) {
  return 2.0 * d(x.shape().rows()) * d(w.shape()[0]) * d(w.shape()[1]);
}
double work(Tensor* dx, Tensor* dw, Tensor*, const Tensor&, const Tensor& x, const Tensor& w, const Tensor*, const Tensor&,
            Activation, GradStore) {
  return 2.0 * d(x.shape().rows()) * d(w.shape()[0]) * d(w.shape()[1]) * ((dx ? 1.0 : 0.0) + (dw ? 1.0 : 0.0));
}
// linear_dropout: as linear.
double work(Tensor& y, Tensor* slope, const Tensor& x, const Tensor& w, const Tensor* b, Activation act, float, const RngKey&) {
  return work(y, slope, x, w, b, act);
}
double work(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor* slope,
            const Tensor& y, Activation act, float, GradStore store) {
  return work(dx, dw, db, dy, x, w, slope, y, act, store);
}
// matmul: 2 * Bt * M * N * K of c[Bt, M, N] = op(a) · op(b) (backward: one per gradient).
double matmul_work(const Tensor& c, const Tensor& a, bool trans_a) {
  const Shape& s = a.shape();
  return 2.0 * d(c.numel()) * d(trans_a ? s[s.rank() - 2] : s.last());
}
double work(Tensor& c, const Tensor& a, const Tensor&, bool trans_a, bool, float) { return matmul_work(c, a, trans_a); }
double work(Tensor* da, Tensor* db, const Tensor& dc, const Tensor& a, const Tensor&, bool trans_a, bool, float) {
  return matmul_work(dc, a, trans_a) * ((da ? 1.0 : 0.0) + (db ? 1.0 : 0.0));
}
// attention: q·k^T and p·v, dense (a causal mask is not subtracted): 4 * B * H * T * S * Dh; backward twice that.
// Heads split or packed (AttentionParams::packed).
double attention_work(const Tensor& q, const Tensor& k, const AttentionParams& p) {
  const AttentionShape a = attention_shape(q, k, p);
  return 4.0 * d(a.B) * d(a.H) * d(a.T) * d(a.S) * d(a.Dh);
}
double work(Tensor&, Tensor&, Tensor*, const Tensor& q, const Tensor& k, const Tensor&, const AttentionParams& p) {
  return attention_work(q, k, p);
}
double work(Tensor*, Tensor*, Tensor*, const Tensor&, const Tensor&, const Tensor&, const Tensor& q, const Tensor& k,
            const Tensor&, const AttentionParams& p) {
  return 2.0 * attention_work(q, k, p);
}
template <typename... A>
double work(const A&...) {
  return 0.0;
}

}  // namespace

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
    throw_plugin_fault(*inner_, profiled_op_label(op));
  }
  if (!profile_ || !profile_->in_step()) return;
  profile_->add(op, std::chrono::duration<double>(OpProfile::Clock::now() - start).count(), flops);
}

Tensor HostedBackend::empty(const Shape& shape, DType dtype) {
  Tensor t;
  timed(ProfiledOp::MemAlloc, 0.0, [&] { t = inner_->empty(shape, dtype); });
  return t;
}

bool HostedBackend::supports(OptionalOp op) const {
  return plugin_call(*inner_, "supports", [&] { return inner_->supports(op); });
}

// Every op of ablate/backend_ops.hpp: timed into its row with its work, forwarded to the
// plugin's implementation (this backend's own public op has checked the contract).
#define ABLATE_HOSTED_OP(name, params, args, checks)                                      \
  void HostedBackend::do_##name params {                                                  \
    constexpr ProfiledOp row = row_of(#name);                                             \
    timed(row, work args, [&] { forward_##name(*inner_, ABLATE_BACKEND_UNPAREN args); }); \
  }
ABLATE_BACKEND_OPS(ABLATE_HOSTED_OP)
#undef ABLATE_HOSTED_OP

}  // namespace ablate::train
