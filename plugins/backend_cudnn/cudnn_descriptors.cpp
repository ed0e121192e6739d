// backend/cudnn: the building blocks of its cuDNN operation graphs (cudnn_descriptors.hpp):
// cuDNN errors, backend descriptor attributes, and the Builder that turns tensors and operations
// into the descriptors of a Plan, shared by the attention and layer-norm graphs.
#include "cudnn_descriptors.hpp"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "ablate/error.hpp"
#include "cuda_check.hpp"

namespace backend_cudnn {

// ------------------------------------------------------------------------------------------
// errors

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

void build_check(cudnnStatus_t st, const char* what) {
  if (st != CUDNN_STATUS_SUCCESS && not_supported(st)) throw NotSupported{};
  cudnn_check(st, what);
}

// ------------------------------------------------------------------------------------------
// descriptors

void set_attrs(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, std::int64_t count,
               const void* values) {
  const cudnnStatus_t st = cudnnBackendSetAttribute(d, name, type, count, values);
  if (st == CUDNN_STATUS_SUCCESS) return;
  if (not_supported(st)) throw NotSupported{};
  cudnn_fail(st, "building a graph: cudnnBackendSetAttribute(attribute " + std::to_string(static_cast<int>(name)) + ")");
}

void set_tensors(cudnnBackendDescriptor_t op,
                 std::initializer_list<std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>> tensors) {
  for (const auto& [name, desc] : tensors) set_attr(op, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, desc);
}

void finalize(cudnnBackendDescriptor_t d, const char* what) { build_check(cudnnBackendFinalize(d), what); }

// ------------------------------------------------------------------------------------------
// plans

Plan::~Plan() {
  while (!descs.empty()) descs.pop_back();  // the plan first, the tensors last
  for (void* p : device_data) cudaFree(p);
}

// ------------------------------------------------------------------------------------------
// Builder

GraphTensor Builder::arg(Arg a, cudnnDataType_t type, const Dims& dims, const Dims& strides) {
  GraphTensor t = tensor(type, dims, strides, Kind::Data);
  plan_.bindings.push_back({Binding::From::Device, t.uid, a});
  return t;
}

GraphTensor Builder::host_scalar(Arg a) {
  GraphTensor t = tensor(CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, Kind::ByValue);
  plan_.bindings.push_back({Binding::From::Host, t.uid, a});
  return t;
}

GraphTensor Builder::constant(float value) {
  GraphTensor t = tensor(CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, Kind::ByValue);
  plan_.constants.push_back(value);
  plan_.bindings.push_back({Binding::From::Fixed, t.uid, kArgCount, &plan_.constants.back()});
  return t;
}

GraphTensor Builder::device_i32(const std::vector<std::int32_t>& values, const Dims& dims, const Dims& strides) {
  void* data = nullptr;
  const std::size_t bytes = values.size() * sizeof(std::int32_t);
  check_cuda(cudaMalloc(&data, bytes), "cudaMalloc (graph constants)");
  plan_.device_data.push_back(data);
  check_cuda(cudaMemcpyAsync(data, values.data(), bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (graph constants)");
  GraphTensor t = tensor(CUDNN_DATA_INT32, dims, strides, Kind::Data);
  plan_.bindings.push_back({Binding::From::Fixed, t.uid, kArgCount, data});
  return t;
}

GraphTensor Builder::scratch(const Dims& dims) {
  GraphTensor t = tensor(CUDNN_DATA_FLOAT, dims, dense(dims), Kind::Data);
  plan_.bindings.push_back({Binding::From::Workspace, t.uid, kArgCount, nullptr, plan_.scratch_bytes});
  const auto elements = static_cast<std::size_t>(dims[0] * dims[1] * dims[2] * dims[3]);
  plan_.scratch_bytes += round_up(elements * sizeof(float), kScratchAlignment);
  return t;
}

void Builder::pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t prec, const GraphTensor& x, const GraphTensor* b,
                        const GraphTensor* t, const GraphTensor& y, std::int64_t axis) {
  Desc pw(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  set_attr(pw.get(), CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode);
  set_attr(pw.get(), CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, prec);
  if (mode == CUDNN_POINTWISE_GEN_INDEX) set_attr(pw.get(), CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, axis);
  finalize(pw.get(), "building a graph: pointwise descriptor");
  Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set_tensors(op.get(),
              {{CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw.get()}, {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x.desc}});
  if (b) set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, b->desc);
  if (t) set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, t->desc);
  set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y.desc);
  set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1.0f);
  set_attr(op.get(), CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1.0f);
  finalize(op.get(), "building a graph: pointwise operation");
  keep(std::move(pw));
  add_op(std::move(op));
}

GraphTensor Builder::binary(cudnnPointwiseMode_t mode, const GraphTensor& x, const GraphTensor& b, cudnnDataType_t out) {
  const GraphTensor y = virt(out, x.dims, x.strides);
  pointwise(mode, CUDNN_DATA_FLOAT, x, &b, nullptr, y);
  return y;
}

GraphTensor Builder::unary(cudnnPointwiseMode_t mode, const GraphTensor& x) {
  const GraphTensor y = virt(CUDNN_DATA_FLOAT, x.dims, x.strides);
  pointwise(mode, CUDNN_DATA_FLOAT, x, nullptr, nullptr, y);
  return y;
}

