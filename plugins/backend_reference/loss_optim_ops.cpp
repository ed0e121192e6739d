// Plugin backend/reference: the fused cross-entropy loss (loss, dlogits and accuracy stats in
// one pass), and the optimizer utilities: sum of squares (grad norm), Adam/AdamW, casts.
#include <cmath>
#include <limits>

#include "reference_backend.hpp"

namespace backend_reference {

// ---------------------------------------------------------------------------- cross entropy
// logits: [N, V], targets: I32 [N]; loss: F32 [1]; dlogits: [N, V] in logits' dtype (written,
// not accumulated); stats: F32 [2] = {counted rows, rows whose argmax (first max) is the target}.
// Per counted row (target != ignore_index), with q = (1 - ls) onehot(target) + ls / V:
//   loss_row = -sum_c q_c log softmax_c = lse - sum_c q_c z_c;  d loss_row / dz = softmax - q.
// loss = mean over counted rows; dlogits = (softmax - q) / count; ignored rows get 0.
// With no counted row, loss = 0 and dlogits = 0.
void ReferenceBackend::do_cross_entropy_forward(Tensor& loss, Tensor& dlogits, Tensor& stats, const Tensor& logits,
                                                const Tensor& targets, std::int32_t ignore_index, float label_smoothing) {
  const char* op = "cross_entropy_forward";
  const std::int64_t N = logits.shape().rows(), V = logits.shape().last();
  const std::vector<double> z = load(logits);
  const std::vector<std::int32_t> tv = load_i32(targets);
  const double ls = label_smoothing;
  std::int64_t count = 0, correct = 0;
  for (std::int64_t n = 0; n < N; ++n) {
    const std::int32_t t = tv[static_cast<std::size_t>(n)];
    if (t == ignore_index) continue;
    if (t < 0 || t >= V)
      fail(op, "targets[" + std::to_string(n) + "] = " + std::to_string(t) + " is outside [0, V = " + std::to_string(V) +
                   ") and is not ignore_index " + std::to_string(ignore_index));
    ++count;
  }
  std::vector<double> grad(z.size(), 0.0);
  double total = 0;
  for (std::int64_t n = 0; n < N; ++n) {
    const std::int32_t t = tv[static_cast<std::size_t>(n)];
    if (t == ignore_index) continue;
    const double* zr = &z[static_cast<std::size_t>(n * V)];
    std::int64_t arg = 0;
    for (std::int64_t c = 1; c < V; ++c)
      if (zr[c] > zr[arg]) arg = c;
    if (arg == t) ++correct;
    double sum = 0;
    for (std::int64_t c = 0; c < V; ++c) sum += std::exp(zr[c] - zr[arg]);
    const double lse = zr[arg] + std::log(sum);
    double row = lse;
    for (std::int64_t c = 0; c < V; ++c) {
      const double q = (c == t ? 1.0 - ls : 0.0) + ls / static_cast<double>(V);
      row -= q * zr[c];
      grad[static_cast<std::size_t>(n * V + c)] = (std::exp(zr[c] - lse) - q) / static_cast<double>(count);
    }
    total += row;
  }
  store(loss, {count > 0 ? total / static_cast<double>(count) : 0.0});
  store(dlogits, grad);
  store(stats, {static_cast<double>(count), static_cast<double>(correct)});
}

// ---------------------------------------------------------------------------- optimizer utilities
// total: F32 [1] += sum(x^2); x: any F32/BF16.
void ReferenceBackend::do_sum_squares(Tensor& total, const Tensor& x) {
  double s = 0;
  for (const double e : load(x)) s += e * e;
  accumulate(&total, {s});
}

// The textbook Adam (Kingma & Ba) / AdamW (Loshchilov & Hutter), in double per element:
//   g = grad * grad_scale (+ wd * w for Adam's L2); m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
//   w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)  (+ lr * wd * w for AdamW, old w).
// w, m, v, grad: F32, same shape; w_low (optional): BF16 copy of the updated w.
void ReferenceBackend::do_adam_update(Tensor& w, Tensor& m, Tensor& v, Tensor* w_low, const Tensor& grad,
                                      const ablate::AdamParams& p) {
  std::vector<double> wv = load(w), mv = load(m), vv = load(v);
  const std::vector<double> gv = load(grad);
  const double b1 = p.beta1, b2 = p.beta2, lr = p.lr, wd = p.weight_decay, eps = p.eps;
  const double bc1 = 1.0 - std::pow(b1, static_cast<double>(p.step));
  const double bc2 = 1.0 - std::pow(b2, static_cast<double>(p.step));
  for (std::size_t i = 0; i < wv.size(); ++i) {
    double g = gv[i] * static_cast<double>(p.grad_scale);
    if (!p.decoupled) g += wd * wv[i];
    mv[i] = b1 * mv[i] + (1.0 - b1) * g;
    vv[i] = b2 * vv[i] + (1.0 - b2) * g * g;
    const double update = (mv[i] / bc1) / (std::sqrt(vv[i] / bc2) + eps);
    wv[i] -= lr * update + (p.decoupled ? lr * wd * wv[i] : 0.0);
  }
  store(w, wv);
  store(m, mv);
  store(v, vv);
  if (w_low) store(*w_low, load(w));  // the f32 weight just stored, rounded to bf16
}

// y = x converted to y's dtype (F32 <-> BF16, round to nearest even; same dtype: a copy).
void ReferenceBackend::do_cast(Tensor& y, const Tensor& x) { store(y, load(x)); }

}  // namespace backend_reference
