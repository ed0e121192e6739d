// backend/cudnn: CudnnGraphs (cudnn_graph.hpp): for each graph (cudnn_sdpa_graphs.cpp,
// cudnn_norm_graphs.cpp) the engine that cuDNN's heuristics offer, its execution plan cached by
// shape, its execution, and the deviceless check engine_for_device.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "cuda_check.hpp"
#include "cudnn_descriptors.hpp"
#include "cudnn_graph.hpp"

namespace backend_cudnn {

namespace {

// ------------------------------------------------------------------------------------------
// engine choice

// Whether the engine of `config` carries the NONDETERMINISTIC numerical note.
bool nondeterministic(cudnnBackendDescriptor_t config) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  std::int64_t count = 0;
  build_check(cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &e),
              "reading an engine config's engine");
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  build_check(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                       CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &count, notes.data()),
              "reading an engine's numerical notes");
  const auto end = notes.begin() + std::clamp<std::int64_t>(count, 0, CUDNN_NUMERICAL_NOTE_TYPE_COUNT);
  return std::find(notes.begin(), end, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) != end;
}

// The engine configs cuDNN's heuristics (`mode`) propose for `graph`, best first; none when the
// heuristics say "not supported".
// With `device_prop`, for a described device instead of the handle's (deviceless checks).
std::vector<Desc> engine_configs(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode,
                                 cudnnBackendDescriptor_t device_prop = nullptr) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set_attr(heur.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, graph);
  set_attr(heur.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode);
  if (device_prop) set_attr(heur.get(), CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, device_prop);
  const cudnnStatus_t st = cudnnBackendFinalize(heur.get());
  if (not_supported(st)) return {};
  build_check(st, "finalizing the engine heuristics");
  std::int64_t count = 0;
  build_check(
      cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
      "counting the heuristics' engine configs");
  std::vector<Desc> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  if (count == 0) return configs;
  std::int64_t returned = 0;
  build_check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                                       raw.data()),
              "reading the heuristics' engine configs");
  while (static_cast<std::int64_t>(configs.size()) > returned) configs.pop_back();
  return configs;
}

// Walks the engine configs cuDNN's heuristics propose for `graph` (mode A, then the fallback
// list; in deterministic mode skipping engines noted NONDETERMINISTIC), finalizing an execution
// plan of each for `handle` or, without one, for the device `device_prop` describes, until
// `accept(exec, config, status)` takes one. Returns whether one was taken.
template <class Accept>
bool walk_engines(cudnnBackendDescriptor_t graph, bool deterministic, cudnnHandle_t handle, cudnnBackendDescriptor_t device_prop,
                  Accept&& accept) {
  for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    for (Desc& config : engine_configs(graph, mode, device_prop)) {
      if (deterministic && nondeterministic(config.get())) continue;
      Desc exec(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      if (handle) set_attr(exec.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, handle);
      if (device_prop) set_attr(exec.get(), CUDNN_ATTR_EXECUTION_PLAN_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, device_prop);
      set_attr(exec.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, config.get());
      if (accept(exec, config, cudnnBackendFinalize(exec.get()))) return true;
    }
  }
  return false;
}

// Finalizes the operation graph of `ops` and keeps in `plan` the first execution plan that
// finalizes (walk_engines' order). Throws NotSupported when there is none.
void choose_engine(Plan& plan, const std::vector<cudnnBackendDescriptor_t>& ops, cudnnHandle_t handle, bool deterministic) {
  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set_attrs(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<std::int64_t>(ops.size()),
            ops.data());
  set_attr(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, handle);
  finalize(graph.get(), "finalizing the operation graph");
  const bool found = walk_engines(graph.get(), deterministic, handle, nullptr, [&](Desc& exec, Desc& config, cudnnStatus_t st) {
    if (st != CUDNN_STATUS_SUCCESS) return false;  // this engine cannot: try the next
    std::int64_t workspace = 0, count = 0;
    build_check(
        cudnnBackendGetAttribute(exec.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count, &workspace),
        "reading the execution plan's workspace size");
    plan.engine_workspace = static_cast<std::size_t>(workspace);
    plan.exec = exec.get();
    plan.descs.push_back(std::move(graph));
    plan.descs.push_back(std::move(config));
    plan.descs.push_back(std::move(exec));
    return true;
  });
  if (!found) throw NotSupported{};
}

