// backend/onednn: fused cross entropy (softmax, loss, dlogits and accuracy counts in one pass),
// Adam/AdamW, the sum of squares of the grad norm, and casts; reductions in a fixed order.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>

#include "kernels.hpp"
#include "onednn_backend.hpp"

namespace backend_onednn {

// ------------------------------------------------------------------------------------------
// cross entropy, fused: loss = mean over counted rows of lse - sum_c q_c x_c, q = (1-ls) onehot + ls/V;
// dlogits = (softmax - q) / count (0 on ignored rows); stats = {count, correct}.

namespace {
// The first index c of x[n] with x[c] >= m (the first of tied maxima), n - 1 when none is (a NaN
// row): 64 elements compared at a time, then the hit found within them.
template <class T>
std::int64_t first_at_least(const T* x, std::int64_t n, float m) {
  for (std::int64_t c0 = 0; c0 < n; c0 += 64) {
    const std::int64_t end = std::min<std::int64_t>(n, c0 + 64);
    int hits = 0;
#pragma omp simd reduction(+ : hits)
    for (std::int64_t c = c0; c < end; ++c) hits += ld(x, c) >= m ? 1 : 0;
    if (hits > 0)
      for (std::int64_t c = c0; c < end; ++c)
        if (ld(x, c) >= m) return c;
  }
  return n - 1;
}
}  // namespace

void OnednnBackend::do_cross_entropy_forward(Tensor& loss, Tensor& dlogits, Tensor& stats, const Tensor& logits,
                                             const Tensor& targets, std::int32_t ignore_index, float label_smoothing) {
  const char* op = "cross_entropy_forward";
  const std::int64_t N = logits.shape().rows(), V = logits.shape().last();
  const std::int32_t* tg = targets.data<std::int32_t>();
  std::int64_t count = 0;
  for (std::int64_t r = 0; r < N; ++r) {
    if (tg[r] == ignore_index) continue;
    if (tg[r] < 0 || tg[r] >= V)
      fail(op, "targets[" + std::to_string(r) + "] = " + std::to_string(tg[r]) + " is outside [0, " + std::to_string(V) +
                   ") and is not ignore_index " + std::to_string(ignore_index));
    ++count;
  }
  set_threads();
  const float ls = label_smoothing;
  const float inv_count = count ? 1.0f / static_cast<float>(count) : 0.0f;
  const float on = 1.0f - ls, off = ls / static_cast<float>(V);
  float* row_loss = scratch_f32(kSums, 2 * std::max<std::int64_t>(N, 1));        // [loss | correct]
  float* exps = scratch_f32(kPartial, static_cast<std::int64_t>(threads_) * V);  // a row's exp(x - max) per thread
  with_floats(op, std::tie(logits, dlogits), [&](const auto* xp, auto* gp) {
#pragma omp parallel for num_threads(team_size({N, V}, threads_)) schedule(static)
    for (std::int64_t r = 0; r < N; ++r) {
      const auto* x = xp + r * V;
      auto* g = gp + r * V;
      float* e = exps + static_cast<std::int64_t>(omp_get_thread_num()) * V;
      const std::int32_t t = tg[r];
      if (t == ignore_index) {
#pragma omp simd
        for (std::int64_t c = 0; c < V; ++c) st(g, c, 0.0f);
        row_loss[r] = 0.0f;
        row_loss[N + r] = 0.0f;
        continue;
      }
      const float mx = row_max(x, V);
      const std::int64_t arg = first_at_least(x, V, mx);
      float sum = 0.0f, sx = 0.0f;
#pragma omp simd reduction(+ : sum, sx)
      for (std::int64_t c = 0; c < V; ++c) {
        const float v = ld(x, c);
        e[c] = fast_exp(v - mx);
        sum += e[c];
        sx += v;
      }
      const float lse = mx + std::log(sum);
      row_loss[r] = lse - on * ld(x, t) - off * sx;
      row_loss[N + r] = arg == t ? 1.0f : 0.0f;
      const float rs = 1.0f / sum;
#pragma omp simd
      for (std::int64_t c = 0; c < V; ++c) st(g, c, (e[c] * rs - off) * inv_count);
      st(g, t, ld(g, t) - on * inv_count);
    }
  });
  double total = 0.0, correct = 0.0;
  for (std::int64_t r = 0; r < N; ++r) {
    total += row_loss[r];
    correct += row_loss[N + r];
  }
  loss.data<float>()[0] = count ? static_cast<float>(total / static_cast<double>(count)) : 0.0f;
  stats.data<float>()[0] = static_cast<float>(count);
  stats.data<float>()[1] = static_cast<float>(correct);
}

// ------------------------------------------------------------------------------------------
// optimizer and gradient utilities

void OnednnBackend::do_sum_squares(Tensor& total, const Tensor& x) {
  const char* op = "sum_squares";
  const std::int64_t n = x.numel();
  constexpr std::int64_t kChunk = 16384;  // fixed chunks: the order does not depend on threads
  const std::int64_t nch = (n + kChunk - 1) / kChunk;
  float* part = scratch_f32(kPartial, std::max<std::int64_t>(nch, 1));
  set_threads();
  with_float(op, x, [&](const auto* xp) {
#pragma omp parallel for num_threads(team_size(n, threads_)) schedule(static)
    for (std::int64_t ch = 0; ch < nch; ++ch) {
      const std::int64_t i0 = ch * kChunk, i1 = std::min(n, i0 + kChunk);
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (std::int64_t i = i0; i < i1; ++i) s += ld(xp, i) * ld(xp, i);
      part[ch] = s;
    }
  });
  double s = 0.0;
  for (std::int64_t ch = 0; ch < nch; ++ch) s += part[ch];
  total.data<float>()[0] += static_cast<float>(s);
}

void OnednnBackend::do_adam_update(Tensor& w, Tensor& m, Tensor& v, Tensor* w_low, const Tensor& grad,
                                   const ablate::AdamParams& prm) {
  const std::int64_t n = w.numel();
  set_threads();
  const float b1 = prm.beta1, b2 = prm.beta2, lr = prm.lr, eps = prm.eps, wd = prm.weight_decay, gs = prm.grad_scale;
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(b1), static_cast<double>(prm.step)));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(b2), static_cast<double>(prm.step)));
  float* wp = w.data<float>();
  float* mp = m.data<float>();
  float* vp = v.data<float>();
  const float* gp = grad.data<float>();
  // One loop per (decoupled decay, bf16 copy) pair, so that no branch is left inside to stop it
  // vectorising (division and sqrt are correctly rounded in any width: the same bits as one by one).
  const auto run = [&](auto decoupled, auto* lp) {
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const float w0 = wp[i];
      float g = gp[i] * gs;
      if constexpr (!decltype(decoupled)::value) g += wd * w0;
      const float mi = b1 * mp[i] + (1.0f - b1) * g;
      const float vi = b2 * vp[i] + (1.0f - b2) * g * g;
      mp[i] = mi;
      vp[i] = vi;
      const float mhat = mi / bc1, vhat = vi / bc2;
      float upd = mhat / (std::sqrt(vhat) + eps);
      if constexpr (decltype(decoupled)::value) upd += wd * w0;
      const float w1 = w0 - lr * upd;
      wp[i] = w1;
      if constexpr (!std::is_same_v<decltype(lp), std::nullptr_t*>) st(lp, i, w1);
    }
  };
  bf16_t* low = w_low ? w_low->data<bf16_t>() : nullptr;
  const auto with_low = [&](auto decoupled) {
    if (low)
      run(decoupled, low);
    else
      run(decoupled, static_cast<std::nullptr_t*>(nullptr));
  };
  if (prm.decoupled)
    with_low(std::true_type{});
  else
    with_low(std::false_type{});
}

void OnednnBackend::do_cast(Tensor& y, const Tensor& x) {
  const char* op = "cast";
  if (x.dtype() == y.dtype()) {
    copy(y, x);
    return;
  }
  const std::int64_t n = x.numel();
  set_threads();
  with_floats(op, std::tie(x, y), [&](const auto* xp, auto* yp) {
#pragma omp parallel for simd num_threads(team_size(n, threads_)) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) st(yp, i, ld(xp, i));
  });
}

}  // namespace backend_onednn
