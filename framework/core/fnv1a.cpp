// fnv1a64 (core/text.hpp): the byte loop behind checkpoint checksums, run ids and plugin code
// hashes. Its own file so that the sanitizer build can compile it optimised and uninstrumented:
// every process hashes each plugin it loads (tens of MB under ASan), which otherwise dominates.
#include "core/text.hpp"

namespace ablate {

std::uint64_t fnv1a64(const void* bytes, std::size_t n, std::uint64_t hash) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < n; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

}  // namespace ablate
