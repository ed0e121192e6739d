// backend/cudnn: the caching device allocator (device_allocator.hpp).
#include "device_allocator.hpp"

#include <string>

#include <cuda_runtime.h>

#include "ablate/error.hpp"

namespace backend_cudnn {

std::shared_ptr<DeviceAllocator> DeviceAllocator::create() { return std::shared_ptr<DeviceAllocator>(new DeviceAllocator()); }

DeviceAllocator::~DeviceAllocator() {
  for (auto& [bytes, p] : free_) cudaFree(p);  // at process exit the runtime may be gone: ignore errors
}

std::size_t DeviceAllocator::rounded(std::size_t bytes) {
  constexpr std::size_t kSmall = 512, kLarge = std::size_t{1} << 20;
  if (bytes == 0) bytes = 1;
  const std::size_t step = bytes <= kLarge ? kSmall : kLarge;
  return (bytes + step - 1) / step * step;
}

std::shared_ptr<ablate::Storage> DeviceAllocator::allocate(std::size_t bytes, std::shared_ptr<const void> owner) {
  std::size_t size = rounded(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // A cached block of this size class or up to twice it; it keeps its own size, so it
    // returns to the same list.
    auto it = free_.lower_bound(size);
    if (it != free_.end() && it->first <= 2 * size) {
      size = it->first;
      p = it->second;
      free_.erase(it);
      stats_.bytes_cached -= size;
      ++stats_.reuses;
    }
  }
  if (p == nullptr) {
    cudaError_t e = cudaMalloc(&p, size);
    if (e != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error state of the failed call
      release_cached();
      e = cudaMalloc(&p, size);
    }
    if (e != cudaSuccess) {
      cudaGetLastError();
      const Stats s = stats();
      throw ablate::Error("backend/cudnn: out of GPU memory: cudaMalloc of " + std::to_string(size >> 20) + " MiB failed (" +
                              cudaGetErrorString(e) + ") with " + std::to_string(s.bytes_in_use >> 20) + " MiB in use by tensors",
                          "use a smaller batch, model or sequence length, or precision: bf16");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.device_allocations;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.bytes_in_use += size;
  }
  auto self = shared_from_this();
  auto* storage = new ablate::Storage{p, size};
  return std::shared_ptr<ablate::Storage>(storage, [self, owner = std::move(owner), size](ablate::Storage* s) {
    self->give_back(s->data, size);
    delete s;
  });
}

void DeviceAllocator::give_back(void* p, std::size_t bytes) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytes_in_use -= bytes;
  stats_.bytes_cached += bytes;
  free_.emplace(bytes, p);
}

DeviceAllocator::Stats DeviceAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void DeviceAllocator::release_cached() {
  cudaDeviceSynchronize();
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [bytes, p] : free_) cudaFree(p);
  free_.clear();
  stats_.bytes_cached = 0;
}

}  // namespace backend_cudnn
