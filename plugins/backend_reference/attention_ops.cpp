// Plugin backend/reference: scaled dot-product attention (masks, logit bias and ALiBi slopes,
// grouped k/v heads, dropout on the probabilities, lse saved for backward, heads split or packed)
// and the head split/merge reshapes, forward and backward side by side, and the KV-cache
// time-slice write. One (b, h) at a time, one query row at a time, in double.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "ablate/philox.hpp"
#include "reference_backend.hpp"

namespace backend_reference {

namespace {

struct AttentionDims {
  std::int64_t B, H, T, S, Dh;
  std::int64_t Hkv;  // k/v heads; head h reads k/v head h / (H / Hkv)
  std::int64_t kv_head(std::int64_t h) const { return h / (H / Hkv); }
};

// The sizes of q: [B, H, T, Dh] and k: [B, Hkv, S, Dh] (or packed; checked by ablate::contract),
// and the reference's own check of the values: key lengths in [0, S].
AttentionDims attention_dims(const char* op, const Tensor& q, const Tensor& k, const ablate::AttentionParams& p) {
  const ablate::AttentionShape a = ablate::attention_shape(q, k, p);
  const AttentionDims d{a.B, a.H, a.T, a.S, a.Dh, a.Hkv};
  if (p.key_lengths != nullptr)
    for (const std::int32_t len : load_i32(*p.key_lengths))
      if (len < 0 || len > d.S)
        fail(op, "key length " + std::to_string(len) + " is outside [0, S = " + std::to_string(d.S) + "]");
  return d;
}

// The logit of the scaled product x = scale q·k: x, or softcap * tanh(x / softcap); and its slope.
double capped(const ablate::AttentionParams& p, double x) { return p.softcap > 0.0f ? p.softcap * std::tanh(x / p.softcap) : x; }
double capped_slope(const ablate::AttentionParams& p, double logit) {
  if (p.softcap <= 0.0f) return 1.0;
  const double t = logit / p.softcap;
  return 1.0 - t * t;
}

// Whether query t of batch item b sees key s.
bool visible(const ablate::AttentionParams& p, const std::vector<std::int32_t>& lengths, std::int64_t b, std::int64_t t,
             std::int64_t s) {
  if (p.causal && s > t + p.query_offset) return false;
  if (!lengths.empty() && s >= lengths[static_cast<std::size_t>(b)]) return false;
  return true;
}

// The logit bias of (h, t, s) from AttentionParams::bias and ::slopes (loaded on the host).
struct LogitBias {
  std::vector<double> bias, slopes;
  std::int64_t bias_heads = 0;
  explicit LogitBias(const ablate::AttentionParams& p) {
    if (p.bias) {
      bias = load(*p.bias);
      bias_heads = p.bias->shape()[0];
    }
    if (p.slopes) slopes = load(*p.slopes);
  }
  double operator()(const AttentionDims& d, std::int64_t offset, std::int64_t h, std::int64_t t, std::int64_t s) const {
    double v = 0.0;
    if (!bias.empty()) v += bias[static_cast<std::size_t>(((bias_heads == 1 ? 0 : h) * d.T + t) * d.S + s)];
    if (!slopes.empty()) v -= slopes[static_cast<std::size_t>(h)] * static_cast<double>(std::abs(t + offset - s));
    return v;
  }
};

// The dropout multiplier of probability [b, h, t, s]: keep / (1 - p), or 1 without dropout.
double dropout_factor(const ablate::AttentionParams& p, const AttentionDims& d, std::int64_t b, std::int64_t h, std::int64_t t,
                      std::int64_t s) {
  if (p.dropout <= 0.0f) return 1.0;
  const auto index = static_cast<std::uint64_t>(((b * d.H + h) * d.T + t) * d.S + s);  // into [B, H, T, S]
  return ablate::dropout_keep(p.rng, index, p.dropout) ? 1.0 / (1.0 - static_cast<double>(p.dropout)) : 0.0;
}

// The packed layout (AttentionParams::packed): the n heads of Dh at column `col` of rows [B, L, W]
// are element ((b L + t) W + col + h Dh + e); in the split layout [B, n, L, Dh], ((b n + h) L + t) Dh + e.
struct HeadColumns {
  std::int64_t B, L, W, col, n, Dh;
  template <class F>
  void each(F&& f) const {  // f(row index, head index)
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < n; ++h)
        for (std::int64_t t = 0; t < L; ++t)
          for (std::int64_t e = 0; e < Dh; ++e)
            f(static_cast<std::size_t>((b * L + t) * W + col + h * Dh + e),
              static_cast<std::size_t>(((b * n + h) * L + t) * Dh + e));
  }
};
HeadColumns columns_of(const Tensor& x, std::int64_t col, std::int64_t n, std::int64_t Dh) {
  return {x.shape()[0], x.shape()[1], x.shape()[2], col, n, Dh};
}
HeadColumns q_columns(const Tensor& q, const ablate::PackedHeads& l) { return columns_of(q, l.q_col, l.heads, l.head_dim); }
HeadColumns k_columns(const Tensor& k, const ablate::PackedHeads& l) { return columns_of(k, l.k_col, l.kv_heads, l.head_dim); }
HeadColumns v_columns(const Tensor& v, const ablate::PackedHeads& l) { return columns_of(v, l.v_col, l.kv_heads, l.head_dim); }
HeadColumns out_columns(const Tensor& out, const ablate::PackedHeads& l) { return columns_of(out, 0, l.heads, l.head_dim); }

// A tensor's values in the split layout: as they are, or its packed heads gathered.
std::vector<double> load_heads(const Tensor& x, const ablate::PackedHeads& l, const HeadColumns& c) {
  std::vector<double> rows = load(x);
  if (!l.packed()) return rows;
  std::vector<double> heads(static_cast<std::size_t>(c.B * c.n * c.L * c.Dh));
  c.each([&](std::size_t r, std::size_t h) { heads[h] = rows[r]; });
  return heads;
}

// Stores (GradStore) split-layout values into x: whole, or into its packed heads' columns only
// (the other columns, another part's, kept).
void store_heads(Tensor* x, const std::vector<double>& heads, const ablate::PackedHeads& l, const HeadColumns& c,
                 ablate::GradStore how) {
  if (!x) return;
  if (!l.packed()) return accumulate(x, heads, how);
  std::vector<double> rows = load(*x);
  c.each([&](std::size_t r, std::size_t h) { rows[r] = (how == ablate::GradStore::Write ? 0.0 : rows[r]) + heads[h]; });
  store(*x, rows);
}

}  // namespace

