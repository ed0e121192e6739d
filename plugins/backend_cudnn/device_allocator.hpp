// Internal header of backend/cudnn: the caching allocator for device memory. Freed blocks go to
// per-size free lists and are handed out again, so a warm training loop calls cudaMalloc never.
// All work runs on the backend's one stream, so a block freed by the host while kernels that use
// it are still queued can be handed to the next op at once: stream order keeps them apart.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ablate/tensor.hpp"

namespace backend_cudnn {

class DeviceAllocator : public std::enable_shared_from_this<DeviceAllocator> {
 public:
  static std::shared_ptr<DeviceAllocator> create();
  ~DeviceAllocator();

  // Storage of at least `bytes` bytes (256-byte aligned). Its deleter returns the block to the
  // cache and keeps `owner` (the backend) alive until then. On cudaMalloc failure the cache is
  // emptied and the allocation retried once; then ablate::Error says how much was asked and held.
  std::shared_ptr<ablate::Storage> allocate(std::size_t bytes, std::shared_ptr<const void> owner);

  struct Stats {
    std::size_t device_allocations = 0;  // cudaMalloc calls (cache misses)
    std::size_t reuses = 0;
    std::size_t bytes_cached = 0;
    std::size_t bytes_in_use = 0;
  };
  Stats stats() const;
  void release_cached();  // cudaFree every cached block (synchronises the device first)

  // The size class a request is rounded to: 512 B steps up to 1 MiB, 1 MiB steps above.
  static std::size_t rounded(std::size_t bytes);

 private:
  DeviceAllocator() = default;
  void give_back(void* p, std::size_t bytes) noexcept;

  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;  // block size -> block
  Stats stats_;
};

}  // namespace backend_cudnn
