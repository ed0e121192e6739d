// backend/cudnn: the backend's life cycle and memory, the helpers its op files share, and the
// runtime library's exported create function. The ops live by family, as in backend_reference:
// linear_ops, attention_ops, norm_ops, elementwise_ops, loss_optim_ops, rope_ops, slice_ops.
#include "cudnn_backend.hpp"

#include <algorithm>
#include <optional>

#include "ablate/error.hpp"
#include "cuda_check.hpp"

namespace backend_cudnn {

using kernels::Act;
using kernels::VT;

// ------------------------------------------------------------------------------------------
// checks

void fail(const char* op, const std::string& message) {
  throw ablate::Error(std::string("backend/cudnn: ") + op + ": " + message);
}

kernels::VT value_type(const Tensor& t) { return t.dtype() == DType::BF16 ? VT::BF16 : VT::F32; }

void need_value_dtype(const char* op, const char* name, const Tensor& g, const char* value_name, const Tensor& value) {
  if (g.dtype() != value.dtype())
    fail(op, std::string(name) + " " + g.str() + " must have the dtype of " + value_name + " " + value.str() +
                 " here: this backend has no f32 gradient for a bf16 " + op);
}

kernels::Act act_of(ablate::Activation a) { return static_cast<Act>(static_cast<int>(a)); }

NormDims norm_dims(const Tensor& x) { return NormDims{value_type(x), x.shape().rows(), x.shape().last()}; }

// ------------------------------------------------------------------------------------------
// life cycle and memory

CudnnBackend::CudnnBackend(const RuntimeConfig& config) : config_(config) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    throw ablate::Error(std::string("backend/cudnn: no usable CUDA GPU (cudaGetDeviceCount: ") +
                            (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")",
                        kNoGpuHint);
  if (config.device >= count)
    throw ablate::Error("backend/cudnn: device " + std::to_string(config.device) + " does not exist; this machine has " +
                            std::to_string(count) + " CUDA device(s)",
                        "set backend.device to a value in [0, " + std::to_string(count) + ")");
  check_cuda(cudaSetDevice(static_cast<int>(config.device)), "cudaSetDevice");
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, static_cast<int>(config.device)), "cudaGetDeviceProperties");
  device_name_ = prop.name;
  if (prop.major < 8)
    throw ablate::Error("backend/cudnn: " + device_name_ + " (compute capability " + std::to_string(prop.major) + "." +
                        std::to_string(prop.minor) + ") is too old; bf16 and the kernels need 8.0 or newer");
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cudnn(cudnnCreate(&cudnn_), "cudnnCreate");
  check_cudnn(cudnnSetStream(cudnn_, stream_), "cudnnSetStream");
  alloc_ = DeviceAllocator::create();
  auto workspace = [this](std::size_t bytes) { return scratch(kWorkspace, bytes); };
  gemm_ = std::make_unique<Gemm>(stream_, config.deterministic, config.tf32, workspace);
  graphs_ = std::make_unique<CudnnGraphs>(cudnn_, config.deterministic, workspace);
  check_cuda(cudaHostAlloc(reinterpret_cast<void**>(&flags_), 2 * sizeof(std::int32_t), cudaHostAllocMapped),
             "cudaHostAlloc (error flags)");
  flags_[0] = flags_[1] = 0;
  check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&flags_device_), flags_, 0), "cudaHostGetDevicePointer");
}

CudnnBackend::~CudnnBackend() {
  if (stream_) cudaStreamSynchronize(stream_);
  graphs_.reset();
  gemm_.reset();
  for (auto& s : slots_) s.reset();
  if (flags_) cudaFreeHost(flags_);
  if (cudnn_) cudnnDestroy(cudnn_);
  if (stream_) cudaStreamDestroy(stream_);
}

ablate::BackendCaps CudnnBackend::caps() const {
  ablate::BackendCaps c;
  c.device = "cuda:" + std::to_string(config_.device) + " (" + device_name_ + ")";
  c.host_addressable = false;
  c.bf16 = true;
  c.bf16_arithmetic = "bf16 GEMMs and attention with f32 accumulation";
  c.deterministic = config_.deterministic;
  c.threads = 1;
  return c;
}

Tensor CudnnBackend::empty(const Shape& shape, DType dtype) {
  auto self = shared_from_this();
  return Tensor(alloc_->allocate(static_cast<std::size_t>(shape.numel()) * ablate::dtype_size(dtype), self), shape, dtype);
}

void* CudnnBackend::scratch(Slot slot, std::size_t bytes) {
  std::shared_ptr<ablate::Storage>& s = slots_[slot];
  if (!s || s->bytes < bytes) {
    s.reset();  // back to the cache first, so a grown slot can reuse it
    s = alloc_->allocate(std::max<std::size_t>(bytes, 256), nullptr);
  }
  return s->data;
}

void CudnnBackend::zero_if_written(Tensor* grad, ablate::GradStore store) {
  if (grad && store == ablate::GradStore::Write) do_fill(*grad, 0.0f);
}

void CudnnBackend::do_fill(Tensor& y, float value) {
  kernels::fill(y.raw(), static_cast<int>(y.dtype()), y.numel(), value, stream_);
}

void CudnnBackend::do_copy_from_host(Tensor& dst, const void* src) {
  check_cuda(cudaMemcpyAsync(dst.raw(), src, dst.bytes(), cudaMemcpyHostToDevice, stream_), "copy_from_host");
}

void CudnnBackend::do_copy_to_host(void* dst, const Tensor& src) {
  check_cuda(cudaMemcpyAsync(dst, src.raw(), src.bytes(), cudaMemcpyDeviceToHost, stream_), "copy_to_host");
  synchronize();
}

void CudnnBackend::do_copy(Tensor& dst, const Tensor& src) {
  check_cuda(cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), cudaMemcpyDeviceToDevice, stream_), "copy");
}

void CudnnBackend::synchronize() {
  check_cuda(cudaStreamSynchronize(stream_), "synchronize (an earlier kernel failed)");
  check_flags();
}

void CudnnBackend::check_flags() {
  const std::int32_t bad_id = flags_[0], bad_target = flags_[1];  // the stream is idle: no kernel writes them now
  if (bad_id == 0 && bad_target == 0) return;
  flags_[0] = flags_[1] = 0;
  if (bad_id != 0) fail("embedding_forward", "ids[" + std::to_string(bad_id - 1) + "] is outside [0, V)");
  fail("cross_entropy_forward", "targets[" + std::to_string(bad_target - 1) + "] is outside [0, V) and is not ignore_index");
}

}  // namespace backend_cudnn

// ------------------------------------------------------------------------------------------
// the runtime library's entry point (see runtime_entry.hpp)

extern "C" __attribute__((visibility("default"))) ablate::Component* ablate_backend_cudnn_runtime_create(
    const backend_cudnn::RuntimeConfig* config) {
  return new backend_cudnn::CudnnBackend(*config);
}
