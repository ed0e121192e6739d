// backend/cudnn: the kernels of the index and layout ops (index_ops.cpp): an elementwise
// comparison into a 0/1 mask, and an axis permutation with its backward (a scatter-add through
// the same walk: a permutation is a bijection, so no two threads write one element). The test and
// the walk are ablate/index_math.hpp's, which the CPU backends call too.
#include "kernels_common.cuh"

namespace backend_cudnn::kernels {

namespace {

// y[i] = (a[i] c b[i % nb]) ? 1 : 0.
template <class T>
__global__ void compare_kernel(T* y, const T* a, const T* b, std::int64_t n, std::int64_t nb, ablate::Compare c) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride())
    st(y, i, ablate::compare_holds(c, ld(a, i), ld(b, i % nb)) ? 1.0f : 0.0f);
}

// forward: y[j] = x[offset(j)]; backward: x[offset(j)] += y[j] (x = dx, y = dy).
template <class T>
__global__ void permute_kernel(T* y, T* x, ablate::PermutedStrides w, std::int64_t n, bool backward) {
  for (std::int64_t j = first_index(); j < n; j += grid_stride()) {
    const std::int64_t o = w.offset(j);
    if (backward)
      st(x, o, ld(x, o) + ld(y, j));
    else
      st(y, j, ld(x, o));
  }
}

}  // namespace

void compare(void* y, const void* a, const void* b, VT t, std::int64_t n, std::int64_t nb, ablate::Compare c, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using V = type_of<decltype(k)>;
    compare_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<V*>(y), static_cast<const V*>(a), static_cast<const V*>(b), n, nb,
                                                    c);
  });
  check_launch("compare_forward");
}

void permute(void* y, void* x, VT t, const ablate::PermutedStrides& w, std::int64_t n, bool backward, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using V = type_of<decltype(k)>;
    permute_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<V*>(y), static_cast<V*>(x), w, n, backward);
  });
  check_launch(backward ? "permute_backward" : "permute_forward");
}

}  // namespace backend_cudnn::kernels
