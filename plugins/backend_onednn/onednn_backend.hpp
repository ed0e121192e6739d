// Internal header of backend/onednn: the backend class (shared by its translation units) and the
// test hook cache_stats(). GEMM-shaped work runs on cached oneDNN matmul primitives; everything
// oneDNN has no primitive for (dropout, masking, norms, loss, optimizer) is OpenMP C++ here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "ablate/backend.hpp"
#include "ablate/backend_ops.hpp"
#include "ablate/backend_contract.hpp"
#include "ablate/host_allocator.hpp"

namespace backend_onednn {

using ablate::DType;
using ablate::GradStore;
using ablate::Tensor;

// Primitive-cache counters, for tests: a warm op sequence must create no new primitive.
struct CacheStats {
  std::size_t primitives_created = 0;
  std::size_t hits = 0;
  std::size_t system_allocations = 0;  // HostAllocator cache misses (tensors and scratch)
};
// Throws ablate::Error if `b` is not an onednn backend linked into this binary.
CacheStats cache_stats(const ablate::Backend& b);

// One operand of a GEMM, seen logically as [batch, rows, cols]; stored row-major either as
// [batch, rows, cols] (trans = false) or [batch, cols, rows] (trans = true). batch stride is
// rows * cols. F32 or BF16: gemm() multiplies bf16 operands natively where the CPU has bf16
// dot-product instructions (native_bf16()) and widens them to f32 scratch where it has none.
struct MatView {
  const void* data = nullptr;
  DType dtype = DType::F32;
  std::int64_t batch = 1, rows = 0, cols = 0;
  bool trans = false;
  std::int64_t padded_ld = 0;  // > 0: F32, batch 1, stored rows padded to this many elements
};
// t viewed as `batch` matrices [rows, cols] (trans: stored [cols, rows]).
inline MatView view_of(const Tensor& t, std::int64_t batch, std::int64_t rows, std::int64_t cols, bool trans) {
  return MatView{t.raw(), t.dtype(), batch, rows, cols, trans};
}

// Scratch slots: each a reusable buffer kept for the backend's life (grown, never shrunk), so
// a warm step allocates nothing. An op never uses one slot for two live things at once.
enum Slot : int {
  kGemmA = 0,
  kGemmB,
  kGemmC,
  kGemmBias,
  kDnnlScratch,  // gemm(): operands converted, oneDNN scratchpad
  kLinG,         // linear_backward: g = dy ⊙ act'
  kPadA,
  kPadB,  // linear_backward: dw's operands with padded rows
  kAttS,
  kAttP,
  kAttD,
  kAttC,     // attention: scores/P, P' or masks, dP, softcap slopes
  kPartial,  // per-chunk partial column sums, per-thread rows
  kSums,     // small f32 sums: per-row loss, db, dgamma|dbeta
  kVecA,
  kVecB,  // gamma / beta widened to f32
  kRope,  // rope: cos | sin per (t, i)
  kSlotCount
};

// Not thread-safe: one backend serves one training loop (ops run on the calling thread, with
// `threads` OpenMP workers). Every op is synchronous on the host.
class OnednnBackend final : public ablate::Backend {
 public:
  explicit OnednnBackend(int threads);
  ~OnednnBackend() override;

  ablate::BackendCaps caps() const override;
  CacheStats stats() const;
  // Whether GEMMs with a bf16 operand run on bf16 dot-product instructions (oneDNN's effective
  // ISA has avx512_core_bf16, or AMX): decided once, at construction, from the CPU (and from
  // ONEDNN_MAX_CPU_ISA, which tests use to take the f32-widening path on any CPU).
  bool native_bf16() const { return native_bf16_; }

  Tensor empty(const ablate::Shape& shape, DType dtype) override;

  void synchronize() override;

  bool supports(ablate::OptionalOp op) const override {
    (void)op;
    return true;  // every optional op: rope (and with given frequencies), slice_last, attention bias and grouped k/v
                  // heads, softmax/sum/pointwise, compare, permute, packed heads
  }

