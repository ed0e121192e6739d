// ConstantCache: a plugin's upload-once constants. A tensor made on a backend from a key (the
// backend, offsets, lengths, dtype, ...) is kept and handed out again, so a training step (one
// length) or a decoding step (one row more each time) uploads nothing once warm. Bounded (cleared
// when full) and safe to share between threads. Used by the positional encodings.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>

#include "ablate/tensor.hpp"

namespace ablate {

template <class Key>
class ConstantCache {
 public:
  // The tensor of `key`: the kept one, or make() (called under the lock) kept from now on.
  template <class Make>
  Tensor get(const Key& key, Make&& make) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    Tensor t = make();
    if (cache_.size() >= kMaxKept) cache_.clear();
    cache_.emplace(key, t);
    return t;
  }

 private:
  static constexpr std::size_t kMaxKept = 256;
  mutable std::mutex mutex_;
  mutable std::map<Key, Tensor> cache_;
};

}  // namespace ablate