// ------------------------------------------------------------------------------------------
// cache keys

using Key = std::array<std::int64_t, 7>;

Key sdpa_key(GraphKind kind, const SdpaConfig& c) {
  const std::int64_t flags = (c.causal ? 1 : 0) | (c.key_padding ? 2 : 0) | (c.dropout ? 4 : 0);
  return {static_cast<std::int64_t>(kind), c.B, c.H, c.T, c.S, c.Dh, flags};
}

Key norm_key(GraphKind kind, bool bf16, std::int64_t rows, std::int64_t D) {
  return {static_cast<std::int64_t>(kind), bf16 ? 1 : 0, rows, D, 0, 0, 0};
}

// Builds the graph of `kind` (layer norm: rows = cfg.T, D = cfg.Dh, dtype per `bf16`).
void build_graph(Builder& g, GraphKind kind, const SdpaConfig& cfg, bool bf16, bool deterministic) {
  switch (kind) {
    case GraphKind::SdpaForward: sdpa_forward_graph(g, cfg); break;
    case GraphKind::SdpaBackward: sdpa_backward_graph(g, cfg, deterministic); break;
    case GraphKind::LayerNormForward: layer_norm_forward_graph(g, bf16 ? kBF16 : kF32, cfg.T, cfg.Dh); break;
    case GraphKind::LayerNormBackward: layer_norm_backward_graph(g, bf16 ? kBF16 : kF32, cfg.T, cfg.Dh); break;
  }
}

// The sizes of a layer norm, in the SdpaConfig fields build_graph reads them from.
SdpaConfig norm_config(std::int64_t rows, std::int64_t D) {
  SdpaConfig c;
  c.T = rows;
  c.Dh = D;
  return c;
}

bool positive(const SdpaConfig& c) { return c.B > 0 && c.H > 0 && c.T > 0 && c.S > 0 && c.Dh > 0; }

}  // namespace

// ------------------------------------------------------------------------------------------
// CudnnGraphs

struct CudnnGraphs::Impl {
  cudnnHandle_t handle;
  bool deterministic;
  WorkspaceFn workspace;
  std::map<Key, std::unique_ptr<Plan>> plans;  // nullptr: cuDNN refused that configuration
  Stats stats;

  // The plan of the graph of `kind` (see build_graph), built the first time; nullptr when cuDNN
  // refused it.
  Plan* plan(const Key& key, GraphKind kind, const SdpaConfig& cfg, bool bf16, cudaStream_t stream) {
    if (auto it = plans.find(key); it != plans.end()) return it->second.get();
    auto p = std::make_unique<Plan>();
    try {
      Builder g(*p, stream);
      build_graph(g, kind, cfg, bf16, deterministic);
      choose_engine(*p, g.ops(), handle, deterministic);
      ++stats.graphs_built;
    } catch (const NotSupported&) {
      p.reset();
      ++stats.unsupported;
    }
    return plans.emplace(key, std::move(p)).first->second.get();
  }

  // The plan of an attention graph; nullptr for shapes the entry points never hand to cuDNN (an
  // empty one; a single query and key in backward, which cuDNN's backward engines do not handle).
  Plan* sdpa_plan(GraphKind kind, const SdpaConfig& cfg, cudaStream_t stream) {
    if (!positive(cfg) || (kind == GraphKind::SdpaBackward && cfg.T == 1 && cfg.S == 1)) return nullptr;
    return plan(sdpa_key(kind, cfg), kind, cfg, true, stream);
  }

