// Every op of ablate::Backend, as one list: X(name, (params), (args), (contract args)), in the
// order backend.hpp documents them. From it come the Backend's public ops (each checks its
// contract, ablate/backend_contract.hpp, then calls the protected virtual do_<name>), those
// virtuals, every backend's override block (ABLATE_BACKEND_OVERRIDE) and every forwarder's (the
// run's HostedBackend with its profile, a test's ForwardingBackend, a tracing backend of one's
// own, which call Backend::forward_<op> so that the contract is checked once, by their own op). Adding an op is its line here, its contract and one do_<name> per backend. The types are
// ablate's: expand the lists inside namespace ablate (or after using-declarations).
#pragma once

// clang-format off
// The core ops: every backend implements each.
#define ABLATE_BACKEND_CORE_OPS(X) \
  X(fill, (ablate::Tensor& y, float value), (y, value), (y)) \
  X(copy_from_host, (ablate::Tensor& dst, const void* src), (dst, src), (dst)) \
  X(copy_to_host, (void* dst, const ablate::Tensor& src), (dst, src), (src)) \
  X(copy, (ablate::Tensor& dst, const ablate::Tensor& src), (dst, src), (dst, src)) \
  X(linear_forward, (ablate::Tensor& y, ablate::Tensor* pre, const ablate::Tensor& x, const ablate::Tensor& w, const ablate::Tensor* b, ablate::Activation act), (y, pre, x, w, b, act), (y, pre, x, w, b, act)) \
  X(linear_backward, (ablate::Tensor* dx, ablate::Tensor* dw, ablate::Tensor* db, const ablate::Tensor& dy, const ablate::Tensor& x, const ablate::Tensor& w, const ablate::Tensor* pre, const ablate::Tensor& y, ablate::Activation act, ablate::GradStore dx_store), (dx, dw, db, dy, x, w, pre, y, act, dx_store), (dx, dw, db, dy, x, w, pre, y, act)) \
  X(matmul_forward, (ablate::Tensor& c, const ablate::Tensor& a, const ablate::Tensor& b, bool trans_a, bool trans_b, float alpha), (c, a, b, trans_a, trans_b, alpha), (c, a, b, trans_a, trans_b)) \
  X(matmul_backward, (ablate::Tensor* da, ablate::Tensor* db, const ablate::Tensor& dc, const ablate::Tensor& a, const ablate::Tensor& b, bool trans_a, bool trans_b, float alpha), (da, db, dc, a, b, trans_a, trans_b, alpha), (da, db, dc, a, b, trans_a, trans_b)) \
  X(attention_forward, (ablate::Tensor& out, ablate::Tensor& lse, ablate::Tensor* probs, const ablate::Tensor& q, const ablate::Tensor& k, const ablate::Tensor& v, const ablate::AttentionParams& params), (out, lse, probs, q, k, v, params), (*this, out, lse, probs, q, k, v, params)) \
  X(attention_backward, (ablate::Tensor* dq, ablate::Tensor* dk, ablate::Tensor* dv, const ablate::Tensor& dout, const ablate::Tensor& out, const ablate::Tensor& lse, const ablate::Tensor& q, const ablate::Tensor& k, const ablate::Tensor& v, const ablate::AttentionParams& params), (dq, dk, dv, dout, out, lse, q, k, v, params), (*this, dq, dk, dv, dout, out, lse, q, k, v, params)) \
  X(layer_norm_forward, (ablate::Tensor& y, ablate::Tensor& mean, ablate::Tensor& rstd, const ablate::Tensor& x, const ablate::Tensor& gamma, const ablate::Tensor& beta, float eps), (y, mean, rstd, x, gamma, beta, eps), (y, mean, rstd, x, gamma, beta)) \
  X(layer_norm_backward, (ablate::Tensor* dx, ablate::Tensor* dgamma, ablate::Tensor* dbeta, const ablate::Tensor& dy, const ablate::Tensor& x, const ablate::Tensor& mean, const ablate::Tensor& rstd, const ablate::Tensor& gamma, ablate::GradStore dx_store), (dx, dgamma, dbeta, dy, x, mean, rstd, gamma, dx_store), (dx, dgamma, dbeta, dy, x, mean, rstd, gamma)) \
  X(rms_norm_forward, (ablate::Tensor& y, ablate::Tensor& rstd, const ablate::Tensor& x, const ablate::Tensor& gamma, float eps), (y, rstd, x, gamma, eps), (y, rstd, x, gamma)) \
  X(rms_norm_backward, (ablate::Tensor* dx, ablate::Tensor* dgamma, const ablate::Tensor& dy, const ablate::Tensor& x, const ablate::Tensor& rstd, const ablate::Tensor& gamma, ablate::GradStore dx_store), (dx, dgamma, dy, x, rstd, gamma, dx_store), (dx, dgamma, dy, x, rstd, gamma)) \
  X(activation_forward, (ablate::Tensor& y, const ablate::Tensor& x, ablate::Activation act), (y, x, act), (y, x)) \
  X(activation_backward, (ablate::Tensor& dx, const ablate::Tensor& dy, const ablate::Tensor& x, ablate::Activation act), (dx, dy, x, act), (dx, dy, x)) \
  X(add_forward, (ablate::Tensor& y, const ablate::Tensor& a, const ablate::Tensor& b, float alpha, float beta), (y, a, b, alpha, beta), (y, a, b)) \
  X(add_backward, (ablate::Tensor* da, ablate::Tensor* db, const ablate::Tensor& dy, float alpha, float beta), (da, db, dy, alpha, beta), (da, db, dy)) \
  X(mul_forward, (ablate::Tensor& y, const ablate::Tensor& a, const ablate::Tensor& b), (y, a, b), (y, a, b)) \
  X(mul_backward, (ablate::Tensor* da, ablate::Tensor* db, const ablate::Tensor& dy, const ablate::Tensor& a, const ablate::Tensor& b), (da, db, dy, a, b), (da, db, dy, a, b)) \
  X(axpy, (ablate::Tensor& y, const ablate::Tensor& x, float alpha), (y, x, alpha), (y, x)) \
  X(dropout_forward, (ablate::Tensor& y, const ablate::Tensor& x, float p, const ablate::RngKey& rng), (y, x, p, rng), (y, x, p)) \
  X(dropout_backward, (ablate::Tensor& dx, const ablate::Tensor& dy, float p, const ablate::RngKey& rng), (dx, dy, p, rng), (dx, dy, p)) \
  X(embedding_forward, (ablate::Tensor& y, const ablate::Tensor& ids, const ablate::Tensor& table), (y, ids, table), (y, ids, table)) \
  X(embedding_backward, (ablate::Tensor& dtable, const ablate::Tensor& dy, const ablate::Tensor& ids), (dtable, dy, ids), (dtable, dy, ids)) \
  X(split_heads_forward, (ablate::Tensor& y, const ablate::Tensor& x, int parts, int part), (y, x, parts, part), (y, x, parts, part)) \
  X(split_heads_backward, (ablate::Tensor& dx, const ablate::Tensor& dy, int parts, int part), (dx, dy, parts, part), (dx, dy, parts, part)) \
  X(merge_heads_forward, (ablate::Tensor& y, const ablate::Tensor& x), (y, x), (y, x)) \
  X(merge_heads_backward, (ablate::Tensor& dx, const ablate::Tensor& dy), (dx, dy), (dx, dy)) \
  X(write_time_slice, (ablate::Tensor& dst, const ablate::Tensor& src, std::int64_t offset), (dst, src, offset), (dst, src, offset)) \
  X(cross_entropy_forward, (ablate::Tensor& loss, ablate::Tensor& dlogits, ablate::Tensor& stats, const ablate::Tensor& logits, const ablate::Tensor& targets, std::int32_t ignore_index, float label_smoothing), (loss, dlogits, stats, logits, targets, ignore_index, label_smoothing), (loss, dlogits, stats, logits, targets, label_smoothing)) \
  X(sum_squares, (ablate::Tensor& total, const ablate::Tensor& x), (total, x), (total, x)) \
  X(adam_update, (ablate::Tensor& w, ablate::Tensor& m, ablate::Tensor& v, ablate::Tensor* w_low, const ablate::Tensor& grad, const ablate::AdamParams& params), (w, m, v, w_low, grad, params), (w, m, v, w_low, grad, params)) \
  X(cast, (ablate::Tensor& y, const ablate::Tensor& x), (y, x), (y, x))

