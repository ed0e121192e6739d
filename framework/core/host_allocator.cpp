// The caching host allocator (framework/include/ablate/host_allocator.hpp). Sizes are rounded
// up to 64 bytes (to a power of two above 1 MiB, to bound the number of distinct lists).
#include "ablate/host_allocator.hpp"

#include <cstdlib>
#include <new>
#include <string>

#include "ablate/error.hpp"

namespace ablate {
namespace {

std::size_t rounded(std::size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes > (std::size_t{1} << 56))  // the doubling below would wrap to 0 (and spin) above 2^63
    throw Error("cannot allocate " + std::to_string(bytes) + " bytes of host memory",
                "a size in the spec (model width, vocabulary, batch or length) is far too large");
  if (bytes > (std::size_t{1} << 20)) {
    std::size_t p = std::size_t{1} << 20;
    while (p < bytes) p <<= 1;
    return p;
  }
  return (bytes + 63) / 64 * 64;
}

}  // namespace

std::shared_ptr<HostAllocator> HostAllocator::create() { return std::shared_ptr<HostAllocator>(new HostAllocator()); }

HostAllocator::~HostAllocator() { release_cached(); }

std::shared_ptr<Storage> HostAllocator::allocate(std::size_t bytes, std::shared_ptr<const void> owner) {
  const std::size_t size = rounded(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(size);
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      stats_.bytes_cached -= size;
      ++stats_.reuses;
    } else {
      ++stats_.system_allocations;
    }
    stats_.bytes_in_use += size;
  }
  if (p == nullptr) {
    p = std::aligned_alloc(64, size);
    if (p == nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.bytes_in_use -= size;
      throw std::bad_alloc();
    }
  }
  auto storage = new Storage{p, size};
  std::shared_ptr<HostAllocator> self = shared_from_this();
  return std::shared_ptr<Storage>(storage, [self, owner = std::move(owner)](Storage* s) {
    self->give_back(s->data, s->bytes);
    delete s;
  });
}

void HostAllocator::give_back(void* p, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_[bytes].push_back(p);
  stats_.bytes_cached += bytes;
  stats_.bytes_in_use -= bytes;
}

HostAllocator::Stats HostAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void HostAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [size, blocks] : free_)
    for (void* p : blocks) std::free(p);
  free_.clear();
  stats_.bytes_cached = 0;
}

}  // namespace ablate
