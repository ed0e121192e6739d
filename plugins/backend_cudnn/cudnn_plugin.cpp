// Plugin backend/cudnn: the plugin record and factory. The backend itself lives in
// backend_cudnn/libablate_backend_cudnn_runtime.so beside this plugin (see CMakeLists.txt for why), which the
// factory loads on first use, after checking that an NVIDIA driver is present at all: without
// one, choosing this backend is a clear error and the CUDA libraries are never mapped.
#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <string>

#include "ablate/backend.hpp"
#include "ablate/error.hpp"
#include "runtime_entry.hpp"

namespace backend_cudnn {

namespace {

constexpr ablate::OptionInfo kOptions[] = {
    {"device", ablate::OptionType::Int, "0", nullptr, "CUDA device ordinal"},
    {"deterministic", ablate::OptionType::Bool, "true", nullptr,
     "deterministic cuBLASLt/cuDNN algorithms and reductions: bit-identical reruns (slightly slower)"},
    {"fused_attention", ablate::OptionType::Bool, "true", nullptr,
     "cuDNN fused attention for bf16 training steps (falls back to the unfused path where cuDNN has no engine)"},
    {"tf32", ablate::OptionType::Bool, "false", nullptr, "f32 GEMMs on TF32 tensor cores (faster, ~1e-3 relative error)"},
};

const int kAnchor = 0;  // an address inside this plugin, to find its directory

// The runtime library's create function, loaded once per process.
RuntimeCreateFn load_runtime() {
  static std::mutex mutex;
  static RuntimeCreateFn create = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (create) return create;

  // Is there a driver at all? libcuda.so.1 comes with the NVIDIA driver, not with the toolkit.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr)
    throw ablate::Error("backend/cudnn: no NVIDIA driver on this machine (libcuda.so.1 cannot be loaded: " +
                            std::string(dlerror()) + "), so there is no GPU to run on",
                        kNoGpuHint);
  dlclose(driver);

  Dl_info info{};
  if (dladdr(&kAnchor, &info) == 0 || info.dli_fname == nullptr)
    throw ablate::Error("backend/cudnn: cannot find the plugin's own directory (dladdr failed)");
  const std::filesystem::path runtime = std::filesystem::path(info.dli_fname).parent_path() / kRuntimeLibrary;
  // Never unloaded: tensors and the backend made by it may live until the process exits.
  void* lib = dlopen(runtime.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (lib == nullptr)
    throw ablate::Error("backend/cudnn: cannot load the GPU runtime " + runtime.string() + ": " + dlerror(),
                        "check that CUDA 13 and cuDNN 9 are installed where this build found them "
                        "(ldd " +
                            runtime.string() + ")");
  create = reinterpret_cast<RuntimeCreateFn>(dlsym(lib, kRuntimeCreateSymbol));
  if (create == nullptr)
    throw ablate::Error("backend/cudnn: " + runtime.string() + " does not export " + kRuntimeCreateSymbol, "rebuild Ablate");
  return create;
}

ablate::Component* create(const ablate::Options& o) {
  RuntimeConfig config;
  config.device = o.get_int("device");
  if (config.device < 0) throw ablate::Error("backend/cudnn: device must be >= 0, got " + std::to_string(config.device));
  config.deterministic = o.get_bool("deterministic");
  config.fused_attention = o.get_bool("fused_attention");
  config.tf32 = o.get_bool("tf32");
  return load_runtime()(&config);
}

}  // namespace

ABLATE_PLUGIN("backend", "cudnn", "0.1.0",
              "GPU backend: cuDNN 9 graph API (fused attention, layer norm), cuBLASLt GEMMs, CUDA kernels (f32, bf16)",
              ablate::options_of(kOptions), create)

}  // namespace backend_cudnn
