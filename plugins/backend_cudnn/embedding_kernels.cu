// backend/cudnn: embedding gather, and its gradient (per id in row order after a device sort, or
// float atomics outside deterministic mode); declared in kernels.hpp.
#include <cub/device/device_radix_sort.cuh>

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

// rows[k] = k: the values the sort carries along with the ids.
__global__ void iota_kernel(std::int32_t* rows, std::int64_t N) {
  for (std::int64_t k = first_index(); k < N; k += grid_stride()) rows[k] = static_cast<std::int32_t>(k);
}

// Block k0 of the sorted ids, if it starts a run of equal ids: dtable[id, j] += the sum over the
// run's k, in order (the sort is stable: row order), of dy[rows[k], j], the sum taken first and
// then added (as the reference adds its sum). Other blocks return at once.
template <class G, class T>
__global__ void embedding_backward_runs_kernel(G* dtable, const T* dy, const std::int32_t* keys, const std::int32_t* rows,
                                               std::int64_t N, std::int64_t D, std::int64_t V, std::int32_t* bad_id_flag) {
  for (std::int64_t k0 = blockIdx.x; k0 < N; k0 += gridDim.x) {
    const std::int32_t id = keys[k0];
    if (k0 > 0 && keys[k0 - 1] == id) continue;
    if (id < 0 || id >= V) {
      if (threadIdx.x == 0) *bad_id_flag = 1 + rows[k0];
      continue;
    }
    std::int64_t k1 = k0 + 1;
    while (k1 < N && keys[k1] == id) ++k1;
    const std::int64_t base = static_cast<std::int64_t>(id) * D;
    for (std::int64_t j = threadIdx.x; j < D; j += blockDim.x) {
      float s = 0.0f;
      for (std::int64_t k = k0; k < k1; ++k) s += ld(dy, static_cast<std::int64_t>(rows[k]) * D + j);
      st(dtable, base + j, ld(dtable, base + j) + s);
    }
  }
}

// The sort's scratch: sorted ids, rows before and after, then CUB's temporary storage.
struct SortScratch {
  std::int32_t *keys, *rows_in, *rows;
  void* temp;
  std::size_t temp_bytes;
};
std::size_t cub_temp_bytes(std::int64_t N) {
  std::size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const std::int32_t*>(nullptr), static_cast<std::int32_t*>(nullptr),
                                  static_cast<const std::int32_t*>(nullptr), static_cast<std::int32_t*>(nullptr),
                                  static_cast<int>(N));
  return bytes;
}
std::size_t aligned_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }
SortScratch sort_scratch(void* scratch, std::int64_t N) {
  auto* base = static_cast<char*>(scratch);
  const std::size_t ids_bytes = aligned_up(static_cast<std::size_t>(N) * sizeof(std::int32_t));
  return {reinterpret_cast<std::int32_t*>(base), reinterpret_cast<std::int32_t*>(base + ids_bytes),
          reinterpret_cast<std::int32_t*>(base + 2 * ids_bytes), base + 3 * ids_bytes, cub_temp_bytes(N)};
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

std::size_t embedding_sort_scratch_bytes(std::int64_t N) {
  if (N <= 0) return 0;
  return 3 * aligned_up(static_cast<std::size_t>(N) * sizeof(std::int32_t)) + aligned_up(cub_temp_bytes(N));
}

void embedding_backward_sorted(void* dtable, VT dtable_t, const void* dy, VT t, const std::int32_t* ids, std::int64_t N,
                               std::int64_t D, std::int64_t V, std::int32_t* bad_id_flag, void* scratch, cudaStream_t s) {
  if (N == 0 || D == 0) return;
  if (N > std::int64_t{INT32_MAX}) throw ablate::Error("backend/cudnn: embedding_backward: more than 2^31 - 1 ids");
  SortScratch w = sort_scratch(scratch, N);
  iota_kernel<<<grid_for(N), kThreads, 0, s>>>(w.rows_in, N);
  check_launch("embedding_backward (rows)");
  const cudaError_t err =
      cub::DeviceRadixSort::SortPairs(w.temp, w.temp_bytes, ids, w.keys, w.rows_in, w.rows, static_cast<int>(N), 0, 32, s);
  if (err != cudaSuccess)
    throw ablate::Error(std::string("backend/cudnn: embedding_backward: sorting the ids failed: ") + cudaGetErrorString(err));
  with_type(dtable_t, [&](auto gk) {
    with_type(t, [&](auto k) {
      using G = type_of<decltype(gk)>;
      using T = type_of<decltype(k)>;
      embedding_backward_runs_kernel<<<row_grid(N), kThreads, 0, s>>>(static_cast<G*>(dtable), static_cast<const T*>(dy), w.keys,
                                                                      w.rows, N, D, V, bad_id_flag);
    });
  });
  check_launch("embedding_backward (runs)");
}

}  // namespace backend_cudnn::kernels