 protected:
  // Every op (ablate/backend_ops.hpp: core and optional), in the *_ops.cpp files; Backend's
  // public op checks the contract and calls these.
  ABLATE_BACKEND_CORE_OPS(ABLATE_BACKEND_OVERRIDE)
  ABLATE_BACKEND_OPTIONAL_OPS(ABLATE_BACKEND_OVERRIDE)

 private:
  // rope's cos | sin [T, rotary/2] of angle(t, i) (in slot kRope), and the turns by such a table:
  // y = R(angle) x forward, dx += R(-angle) dy backward (rope_ops.cpp).
  template <class Angle>
  const float* rope_table(std::int64_t T, int rotary, Angle angle);
  void rope_turn(Tensor& y, const Tensor& x, const float* cs, int rotary);
  void rope_turn_back(Tensor& dx, const Tensor& dy, const float* cs, int rotary);
  // The GEMMs of linear's backward (and linear_dropout's) from g[N, O], the gradient at x·w^T + b:
  // dx[N, I] += g·w (= for Write), dw[O, I] += g^T·x, db[O] += g's column sums. pass(gs, g_dtype,
  // dbs, partial) stores g into gs when not null and its column sums into dbs when not null; gs
  // is null when g is dy itself (g_is_dy) or no GEMM needs it (linear_ops.cpp).
  template <class Pass>
  void linear_gemm_grads(const char* op, Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w,
                         GradStore dx_store, bool g_is_dy, Pass&& pass);
  // C[batch, M, N] = alpha * A[batch, M, K] · B[batch, K, N] (+ bias[N]) (+ C if accumulate), then
  // the fused activation `act` (None/ReLU/GeluErf/GeluTanh/SiLU); c_dtype F32 or BF16.
  void gemm(void* c, DType c_dtype, const MatView& a, const MatView& b, float alpha, bool accumulate, const Tensor* bias,
            ablate::Activation act, const char* op);
  struct Prim;  // a cached matmul primitive with its memory objects
  // gemm()'s oneDNN matmul primitive, cached by shape, data types and attributes: operands of
  // dtype `ab` (both F32 or both BF16), C of dtype `c`, an f32 bias when has_bias.
  Prim& matmul_prim(DType ab, DType c, std::int64_t batch, std::int64_t M, std::int64_t K, std::int64_t N, bool trans_a,
                    bool trans_b, float alpha, bool accumulate, bool has_bias, ablate::Activation act, const char* op);
  void run_matmul(Prim& p, void* C, const void* A, const void* B, const float* bias, const char* op);
  // m's values as bf16: the tensor's own memory, or an f32 operand rounded into `slot`.
  const void* as_bf16(const MatView& m, Slot slot);
  // `m` (not transposed, batch 1) copied as f32 into `slot` with rows padded to cols + 16.
  MatView padded(const MatView& m, Slot slot);
  // A reusable f32/byte scratch buffer of at least `bytes` bytes for `slot`.
  void* scratch(Slot slot, std::size_t bytes);
  float* scratch_f32(Slot slot, std::int64_t n) {
    return static_cast<float*>(scratch(slot, static_cast<std::size_t>(n) * sizeof(float)));
  }
  // View of an F32/BF16 matrix as f32: the tensor's own memory, or widened into `slot`.
  const float* as_f32(const void* data, DType dt, std::int64_t n, Slot slot);
  void set_threads() const;

  struct KeyHash {
    std::size_t operator()(const std::vector<std::int64_t>& k) const noexcept;
  };

  int threads_;
  bool native_bf16_ = false;
  std::shared_ptr<ablate::HostAllocator> alloc_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::unordered_map<std::vector<std::int64_t>, std::unique_ptr<Prim>, KeyHash> prims_;
  std::vector<std::int64_t> key_;  // reused key buffer (no allocation once warm)
  std::shared_ptr<ablate::Storage> slots_[kSlotCount];
  std::size_t created_ = 0, hits_ = 0;
};

}  // namespace backend_onednn
