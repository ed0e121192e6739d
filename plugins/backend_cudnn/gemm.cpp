// backend/cudnn: row-major GEMMs on cuBLASLt (gemm.hpp).
//
// cuBLASLt is column-major. A row-major [r, c] matrix is the column-major [c, r] matrix with the
// same memory, so C[M, N] = A·B is computed as the column-major C^T[N, M] = B^T·A^T: our B is
// cuBLASLt's first operand and our A its second, with m = N, n = M, k = K. The epilogue's bias
// runs along cuBLASLt's rows, which are our columns N: bias[N] as the backend interface wants.
#include "gemm.hpp"

#include <string>

#include "ablate/error.hpp"
#include "cuda_check.hpp"

namespace backend_cudnn {

using kernels::Act;
using kernels::VT;

namespace {

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

cudaDataType_t cuda_type(VT t) { return t == VT::BF16 ? CUDA_R_16BF : CUDA_R_32F; }

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& value, const char* op) {
  check_cublas(cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof(value)), op);
}

// The column-major layout of a row-major stored matrix [stored_rows, stored_cols], batched.
cublasLtMatrixLayout_t layout(VT t, std::int64_t stored_rows, std::int64_t stored_cols, std::int64_t batch, const char* op) {
  cublasLtMatrixLayout_t l = nullptr;
  check_cublas(cublasLtMatrixLayoutCreate(&l, cuda_type(t), static_cast<std::uint64_t>(stored_cols),
                                          static_cast<std::uint64_t>(stored_rows), stored_cols),
               op);
  if (batch > 1) {
    const int count = static_cast<int>(batch);
    const std::int64_t stride = stored_rows * stored_cols;
    check_cublas(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), op);
    check_cublas(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)), op);
  }
  return l;
}

// How much of the epilogue cuBLASLt runs: all of it (bias, activation, the pre-activation written to
// aux), only the bias (an activation it lacks, GELU (erf) or SiLU, then runs in
// kernels::bias_activation over the biased product: one pass less than adding the bias there), or
// none (a plain product, then bias_activation).
enum class Fusion { All, BiasOnly, None };

// The cuBLASLt epilogue for `fusion`, or false when cuBLASLt has none: GELU (erf) and SiLU, and a
// pre-activation asked for with ReLU.
bool fused_epilogue(Fusion fusion, Act act, bool bias, bool aux, cublasLtEpilogue_t& out) {
  if (fusion == Fusion::BiasOnly) {  // only where All has no epilogue, and there is a bias to add
    cublasLtEpilogue_t all{};
    if (!bias || fused_epilogue(Fusion::All, act, bias, aux, all)) return false;
    out = CUBLASLT_EPILOGUE_BIAS;
    return true;
  }
  switch (act) {
    case Act::None: out = bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT; return !aux;
    case Act::ReLU: out = bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU; return !aux;
    case Act::GeluTanh:
      out = aux ? (bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX)
                : (bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU);
      return true;
    default: return false;
  }
}

}  // namespace

