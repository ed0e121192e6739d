// Plugin backend/reference: plain, obviously-correct, single-threaded C++ for every op of
// ablate::Backend. It is the oracle the other backends are tested against, so clarity wins over
// speed: each op reads its inputs into double vectors, computes in double, and rounds on store.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ablate/backend.hpp"
#include "ablate/backend_contract.hpp"
#include "ablate/host_allocator.hpp"

namespace backend_reference {

using ablate::Activation;
using ablate::DType;
using ablate::Shape;
using ablate::Tensor;

class ReferenceBackend final : public ablate::Backend {
 public:
  // all_optional_ops = false: it says it has none of the optional ops (option optional_ops: none)
  // and refuses them, so that ops.cpp's compositions run instead and can be tested against it.
  explicit ReferenceBackend(bool all_optional_ops = true);

  ablate::BackendCaps caps() const override;
  // The allocator behind every tensor of this backend (tests read its stats()).
  const ablate::HostAllocator& allocator() const { return *allocator_; }

  Tensor empty(const Shape& shape, DType dtype) override;
  void fill(Tensor& y, float value) override;
  void copy_from_host(Tensor& dst, const void* src) override;
  void copy_to_host(void* dst, const Tensor& src) override;
  void copy(Tensor& dst, const Tensor& src) override;
  void synchronize() override {}

  // linear_ops.cpp
  void linear_forward(Tensor& y, Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b, Activation act) override;
  void linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor* pre,
                       const Tensor& y, Activation act) override;
  void matmul_forward(Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, float alpha) override;
  void matmul_backward(Tensor* da, Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b,
                       float alpha) override;

  // attention_ops.cpp
  void attention_forward(Tensor& out, Tensor& lse, Tensor* probs, const Tensor& q, const Tensor& k, const Tensor& v,
                         const ablate::AttentionParams& params) override;
  void attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout, const Tensor& out, const Tensor& lse,
                          const Tensor& q, const Tensor& k, const Tensor& v, const ablate::AttentionParams& params) override;
  void split_heads_forward(Tensor& y, const Tensor& x, int parts, int part) override;
  void split_heads_backward(Tensor& dx, const Tensor& dy, int parts, int part) override;
  void merge_heads_forward(Tensor& y, const Tensor& x) override;
  void merge_heads_backward(Tensor& dx, const Tensor& dy) override;
  void write_time_slice(Tensor& dst, const Tensor& src, std::int64_t offset) override;

  // norm_ops.cpp
  void layer_norm_forward(Tensor& y, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                          float eps) override;
  void layer_norm_backward(Tensor* dx, Tensor* dgamma, Tensor* dbeta, const Tensor& dy, const Tensor& x, const Tensor& mean,
                           const Tensor& rstd, const Tensor& gamma) override;
  void rms_norm_forward(Tensor& y, Tensor& rstd, const Tensor& x, const Tensor& gamma, float eps) override;
  void rms_norm_backward(Tensor* dx, Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                         const Tensor& gamma) override;

  // elementwise_ops.cpp
  void activation_forward(Tensor& y, const Tensor& x, Activation act) override;
  void activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, Activation act) override;
  void add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) override;
  void add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) override;
  void mul_forward(Tensor& y, const Tensor& a, const Tensor& b) override;
  void mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) override;
  void axpy(Tensor& y, const Tensor& x, float alpha) override;
  void dropout_forward(Tensor& y, const Tensor& x, float p, const ablate::RngKey& rng) override;
  void dropout_backward(Tensor& dx, const Tensor& dy, float p, const ablate::RngKey& rng) override;
  void embedding_forward(Tensor& y, const Tensor& ids, const Tensor& table) override;
  void embedding_backward(Tensor& dtable, const Tensor& dy, const Tensor& ids) override;

  // loss_optim_ops.cpp
  void cross_entropy_forward(Tensor& loss, Tensor& dlogits, Tensor& stats, const Tensor& logits, const Tensor& targets,
                             std::int32_t ignore_index, float label_smoothing) override;
  void sum_squares(Tensor& total, const Tensor& x) override;
  void adam_update(Tensor& w, Tensor& m, Tensor& v, Tensor* w_low, const Tensor& grad, const ablate::AdamParams& params) override;
  void cast(Tensor& y, const Tensor& x) override;

  bool supports(ablate::OptionalOp) const override { return all_optional_ops_; }

  // rope_ops.cpp
  void rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) override;
  void rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) override;

  // slice_ops.cpp
  void slice_last_forward(Tensor& y, const Tensor& x, std::int64_t offset) override;
  void slice_last_backward(Tensor& dx, const Tensor& dy, std::int64_t offset) override;
  // rowwise_ops.cpp
  void softmax_last_forward(Tensor& y, const Tensor& x) override;
  void softmax_last_backward(Tensor& dx, const Tensor& dy, const Tensor& y) override;
  void sum_last_forward(Tensor& y, const Tensor& x) override;
  void sum_last_backward(Tensor& dx, const Tensor& dy) override;
  void pointwise_forward(Tensor& y, const Tensor& x, ablate::Pointwise f) override;
  void pointwise_backward(Tensor& dx, const Tensor& dy, const Tensor& y, ablate::Pointwise f) override;

 private:
  std::shared_ptr<ablate::HostAllocator> allocator_;
  bool all_optional_ops_ = true;
};

// ---- helpers shared by the op files (reference_backend.cpp) ----

// The argument contract is ablate::contract's (every op calls it first); the reference adds checks
// of values it reads anyway (ids, targets, key lengths, positions in range). Those throw
// ablate::Error("backend/reference <op>: <what>").
[[noreturn]] void fail(const char* op, const std::string& what);
// Host views: read any F32/BF16 tensor as doubles; store doubles rounded to the tensor's dtype;
// accumulate `t += delta` (a null `t` is skipped).
std::vector<double> load(const Tensor& t);
std::vector<std::int32_t> load_i32(const Tensor& t);
void store(Tensor& t, const std::vector<double>& values);
void accumulate(Tensor* t, const std::vector<double>& delta);

// Activations and their derivatives, in double (shared by linear and activation ops).
double activate(Activation act, double x);
double activate_grad(Activation act, double x);  // d act / dx at x
}  // namespace backend_reference
