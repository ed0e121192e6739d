// A caching allocator for host memory, shared by the CPU backends: 64-byte aligned blocks,
// kept in per-size free lists when released, so a training loop allocates nothing once warm
// ("allocate once, execute many": docs/compute-core.md). Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ablate/tensor.hpp"

namespace ablate {

class BOOST_SYMBOL_VISIBLE HostAllocator : public std::enable_shared_from_this<HostAllocator> {
 public:
  static std::shared_ptr<HostAllocator> create();
  ~HostAllocator();

  // Storage of at least `bytes` bytes. Its deleter returns the block to this allocator and holds
  // `owner` (the backend) alive until then.
  std::shared_ptr<Storage> allocate(std::size_t bytes, std::shared_ptr<const void> owner);

  struct Stats {
    std::size_t system_allocations = 0;  // blocks obtained from the system (cache misses)
    std::size_t reuses = 0;              // requests served from the cache
    std::size_t bytes_cached = 0;        // bytes sitting in free lists
    std::size_t bytes_in_use = 0;
  };
  Stats stats() const;
  void release_cached();  // give every cached block back to the system

 private:
  HostAllocator() = default;
  void give_back(void* p, std::size_t bytes);

  mutable std::mutex mutex_;
  std::map<std::size_t, std::vector<void*>> free_;  // rounded size -> blocks
  Stats stats_;
};

}  // namespace ablate
