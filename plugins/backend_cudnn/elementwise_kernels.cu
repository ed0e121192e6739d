// backend/cudnn: the elementwise and memory-shaped kernels (fill, cast, axpy, add, mul, activations,
// bias + activation, dropout, rotary positions, last-dim slices, head split/merge) and the column
// sum of add's broadcast gradient; declared in kernels.hpp.
#include "ablate/rope.hpp"
#include "kernels_common.cuh"

namespace backend_cudnn::kernels {

namespace {

// ---------------------------------------------------------------------------- memory-shaped kernels

// y[i] = v (v already in y's storage type).
template <class T>
__global__ void fill_kernel(T* y, std::int64_t n, T v) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) y[i] = v;
}

// y[i] = x[i] converted (through f32).
template <class Y, class X>
__global__ void cast_kernel(Y* y, const X* x, std::int64_t n) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) st(y, i, ld(x, i));
}

// The elementwise kernels below take kVec consecutive elements per thread and iteration, moved as
// one vector load or store per tensor where the launcher found every pointer aligned and n (and a
// broadcast operand's period) a multiple of kVec (kVec = packed_width), one element otherwise:
// the same arithmetic per element either way, so the results are bit-identical.
template <class... T>
constexpr int packed_width() {
  return static_cast<int>(16 / std::max({sizeof(T)...}));
}
template <int kVec, class T>
__device__ __forceinline__ Pack<T, kVec> ld_pack(const T* p, std::int64_t i) {
  return *reinterpret_cast<const Pack<T, kVec>*>(p + i);
}
template <int kVec, class T>
__device__ __forceinline__ void st_pack(T* p, std::int64_t i, const Pack<T, kVec>& v) {
  *reinterpret_cast<Pack<T, kVec>*>(p + i) = v;
}
// Launches kernel<kVec> over n elements: packed when `packed` says the pointers and sizes allow.
template <int kVec, class Launch>
void launch_packed(bool packed, std::int64_t n, Launch&& launch) {
  if (packed)
    launch(std::integral_constant<int, kVec>{}, grid_for(ceil_div(n, kVec)));
  else
    launch(std::integral_constant<int, 1>{}, grid_for(n));
}

// y[i] += alpha * x[i].
template <int kVec, class Y, class X>
__global__ void axpy_kernel(Y* y, const X* x, std::int64_t n, float alpha) {
  for (std::int64_t i = kVec * first_index(); i < n; i += kVec * grid_stride()) {
    const Pack<X, kVec> xv = ld_pack<kVec>(x, i);
    Pack<Y, kVec> yv = ld_pack<kVec>(y, i);
    for (int j = 0; j < kVec; ++j) st(yv.v, j, ld(yv.v, j) + alpha * ld(xv.v, j));
    st_pack<kVec>(y, i, yv);
  }
}

// ---------------------------------------------------------------------------- elementwise kernels

// y[i] = alpha * a[i] + beta * b[i % nb].
template <class T>
__global__ void add_kernel(T* y, const T* a, const T* b, std::int64_t n, std::int64_t nb, float alpha, float beta) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride())
    st(y, i, alpha * ld(a, i) + beta * ld(b, nb == n ? i : i % nb));  // no 64-bit modulo without broadcast
}

// y[i] = a[i] * b[i % nb].
template <class T>
__global__ void mul_kernel(T* y, const T* a, const T* b, std::int64_t n, std::int64_t nb) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) st(y, i, ld(a, i) * ld(b, i % nb));
}

// da[i] += dy[i] * b[i % nb]; db[i] += dy[i] * a[i] only when nb == n (a null gradient is
// skipped; a repeated b's db is a column sum of ProductTerm).
template <class T>
__global__ void mul_backward_kernel(T* da, T* db, const T* dy, const T* a, const T* b, std::int64_t n, std::int64_t nb) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) {
    const float g = ld(dy, i);
    if (da) st(da, i, ld(da, i) + g * ld(b, i % nb));
    if (db) st(db, i, ld(db, i) + g * ld(a, i));
  }
}