// The optional ops (OptionalOp): a backend implements those it announces in supports(); the
// others keep Backend's default, which the contract's refusal means is never reached. Two lists:
// the model ops (positions, slices, the small general set, fusions), the extra ops of plugin
// API 19 (rope with given frequencies, compare, permute) and the fused ops of API 24 (linear with
// its dropout); a backend with every optional op declares ABLATE_BACKEND_OPTIONAL_OPS, one with
// fewer the lists it has (the model ops only: ABLATE_BACKEND_MODEL_OPS).
#define ABLATE_BACKEND_MODEL_OPS(X) \
  X(rope_forward, (ablate::Tensor& y, const ablate::Tensor& x, const ablate::Tensor& positions, int rotary, float base), (y, x, positions, rotary, base), (*this, y, x, positions, rotary, base)) \
  X(rope_backward, (ablate::Tensor& dx, const ablate::Tensor& dy, const ablate::Tensor& positions, int rotary, float base), (dx, dy, positions, rotary, base), (*this, dx, dy, positions, rotary, base)) \
  X(slice_last_forward, (ablate::Tensor& y, const ablate::Tensor& x, std::int64_t offset), (y, x, offset), (*this, y, x, offset)) \
  X(slice_last_backward, (ablate::Tensor& dx, const ablate::Tensor& dy, std::int64_t offset), (dx, dy, offset), (*this, dx, dy, offset)) \
  X(softmax_last_forward, (ablate::Tensor& y, const ablate::Tensor& x), (y, x), (*this, y, x)) \
  X(softmax_last_backward, (ablate::Tensor& dx, const ablate::Tensor& dy, const ablate::Tensor& y), (dx, dy, y), (*this, dx, dy, y)) \
  X(sum_last_forward, (ablate::Tensor& y, const ablate::Tensor& x), (y, x), (*this, y, x)) \
  X(sum_last_backward, (ablate::Tensor& dx, const ablate::Tensor& dy), (dx, dy), (*this, dx, dy)) \
  X(pointwise_forward, (ablate::Tensor& y, const ablate::Tensor& x, ablate::Pointwise f), (y, x, f), (*this, y, x)) \
  X(pointwise_backward, (ablate::Tensor& dx, const ablate::Tensor& dy, const ablate::Tensor& y, ablate::Pointwise f), (dx, dy, y, f), (*this, dx, dy, y)) \
  X(dropout_add_forward, (ablate::Tensor& y, const ablate::Tensor& x, const ablate::Tensor& h, float p, const ablate::RngKey& rng), (y, x, h, p, rng), (*this, y, x, h, p))