// out: [B, H, T, Dh] = dropout(softmax(mask(scale q·k^T)))·v; lse: [B, H, T] F32;
// probs: [B, H, T, S] F32 before dropout (optional). A row with no visible key: out 0, lse -inf.
void ReferenceBackend::do_attention_forward(Tensor& out, Tensor& lse, Tensor* probs, const Tensor& q, const Tensor& k,
                                            const Tensor& v, const ablate::AttentionParams& params) {
  const AttentionDims d = attention_dims("attention_forward", q, k, params);
  const ablate::PackedHeads& l = params.packed;
  const std::vector<double> qv = load_heads(q, l, q_columns(q, l)), kv = load_heads(k, l, k_columns(k, l)),
                            vv = load_heads(v, l, v_columns(v, l));
  const std::vector<std::int32_t> lengths = params.key_lengths ? load_i32(*params.key_lengths) : std::vector<std::int32_t>{};
  const LogitBias logit_bias(params);
  std::vector<double> ov(qv.size(), 0.0), lv(static_cast<std::size_t>(d.B * d.H * d.T));
  std::vector<double> pv(static_cast<std::size_t>(d.B * d.H * d.T * d.S), 0.0);
  std::vector<double> logits(static_cast<std::size_t>(d.S));
  for (std::int64_t b = 0; b < d.B; ++b)
    for (std::int64_t h = 0; h < d.H; ++h)
      for (std::int64_t t = 0; t < d.T; ++t) {
        const std::int64_t row = (b * d.H + h) * d.T + t;  // into [B, H, T]
        const double* qr = &qv[static_cast<std::size_t>(row * d.Dh)];
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t s = 0; s < d.S; ++s) {
          if (!visible(params, lengths, b, t, s)) continue;
          const double* kr = &kv[static_cast<std::size_t>(((b * d.Hkv + d.kv_head(h)) * d.S + s) * d.Dh)];
          double dot = 0;
          for (std::int64_t e = 0; e < d.Dh; ++e) dot += qr[e] * kr[e];
          logits[static_cast<std::size_t>(s)] = capped(params, params.scale * dot) + logit_bias(d, params.query_offset, h, t, s);
          mx = std::max(mx, logits[static_cast<std::size_t>(s)]);
        }
        if (mx == -std::numeric_limits<double>::infinity()) {  // no visible key
          lv[static_cast<std::size_t>(row)] = mx;
          continue;
        }
        double sum = 0;
        for (std::int64_t s = 0; s < d.S; ++s)
          if (visible(params, lengths, b, t, s)) sum += std::exp(logits[static_cast<std::size_t>(s)] - mx);
        const double l = mx + std::log(sum);
        lv[static_cast<std::size_t>(row)] = l;
        for (std::int64_t s = 0; s < d.S; ++s) {
          if (!visible(params, lengths, b, t, s)) continue;
          const double prob = std::exp(logits[static_cast<std::size_t>(s)] - l);
          pv[static_cast<std::size_t>(row * d.S + s)] = prob;
          const double pd = prob * dropout_factor(params, d, b, h, t, s);
          const double* vr = &vv[static_cast<std::size_t>(((b * d.Hkv + d.kv_head(h)) * d.S + s) * d.Dh)];
          for (std::int64_t e = 0; e < d.Dh; ++e) ov[static_cast<std::size_t>(row * d.Dh + e)] += pd * vr[e];
        }
      }
  store_heads(&out, ov, l, out_columns(out, l), ablate::GradStore::Write);
  store(lse, lv);
  if (probs) store(*probs, pv);
}