GraphTensor Builder::gen_index(const GraphTensor& x, std::int64_t axis, cudnnDataType_t prec) {
  const GraphTensor y = virt(CUDNN_DATA_INT32, x.dims, x.strides);
  pointwise(CUDNN_POINTWISE_GEN_INDEX, prec, x, nullptr, nullptr, y, axis);
  return y;
}

GraphTensor Builder::boolean(cudnnPointwiseMode_t mode, const GraphTensor& x, const GraphTensor& b) {
  const GraphTensor y = virt(CUDNN_DATA_BOOLEAN, x.dims, x.strides);
  pointwise(mode, CUDNN_DATA_BOOLEAN, x, &b, nullptr, y);
  return y;
}

GraphTensor Builder::select(const GraphTensor& x, const GraphTensor& b, const GraphTensor& keep) {
  const GraphTensor y = virt(CUDNN_DATA_FLOAT, x.dims, x.strides);
  pointwise(CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, x, &b, &keep, y);
  return y;
}

void Builder::matmul(const GraphTensor& a, const GraphTensor& b, const GraphTensor& c, Overrides ov) {
  Desc mm(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  set_attr(mm.get(), CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  finalize(mm.get(), "building a graph: matmul descriptor");
  Desc op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  set_tensors(op.get(), {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, a.desc},
                         {CUDNN_ATTR_OPERATION_MATMUL_BDESC, b.desc},
                         {CUDNN_ATTR_OPERATION_MATMUL_CDESC, c.desc},
                         {CUDNN_ATTR_OPERATION_MATMUL_DESC, mm.get()}});
  const auto override_desc = [&](cudnnBackendAttributeName_t name, const GraphTensor* t) {
    if (t) set_attr(op.get(), name, CUDNN_TYPE_BACKEND_DESCRIPTOR, t->desc);
  };
  override_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, ov.m);
  override_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, ov.n);
  override_desc(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, ov.k);
  finalize(op.get(), "building a graph: matmul operation");
  keep(std::move(mm));
  add_op(std::move(op));
}

GraphTensor Builder::reduction(cudnnReduceTensorOp_t reduce, const GraphTensor& x) {
  const Dims dims{x.dims[0], x.dims[1], x.dims[2], 1};
  const GraphTensor y = virt(CUDNN_DATA_FLOAT, dims, {dims[1] * dims[2], dims[2], 1, 1});
  Desc red(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  set_attr(red.get(), CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, CUDNN_DATA_FLOAT);
  set_attr(red.get(), CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, reduce);
  set_attr(red.get(), CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, false);
  finalize(red.get(), "building a graph: reduction descriptor");
  Desc op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  set_tensors(op.get(), {{CUDNN_ATTR_OPERATION_REDUCTION_DESC, red.get()},
                         {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x.desc},
                         {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y.desc}});
  finalize(op.get(), "building a graph: reduction operation");
  keep(std::move(red));
  add_op(std::move(op));
  return y;
}

GraphTensor Builder::reshape(const GraphTensor& x, cudnnDataType_t type, const Dims& dims, const Dims& strides) {
  const GraphTensor y = virt(type, dims, strides);
  Desc op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
  set_tensors(op.get(), {{CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x.desc}, {CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y.desc}});
  finalize(op.get(), "building a graph: reshape operation");
  add_op(std::move(op));
  return y;
}

void Builder::norm_forward(const GraphTensor& x, const GraphTensor& scale, const GraphTensor& bias, const GraphTensor& eps,
                           const GraphTensor& y, const GraphTensor& mean, const GraphTensor& inv_std) {
  Desc op(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
  set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, CUDNN_LAYER_NORM);
  set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, CUDNN_NORM_FWD_TRAINING);
  set_tensors(op.get(), {{CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, x.desc},
                         {CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, scale.desc},
                         {CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, bias.desc},
                         {CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, eps.desc},
                         {CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, y.desc},
                         {CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, mean.desc},
                         {CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, inv_std.desc}});
  finalize(op.get(), "building a graph: norm forward operation");
  add_op(std::move(op));
}

void Builder::norm_backward(const GraphTensor& x, const GraphTensor& dy, const GraphTensor& scale, const GraphTensor& mean,
                            const GraphTensor& inv_std, const GraphTensor& dx, const GraphTensor& dscale,
                            const GraphTensor& dbias) {
  Desc op(CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
  set_attr(op.get(), CUDNN_ATTR_OPERATION_NORM_BWD_MODE, CUDNN_TYPE_NORM_MODE, CUDNN_LAYER_NORM);
  set_tensors(op.get(), {{CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, x.desc},
                         {CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, dy.desc},
                         {CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, scale.desc},
                         {CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, mean.desc},
                         {CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC, inv_std.desc},
                         {CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, dx.desc},
                         {CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, dscale.desc},
                         {CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, dbias.desc}});
  finalize(op.get(), "building a graph: norm backward operation");
  add_op(std::move(op));
}

GraphTensor Builder::tensor(cudnnDataType_t type, const Dims& dims, const Dims& strides, Kind kind) {
  Desc d(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const GraphTensor t{d.get(), next_uid_++, dims, strides};
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

}  // namespace backend_cudnn