// One thread per (row, pair i < rotary/2) and per copied dim: rope's rotation (or its transpose,
// accumulated, for backward), by base's frequencies or the given ones.
template <class T>
__global__ void rope_kernel(T* y, const T* x, const std::int32_t* positions, const float* freqs, std::int64_t rows,
                            std::int64_t T_len, std::int64_t Dh, int rotary, float base, bool backward) {
  const std::int64_t half = rotary / 2, width = half + (Dh - rotary), n = rows * width;
  for (std::int64_t k = first_index(); k < n; k += grid_stride()) {
    const std::int64_t r = k / width, j = k % width;
    const T* xr = x + r * Dh;
    T* yr = y + r * Dh;
    if (j >= half) {  // a copied dim
      const std::int64_t d = rotary + (j - half);
      st(yr, d, (backward ? ld(yr, d) : 0.0f) + ld(xr, d));
      continue;
    }
    const std::int32_t p = positions[r % T_len];
    const double angle = freqs ? ablate::rope_frequency_angle(p, freqs[j]) : ablate::rope_angle(p, j, rotary, base);
    const float c = static_cast<float>(cos(angle)), sn = static_cast<float>(backward ? -sin(angle) : sin(angle));
    const float a = ld(xr, j), b = ld(xr, j + half);
    st(yr, j, (backward ? ld(yr, j) : 0.0f) + a * c - b * sn);
    st(yr, j + half, (backward ? ld(yr, j + half) : 0.0f) + b * c + a * sn);
  }
}

// One thread per element of part[N, W]: copied out of whole[N, C] (forward) or added into it.
template <class T>
__global__ void slice_last_kernel(T* part, T* whole, std::int64_t N, std::int64_t C, std::int64_t W, std::int64_t offset,
                                  bool backward) {
  for (std::int64_t k = first_index(); k < N * W; k += grid_stride()) {
    const std::int64_t w = (k / W) * C + offset + k % W;
    if (backward)
      st(whole, w, ld(whole, w) + ld(part, k));
    else
      st(part, k, ld(whole, w));
  }
}

// y[i] = act(x[i]).
template <class T>
__global__ void activation_forward_kernel(T* y, const T* x, std::int64_t n, Act act) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) st(y, i, act_fwd(act, ld(x, i)));
}

// dx[i] += dy[i] * act'(x[i]).
template <class T>
__global__ void activation_backward_kernel(T* dx, const T* dy, const T* x, std::int64_t n, Act act) {
  for (std::int64_t i = first_index(); i < n; i += grid_stride()) st(dx, i, ld(dx, i) + ld(dy, i) * act_grad(act, ld(x, i)));
}

// g[i] = dy[i] * act'(src[i]) (written).
template <int kVec, class G, class T>
__global__ void activation_grad_kernel(G* g, const T* dy, const T* src, std::int64_t n, Act act) {
  for (std::int64_t i = kVec * first_index(); i < n; i += kVec * grid_stride()) {
    const Pack<T, kVec> d = ld_pack<kVec>(dy, i), x = ld_pack<kVec>(src, i);
    Pack<G, kVec> out;
    for (int j = 0; j < kVec; ++j) st(out.v, j, ld(d.v, j) * act_grad(act, ld(x.v, j)));
    st_pack<kVec>(g, i, out);
  }
}

// v = z[r, c] + bias[c]; pre = v (if given); y = act(v) from the unrounded v. Each element is read
// before it is written, so y and pre may alias z. Packed: cols is a multiple of kVec, so a pack
// lies in one row and its bias is one pack too.
template <int kVec, class T>
__global__ void bias_activation_kernel(T* y, T* pre, const T* z, const T* bias, std::int64_t n, std::int64_t cols, Act act) {
  for (std::int64_t i = kVec * first_index(); i < n; i += kVec * grid_stride()) {
    const Pack<T, kVec> zv = ld_pack<kVec>(z, i);
    Pack<T, kVec> bv{}, pv, yv;
    if (bias) bv = ld_pack<kVec>(bias, i % cols);
    for (int j = 0; j < kVec; ++j) {
      const float v = ld(zv.v, j) + (bias ? ld(bv.v, j) : 0.0f);
      st(pv.v, j, v);
      st(yv.v, j, act_fwd(act, v));
    }
    if (pre) st_pack<kVec>(pre, i, pv);
    st_pack<kVec>(y, i, yv);
  }
}