  // Runs `plan` on `stream` with the call's pointers. False (nothing run) when a device pointer
  // lacks the alignment the tensors declare.
  bool execute(const Plan& plan, const Args& args, cudaStream_t stream, const char* op) {
    std::vector<std::int64_t> uids;
    std::vector<void*> pointers;
    uids.reserve(plan.bindings.size());
    pointers.reserve(plan.bindings.size());
    for (const Binding& b : plan.bindings) {
      if (b.from != Binding::From::Device) continue;
      const auto address = reinterpret_cast<std::uintptr_t>(args[b.arg]);
      if (address == 0) throw ablate::Error(std::string("backend/cudnn: ") + op + ": a tensor pointer is null");
      if (address % static_cast<std::uintptr_t>(kByteAlignment) != 0) return false;
    }
    const std::size_t scratch_at = round_up(plan.engine_workspace, kScratchAlignment);
    const std::size_t bytes = plan.scratch_bytes > 0 ? scratch_at + plan.scratch_bytes : plan.engine_workspace;
    char* ws = bytes > 0 ? static_cast<char*>(workspace(bytes)) : nullptr;
    for (const Binding& b : plan.bindings) {
      uids.push_back(b.uid);
      switch (b.from) {
        case Binding::From::Device:
        case Binding::From::Host: pointers.push_back(const_cast<void*>(args[b.arg])); break;
        case Binding::From::Fixed: pointers.push_back(b.fixed); break;
        case Binding::From::Workspace: pointers.push_back(ws + scratch_at + b.offset); break;
      }
    }
    // The graph's own intermediates start at zero: the non-deterministic attention backward
    // accumulates dq into its F32 buffer there (cudnn-frontend zeroes it the same way).
    if (plan.scratch_bytes > 0)
      check_cuda(cudaMemsetAsync(ws + scratch_at, 0, plan.scratch_bytes, stream), "zeroing the graph's intermediates");
    cudnn_check(cudnnSetStream(handle, stream), "cudnnSetStream");
    Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    const auto n = static_cast<std::int64_t>(uids.size());
    void* ws_pointer = ws;
    cudnn_check(cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids.data()),
                "variant pack: unique ids");
    cudnn_check(
        cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers.data()),
        "variant pack: data pointers");
    cudnn_check(cudnnBackendSetAttribute(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws_pointer),
                "variant pack: workspace");
    cudnn_check(cudnnBackendFinalize(pack.get()), "variant pack: finalize");
    const cudnnStatus_t st = cudnnBackendExecute(handle, plan.exec, pack.get());
    if (st != CUDNN_STATUS_SUCCESS) cudnn_fail(st, std::string(op) + ": cudnnBackendExecute");
    ++stats.executions;
    return true;
  }
};

CudnnGraphs::CudnnGraphs(cudnnHandle_t handle, bool deterministic, WorkspaceFn workspace)
    : impl_(std::make_unique<Impl>(Impl{handle, deterministic, std::move(workspace), {}, {}})) {}

CudnnGraphs::~CudnnGraphs() = default;

bool CudnnGraphs::sdpa_forward(const SdpaConfig& cfg, void* o, float* stats, const void* q, const void* k, const void* v,
                               const std::int32_t* kv_lengths, const void* dropout_mask, cudaStream_t stream) {
  Plan* plan = impl_->sdpa_plan(GraphKind::SdpaForward, cfg, stream);
  if (!plan) return false;
  // clang-format off
  const Args args = bind({{kQ, q}, {kK, k}, {kV, v}, {kO, o}, {kStats, stats}, {kKvLengths, kv_lengths},
                          {kDropoutMask, dropout_mask}, {kScale, &cfg.scale}});
  // clang-format on
  return impl_->execute(*plan, args, stream, "sdpa_forward");
}

bool CudnnGraphs::sdpa_backward(const SdpaConfig& cfg, void* dq, void* dk, void* dv, const void* d_o, const void* o,
                                const float* stats, const void* q, const void* k, const void* v, const std::int32_t* kv_lengths,
                                const void* dropout_mask, cudaStream_t stream) {
  Plan* plan = impl_->sdpa_plan(GraphKind::SdpaBackward, cfg, stream);
  if (!plan) return false;
  // clang-format off
  const Args args = bind({{kQ, q}, {kK, k}, {kV, v}, {kO, o}, {kDO, d_o}, {kStats, stats}, {kDQ, dq}, {kDK, dk},
                          {kDV, dv}, {kKvLengths, kv_lengths}, {kDropoutMask, dropout_mask}, {kScale, &cfg.scale}});
  // clang-format on
  return impl_->execute(*plan, args, stream, "sdpa_backward");
}

