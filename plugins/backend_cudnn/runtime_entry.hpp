// Internal header of backend/cudnn: the one symbol the runtime library exports, which the plugin
// (cudnn_plugin.cpp) resolves after dlopen()ing it. C linkage, so the name is stable.
#pragma once

#include <cstdint>

#include "ablate/plugin.hpp"

namespace backend_cudnn {

struct RuntimeConfig {
  std::int64_t device = 0;      // CUDA device ordinal
  bool deterministic = true;    // deterministic cuBLASLt / cuDNN algorithms and reductions
  bool fused_attention = true;  // cuDNN's fused SDPA for BF16 training steps where it applies
  bool tf32 = false;            // F32 GEMMs on TF32 tensor cores (faster, ~1e-3 relative error)
};

// What to do when there is no GPU to run on (the plugin's driver check, the runtime's device check).
inline constexpr const char* kNoGpuHint =
    "run on a machine with an NVIDIA GPU and driver, or choose a CPU backend (backend: onednn or reference)";

using RuntimeCreateFn = ablate::Component* (*)(const RuntimeConfig* config);
// Relative to the plugin's directory: a subfolder, which the plugin scan does not enter.
inline constexpr const char* kRuntimeLibrary = "backend_cudnn/libablate_backend_cudnn_runtime.so";
inline constexpr const char* kRuntimeCreateSymbol = "ablate_backend_cudnn_runtime_create";

}  // namespace backend_cudnn
