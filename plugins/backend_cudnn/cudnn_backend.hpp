// Internal header of backend/cudnn: the backend class, shared by its translation units
// (cudnn_backend.cpp: life cycle and memory; one <family>_ops.cpp per op family, as in the other
// backends). Everything is enqueued on one CUDA stream; the host waits only in
// copy_to_host and synchronize (and in the deterministic embedding backward, which groups ids).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "ablate/backend.hpp"
#include "ablate/backend_contract.hpp"
#include "cudnn_graph.hpp"
#include "device_allocator.hpp"
#include "gemm.hpp"
#include "kernels.hpp"
#include "runtime_entry.hpp"
#include "sdpa_support.hpp"

namespace backend_cudnn {

using ablate::DType;
using ablate::Shape;
using ablate::Tensor;

// Throws ablate::Error("backend/cudnn: <op>: <message>").
[[noreturn]] void fail(const char* op, const std::string& message);
// The argument contract is ablate::contract's (ablate/backend_contract.hpp), which every op calls
// first. value_type: the kernels' type of an F32/BF16 tensor. need_value_dtype refuses a gradient
// whose dtype differs from its value's where this backend has no mixed-dtype kernel (an f32
// gradient of a bf16 add/mul/matmul operand, which the contract itself allows).
kernels::VT value_type(const Tensor& t);
// t as `batch` cuBLASLt operands [rows, cols] (trans: stored [cols, rows]).
inline GemmOperand operand(const Tensor& t, std::int64_t batch, std::int64_t rows, std::int64_t cols, bool trans) {
  return GemmOperand{t.raw(), value_type(t), batch, rows, cols, trans};
}
void need_value_dtype(const char* op, const char* name, const Tensor& g, const char* value_name, const Tensor& value);
kernels::Act act_of(ablate::Activation a);
// The [rows, D] geometry of a norm op over x [rows, D] (checked by ablate::contract).
struct NormDims {
  kernels::VT t;
  std::int64_t rows, D;
};
NormDims norm_dims(const Tensor& x);

// Reusable device scratch buffers, one per purpose, grown and kept (a warm step allocates nothing).
enum Slot : int {
  kWorkspace = 0,  // cuBLASLt / cuDNN workspace
  kLinG,           // linear_backward: g = dy ⊙ act'
  kReduce,         // partial sums of the deterministic reductions
  kAttLogits,
  kAttPd,
  kAttDp,
  kAttDs,  // attention: logits, dropped probabilities, dP, dS
  kGradA,
  kGradB,
  kGradC,  // cuDNN graph outputs before they are added to the caller's gradients
  kIds,    // embedding backward: the ids sorted, with their rows
  kSlotCount
};

class CudnnBackend final : public ablate::Backend {
 public:
  explicit CudnnBackend(const RuntimeConfig& config);
  ~CudnnBackend() override;

  ablate::BackendCaps caps() const override;

  Tensor empty(const Shape& shape, DType dtype) override;
  void fill(Tensor& y, float value) override;
  void copy_from_host(Tensor& dst, const void* src) override;
  void copy_to_host(void* dst, const Tensor& src) override;
  void copy(Tensor& dst, const Tensor& src) override;
  void synchronize() override;

