// The arithmetic of the index and layout ops (Backend::compare_forward, permute_*), written once
// for every backend: host C++ (reference, onednn) and CUDA kernels (cudnn, ABLATE_HD) call these,
// so the test a comparison makes and the element a permutation reads are the same everywhere.
#pragma once

#include <cstdint>

#include "ablate/host_device.hpp"

namespace ablate {

// The comparisons of Backend::compare_forward: y = (a OP b) ? 1 : 0.
enum class Compare : std::uint8_t { eq = 0, ne = 1, lt = 2, le = 3, gt = 4, ge = 5 };

// compare's test.
ABLATE_HD inline bool compare_holds(Compare c, float a, float b) {
  switch (c) {
    case Compare::eq: return a == b;
    case Compare::ne: return a != b;
    case Compare::lt: return a < b;
    case Compare::le: return a <= b;
    case Compare::gt: return a > b;
    case Compare::ge: return a >= b;
  }
  return false;
}

// permute's walk (made by permuted_strides in ablate/backend.hpp): y's element at index
// (i_0, .., i_{r-1}) (row-major in y's shape) is x's element at offset sum_k i_k * strides[k],
// strides[k] being x's stride of dim axes[k]. A plain struct: a CUDA kernel takes it by value.
struct PermutedStrides {
  static constexpr int kMaxRank = 4;  // = Shape::kMaxRank (backend.hpp checks)
  std::int64_t y_dims[kMaxRank] = {};
  std::int64_t strides[kMaxRank] = {};
  int rank = 0;
  // x's offset of y's flat index j.
  ABLATE_HD std::int64_t offset(std::int64_t j) const {
    std::int64_t off = 0;
    for (int k = rank - 1; k >= 0; --k) {
      off += (j % y_dims[k]) * strides[k];
      j /= y_dims[k];
    }
    return off;
  }
};

}  // namespace ablate
