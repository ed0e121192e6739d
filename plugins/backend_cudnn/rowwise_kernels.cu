// backend/cudnn: the small general optional ops (softmax and sum over the last dim, exp/sigmoid
// elementwise), forward and backward side by side; declared in kernels.hpp. One block per row,
// block reductions of fixed shape (deterministic), f32 arithmetic on f32 or bf16 values.
#include "kernels_common.cuh"

namespace backend_cudnn::kernels {

namespace {

// y[n, :] = softmax(x[n, :]): the row's max, the sum of exp(x - max), then each exp(x - max) / sum.
template <class T>
__global__ void softmax_last_forward_kernel(T* y, const T* x, std::int64_t N, std::int64_t C) {
  __shared__ float sh[32];
  for (std::int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const T* xr = x + n * C;
    float mx = -INFINITY;
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) mx = fmaxf(mx, ld(xr, c));
    mx = block_reduce(mx, sh, Max{}, -INFINITY);
    float sum = 0.0f;
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) sum += expf(ld(xr, c) - mx);
    const float inv = 1.0f / block_reduce(sum, sh, Sum{}, 0.0f);
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) st(y + n * C, c, expf(ld(xr, c) - mx) * inv);
  }
}

// dx[n, :] += y * (dy - sum_c dy * y).
template <class T>
__global__ void softmax_last_backward_kernel(T* dx, const T* dy, const T* y, std::int64_t N, std::int64_t C) {
  __shared__ float sh[32];
  for (std::int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const T* yr = y + n * C;
    const T* gr = dy + n * C;
    T* dr = dx + n * C;
    float dot = 0.0f;
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) dot += ld(gr, c) * ld(yr, c);
    dot = block_reduce(dot, sh, Sum{}, 0.0f);
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) st(dr, c, ld(dr, c) + ld(yr, c) * (ld(gr, c) - dot));
  }
}

// y[n] = sum_c x[n, c].
template <class T>
__global__ void sum_last_forward_kernel(T* y, const T* x, std::int64_t N, std::int64_t C) {
  __shared__ float sh[32];
  for (std::int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    float sum = 0.0f;
    for (std::int64_t c = threadIdx.x; c < C; c += blockDim.x) sum += ld(x + n * C, c);
    sum = block_reduce(sum, sh, Sum{}, 0.0f);
    if (threadIdx.x == 0) st(y, n, sum);
  }
}

// dx[n, c] += dy[n] (elementwise over N * C).
template <class T>
__global__ void sum_last_backward_kernel(T* dx, const T* dy, std::int64_t N, std::int64_t C) {
  for (std::int64_t i = first_index(); i < N * C; i += grid_stride()) st(dx, i, ld(dx, i) + ld(dy, i / C));
}

template <class T>
__global__ void pointwise_forward_kernel(T* y, const T* x, std::int64_t n, bool sigmoid) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = ld(x, i);
    st(y, i, sigmoid ? 1.0f / (1.0f + expf(-v)) : expf(v));
  }
}

// dx += dy * f'(x), with f' as a function of y = f(x): exp' = y, sigmoid' = y (1 - y).
template <class T>
__global__ void pointwise_backward_kernel(T* dx, const T* dy, const T* y, std::int64_t n, bool sigmoid) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const float v = ld(y, i);
    st(dx, i, ld(dx, i) + ld(dy, i) * (sigmoid ? v * (1.0f - v) : v));
  }
}

}  // namespace

void softmax_last_forward(void* y, const void* x, VT t, std::int64_t N, std::int64_t C, cudaStream_t s) {
  if (N * C == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    softmax_last_forward_kernel<<<row_grid(N), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(x), N, C);
  });
  check_launch("softmax_last_forward");
}

void softmax_last_backward(void* dx, const void* dy, const void* y, VT t, std::int64_t N, std::int64_t C, cudaStream_t s) {
  if (N * C == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    softmax_last_backward_kernel<<<row_grid(N), kThreads, 0, s>>>(static_cast<T*>(dx), static_cast<const T*>(dy),
                                                                  static_cast<const T*>(y), N, C);
  });
  check_launch("softmax_last_backward");
}

void sum_last_forward(void* y, const void* x, VT t, std::int64_t N, std::int64_t C, cudaStream_t s) {
  if (N * C == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    sum_last_forward_kernel<<<row_grid(N), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(x), N, C);
  });
  check_launch("sum_last_forward");
}

void sum_last_backward(void* dx, const void* dy, VT t, std::int64_t N, std::int64_t C, cudaStream_t s) {
  if (N * C == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    sum_last_backward_kernel<<<grid_for(N * C), kThreads, 0, s>>>(static_cast<T*>(dx), static_cast<const T*>(dy), N, C);
  });
  check_launch("sum_last_backward");
}

void pointwise_forward(void* y, const void* x, VT t, std::int64_t n, bool sigmoid, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    pointwise_forward_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(x), n, sigmoid);
  });
  check_launch("pointwise_forward");
}

void pointwise_backward(void* dx, const void* dy, const void* y, VT t, std::int64_t n, bool sigmoid, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    pointwise_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dx), static_cast<const T*>(dy),
                                                               static_cast<const T*>(y), n, sigmoid);
  });
  check_launch("pointwise_backward");
}

}  // namespace backend_cudnn::kernels
