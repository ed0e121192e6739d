// backend/cudnn: operation graphs on cuDNN 9's backend C API (cudnn_graph.hpp).
//
// Every entry point describes its graph as backend descriptors: tensors (each with a unique id;
// "virtual" ones live only inside the fused kernel), then operations that read and write them.
// cuDNN's heuristics rank the engine configurations for the finalized operation graph, and the
// first one whose execution plan finalizes is kept, per shape. Executing the plan takes a variant
// pack: the data pointer of every non-virtual tensor, by unique id, and the workspace.
//
// The attention graphs are the ones cuDNN's fused flash-attention engines (Hopper) recognize,
// as cudnn-frontend's composite SDPA nodes lay them out for cuDNN 9.x: batched matmuls, the
// scale, masks made of GEN_INDEX / compare / BINARY_SELECT pointwise ops, a softmax spelled out
// as MAX and ADD reductions, and the softmax statistics max + log(sum exp), that is the
// natural-log logsumexp of each row of masked, scaled logits (Ablate's `lse`). cuDNN classifies
// these graphs as its SDPA_FWD / SDPA_BWD patterns. The tensor data types of that layout
// (including those of the virtual tensors) are kept as they are, since the engines match them.
#include "cudnn_graph.hpp"

#include <algorithm>
#include <array>
#include <deque>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "cuda_check.hpp"

namespace backend_cudnn {

namespace {

using Dims = std::array<std::int64_t, 4>;

// Row-major strides of `d`.
Dims dense(const Dims& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }

constexpr std::int64_t kByteAlignment = 16;     // declared for every tensor: data pointers must have it
constexpr std::size_t kScratchAlignment = 256;  // of the graph's own buffers in the workspace

std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

// ------------------------------------------------------------------------------------------
// errors

// Thrown while a graph is built when cuDNN answers "not supported": the entry point returns
// false and the shape is remembered as unsupported.
struct NotSupported {};

[[noreturn]] void cudnn_fail(cudnnStatus_t st, const std::string& what) {
  std::array<char, 1024> detail{};
  cudnnGetLastErrorString(detail.data(), detail.size());
  std::string message = "backend/cudnn: " + what + ": " + cudnnGetErrorString(st);
  if (detail[0] != '\0') message += " (" + std::string(detail.data()) + ")";
  throw ablate::Error(message);
}

void cudnn_check(cudnnStatus_t st, const char* what) {
  if (st != CUDNN_STATUS_SUCCESS) cudnn_fail(st, what);
}

bool not_supported(cudnnStatus_t st) { return CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED; }

// While building a graph: "not supported" throws NotSupported, any other failure ablate::Error.
void build_check(cudnnStatus_t st, const char* what) {
  if (st != CUDNN_STATUS_SUCCESS && not_supported(st)) throw NotSupported{};
  cudnn_check(st, what);
}

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
               const void* values) {
  const cudnnStatus_t st = cudnnBackendSetAttribute(d, name, type, count, values);
  if (st == CUDNN_STATUS_SUCCESS) return;
  if (not_supported(st)) throw NotSupported{};
  cudnn_fail(st, "building a graph: cudnnBackendSetAttribute(attribute " + std::to_string(static_cast<int>(name)) + ")");
}

// One element; `type` names the cuDNN attribute type that T must be.
template <class T>
void set_attr(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T& value) {
  set_attrs(d, name, type, 1, &value);
}

void finalize(cudnnBackendDescriptor_t d, const char* what) { build_check(cudnnBackendFinalize(d), what); }

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
  ~Plan() {
    while (!descs.empty()) descs.pop_back();  // the plan first, the tensors last
    for (void* p : device_data) cudaFree(p);
  }
};

struct Tensor {
  cudnnBackendDescriptor_t desc = nullptr;
  std::int64_t uid = 0;
  Dims dims{}, strides{};
};

// Optional M/N/K overrides of a batched matmul (the sequence lengths of a padded batch).
struct Overrides {
  const Tensor* m = nullptr;
  const Tensor* n = nullptr;
  const Tensor* k = nullptr;
};

// Builds a graph into a Plan: one helper per descriptor kind. Every tensor gets a fresh unique id;
// the non-virtual ones are bound to where their data comes from.
class Builder {
 public:
  Builder(Plan& plan, cudaStream_t stream) : plan_(plan), stream_(stream) {}