// With P = exp(logits - lse) (recomputed from the saved lse), Pd = P ⊙ dropout factor:
// dv[s] += sum_t Pd[t, s] dout[t]; dP = (dout·v^T) ⊙ dropout factor;
// dlogits = P ⊙ (dP - sum_s P dP); with a softcap c, the product's share is dlogits ⊙ (1 - (logit/c)^2);
// dq += scale dlogits·k; dk += scale dlogits^T·q (k/v heads
// shared by a group sum over it); dbias += dlogits summed over B (and H for a [1, T, S] bias).
// Rows with lse = -inf (no visible key) contribute nothing. `out` is not needed here.
void ReferenceBackend::do_attention_backward(Tensor* dq, Tensor* dk, Tensor* dv, const Tensor& dout, const Tensor& out,
                                             const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                                             const ablate::AttentionParams& params) {
  const AttentionDims d = attention_dims("attention_backward", q, k, params);
  const ablate::PackedHeads& l = params.packed;
  const std::vector<double> qv = load_heads(q, l, q_columns(q, l)), kv = load_heads(k, l, k_columns(k, l)),
                            vv = load_heads(v, l, v_columns(v, l)), gv = load_heads(dout, l, out_columns(dout, l)),
                            lv = load(lse);
  const std::vector<std::int32_t> lengths = params.key_lengths ? load_i32(*params.key_lengths) : std::vector<std::int32_t>{};
  const LogitBias logit_bias(params);
  std::vector<double> gq(qv.size(), 0.0), gk(kv.size(), 0.0), gvv(vv.size(), 0.0);
  std::vector<double> gbias(params.dbias ? static_cast<std::size_t>(params.dbias->numel()) : 0, 0.0);
  std::vector<double> P(static_cast<std::size_t>(d.S)), dP(static_cast<std::size_t>(d.S)), slope(static_cast<std::size_t>(d.S));
  for (std::int64_t b = 0; b < d.B; ++b)
    for (std::int64_t h = 0; h < d.H; ++h)
      for (std::int64_t t = 0; t < d.T; ++t) {
        const std::int64_t row = (b * d.H + h) * d.T + t;
        const double l = lv[static_cast<std::size_t>(row)];
        if (std::isinf(l) && l < 0) continue;
        const std::size_t qo = static_cast<std::size_t>(row * d.Dh);
        double pdp = 0;  // sum_s P dP
        for (std::int64_t s = 0; s < d.S; ++s) {
          const std::size_t so = static_cast<std::size_t>(((b * d.Hkv + d.kv_head(h)) * d.S + s) * d.Dh);
          P[static_cast<std::size_t>(s)] = dP[static_cast<std::size_t>(s)] = 0;
          if (!visible(params, lengths, b, t, s)) continue;
          double dot = 0, gdotv = 0;
          for (std::int64_t e = 0; e < d.Dh; ++e) {
            dot += qv[qo + static_cast<std::size_t>(e)] * kv[so + static_cast<std::size_t>(e)];
            gdotv += gv[qo + static_cast<std::size_t>(e)] * vv[so + static_cast<std::size_t>(e)];
          }
          const double logit = capped(params, params.scale * dot);
          const double prob = std::exp(logit + logit_bias(d, params.query_offset, h, t, s) - l);
          const double f = dropout_factor(params, d, b, h, t, s);
          P[static_cast<std::size_t>(s)] = prob;
          slope[static_cast<std::size_t>(s)] = capped_slope(params, logit);
          dP[static_cast<std::size_t>(s)] = gdotv * f;
          pdp += prob * dP[static_cast<std::size_t>(s)];
          for (std::int64_t e = 0; e < d.Dh; ++e)
            gvv[so + static_cast<std::size_t>(e)] += prob * f * gv[qo + static_cast<std::size_t>(e)];
        }
        for (std::int64_t s = 0; s < d.S; ++s) {
          if (!visible(params, lengths, b, t, s)) continue;
          const std::size_t so = static_cast<std::size_t>(((b * d.Hkv + d.kv_head(h)) * d.S + s) * d.Dh);
          const double dlogits = P[static_cast<std::size_t>(s)] * (dP[static_cast<std::size_t>(s)] - pdp);
          if (!gbias.empty())
            gbias[static_cast<std::size_t>(((params.dbias->shape()[0] == 1 ? 0 : h) * d.T + t) * d.S + s)] += dlogits;
          const double dlogit = dlogits * slope[static_cast<std::size_t>(s)] * params.scale;
          for (std::int64_t e = 0; e < d.Dh; ++e) {
            gq[qo + static_cast<std::size_t>(e)] += dlogit * kv[so + static_cast<std::size_t>(e)];
            gk[so + static_cast<std::size_t>(e)] += dlogit * qv[qo + static_cast<std::size_t>(e)];
          }
        }
      }
  store_heads(dq, gq, l, q_columns(q, l), params.dq_store);  // in turn: dq, dk, dv may be one packed tensor
  store_heads(dk, gk, l, k_columns(k, l), params.dk_store);
  store_heads(dv, gvv, l, v_columns(v, l), params.dv_store);
  if (params.dbias) accumulate(params.dbias, gbias);
}