// d[i] = x[i] * keep(i) * scale (p > 0), or x[i] (p = 0), then by kMode: y[i] = d[i] (Store),
// y[i] += d[i] (Accumulate), or y[i] = base[i] + d[i] with d rounded to T first (AddToBase:
// dropout_add, equal to dropout_forward then add; __fmul_rn keeps the product out of an FMA). A
// thread takes the four elements of one Philox draw (grid: dropout_grid); kPacked (n % 4 == 0,
// every pointer aligned to 4 elements): as one vector load and store each.
enum class DropoutMode { Store, Accumulate, AddToBase };
template <class T, DropoutMode kMode, bool kPacked>
__global__ void dropout_kernel(T* y, const T* x, const T* base, std::int64_t n, float p, float scale, ablate::RngKey key) {
  for (std::int64_t g = first_index(); 4 * g < n; g += grid_stride()) {
    bool keep[4] = {true, true, true, true};
    if (p > 0.0f) ablate::dropout_keep4(key, static_cast<std::uint64_t>(g), p, keep);
    const auto kept = [&](float v, int j) {
      if (p <= 0.0f) return v;
      if (!keep[j]) return 0.0f;
      if constexpr (kMode != DropoutMode::AddToBase) return v * scale;
      T stored[1];
      st(stored, 0, __fmul_rn(v, scale));
      return ld(stored, 0);
    };
    if constexpr (kPacked) {
      const Pack<T, 4> xv = *reinterpret_cast<const Pack<T, 4>*>(x + 4 * g);
      auto* out = reinterpret_cast<Pack<T, 4>*>(y + 4 * g);
      Pack<T, 4> yv;
      if constexpr (kMode == DropoutMode::Accumulate) yv = *out;
      if constexpr (kMode == DropoutMode::AddToBase) yv = *reinterpret_cast<const Pack<T, 4>*>(base + 4 * g);
      for (int j = 0; j < 4; ++j) st(yv.v, j, (kMode == DropoutMode::Store ? 0.0f : ld(yv.v, j)) + kept(ld(xv.v, j), j));
      *out = yv;
    } else {
      for (std::int64_t j = 0; j < 4 && 4 * g + j < n; ++j) {
        const std::int64_t i = 4 * g + j;
        const float v = kept(ld(x, i), static_cast<int>(j));
        if constexpr (kMode == DropoutMode::Store) st(y, i, v);
        if constexpr (kMode == DropoutMode::Accumulate) st(y, i, ld(y, i) + v);
        if constexpr (kMode == DropoutMode::AddToBase) st(y, i, ld(base, i) + v);
      }
    }
  }
}
unsigned dropout_grid(std::int64_t n) { return grid_for(ceil_div(n, std::int64_t{4})); }

template <DropoutMode kMode>
void dropout(void* y, const void* x, const void* base, VT t, std::int64_t n, float p, ablate::RngKey key, cudaStream_t s,
             const char* name) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    const bool packed = n % 4 == 0 && aligned_to(4 * sizeof(T), y, x) && (!base || aligned_to(4 * sizeof(T), base));
    auto* yt = static_cast<T*>(y);
    const auto* xt = static_cast<const T*>(x);
    const auto* bt = static_cast<const T*>(base);
    if (packed)
      dropout_kernel<T, kMode, true><<<dropout_grid(n), kThreads, 0, s>>>(yt, xt, bt, n, p, keep_scale_of(p), key);
    else
      dropout_kernel<T, kMode, false><<<dropout_grid(n), kThreads, 0, s>>>(yt, xt, bt, n, p, keep_scale_of(p), key);
  });
  check_launch(name);
}
// ---------------------------------------------------------------------------- heads