#define ABLATE_BACKEND_EXTRA_OPS(X) \
  X(rope_frequencies_forward, (ablate::Tensor& y, const ablate::Tensor& x, const ablate::Tensor& positions, const ablate::Tensor& freqs), (y, x, positions, freqs), (*this, y, x, positions, freqs)) \
  X(rope_frequencies_backward, (ablate::Tensor& dx, const ablate::Tensor& dy, const ablate::Tensor& positions, const ablate::Tensor& freqs), (dx, dy, positions, freqs), (*this, dx, dy, positions, freqs)) \
  X(compare_forward, (ablate::Tensor& y, const ablate::Tensor& a, const ablate::Tensor& b, ablate::Compare c), (y, a, b, c), (*this, y, a, b, c)) \
  X(permute_forward, (ablate::Tensor& y, const ablate::Tensor& x, const ablate::Permutation& p), (y, x, p), (*this, y, x, p)) \
  X(permute_backward, (ablate::Tensor& dx, const ablate::Tensor& dy, const ablate::Permutation& p), (dx, dy, p), (*this, dx, dy, p))
#define ABLATE_BACKEND_FUSED_OPS(X) \
  X(linear_dropout_forward, (ablate::Tensor& y, ablate::Tensor* slope, const ablate::Tensor& x, const ablate::Tensor& w, const ablate::Tensor* b, ablate::Activation act, float p, const ablate::RngKey& rng), (y, slope, x, w, b, act, p, rng), (*this, y, slope, x, w, b, p)) \
  X(linear_dropout_backward, (ablate::Tensor* dx, ablate::Tensor* dw, ablate::Tensor* db, const ablate::Tensor& dy, const ablate::Tensor& x, const ablate::Tensor& w, const ablate::Tensor* slope, const ablate::Tensor& y, ablate::Activation act, float p, ablate::GradStore dx_store), (dx, dw, db, dy, x, w, slope, y, act, p, dx_store), (*this, dx, dw, db, dy, x, w, slope, y, act, p))
#define ABLATE_BACKEND_OPTIONAL_OPS(X) ABLATE_BACKEND_MODEL_OPS(X) ABLATE_BACKEND_EXTRA_OPS(X) ABLATE_BACKEND_FUSED_OPS(X)
// clang-format on

#define ABLATE_BACKEND_OPS(X) ABLATE_BACKEND_CORE_OPS(X) ABLATE_BACKEND_OPTIONAL_OPS(X)

// A backend's declaration of one op it implements, for its class body (the access is its own;
// protected or private):
//   ABLATE_BACKEND_CORE_OPS(ABLATE_BACKEND_OVERRIDE)
//   ABLATE_BACKEND_OPTIONAL_OPS(ABLATE_BACKEND_OVERRIDE)  // if it has every optional op
//   ABLATE_BACKEND_MODEL_OPS(ABLATE_BACKEND_OVERRIDE)     // or the lists it has, one by one
#define ABLATE_BACKEND_OVERRIDE(name, params, args, checks) void do_##name params override;

// A list without its parentheses: ABLATE_BACKEND_UNPAREN (y, value) is `y, value`, so that a
// forwarder can put the wrapped backend first: forward_fill(*inner, ABLATE_BACKEND_UNPAREN args).
#define ABLATE_BACKEND_UNPAREN(...) __VA_ARGS__