// ---------------------------------------------------------------------------- heads
// split: x: [B, T, P*H*Dh] (P parts side by side) -> y: [B, H, T, Dh], part `part`.
namespace {

struct HeadDims {
  std::int64_t B, H, T, Dh;
};

// y: [B, H, T, Dh] of a split (checked by ablate::contract).
HeadDims head_dims(const Tensor& y) { return HeadDims{y.shape()[0], y.shape()[1], y.shape()[2], y.shape()[3]}; }

}  // namespace

void ReferenceBackend::do_split_heads_forward(Tensor& y, const Tensor& x, int parts, int part) {
  const HeadDims d = head_dims(y);
  const std::vector<double> xv = load(x);
  std::vector<double> yv(static_cast<std::size_t>(y.numel()));
  const std::int64_t W = parts * d.H * d.Dh;
  for (std::int64_t b = 0; b < d.B; ++b)
    for (std::int64_t h = 0; h < d.H; ++h)
      for (std::int64_t t = 0; t < d.T; ++t)
        for (std::int64_t e = 0; e < d.Dh; ++e)
          yv[static_cast<std::size_t>(((b * d.H + h) * d.T + t) * d.Dh + e)] =
              xv[static_cast<std::size_t>((b * d.T + t) * W + part * d.H * d.Dh + h * d.Dh + e)];
  store(y, yv);
}