// Element i of heads [B, H, T, Dh] <-> element of merged [B, T, parts*H*Dh] (part `part`):
// kToHeads: heads[i] (+)= merged[m]; else merged[m] (+)= heads[i]. Each destination element has
// exactly one source, so accumulation needs no atomics.
// A thread moves kVec consecutive elements of a head row (Dh % kVec == 0; kVec * sizeof(T) = 16
// bytes where Dh allows): one index computation and one aligned vector load and store for them.
template <class T, int kVec, bool kToHeads, bool kAccumulate>
__global__ void heads_kernel(T* dst, const T* src, std::int64_t B, std::int64_t T_, std::int64_t H, std::int64_t Dh,
                             std::int64_t parts, std::int64_t part) {
  const std::int64_t chunks = Dh / kVec, n = B * H * T_ * chunks, W = parts * H * Dh;
  for (std::int64_t c = first_index(); c < n; c += grid_stride()) {
    const std::int64_t e = (c % chunks) * kVec, row = c / chunks;  // row = (b, h, t) of heads
    const std::int64_t t = row % T_, h = (row / T_) % H, b = row / (T_ * H);
    const std::int64_t i = row * Dh + e, m = (b * T_ + t) * W + part * H * Dh + h * Dh + e;
    const std::int64_t di = kToHeads ? i : m, si = kToHeads ? m : i;
    const Pack<T, kVec> v = *reinterpret_cast<const Pack<T, kVec>*>(src + si);
    Pack<T, kVec>* out = reinterpret_cast<Pack<T, kVec>*>(dst + di);
    if constexpr (kAccumulate) {
      Pack<T, kVec> d = *out;
      for (int j = 0; j < kVec; ++j) st(d.v, j, ld(d.v, j) + ld(v.v, j));
      *out = d;
    } else {
      *out = v;
    }
  }
}

template <bool kToHeads, bool kAccumulate>
void heads(void* dst, const void* src, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh, int parts, int part,
           cudaStream_t s, const char* name) {
  const std::int64_t n = B * H * T * Dh;
  if (n == 0) return;
  with_type(t, [&](auto tag) {
    using V = type_of<decltype(tag)>;
    constexpr int kWide = 16 / sizeof(V);  // element offsets are multiples of Dh; views may not be aligned
    const bool aligned = aligned_to(16, dst, src);
    const auto launch = [&](auto vec) {
      constexpr int kVec = decltype(vec)::value;
      heads_kernel<V, kVec, kToHeads, kAccumulate>
          <<<grid_for(n / kVec), kThreads, 0, s>>>(static_cast<V*>(dst), static_cast<const V*>(src), B, T, H, Dh, parts, part);
    };
    if (aligned && Dh % kWide == 0)
      launch(std::integral_constant<int, kWide>{});
    else
      launch(std::integral_constant<int, 1>{});
  });
  check_launch(name);
}

}  // namespace

// column_sum uses one [chunks, cols] f32 partial; layer_norm_backward sums dgamma and dbeta in
// one pass and needs two, so the size covers two (the norm backward launchers get this size).
std::size_t column_sum_scratch_bytes(std::int64_t rows, std::int64_t cols) {
  if (rows <= 0 || cols <= 0) return 0;
  return static_cast<std::size_t>(2 * column_chunks(rows, cols) * cols) * sizeof(float);
}

// ============================================================================ memory-shaped

void fill(void* y, int dtype, std::int64_t n, float value, cudaStream_t s) {
  if (n == 0) return;
  const std::size_t bytes = static_cast<std::size_t>(n) * (dtype == 1 ? 2 : 4);
  if (dtype >= 0 && dtype <= 2 && value == 0.0f && !std::signbit(value)) {  // all bits zero: the copy engine's memset
    const cudaError_t err = cudaMemsetAsync(y, 0, bytes, s);
    if (err != cudaSuccess) throw ablate::Error(std::string("backend/cudnn: fill (memset) failed: ") + cudaGetErrorString(err));
    return;
  }
  switch (dtype) {
    case 0: fill_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<float*>(y), n, value); break;
    case 1:  // the host's rounding, bit for bit
      fill_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<std::uint16_t*>(y), n, ablate::float_to_bf16(value));
      break;
    case 2:
      fill_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<std::int32_t*>(y), n, static_cast<std::int32_t>(value));
      break;
    default: throw ablate::Error("backend/cudnn: fill: unknown dtype " + std::to_string(dtype));
  }
  check_launch("fill");
}

void cast(void* y, VT yt, const void* x, VT xt, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  with_type(yt, [&](auto yk) {
    with_type(xt, [&](auto xk) {
      using Y = type_of<decltype(yk)>;
      using X = type_of<decltype(xk)>;
      cast_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<Y*>(y), static_cast<const X*>(x), n);
    });
  });
  check_launch("cast");
}

