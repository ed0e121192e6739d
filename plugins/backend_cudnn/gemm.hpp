// Internal header of backend/cudnn: row-major GEMMs on cuBLASLt, with bias and activation
// fused into the epilogue where cuBLASLt has one, and matmul descriptors, layouts and the chosen
// algorithm cached by shape (gemm.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "kernels.hpp"

namespace backend_cudnn {

// One operand, seen logically as [batch, rows, cols] (batch stride rows * cols) and stored
// row-major either as [rows, cols] (trans = false) or as [cols, rows] (trans = true).
struct GemmOperand {
  const void* data = nullptr;
  kernels::VT dtype = kernels::VT::F32;
  std::int64_t batch = 1, rows = 0, cols = 0;
  bool trans = false;
};

// What comes after the product: C = act(alpha * A·B + beta * C + bias[N]); aux (same shape and
// dtype as C, optional) receives the pre-activation alpha * A·B + bias.
struct GemmEpilogue {
  const void* bias = nullptr;  // [N], C's dtype
  kernels::Act act = kernels::Act::None;
  void* aux = nullptr;
};

class Gemm {
 public:
  // workspace: device scratch of the given size, valid until the next call.
  Gemm(cudaStream_t stream, bool deterministic, bool tf32, std::function<void*(std::size_t)> workspace);
  ~Gemm();
  Gemm(const Gemm&) = delete;
  Gemm& operator=(const Gemm&) = delete;

  // C[batch, M, N] (row-major, dtype c_t) = epilogue(alpha * A[batch, M, K] · B[batch, K, N] + beta * C).
  // A and B share a dtype (F32 or BF16); C is F32 or BF16. `op` names the caller in errors.
  void run(void* c, kernels::VT c_t, const GemmOperand& a, const GemmOperand& b, float alpha, float beta,
           const GemmEpilogue& epilogue, const char* op);

  std::size_t plans_built() const { return plans_.size(); }
  std::size_t fused_epilogues() const;  // plans that run bias/activation inside cuBLASLt

 private:
  struct Plan;
  using Key = std::vector<std::int64_t>;
  Plan& plan(const Key& key, const GemmOperand& a, const GemmOperand& b, kernels::VT c_t, const GemmEpilogue& ep, const char* op);

  cudaStream_t stream_;
  bool deterministic_, tf32_;
  std::function<void*(std::size_t)> workspace_;
  cublasLtHandle_t handle_ = nullptr;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

}  // namespace backend_cudnn