bool CudnnGraphs::layer_norm_forward(bool bf16, std::int64_t rows, std::int64_t D, float eps, void* y, float* mean, float* rstd,
                                     const void* x, const void* gamma, const void* beta, cudaStream_t stream) {
  if (rows <= 0 || D <= 0) return false;
  Plan* plan = impl_->plan(norm_key(GraphKind::LayerNormForward, bf16, rows, D), GraphKind::LayerNormForward,
                           norm_config(rows, D), bf16, stream);
  if (!plan) return false;
  // clang-format off
  const Args args = bind({{kX, x}, {kGamma, gamma}, {kBeta, beta}, {kEps, &eps}, {kY, y}, {kMean, mean},
                          {kRstd, rstd}});
  // clang-format on
  return impl_->execute(*plan, args, stream, "layer_norm_forward");
}

bool CudnnGraphs::layer_norm_backward(bool bf16, std::int64_t rows, std::int64_t D, void* dx, float* dgamma, float* dbeta,
                                      const void* dy, const void* x, const float* mean, const float* rstd, const void* gamma,
                                      cudaStream_t stream) {
  if (rows <= 0 || D <= 0) return false;
  Plan* plan = impl_->plan(norm_key(GraphKind::LayerNormBackward, bf16, rows, D), GraphKind::LayerNormBackward,
                           norm_config(rows, D), bf16, stream);
  if (!plan) return false;
  // clang-format off
  const Args args = bind({{kX, x}, {kDY, dy}, {kGamma, gamma}, {kMean, mean}, {kRstd, rstd}, {kDX, dx},
                          {kDGamma, dgamma}, {kDBeta, dbeta}});
  // clang-format on
  return impl_->execute(*plan, args, stream, "layer_norm_backward");
}

bool CudnnGraphs::has_sdpa_engine(const SdpaConfig& cfg, bool backward, cudaStream_t stream) {
  return impl_->sdpa_plan(backward ? GraphKind::SdpaBackward : GraphKind::SdpaForward, cfg, stream) != nullptr;
}

CudnnGraphs::Stats CudnnGraphs::stats() const { return impl_->stats; }

// ------------------------------------------------------------------------------------------
// the deviceless check (cudnn_graph.hpp)

bool engine_for_device(GraphKind kind, const SdpaConfig& cfg, bool bf16, bool deterministic, const std::string& device_json) {
  const bool attention = kind == GraphKind::SdpaForward || kind == GraphKind::SdpaBackward;
  if (attention ? !positive(cfg) : (cfg.T <= 0 || cfg.Dh <= 0)) return false;  // as the entry points
  Desc prop(CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR);
  set_attrs(prop.get(), CUDNN_ATTR_DEVICEPROP_JSON_REPRESENTATION, CUDNN_TYPE_CHAR, static_cast<std::int64_t>(device_json.size()),
            device_json.data());
  finalize(prop.get(), "the device description");
  Plan plan;
  Builder g(plan, nullptr);
  try {
    build_graph(g, kind, cfg, bf16, deterministic);
  } catch (const NotSupported&) {
    return false;
  }
  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set_attrs(graph.get(), CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<std::int64_t>(g.ops().size()),
            g.ops().data());
  if (not_supported(cudnnBackendFinalize(graph.get()))) return false;
  return walk_engines(graph.get(), deterministic, nullptr, prop.get(), [](Desc&, Desc&, cudnnStatus_t st) {
    char why[1024] = {};
    cudnnGetLastErrorString(why, sizeof why);
    // Without a GPU the engine gets as far as loading its compiled kernels, and no further.
    return st == CUDNN_STATUS_SUCCESS ||
           (st == CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER && std::string(why).find("cuLibraryLoadData") != std::string::npos);
  });
}

}  // namespace backend_cudnn