void axpy(void* y, VT yt, const void* x, VT xt, std::int64_t n, float alpha, cudaStream_t s) {
  if (n == 0) return;
  with_type(yt, [&](auto yk) {
    with_type(xt, [&](auto xk) {
      using Y = type_of<decltype(yk)>;
      using X = type_of<decltype(xk)>;
      constexpr int kVec = packed_width<Y, X>();
      const bool packed = n % kVec == 0 && aligned_to(kVec * sizeof(Y), y) && aligned_to(kVec * sizeof(X), x);
      launch_packed<kVec>(packed, n, [&](auto vec, unsigned grid) {
        axpy_kernel<decltype(vec)::value><<<grid, kThreads, 0, s>>>(static_cast<Y*>(y), static_cast<const X*>(x), n, alpha);
      });
    });
  });
  check_launch("axpy");
}

// ============================================================================ elementwise

void add_forward(void* y, const void* a, const void* b, VT t, std::int64_t n, std::int64_t nb, float alpha, float beta,
                 cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    add_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(a), static_cast<const T*>(b), n, nb,
                                                alpha, beta);
  });
  check_launch("add_forward");
}

void column_sum(void* out, VT out_t, const void* x, VT xt, std::int64_t rows, std::int64_t cols, float alpha, void* scratch,
                cudaStream_t s) {
  if (rows == 0 || cols == 0) return;
  auto* partial = static_cast<float*>(scratch);
  with_type(xt, [&](auto k) {
    using T = type_of<decltype(k)>;
    column_partials<1>(partial, rows, cols, ColumnTerm<T>{static_cast<const T*>(x), cols}, s, "column_sum (partials)");
  });
  column_finish(out, out_t, partial, 0, rows, cols, alpha, s, "column_sum (finish)");
}

void mul_forward(void* y, const void* a, const void* b, VT t, std::int64_t n, std::int64_t nb, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    mul_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(a), static_cast<const T*>(b), n, nb);
  });
  check_launch("mul_forward");
}

void mul_backward(void* da, void* db, const void* dy, const void* a, const void* b, VT t, std::int64_t n, std::int64_t nb,
                  void* scratch, cudaStream_t s) {
  if (n == 0 || (da == nullptr && db == nullptr)) return;
  void* db_here = nb == n ? db : nullptr;  // a repeated b: its gradient is a column sum below
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    if (da || db_here) {
      mul_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(da), static_cast<T*>(db_here),
                                                           static_cast<const T*>(dy), static_cast<const T*>(a),
                                                           static_cast<const T*>(b), n, nb);
      check_launch("mul_backward");
    }
    if (db && nb != n) {
      auto* partial = static_cast<float*>(scratch);
      column_partials<1>(partial, n / nb, nb, ProductTerm<T>{static_cast<const T*>(dy), static_cast<const T*>(a), nb}, s,
                         "mul_backward (partials)");
      column_finish(db, t, partial, 0, n / nb, nb, 1.0f, s, "mul_backward (finish)");
    }
  });
}

void rope(void* y, const void* x, const std::int32_t* positions, const float* freqs, VT t, std::int64_t rows, std::int64_t T,
          std::int64_t Dh, int rotary, float base, bool backward, cudaStream_t s) {
  const std::int64_t n = rows * (rotary / 2 + (Dh - rotary));
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using V = type_of<decltype(k)>;
    rope_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<V*>(y), static_cast<const V*>(x), positions, freqs, rows, T, Dh,
                                                 rotary, base, backward);
  });
  check_launch(freqs ? (backward ? "rope_frequencies_backward" : "rope_frequencies_forward")
                     : (backward ? "rope_backward" : "rope_forward"));
}

void slice_last(void* part, void* whole, VT t, std::int64_t N, std::int64_t C, std::int64_t W, std::int64_t offset, bool backward,
                cudaStream_t s) {
  if (N * W == 0) return;
  with_type(t, [&](auto k) {
    using V = type_of<decltype(k)>;
    slice_last_kernel<<<grid_for(N * W), kThreads, 0, s>>>(static_cast<V*>(part), static_cast<V*>(whole), N, C, W, offset,
                                                           backward);
  });
  check_launch(backward ? "slice_last_backward" : "slice_last_forward");
}

void activation_forward(void* y, const void* x, VT t, std::int64_t n, Act act, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    activation_forward_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(y), static_cast<const T*>(x), n, act);
  });
  check_launch("activation_forward");
}