// dx: [B, T, P*H*Dh] += dy: [B, H, T, Dh] placed into part `part` (other parts untouched).
void ReferenceBackend::do_split_heads_backward(Tensor& dx, const Tensor& dy, int parts, int part) {
  const HeadDims d = head_dims(dy);
  const std::vector<double> gv = load(dy);
  std::vector<double> delta(static_cast<std::size_t>(dx.numel()), 0.0);
  const std::int64_t W = parts * d.H * d.Dh;
  for (std::int64_t b = 0; b < d.B; ++b)
    for (std::int64_t h = 0; h < d.H; ++h)
      for (std::int64_t t = 0; t < d.T; ++t)
        for (std::int64_t e = 0; e < d.Dh; ++e)
          delta[static_cast<std::size_t>((b * d.T + t) * W + part * d.H * d.Dh + h * d.Dh + e)] =
              gv[static_cast<std::size_t>(((b * d.H + h) * d.T + t) * d.Dh + e)];
  accumulate(&dx, delta);
}

// merge: x: [B, H, T, Dh] -> y: [B, T, H*Dh] (the inverse of split with one part).
void ReferenceBackend::do_merge_heads_forward(Tensor& y, const Tensor& x) {
  const HeadDims d = head_dims(x);
  const std::vector<double> xv = load(x);
  std::vector<double> yv(xv.size());
  for (std::int64_t b = 0; b < d.B; ++b)
    for (std::int64_t h = 0; h < d.H; ++h)
      for (std::int64_t t = 0; t < d.T; ++t)
        for (std::int64_t e = 0; e < d.Dh; ++e)
          yv[static_cast<std::size_t>((b * d.T + t) * d.H * d.Dh + h * d.Dh + e)] =
              xv[static_cast<std::size_t>(((b * d.H + h) * d.T + t) * d.Dh + e)];
  store(y, yv);
}

// dx: [B, H, T, Dh] += dy: [B, T, H*Dh] transposed back.
void ReferenceBackend::do_merge_heads_backward(Tensor& dx, const Tensor& dy) {
  const HeadDims d = head_dims(dx);
  const std::vector<double> gv = load(dy);
  std::vector<double> delta(gv.size());
  for (std::int64_t b = 0; b < d.B; ++b)
    for (std::int64_t h = 0; h < d.H; ++h)
      for (std::int64_t t = 0; t < d.T; ++t)
        for (std::int64_t e = 0; e < d.Dh; ++e)
          delta[static_cast<std::size_t>(((b * d.H + h) * d.T + t) * d.Dh + e)] =
              gv[static_cast<std::size_t>((b * d.T + t) * d.H * d.Dh + h * d.Dh + e)];
  accumulate(&dx, delta);
}

// ---------------------------------------------------------------------------- KV cache
// dst: [B, H, S, Dh] rows offset .. offset+T-1 of every (b, h) = src: [B, H, T, Dh]; no backward.
// A plain element copy in the tensors' own dtype (bf16 bits verbatim): the other rows of dst are
// never read or written.
namespace {

template <class E>
void write_rows(E* dst, const E* src, std::int64_t B, std::int64_t H, std::int64_t S, std::int64_t T, std::int64_t Dh,
                std::int64_t offset) {
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t t = 0; t < T; ++t)
        for (std::int64_t e = 0; e < Dh; ++e) dst[((b * H + h) * S + offset + t) * Dh + e] = src[((b * H + h) * T + t) * Dh + e];
}

}  // namespace

void ReferenceBackend::do_write_time_slice(Tensor& dst, const Tensor& src, std::int64_t offset) {
  const std::int64_t B = dst.shape()[0], H = dst.shape()[1], S = dst.shape()[2], Dh = dst.shape()[3];
  const std::int64_t T = src.shape()[2];
  if (dst.dtype() == DType::F32)
    write_rows(dst.data<float>(), src.data<float>(), B, H, S, T, Dh, offset);
  else
    write_rows(dst.data<std::uint16_t>(), src.data<std::uint16_t>(), B, H, S, T, Dh, offset);
}

}  // namespace backend_reference
