// backend/cudnn: embedding gather, and its gradient (per id in row order, or float atomics outside
// deterministic mode); declared in kernels.hpp.
#include "kernels_common.cuh"

namespace backend_cudnn::kernels {

namespace {

// ---------------------------------------------------------------------------- embedding kernels

// Row n of y = table[ids[n]], or zeros (and the flag set to 1 + n) for an id outside [0, V).
template <class T>
__global__ void embedding_forward_kernel(T* y, const std::int32_t* ids, const T* table, std::int64_t N, std::int64_t D,
                                         std::int64_t V, std::int32_t* bad_id_flag) {
  for (std::int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const std::int64_t id = ids[n];
    const bool ok = id >= 0 && id < V;
    if (!ok && threadIdx.x == 0) *bad_id_flag = static_cast<std::int32_t>(1 + n);
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) st(y, n * D + j, ok ? ld(table, id * D + j) : 0.0f);
  }
}

// dtable[ids[n], j] += dy[n, j] with float atomics (ids outside [0, V) are skipped).
template <class T>
__global__ void embedding_backward_atomic_kernel(float* dtable, const T* dy, const std::int32_t* ids, std::int64_t N,
                                                 std::int64_t D, std::int64_t V) {
  const std::int64_t n_total = N * D;
  for (std::int64_t i = first_index(); i < n_total; i += grid_stride()) {
    const std::int64_t id = ids[i / D];
    if (id >= 0 && id < V) atomicAdd(dtable + id * D + i % D, ld(dy, i));
  }
}

// Group u (a block): dtable[uniq_ids[u], j] += sum over k in [starts[u], starts[u+1]) of
// dy[rows[k], j], the sum taken in k order and then added (as the reference adds its sum).
template <class G, class T>
__global__ void embedding_backward_grouped_kernel(G* dtable, const T* dy, const std::int32_t* uniq_ids,
                                                  const std::int32_t* starts, const std::int32_t* rows, std::int64_t U,
                                                  std::int64_t D) {
  for (std::int64_t u = blockIdx.x; u < U; u += gridDim.x) {
    const std::int64_t base = static_cast<std::int64_t>(uniq_ids[u]) * D;
    const std::int32_t k0 = starts[u], k1 = starts[u + 1];
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      float s = 0.0f;
      for (std::int32_t k = k0; k < k1; ++k) s += ld(dy, static_cast<std::int64_t>(rows[k]) * D + j);
      st(dtable, base + j, ld(dtable, base + j) + s);
    }
  }
}

}  // namespace

// ============================================================================ embedding

void embedding_forward(void* y, const std::int32_t* ids, const void* table, VT t, std::int64_t N, std::int64_t D, std::int64_t V,
                       std::int32_t* bad_id_flag, cudaStream_t s) {
  if (N == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    embedding_forward_kernel<<<row_grid(N), kThreads, 0, s>>>(static_cast<T*>(y), ids, static_cast<const T*>(table), N, D, V,
                                                              bad_id_flag);
  });
  check_launch("embedding_forward");
}

void embedding_backward_atomic(float* dtable, const void* dy, VT t, const std::int32_t* ids, std::int64_t N, std::int64_t D,
                               std::int64_t V, cudaStream_t s) {
  if (N * D == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    embedding_backward_atomic_kernel<<<grid_for(N * D), kThreads, 0, s>>>(dtable, static_cast<const T*>(dy), ids, N, D, V);
  });
  check_launch("embedding_backward_atomic");
}

void embedding_backward_grouped(void* dtable, VT dtable_t, const void* dy, VT t, const std::int32_t* uniq_ids,
                                const std::int32_t* starts, const std::int32_t* rows, std::int64_t U, std::int64_t D,
                                cudaStream_t s) {
  if (U == 0 || D == 0) return;
  with_type(dtable_t, [&](auto gk) {
    with_type(t, [&](auto k) {
      using G = type_of<decltype(gk)>;
      using T = type_of<decltype(k)>;
      embedding_backward_grouped_kernel<<<row_grid(U), kThreads, 0, s>>>(static_cast<G*>(dtable), static_cast<const T*>(dy),
                                                                         uniq_ids, starts, rows, U, D);
    });
  });
  check_launch("embedding_backward_grouped");
}

}  // namespace backend_cudnn::kernels
