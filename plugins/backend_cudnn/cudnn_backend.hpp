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
#include "ablate/backend_ops.hpp"
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

  void synchronize() override;

  // Every optional op: the model ops (rope, slice_last, attention bias, grouped k/v heads,
  // softcap, softmax/sum/pointwise, dropout_add) and the extra ops (rope_frequencies, compare,
  // permute); not packed_heads (attention over heads in the projections' rows: ops.cpp splits and
  // merges them here).
  bool supports(ablate::OptionalOp op) const override {
    return op != ablate::OptionalOp::packed_heads && op != ablate::OptionalOp::linear_dropout;
  }

 protected:
  // Every core op and the optional ops of the model and extra lists (ablate/backend_ops.hpp; not
  // yet the fused linear_dropout, which ops.cpp composes here), in the *_ops.cpp files; Backend's
  // public op checks the contract and calls these.
  ABLATE_BACKEND_CORE_OPS(ABLATE_BACKEND_OVERRIDE)
  ABLATE_BACKEND_MODEL_OPS(ABLATE_BACKEND_OVERRIDE)
  ABLATE_BACKEND_EXTRA_OPS(ABLATE_BACKEND_OVERRIDE)

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
  // A gradient output stored as Write, zeroed so that the kernels' additions write it (GradStore).
  void zero_if_written(Tensor* grad, ablate::GradStore store);

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