// A matmul descriptor with its layouts and algorithm, for one shape, dtype and epilogue.
struct Gemm::Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;  // cuBLASLt's A (= our b), B (= our a), C/D
  cublasLtMatmulAlgo_t algo{};
  Fusion fusion = Fusion::None;  // what is left of the epilogue runs in kernels::bias_activation
  ~Plan() {
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

Gemm::Gemm(cudaStream_t stream, bool deterministic, bool tf32, std::function<void*(std::size_t)> workspace)
    : stream_(stream), deterministic_(deterministic), tf32_(tf32), workspace_(std::move(workspace)) {
  check_cublas(cublasLtCreate(&handle_), "cublasLtCreate");
}

Gemm::~Gemm() {
  plans_.clear();
  if (handle_) cublasLtDestroy(handle_);
}

std::size_t Gemm::fused_epilogues() const {
  std::size_t n = 0;
  for (const auto& [key, p] : plans_) n += p->fusion != Fusion::None ? 1 : 0;
  return n;
}

Gemm::Plan& Gemm::plan(const Key& key, const GemmOperand& a, const GemmOperand& b, VT c_t, const GemmEpilogue& ep,
                       const char* op) {
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;
  const std::int64_t M = a.rows, K = a.cols, N = b.cols, batch = a.batch;
  const bool want_bias = ep.bias != nullptr, want_aux = ep.aux != nullptr;

  // Try the whole epilogue in cuBLASLt first, then the bias alone; if cuBLASLt finds no algorithm
  // for either, a plain product.
  for (const Fusion fusion : {Fusion::All, Fusion::BiasOnly, Fusion::None}) {
    const bool try_fused = fusion != Fusion::None;
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    if (try_fused && !fused_epilogue(fusion, ep.act, want_bias, want_aux, epilogue)) continue;
    auto p = std::make_unique<Plan>();
    const cublasComputeType_t compute = (tf32_ && a.dtype == VT::F32) ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    check_cublas(cublasLtMatmulDescCreate(&p->desc, compute, CUDA_R_32F), op);
    const cublasOperation_t ta = b.trans ? CUBLAS_OP_T : CUBLAS_OP_N, tb = a.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_desc(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, ta, op);
    set_desc(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, tb, op);
    if (try_fused) {
      set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue, op);
      if (want_bias) {
        set_desc(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(c_t), op);
        set_desc(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ep.bias, op);
      }
      if (want_aux && fusion == Fusion::All) {
        set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, ep.aux, op);
        set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, N, op);
        set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, cuda_type(c_t), op);
        if (batch > 1) set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, M * N, op);
      }
    }
    // stored shapes: b is [K, N] or (trans) [N, K]; a is [M, K] or (trans) [K, M]; c is [M, N]
    p->la = b.trans ? layout(b.dtype, N, K, batch, op) : layout(b.dtype, K, N, batch, op);
    p->lb = a.trans ? layout(a.dtype, K, M, batch, op) : layout(a.dtype, M, K, batch, op);
    p->lc = layout(c_t, M, N, batch, op);

    cublasLtMatmulPreference_t pref = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&pref), op);
    const std::uint64_t ws = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws));
    if (deterministic_) {  // no split-K reductions whose summation order may vary
      const std::uint32_t mask = CUBLASLT_REDUCTION_SCHEME_NONE;
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask));
    }
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(handle_, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st == CUBLAS_STATUS_SUCCESS && found > 0) {
      p->algo = result.algo;
      p->fusion = fusion;
      return *plans_.emplace(key, std::move(p)).first->second;
    }
    if (!try_fused && st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) check_cublas(st, op);
  }
  throw ablate::Error(std::string("backend/cudnn: ") + op + ": cuBLASLt has no algorithm for a [" + std::to_string(batch) +
                      " x " + std::to_string(M) + " x " + std::to_string(K) + "] x [" + std::to_string(K) + " x " +
                      std::to_string(N) + "] product");
}

void Gemm::run(void* c, VT c_t, const GemmOperand& a, const GemmOperand& b, float alpha, float beta, const GemmEpilogue& ep,
               const char* op) {
  const std::int64_t M = a.rows, K = a.cols, N = b.cols;
  if (b.rows != K || b.batch != a.batch || a.dtype != b.dtype)
    throw ablate::Error(std::string("backend/cudnn: ") + op + ": internal GEMM operand mismatch");
  if (M == 0 || N == 0 || a.batch == 0) return;
  const Key key{M,
                N,
                K,
                a.batch,
                a.trans,
                b.trans,
                static_cast<std::int64_t>(a.dtype),
                static_cast<std::int64_t>(c_t),
                static_cast<std::int64_t>(ep.act),
                ep.bias != nullptr,
                ep.aux != nullptr};
  const bool has_epilogue = ep.bias || ep.act != Act::None || ep.aux;
  if (K == 0) {  // an empty sum: C = beta * C, then the epilogue (beta is 0 or 1 here)
    void* d = ep.aux ? ep.aux : c;
    if (beta == 0.0f) kernels::fill(d, static_cast<int>(c_t), a.batch * M * N, 0.0f, stream_);
    if (has_epilogue) kernels::bias_activation(c, ep.aux, d, ep.bias, c_t, a.batch * M, N, ep.act, stream_);
    return;
  }
  Plan& p = plan(key, a, b, c_t, ep, op);
  // Without the whole epilogue, the product (biased with BiasOnly) lands in aux (the
  // pre-activation) when one is wanted, and bias_activation does the rest from there.
  void* d = (p.fusion != Fusion::All && ep.aux) ? ep.aux : c;
  if (p.fusion != Fusion::None && ep.bias) set_desc(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ep.bias, op);
  if (p.fusion == Fusion::All && ep.aux) set_desc(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, ep.aux, op);
  check_cublas(cublasLtMatmul(handle_, p.desc, &alpha, b.data, p.la, a.data, p.lb, &beta, d, p.lc, d, p.lc, &p.algo,
                              workspace_(kWorkspaceBytes), kWorkspaceBytes, stream_),
               op);
  if (p.fusion == Fusion::BiasOnly)  // y = act(d), d already the biased pre-activation
    kernels::bias_activation(c, nullptr, d, nullptr, c_t, a.batch * M, N, ep.act, stream_);
  else if (p.fusion == Fusion::None && has_epilogue)
    kernels::bias_activation(c, ep.aux, d, ep.bias, c_t, a.batch * M, N, ep.act, stream_);
}

}  // namespace backend_cudnn
