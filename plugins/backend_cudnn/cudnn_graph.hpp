// Internal header of backend/cudnn: operation graphs built with cuDNN 9's graph API (the
// backend C API of cudnn_graph.h; cudnn-frontend is not used), built once per shape and cached
// with their execution plans (cudnn_plans.cpp; the graphs themselves: cudnn_sdpa_graphs.cpp,
// cudnn_norm_graphs.cpp).
//
// Every entry point returns false, and does nothing, when cuDNN has no engine for that
// configuration (remembered per shape, so the check costs nothing the second time); the
// backend then runs its own unfused path. A cuDNN error other than "not supported" throws
// ablate::Error with the cuDNN status string and the op.
//
// Outputs are WRITTEN (cuDNN overwrites); the backend accumulates them into the caller's
// gradients itself where the backend interface says "+=".
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <cuda_runtime.h>
#include <cudnn.h>

namespace backend_cudnn {

// Scaled dot-product attention over q [B, H, T, Dh], k/v [B, H, S, Dh], o [B, H, T, Dh]
// (dense, row-major, BF16), stats [B, H, T] F32.
struct SdpaConfig {
  std::int64_t B = 0, H = 0, T = 0, S = 0, Dh = 0;
  float scale = 1.0f;
  bool causal = false;       // query i sees keys j <= i (top-left aligned; no query offset)
  bool key_padding = false;  // kv_lengths given: query sees keys j < kv_lengths[b]
  bool dropout = false;      // a dropout mask tensor is given (see sdpa_forward)
};

// Gives the graphs device scratch of at least `bytes` bytes, valid until the next call; the
// backend's caching allocator provides it.
using WorkspaceFn = std::function<void*(std::size_t bytes)>;

class CudnnGraphs {
 public:
  CudnnGraphs(cudnnHandle_t handle, bool deterministic, WorkspaceFn workspace);
  ~CudnnGraphs();
  CudnnGraphs(const CudnnGraphs&) = delete;
  CudnnGraphs& operator=(const CudnnGraphs&) = delete;

  // o = dropout(softmax(mask(scale q·k^T)))·v; stats[b, h, i] = the natural-log logsumexp of
  // row i of the masked, scaled logits (exactly Ablate's `lse`). kv_lengths: I32 [B] device, used
  // when cfg.key_padding (q lengths are all T). dropout_mask: BF16 [B, H, T, S] of
  // keep / (1 - p) factors (0 or 1/(1-p)), used when cfg.dropout: the probabilities are
  // multiplied by it elementwise (so the masks are Ablate's Philox masks, identical to the CPU
  // backends).
  bool sdpa_forward(const SdpaConfig& cfg, void* o, float* stats, const void* q, const void* k, const void* v,
                    const std::int32_t* kv_lengths, const void* dropout_mask, cudaStream_t stream);
  // dq, dk, dv (BF16, written) from do, o, stats and the forward's inputs, same mask.
  bool sdpa_backward(const SdpaConfig& cfg, void* dq, void* dk, void* dv, const void* d_o, const void* o, const float* stats,
                     const void* q, const void* k, const void* v, const std::int32_t* kv_lengths, const void* dropout_mask,
                     cudaStream_t stream);

  // Layer norm over the last dim of x [rows, D] (F32 or BF16 = `bf16`), gamma/beta [D] same
  // dtype: y, mean [rows] F32, rstd [rows] F32 (= 1/sqrt(var + eps), biased variance).
  bool layer_norm_forward(bool bf16, std::int64_t rows, std::int64_t D, float eps, void* y, float* mean, float* rstd,
                          const void* x, const void* gamma, const void* beta, cudaStream_t stream);
  // dx (x's dtype), dgamma, dbeta (F32) written.
  bool layer_norm_backward(bool bf16, std::int64_t rows, std::int64_t D, void* dx, float* dgamma, float* dbeta, const void* dy,
                           const void* x, const float* mean, const float* rstd, const void* gamma, cudaStream_t stream);

  // Whether cuDNN has an engine for the attention graph of `cfg` (built and cached on first ask):
  // sdpa_forward / sdpa_backward then run it, given aligned pointers. For work that only the
  // fused path needs, such as its dropout mask.
  bool has_sdpa_engine(const SdpaConfig& cfg, bool backward, cudaStream_t stream);

  struct Stats {
    std::size_t graphs_built = 0;  // execution plans finalized
    std::size_t unsupported = 0;   // configurations cuDNN refused (fallback taken)
    std::size_t executions = 0;
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The deviceless check, for tests on machines without a GPU: builds the graph that one entry
// point would build (layer norm: rows = cfg.T, D = cfg.Dh) and says whether one of the engine
// configurations cuDNN's heuristics offer (mode A, then the fallback list; deterministic: those
// without the NONDETERMINISTIC note) finalizes into an execution plan for the device that
// `device_json` describes (cuDNN's CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR JSON: ahead-of-time
// planning). Without a GPU a plan gets as far as loading its kernels; that last step's failure
// counts as accepted. Needs a libcuda.so.1 to load (the toolkit's stub will do); no handle.
enum class GraphKind { SdpaForward, SdpaBackward, LayerNormForward, LayerNormBackward };
bool engine_for_device(GraphKind kind, const SdpaConfig& cfg, bool bf16, bool deterministic, const std::string& device_json);

}  // namespace backend_cudnn
