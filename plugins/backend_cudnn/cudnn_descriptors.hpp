// Internal header of backend/cudnn's cuDNN graph files (cudnn_plans.cpp, cudnn_sdpa_graphs.cpp,
// cudnn_norm_graphs.cpp): the building blocks of their operation graphs (backend descriptors,
// tensors, operations) and the plans they become (cudnn_descriptors.cpp), behind cudnn_graph.hpp.
//
// Every entry point describes its graph as backend descriptors: tensors (each with a unique id;
// "virtual" ones live only inside the fused kernel), then operations that read and write them.
// cuDNN's heuristics rank the engine configurations for the finalized operation graph, and the
// first one whose execution plan finalizes is kept, per shape. Executing the plan takes a variant
// pack: the data pointer of every non-virtual tensor, by unique id, and the workspace.
#pragma once

#include <array>
#include <initializer_list>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include <cuda_runtime.h>
#include <cudnn.h>

#include "cudnn_graph.hpp"

namespace backend_cudnn {

using Dims = std::array<std::int64_t, 4>;

// Row-major strides of `d`.
inline Dims dense(const Dims& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }

constexpr std::int64_t kByteAlignment = 16;     // declared for every tensor: data pointers must have it
constexpr std::size_t kScratchAlignment = 256;  // of the graph's own buffers in the workspace

inline std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

constexpr cudnnDataType_t kF32 = CUDNN_DATA_FLOAT;
constexpr cudnnDataType_t kBF16 = CUDNN_DATA_BFLOAT16;

// ------------------------------------------------------------------------------------------
// errors

// Thrown while a graph is built when cuDNN answers "not supported": the entry point returns
// false and the shape is remembered as unsupported.
struct NotSupported {};

[[noreturn]] void cudnn_fail(cudnnStatus_t st, const std::string& what);
void cudnn_check(cudnnStatus_t st, const char* what);
bool not_supported(cudnnStatus_t st);
// While building a graph: "not supported" throws NotSupported, any other failure ablate::Error.
void build_check(cudnnStatus_t st, const char* what);

// ------------------------------------------------------------------------------------------
// descriptors

// Owns one backend descriptor.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) {
    cudnn_check(cudnnBackendCreateDescriptor(type, &d_), "cudnnBackendCreateDescriptor");
  }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(Desc&& other) noexcept : d_(std::exchange(other.d_, nullptr)) {}
  Desc& operator=(Desc&& other) noexcept {
    std::swap(d_, other.d_);
    return *this;
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

void set_attrs(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
               const void* values);

// One element; `type` names the cuDNN attribute type that T must be.
template <class T>
void set_attr(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T& value) {
  set_attrs(d, name, type, 1, &value);
}
// Points each of an operation's tensor attributes at its tensor: set_tensors(op, {{..._XDESC, x.desc}, ...}).
void set_tensors(cudnnBackendDescriptor_t op,
                 std::initializer_list<std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>> tensors);

void finalize(cudnnBackendDescriptor_t d, const char* what);

// ------------------------------------------------------------------------------------------
// plans

// The entry points' pointers, by role; a graph binds the ones it uses to its tensors.
enum Arg : int {
  kQ,
  kK,
  kV,
  kO,
  kStats,
  kDO,
  kDQ,
  kDK,
  kDV,
  kKvLengths,
  kDropoutMask,
  kScale,
  kX,
  kY,
  kDY,
  kDX,
  kGamma,
  kBeta,
  kMean,
  kRstd,
  kDGamma,
  kDBeta,
  kEps,
  kArgCount
};
using Args = std::array<const void*, kArgCount>;
// The arguments of one execution, by name: bind({{kQ, q}, {kK, k}, ...}); the others stay null.
inline Args bind(std::initializer_list<std::pair<Arg, const void*>> given) {
  Args args{};
  for (const auto& [arg, pointer] : given) args[arg] = pointer;
  return args;
}

// Where the variant pack finds the data of one non-virtual tensor at execution time.
struct Binding {
  enum class From {
    Device,     // args[arg]: a device pointer
    Host,       // args[arg]: a host scalar (by-value tensor)
    Fixed,      // `fixed`: a constant's host value, or device data the plan owns
    Workspace,  // `offset` bytes into the graph's own part of the workspace
  };
  From from;
  std::int64_t uid;
  Arg arg = kArgCount;  // Device, Host
  void* fixed = nullptr;
  std::size_t offset = 0;
};

// A finalized execution plan with what it was built from.
struct Plan {
  std::vector<Desc> descs;                  // tensors, operations, graph, engine config: alive as long as the plan
  cudnnBackendDescriptor_t exec = nullptr;  // the execution plan (owned by `descs`)
  std::vector<Binding> bindings;
  std::deque<float> constants;       // host values of by-value constants (addresses stay put)
  std::vector<void*> device_data;    // cudaMalloc'd inputs the plan owns (query lengths)
  std::size_t engine_workspace = 0;  // bytes, at the start of the workspace
  std::size_t scratch_bytes = 0;     // the graph's own non-virtual intermediates, after it

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan();
};

struct GraphTensor {
  cudnnBackendDescriptor_t desc = nullptr;
  std::int64_t uid = 0;
  Dims dims{}, strides{};
};

// Optional M/N/K overrides of a batched matmul (the sequence lengths of a padded batch).
struct Overrides {
  const GraphTensor* m = nullptr;
  const GraphTensor* n = nullptr;
  const GraphTensor* k = nullptr;
};

// Builds a graph into a Plan: one helper per descriptor kind. Every tensor gets a fresh unique id;
// the non-virtual ones are bound to where their data comes from.
class Builder {
 public:
  Builder(Plan& plan, cudaStream_t stream) : plan_(plan), stream_(stream) {}

  const std::vector<cudnnBackendDescriptor_t>& ops() const { return ops_; }

  // --- tensors

  // A tensor whose device data the caller passes as args[a].
  GraphTensor arg(Arg a, cudnnDataType_t type, const Dims& dims, const Dims& strides);
  // An F32 scalar passed by value, read from the host float at args[a] at each execution.
  GraphTensor host_scalar(Arg a);
  // An F32 scalar passed by value, fixed when the graph is built.
  GraphTensor constant(float value);
  // An I32 tensor with fixed contents, in device memory the plan owns (copied on the build's stream).
  GraphTensor device_i32(const std::vector<std::int32_t>& values, const Dims& dims, const Dims& strides);
  // A dense F32 intermediate that the engine needs in memory, placed in the workspace.
  GraphTensor scratch(const Dims& dims);
  // A tensor that exists only inside the fused kernel.
  GraphTensor virt(cudnnDataType_t type, const Dims& dims, const Dims& strides) {
    return tensor(type, dims, strides, Kind::Virtual);
  }

  // --- operations

  // y = mode(x[, b[, t]]), computed in `prec`; `axis` is GEN_INDEX's.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t prec, const GraphTensor& x, const GraphTensor* b,
                 const GraphTensor* t, const GraphTensor& y, std::int64_t axis = 0);
  // A virtual x-shaped result of mode(x, b), F32 math.
  GraphTensor binary(cudnnPointwiseMode_t mode, const GraphTensor& x, const GraphTensor& b,
                     cudnnDataType_t out = CUDNN_DATA_FLOAT);
  GraphTensor unary(cudnnPointwiseMode_t mode, const GraphTensor& x);
  // The I32 index along `axis` of each element of x.
  GraphTensor gen_index(const GraphTensor& x, std::int64_t axis, cudnnDataType_t prec);
  // A boolean mode(x, b): a comparison or a logical op.
  GraphTensor boolean(cudnnPointwiseMode_t mode, const GraphTensor& x, const GraphTensor& b);
  // keep ? x : b
  GraphTensor select(const GraphTensor& x, const GraphTensor& b, const GraphTensor& keep);

  // c = a·b over the last two dims, batched over the first two; F32 accumulation.
  void matmul(const GraphTensor& a, const GraphTensor& b, const GraphTensor& c, Overrides ov = {});

  // A virtual F32 [d0, d1, d2, 1]: x [d0, d1, d2, d3] reduced over its last dim.
  GraphTensor reduction(cudnnReduceTensorOp_t reduce, const GraphTensor& x);

  // A virtual view of x's data with other dims/strides (here: transposes of the last two dims).
  GraphTensor reshape(const GraphTensor& x, cudnnDataType_t type, const Dims& dims, const Dims& strides);

  // Layer norm, training phase: y, and the saved mean and inverse standard deviation.
  void norm_forward(const GraphTensor& x, const GraphTensor& scale, const GraphTensor& bias, const GraphTensor& eps,
                    const GraphTensor& y, const GraphTensor& mean, const GraphTensor& inv_std);

  // Layer norm backward: dx, dscale, dbias from dy, x, scale and the saved statistics.
  void norm_backward(const GraphTensor& x, const GraphTensor& dy, const GraphTensor& scale, const GraphTensor& mean,
                     const GraphTensor& inv_std, const GraphTensor& dx, const GraphTensor& dscale, const GraphTensor& dbias);

 private:
  enum class Kind { Data, ByValue, Virtual };

  GraphTensor tensor(cudnnDataType_t type, const Dims& dims, const Dims& strides, Kind kind);
  void keep(Desc d) { plan_.descs.push_back(std::move(d)); }
  void add_op(Desc op) {
    ops_.push_back(op.get());
    keep(std::move(op));
  }

  Plan& plan_;
  cudaStream_t stream_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::int64_t next_uid_ = 1;
};

// ------------------------------------------------------------------------------------------
// the graphs, one per entry point, built into `g` (cudnn_plans.cpp picks one per GraphKind)

// cudnn_sdpa_graphs.cpp: attention forward and backward over the tensors of `c` (cudnn_graph.hpp).
void sdpa_forward_graph(Builder& g, const SdpaConfig& c);
void sdpa_backward_graph(Builder& g, const SdpaConfig& c, bool deterministic);

// cudnn_norm_graphs.cpp: layer norm over the rows of x [rows, D], in `type` (F32 or BF16).
void layer_norm_forward_graph(Builder& g, cudnnDataType_t type, std::int64_t rows, std::int64_t D);
void layer_norm_backward_graph(Builder& g, cudnnDataType_t type, std::int64_t rows, std::int64_t D);

}  // namespace backend_cudnn