void activation_backward(void* dx, const void* dy, const void* x, VT t, std::int64_t n, Act act, cudaStream_t s) {
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    activation_backward_kernel<<<grid_for(n), kThreads, 0, s>>>(static_cast<T*>(dx), static_cast<const T*>(dy),
                                                                static_cast<const T*>(x), n, act);
  });
  check_launch("activation_backward");
}

// ReLU' from the output equals ReLU' from the input (y > 0 iff x > 0) and None' is 1, so the
// kernel is the same either way; other activations need the pre-activation.
void activation_grad(void* g, VT gt, const void* dy, const void* src, VT t, std::int64_t n, Act act, bool src_is_output,
                     cudaStream_t s) {
  if (src_is_output && act != Act::ReLU && act != Act::None)
    throw ablate::Error("backend/cudnn: activation_grad: activation " + std::to_string(static_cast<int>(act)) +
                        " needs the pre-activation, not the output");
  if (n == 0) return;
  with_type(gt, [&](auto gk) {
    with_type(t, [&](auto k) {
      using G = type_of<decltype(gk)>;
      using T = type_of<decltype(k)>;
      constexpr int kVec = packed_width<G, T>();
      const bool packed = n % kVec == 0 && aligned_to(kVec * sizeof(G), g) && aligned_to(kVec * sizeof(T), dy, src);
      launch_packed<kVec>(packed, n, [&](auto vec, unsigned grid) {
        activation_grad_kernel<decltype(vec)::value>
            <<<grid, kThreads, 0, s>>>(static_cast<G*>(g), static_cast<const T*>(dy), static_cast<const T*>(src), n, act);
      });
    });
  });
  check_launch("activation_grad");
}

void bias_activation(void* y, void* pre, const void* z, const void* bias, VT t, std::int64_t rows, std::int64_t cols, Act act,
                     cudaStream_t s) {
  const std::int64_t n = rows * cols;
  if (n == 0) return;
  with_type(t, [&](auto k) {
    using T = type_of<decltype(k)>;
    constexpr int kVec = packed_width<T>();
    const bool packed = cols % kVec == 0 && aligned_to(kVec * sizeof(T), y, z) && (!pre || aligned_to(kVec * sizeof(T), pre)) &&
                        (!bias || aligned_to(kVec * sizeof(T), bias));
    launch_packed<kVec>(packed, n, [&](auto vec, unsigned grid) {
      bias_activation_kernel<decltype(vec)::value><<<grid, kThreads, 0, s>>>(
          static_cast<T*>(y), static_cast<T*>(pre), static_cast<const T*>(z), static_cast<const T*>(bias), n, cols, act);
    });
  });
  check_launch("bias_activation");
}

void dropout_forward(void* y, const void* x, VT t, std::int64_t n, float p, ablate::RngKey key, cudaStream_t s) {
  dropout<DropoutMode::Store>(y, x, nullptr, t, n, p, key, s, "dropout_forward");
}

void dropout_backward(void* dx, const void* dy, VT t, std::int64_t n, float p, ablate::RngKey key, cudaStream_t s) {
  dropout<DropoutMode::Accumulate>(dx, dy, nullptr, t, n, p, key, s, "dropout_backward");
}

void dropout_add_forward(void* y, const void* x, const void* h, VT t, std::int64_t n, float p, ablate::RngKey key,
                         cudaStream_t s) {
  dropout<DropoutMode::AddToBase>(y, h, x, t, n, p, key, s, "dropout_add_forward");
}

// ============================================================================ heads

void split_heads_forward(void* y, const void* x, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh, int parts,
                         int part, cudaStream_t s) {
  heads<true, false>(y, x, t, B, T, H, Dh, parts, part, s, "split_heads_forward");
}

void split_heads_backward(void* dx, const void* dy, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh,
                          int parts, int part, cudaStream_t s) {
  heads<false, true>(dx, dy, t, B, T, H, Dh, parts, part, s, "split_heads_backward");
}

void merge_heads_forward(void* y, const void* x, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh,
                         cudaStream_t s) {
  heads<false, false>(y, x, t, B, T, H, Dh, 1, 0, s, "merge_heads_forward");
}

void merge_heads_backward(void* dx, const void* dy, VT t, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t Dh,
                          cudaStream_t s) {
  heads<true, true>(dx, dy, t, B, T, H, Dh, 1, 0, s, "merge_heads_backward");
}

}  // namespace backend_cudnn::kernels