  const std::vector<cudnnBackendDescriptor_t>& ops() const { return ops_; }

  // --- tensors

  // A tensor whose device data the caller passes as args[a].
  Tensor arg(Arg a, cudnnDataType_t type, const Dims& dims, const Dims& strides) {
    Tensor t = tensor(type, dims, strides, Kind::Data);
    plan_.bindings.push_back({Binding::From::Device, t.uid, a});
    return t;
  }
  // An F32 scalar passed by value, read from the host float at args[a] at each execution.
  Tensor host_scalar(Arg a) {
    Tensor t = tensor(CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, Kind::ByValue);
    plan_.bindings.push_back({Binding::From::Host, t.uid, a});
    return t;
  }
  // An F32 scalar passed by value, fixed when the graph is built.
  Tensor constant(float value) {
    Tensor t = tensor(CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, Kind::ByValue);
    plan_.constants.push_back(value);
    plan_.bindings.push_back({Binding::From::Fixed, t.uid, kArgCount, &plan_.constants.back()});
    return t;
  }
  // An I32 tensor with fixed contents, in device memory the plan owns (copied on the build's stream).
  Tensor device_i32(const std::vector<std::int32_t>& values, const Dims& dims, const Dims& strides) {
    void* data = nullptr;
    const std::size_t bytes = values.size() * sizeof(std::int32_t);
    check_cuda(cudaMalloc(&data, bytes), "cudaMalloc (graph constants)");
    plan_.device_data.push_back(data);
    check_cuda(cudaMemcpyAsync(data, values.data(), bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (graph constants)");
    Tensor t = tensor(CUDNN_DATA_INT32, dims, strides, Kind::Data);
    plan_.bindings.push_back({Binding::From::Fixed, t.uid, kArgCount, data});
    return t;
  }
  // A dense F32 intermediate that the engine needs in memory, placed in the workspace.
  Tensor scratch(const Dims& dims) {
    Tensor t = tensor(CUDNN_DATA_FLOAT, dims, dense(dims), Kind::Data);
    plan_.bindings.push_back({Binding::From::Workspace, t.uid, kArgCount, nullptr, plan_.scratch_bytes});
    const auto elements = static_cast<std::size_t>(dims[0] * dims[1] * dims[2] * dims[3]);
    plan_.scratch_bytes += round_up(elements * sizeof(float), kScratchAlignment);
    return t;
  }
  // A tensor that exists only inside the fused kernel.
  Tensor virt(cudnnDataType_t type, const Dims& dims, const Dims& strides) { return tensor(type, dims, strides, Kind::Virtual); }

  // --- operations

  // y = mode(x[, b[, t]]), computed in `prec`; `axis` is GEN_INDEX's.
  void pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t prec, const Tensor& x, const Tensor* b, const Tensor* t,
                 const Tensor& y, std::int64_t axis = 0) {
    Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set_attr(pw.get(), CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode);
    set_attr(pw.get(), CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, prec);
    if (mode == CUDNN_POINTWISE_GEN_INDEX) set_attr(pw.get(), CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, axis);
    finalize(pw.get(), "building a graph: pointwise descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, pw.get());
    set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x.desc);
    if (b) set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, b->desc);
    if (t) set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, t->desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1.0f);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1.0f);
    finalize(op.get(), "building a graph: pointwise operation");
    keep(std::move(pw));
    add_op(std::move(op));
  }
  // A virtual x-shaped result of mode(x, b), F32 math.
  Tensor binary(cudnnPointwiseMode_t mode, const Tensor& x, const Tensor& b, cudnnDataType_t out = CUDNN_DATA_FLOAT) {
    const Tensor y = virt(out, x.dims, x.strides);
    pointwise(mode, CUDNN_DATA_FLOAT, x, &b, nullptr, y);
    return y;
  }
  Tensor unary(cudnnPointwiseMode_t mode, const Tensor& x) {
    const Tensor y = virt(CUDNN_DATA_FLOAT, x.dims, x.strides);
    pointwise(mode, CUDNN_DATA_FLOAT, x, nullptr, nullptr, y);
    return y;
  }
  // The I32 index along `axis` of each element of x.
  Tensor gen_index(const Tensor& x, std::int64_t axis, cudnnDataType_t prec) {
    const Tensor y = virt(CUDNN_DATA_INT32, x.dims, x.strides);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, prec, x, nullptr, nullptr, y, axis);
    return y;
  }
  // A boolean mode(x, b): a comparison or a logical op.
  Tensor boolean(cudnnPointwiseMode_t mode, const Tensor& x, const Tensor& b) {
    const Tensor y = virt(CUDNN_DATA_BOOLEAN, x.dims, x.strides);
    pointwise(mode, CUDNN_DATA_BOOLEAN, x, &b, nullptr, y);
    return y;
  }
  // keep ? x : b
  Tensor select(const Tensor& x, const Tensor& b, const Tensor& keep) {
    const Tensor y = virt(CUDNN_DATA_FLOAT, x.dims, x.strides);
    pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, x, &b, &keep, y);
    return y;
  }

  // c = a·b over the last two dims, batched over the first two; F32 accumulation.
  void matmul(const Tensor& a, const Tensor& b, const Tensor& c, Overrides ov = {}) {
    Desc mm(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    set_attr(mm.get(), CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
    finalize(mm.get(), "building a graph: matmul descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, a.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, b.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, c.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, mm.get());
    const auto override_desc = [&](cudnnBackendAttributeName_t name, const Tensor* t) {
      if (t) set_attr(op.get(), name, CUDNN_TYPE_BACKEND_DESCRIPTOR, t->desc);
    };
    override_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, ov.m);
    override_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, ov.n);
    override_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, ov.k);
    finalize(op.get(), "building a graph: matmul operation");
    keep(std::move(mm));
    add_op(std::move(op));
  }

  // A virtual F32 [d0, d1, d2, 1]: x [d0, d1, d2, d3] reduced over its last dim.
  Tensor reduction(cudnnReduceTensorOp_t reduce, const Tensor& x) {
    const Dims dims{x.dims[0], x.dims[1], x.dims[2], 1};
    const Tensor y = virt(CUDNN_DATA_FLOAT, dims, {dims[1] * dims[2], dims[2], 1, 1});
    Desc red(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    set_attr(red.get(), CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
    set_attr(red.get(), CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, reduce);
    set_attr(red.get(), CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, false);
    finalize(red.get(), "building a graph: reduction descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, red.get());
    set_attr(op.get(), CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y.desc);
    finalize(op.get(), "building a graph: reduction operation");
    keep(std::move(red));
    add_op(std::move(op));
    return y;
  }

  // A virtual view of x's data with other dims/strides (here: transposes of the last two dims).
  Tensor reshape(const Tensor& x, cudnnDataType_t type, const Dims& dims, const Dims& strides) {
    const Tensor y = virt(type, dims, strides);
    Desc op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y.desc);
    finalize(op.get(), "building a graph: reshape operation");
    add_op(std::move(op));
    return y;
  }

  // Layer norm, training phase: y, and the saved mean and inverse standard deviation.
  void norm_forward(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& eps, const Tensor& y,
                    const Tensor& mean, const Tensor& inv_std) {
    Desc op(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, CUDNN_LAYER_NORM);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, CUDNN_NORM_FWD_TRAINING);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, scale.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, bias.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, eps.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, mean.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, inv_std.desc);
    finalize(op.get(), "building a graph: norm forward operation");
    add_op(std::move(op));
  }

  // Layer norm backward: dx, dscale, dbias from dy, x, scale and the saved statistics.
  void norm_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean, const Tensor& inv_std,
                     const Tensor& dx, const Tensor& dscale, const Tensor& dbias) {
    Desc op(CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_BWD_MODE, CUDNN_TYPE_NORM_MODE, CUDNN_LAYER_NORM);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, dy.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, scale.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, mean.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, inv_std.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, dx.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, dscale.desc);
    set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, dbias.desc);
    finalize(op.get(), "building a graph: norm backward operation");
    add_op(std::move(op));
  }

 private:
  enum class Kind { Data, ByValue, Virtual };

  Tensor tensor(cudnnDataType_t type, const Dims& dims, const Dims& strides, Kind kind) {
    Desc d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const Tensor t{d.get(), next_uid_++, dims, strides};
    set_attr(d.get(), CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type);
    set_attrs(d.get(), CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    set_attrs(d.get(), CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    set_attr(d.get(), CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, t.uid);
    set_attr(d.get(), CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, kByteAlignment);
    if (kind == Kind::Virtual) set_attr(d.get(), CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, true);
    if (kind == Kind::ByValue) set_attr(d.get(), CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, true);
    finalize(d.get(), "building a graph: tensor descriptor");
    keep(std::move(d));
    return t;
  }
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
// the graphs

constexpr cudnnDataType_t kF32 = CUDNN_DATA_FLOAT;
constexpr cudnnDataType_t kBF16 = CUDNN_DATA_BFLOAT16;

// The attention tensors of one configuration: q, o, do [B, H, T, Dh], k, v [B, H, S, Dh], all
// dense, and the statistics [B, H, T, 1].
struct SdpaShape {
  Dims q, kv, stats, stats_strides, scores;
  // k (or v) [B, H, S, Dh] read as its transpose [B, H, Dh, S]: same data, strides swapped
  Dims kv_t, kv_t_strides;
  explicit SdpaShape(const SdpaConfig& c)
      : q{c.B, c.H, c.T, c.Dh},
        kv{c.B, c.H, c.S, c.Dh},
        stats{c.B, c.H, c.T, 1},
        stats_strides{c.H * c.T, c.T, 1, 1},
        scores{c.B, c.H, c.T, c.S},
        kv_t{c.B, c.H, c.Dh, c.S},
        kv_t_strides{c.H * c.S * c.Dh, c.S * c.Dh, 1, c.Dh} {}
};

// The per-item sequence lengths of a key-padded batch, I32 [B, 1, 1, 1]: the queries' (all T, in
// device memory the plan owns) and the caller's kv_lengths.
struct SeqLens {
  Tensor q, kv;
};
SeqLens seq_lens(Builder& g, const SdpaConfig& c) {
  const Dims dims{c.B, 1, 1, 1}, strides{1, 1, 1, 1};
  const std::vector<std::int32_t> q_lengths(static_cast<std::size_t>(c.B), static_cast<std::int32_t>(c.T));
  return {g.device_i32(q_lengths, dims, strides), g.arg(kKvLengths, CUDNN_DATA_INT32, dims, strides)};
}

constexpr float kMinusInf = -std::numeric_limits<float>::infinity();

// Key padding: logits outside (query i < q_len[b]) and (key j < kv_len[b]) become -inf.
Tensor padding_mask(Builder& g, const Tensor& s, const SeqLens& lens) {
  const Tensor row = g.gen_index(s, 2, CUDNN_DATA_INT32);
  const Tensor col = g.gen_index(s, 3, CUDNN_DATA_INT32);
  const Tensor row_ok = g.boolean(CUDNN_POINTWISE_CMP_LT, row, lens.q);
  const Tensor col_ok = g.boolean(CUDNN_POINTWISE_CMP_LT, col, lens.kv);
  const Tensor keep = g.boolean(CUDNN_POINTWISE_LOGICAL_AND, row_ok, col_ok);
  return g.select(s, g.constant(kMinusInf), keep);
}

// Causal, top-left aligned: logits of keys j > query i become -inf. (The index generation runs in
// F32 math here, as in the pattern the fused engines take; the padding mask's runs in I32.)
Tensor causal_mask(Builder& g, const Tensor& s) {
  const Tensor row = g.gen_index(s, 2, kF32);
  const Tensor col = g.gen_index(s, 3, kF32);
  const Tensor keep = g.boolean(CUDNN_POINTWISE_CMP_GE, row, col);
  return g.select(s, g.constant(kMinusInf), keep);
}

// SDPA forward: s = mask(scale q·kᵀ); stats = max + log(sum exp(s - max)); p = softmax(s),
// times the dropout factors; o = p·v.
void sdpa_forward_graph(Builder& g, const SdpaConfig& c) {
  const SdpaShape sh(c);
  const Tensor q = g.arg(kQ, kBF16, sh.q, dense(sh.q));
  const Tensor k_t = g.arg(kK, kBF16, sh.kv_t, sh.kv_t_strides);
  const Tensor v = g.arg(kV, kBF16, sh.kv, dense(sh.kv));
  const Tensor o = g.arg(kO, kBF16, sh.q, dense(sh.q));
  const Tensor stats = g.arg(kStats, kF32, sh.stats, sh.stats_strides);
  const Tensor scale = g.host_scalar(kScale);
  SeqLens lens;
  if (c.key_padding) lens = seq_lens(g, c);
  const Tensor* q_len = c.key_padding ? &lens.q : nullptr;
  const Tensor* kv_len = c.key_padding ? &lens.kv : nullptr;

  Tensor s = g.virt(kF32, sh.scores, dense(sh.scores));
  g.matmul(q, k_t, s, {.m = q_len, .n = kv_len});
  s = g.binary(CUDNN_POINTWISE_MUL, s, scale);
  if (c.key_padding) s = padding_mask(g, s, lens);
  if (c.causal) s = causal_mask(g, s);

  const Tensor max = g.reduction(CUDNN_REDUCE_TENSOR_MAX, s);
  const Tensor e = g.unary(CUDNN_POINTWISE_EXP, g.binary(CUDNN_POINTWISE_SUB, s, max));
  const Tensor sum = g.reduction(CUDNN_REDUCE_TENSOR_ADD, e);
  const Tensor log_sum = g.unary(CUDNN_POINTWISE_LOG, sum);
  g.pointwise(CUDNN_POINTWISE_ADD, kF32, max, &log_sum, nullptr, stats);
  // the probabilities that enter the second matmul are BF16, like v
  Tensor p = g.binary(CUDNN_POINTWISE_DIV, e, sum, c.dropout ? kF32 : kBF16);
  if (c.dropout) {
    // The pattern's dropout scale, then the mask; the mask already holds the scaled factors.
    p = g.binary(CUDNN_POINTWISE_MUL, p, g.constant(1.0f));
    p = g.binary(CUDNN_POINTWISE_MUL, p, g.arg(kDropoutMask, kBF16, sh.scores, dense(sh.scores)), kBF16);
  }
  g.matmul(p, v, o, {.m = q_len, .k = kv_len});
}

// SDPA backward: p = exp(mask(scale q·kᵀ) - stats) (times the dropout factors: pd);
// dv = pdᵀ·do; ds = scale · p ∘ (dp - rowsum(do ∘ o)) with dp = (do·vᵀ) ∘ factors;
// dk = dsᵀ·q; dq = ds·k. Deterministic mode writes dq from the matmul directly; otherwise the
// engine accumulates it in an F32 buffer (in the workspace) and converts.
void sdpa_backward_graph(Builder& g, const SdpaConfig& c, bool deterministic) {
  const SdpaShape sh(c);
  const Tensor q = g.arg(kQ, kBF16, sh.q, dense(sh.q));
  const Tensor k_t = g.arg(kK, kBF16, sh.kv_t, sh.kv_t_strides);
  const Tensor v_t = g.arg(kV, kBF16, sh.kv_t, sh.kv_t_strides);
  const Tensor o = g.arg(kO, kBF16, sh.q, dense(sh.q));
  const Tensor d_o = g.arg(kDO, kBF16, sh.q, dense(sh.q));
  const Tensor stats = g.arg(kStats, kF32, sh.stats, sh.stats_strides);
  const Tensor dq = g.arg(kDQ, kBF16, sh.q, dense(sh.q));
  const Tensor dk = g.arg(kDK, kBF16, sh.kv, dense(sh.kv));
  const Tensor dv = g.arg(kDV, kBF16, sh.kv, dense(sh.kv));
  const Tensor scale = g.host_scalar(kScale);
  SeqLens lens;
  if (c.key_padding) lens = seq_lens(g, c);
  const Tensor* q_len = c.key_padding ? &lens.q : nullptr;
  const Tensor* kv_len = c.key_padding ? &lens.kv : nullptr;

  // softmax_sum = rowsum(do ∘ o) · 1 (the pattern's inverse dropout scale; 1 as the mask is scaled),
  // kept in the workspace. The product's strides are the pattern's (a virtual tensor).
  const Tensor do_o = g.virt(kF32, sh.q, {c.H * c.T * c.Dh, c.T * c.Dh, c.H * c.Dh, 1});
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, d_o, &o, nullptr, do_o);
  const Tensor row_sum = g.reduction(CUDNN_REDUCE_TENSOR_ADD, do_o);
  const Tensor softmax_sum = g.scratch(sh.stats);
  const Tensor one = g.constant(1.0f);
  g.pointwise(CUDNN_POINTWISE_MUL, kF32, row_sum, &one, nullptr, softmax_sum);

  // p, recomputed from the forward's statistics
  Tensor s = g.virt(kF32, sh.scores, dense(sh.scores));
  g.matmul(q, k_t, s, {.m = q_len, .n = kv_len});
  s = g.binary(CUDNN_POINTWISE_MUL, s, scale);
  if (c.key_padding) s = padding_mask(g, s, lens);
  s = g.binary(CUDNN_POINTWISE_SUB, s, stats);
  if (c.causal) s = causal_mask(g, s);
  const Tensor p = g.unary(CUDNN_POINTWISE_EXP, s);
  Tensor mask, dropout_scale, pd = p;
  if (c.dropout) {
    mask = g.arg(kDropoutMask, kBF16, sh.scores, dense(sh.scores));
    dropout_scale = g.constant(1.0f);  // the pattern's dropout scale; the mask holds the scaled factors
    pd = g.binary(CUDNN_POINTWISE_MUL, g.binary(CUDNN_POINTWISE_MUL, p, mask), dropout_scale);
  }

  // dv = pdᵀ·do, pdᵀ [B, H, S, T] a BF16 view
  const Dims scores_t{c.B, c.H, c.S, c.T}, scores_t_strides{c.H * c.T * c.S, c.T * c.S, 1, c.S};
  g.matmul(g.reshape(pd, kBF16, scores_t, scores_t_strides), d_o, dv, {.m = kv_len, .k = q_len});

  // ds
  Tensor dp = g.virt(kF32, sh.scores, dense(sh.scores));
  g.matmul(d_o, v_t, dp, {.m = q_len, .n = kv_len});
  if (c.dropout) dp = g.binary(CUDNN_POINTWISE_MUL, dp, mask);
  Tensor ds = g.binary(CUDNN_POINTWISE_MUL, g.binary(CUDNN_POINTWISE_SUB, dp, softmax_sum), p);
  if (c.dropout) ds = g.binary(CUDNN_POINTWISE_MUL, ds, dropout_scale);
  ds = g.binary(CUDNN_POINTWISE_MUL, ds, scale);

  // dk = dsᵀ·q
  g.matmul(g.reshape(ds, kBF16, scores_t, scores_t_strides), q, dk, {.m = kv_len, .k = q_len});

  // dq = ds·k, k [B, H, S, Dh] as a view of kᵀ (an F32 virtual tensor in the pattern)
  const Tensor k = g.reshape(k_t, kF32, sh.kv, dense(sh.kv));
  if (deterministic) {
    g.matmul(ds, k, dq, {.m = q_len, .k = kv_len});
  } else {
    const Tensor dq_accum = g.scratch(sh.q);
    g.matmul(ds, k, dq_accum, {.m = q_len, .k = kv_len});
    g.pointwise(CUDNN_POINTWISE_IDENTITY, kF32, dq_accum, nullptr, nullptr, dq);
  }
}

// Layer norm over the rows of x [rows, D] (as [rows, D, 1, 1], D innermost), gamma/beta [1, D, 1, 1]
// and the per-row statistics [rows, 1, 1, 1].
struct NormShape {
  Dims x, x_strides, w, w_strides, stat, stat_strides;
  NormShape(std::int64_t rows, std::int64_t D)
      : x{rows, D, 1, 1},
        x_strides{D, 1, D, D},
        w{1, D, 1, 1},
        w_strides{D, 1, D, D},
        stat{rows, 1, 1, 1},
        stat_strides{1, 1, 1, 1} {}
};

void layer_norm_forward_graph(Builder& g, cudnnDataType_t type, std::int64_t rows, std::int64_t D) {
  const NormShape sh(rows, D);
  const Tensor x = g.arg(kX, type, sh.x, sh.x_strides);
  const Tensor gamma = g.arg(kGamma, type, sh.w, sh.w_strides);
  const Tensor beta = g.arg(kBeta, type, sh.w, sh.w_strides);
  const Tensor eps = g.host_scalar(kEps);
  const Tensor y = g.arg(kY, type, sh.x, sh.x_strides);
  const Tensor mean = g.arg(kMean, kF32, sh.stat, sh.stat_strides);
  const Tensor rstd = g.arg(kRstd, kF32, sh.stat, sh.stat_strides);
  g.norm_forward(x, gamma, beta, eps, y, mean, rstd);
}

void layer_norm_backward_graph(Builder& g, cudnnDataType_t type, std::int64_t rows, std::int64_t D) {
  const NormShape sh(rows, D);
  const Tensor x = g.arg(kX, type, sh.x, sh.x_strides);
  const Tensor dy = g.arg(kDY, type, sh.x, sh.x_strides);
  const Tensor gamma = g.arg(kGamma, type, sh.w, sh.w_strides);
  const Tensor mean = g.arg(kMean, kF32, sh.stat, sh.stat_strides);
  const Tensor rstd = g.arg(kRstd, kF32, sh.stat, sh.stat_strides);
  const Tensor dx = g.arg(kDX, type, sh.x, sh.x_strides);
  const Tensor dgamma = g.arg(kDGamma, kF32, sh.w, sh.w_strides);
  const Tensor dbeta = g.arg(kDBeta, kF32, sh.w, sh.w_strides);
  g.norm_backward(x, dy, gamma, mean, rstd, dx, dgamma, dbeta);
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
  Args args{};
  args[kQ] = q;
  args[kK] = k;
  args[kV] = v;
  args[kO] = o;
  args[kStats] = stats;
  args[kKvLengths] = kv_lengths;
  args[kDropoutMask] = dropout_mask;
  args[kScale] = &cfg.scale;
  return impl_->execute(*plan, args, stream, "sdpa_forward");
}

bool CudnnGraphs::sdpa_backward(const SdpaConfig& cfg, void* dq, void* dk, void* dv, const void* d_o, const void* o,
                                const float* stats, const void* q, const void* k, const void* v, const std::int32_t* kv_lengths,
                                const void* dropout_mask, cudaStream_t stream) {
  Plan* plan = impl_->sdpa_plan(GraphKind::SdpaBackward, cfg, stream);
  if (!plan) return false;
  Args args{};
  args[kQ] = q;
  args[kK] = k;
  args[kV] = v;
  args[kO] = o;
  args[kDO] = d_o;
  args[kStats] = stats;
  args[kDQ] = dq;
  args[kDK] = dk;
  args[kDV] = dv;
  args[kKvLengths] = kv_lengths;
  args[kDropoutMask] = dropout_mask;
  args[kScale] = &cfg.scale;
  return impl_->execute(*plan, args, stream, "sdpa_backward");
}

bool CudnnGraphs::layer_norm_forward(bool bf16, std::int64_t rows, std::int64_t D, float eps, void* y, float* mean, float* rstd,
                                     const void* x, const void* gamma, const void* beta, cudaStream_t stream) {
  if (rows <= 0 || D <= 0) return false;
  Plan* plan = impl_->plan(norm_key(GraphKind::LayerNormForward, bf16, rows, D), GraphKind::LayerNormForward,
                           norm_config(rows, D), bf16, stream);
  if (!plan) return false;
  Args args{};
  args[kX] = x;
  args[kGamma] = gamma;
  args[kBeta] = beta;
  args[kEps] = &eps;
  args[kY] = y;
  args[kMean] = mean;
  args[kRstd] = rstd;
  return impl_->execute(*plan, args, stream, "layer_norm_forward");
}

bool CudnnGraphs::layer_norm_backward(bool bf16, std::int64_t rows, std::int64_t D, void* dx, float* dgamma, float* dbeta,
                                      const void* dy, const void* x, const float* mean, const float* rstd, const void* gamma,
                                      cudaStream_t stream) {
  if (rows <= 0 || D <= 0) return false;
  Plan* plan = impl_->plan(norm_key(GraphKind::LayerNormBackward, bf16, rows, D), GraphKind::LayerNormBackward,
                           norm_config(rows, D), bf16, stream);
  if (!plan) return false;
  Args args{};
  args[kX] = x;
  args[kDY] = dy;
  args[kGamma] = gamma;
  args[kMean] = mean;
  args[kRstd] = rstd;
  args[kDX] = dx;
  args[kDGamma] = dgamma;
  args[kDBeta] = dbeta;
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