  void linear_forward(Tensor& y, Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b, ablate::Activation act) override;
  void linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor* pre,
                       const Tensor& y, ablate::Activation act) override;
  void matmul_forward(Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b, float alpha) override;
  void matmul_backward(Tensor* da, Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b,
                       float alpha) override;
  void attention_forward(Tensor& out, Tensor& lse, Tensor* probs, const Tensor& q, const Tensor& k, const Tensor& v,
                         const ablate::AttentionParams& params) override;
  void attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout, const Tensor& out, const Tensor& lse,
                          const Tensor& q, const Tensor& k, const Tensor& v, const ablate::AttentionParams& params) override;
  void layer_norm_forward(Tensor& y, Tensor& mean, Tensor& rstd, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                          float eps) override;
  void layer_norm_backward(Tensor* dx, Tensor* dgamma, Tensor* dbeta, const Tensor& dy, const Tensor& x, const Tensor& mean,
                           const Tensor& rstd, const Tensor& gamma) override;
  void rms_norm_forward(Tensor& y, Tensor& rstd, const Tensor& x, const Tensor& gamma, float eps) override;
  void rms_norm_backward(Tensor* dx, Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                         const Tensor& gamma) override;
  void activation_forward(Tensor& y, const Tensor& x, ablate::Activation act) override;
  void activation_backward(Tensor& dx, const Tensor& dy, const Tensor& x, ablate::Activation act) override;
  void add_forward(Tensor& y, const Tensor& a, const Tensor& b, float alpha, float beta) override;
  void add_backward(Tensor* da, Tensor* db, const Tensor& dy, float alpha, float beta) override;
  void mul_forward(Tensor& y, const Tensor& a, const Tensor& b) override;
  void mul_backward(Tensor* da, Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b) override;
  bool supports(ablate::OptionalOp op) const override {
    (void)op;
    return true;  // every optional op: rope, slice_last, attention bias, grouped k/v heads, softcap, softmax/sum/pointwise
  }
  void rope_forward(Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base) override;
  void rope_backward(Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base) override;
  void slice_last_forward(Tensor& y, const Tensor& x, std::int64_t offset) override;
  void slice_last_backward(Tensor& dx, const Tensor& dy, std::int64_t offset) override;
  void softmax_last_forward(Tensor& y, const Tensor& x) override;
  void softmax_last_backward(Tensor& dx, const Tensor& dy, const Tensor& y) override;
  void sum_last_forward(Tensor& y, const Tensor& x) override;
  void sum_last_backward(Tensor& dx, const Tensor& dy) override;
  void pointwise_forward(Tensor& y, const Tensor& x, ablate::Pointwise f) override;
  void pointwise_backward(Tensor& dx, const Tensor& dy, const Tensor& y, ablate::Pointwise f) override;
  void axpy(Tensor& y, const Tensor& x, float alpha) override;
  void dropout_forward(Tensor& y, const Tensor& x, float p, const ablate::RngKey& rng) override;
  void dropout_backward(Tensor& dx, const Tensor& dy, float p, const ablate::RngKey& rng) override;
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
  void adam_update(Tensor& w, Tensor& m, Tensor& v, Tensor* w_low, const Tensor& grad, const ablate::AdamParams& params) override;
  void cast(Tensor& y, const Tensor& x) override;

 private:
  // Device scratch of at least `bytes` bytes for `slot`, valid until the slot is asked again.
  void* scratch(Slot slot, std::size_t bytes);
  // Raises the error an embedding id or cross-entropy target out of range left in the flags
  // (they are read at the next synchronisation).
  void check_flags();
  // The [B, H, T, S] attention geometry of q and k (checked by ablate::contract), with the params' masks.
  kernels::AttentionShape attention_shape(const Tensor& q, const Tensor& k, const ablate::AttentionParams& p) const;
  std::optional<SdpaConfig> fused_attention(const kernels::AttentionShape& a, std::int64_t Dh, DType dtype, bool probs,
                                            float scale, bool backward);
  const void* dropout_mask(const kernels::AttentionShape& a);  // BF16 [B, H, T, S] factors in kAttPd

  RuntimeConfig config_;
  std::string device_name_;
  cudaStream_t stream_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  std::shared_ptr<DeviceAllocator> alloc_;
  std::shared_ptr<ablate::Storage> slots_[kSlotCount];
  // I32 [2] in mapped pinned host memory: bad embedding id (1 + row), bad target (1 + row).
  // Kernels write them through flags_device_; the host reads them after a synchronisation
  // without a copy.
  std::int32_t* flags_ = nullptr;
  std::int32_t* flags_device_ = nullptr;
  std::unique_ptr<Gemm> gemm_;
  std::unique_ptr<CudnnGraphs> graphs_;
};

}  // namespace backend_cudnn
