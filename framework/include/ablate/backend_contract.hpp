// The argument contract of every Backend op (ablate/backend.hpp), written once: a backend calls
// contract::<op>(its arguments) before it works, so every backend refuses the same mistake with the
// same message ("Backend::<op>: <what>"), and an out-of-tree backend gets the checks for free.
// Shapes, dtypes and scalar parameters only: no tensor data is read, so a device backend checks
// without synchronising. What depends on values (ids in [0, V), key lengths in [0, S]) a backend
// may check on its own, where reading them is free (the reference does).
#pragma once

#include <cstdint>
#include <string>

#include "ablate/backend.hpp"

namespace ablate::contract {

// Throws ablate::Error("Backend::<op>: <what>") with a hint that points at ablate/backend.hpp.
[[noreturn]] void fail(const char* op, const std::string& what);

// The building blocks, for a backend's checks of its own (an out-of-tree op): t is allocated and
// has a value dtype (F32/BF16) / exactly `dtype` / exactly `shape` / `numel` elements; `t` has the
// value dtype of `ref`; a gradient `g` of value `v` has v's numel and last dim and v's dtype, or
// F32 when `param` (mixed precision keeps F32 parameter gradients).
void value(const char* op, const char* name, const Tensor& t);
void dtype(const char* op, const char* name, const Tensor& t, DType dtype);
void shape(const char* op, const char* name, const Tensor& t, const Shape& shape);
void numel(const char* op, const char* name, const Tensor& t, std::int64_t numel);
void same_dtype(const char* op, const char* name, const Tensor& t, const char* ref_name, const Tensor& ref);
void grad(const char* op, const char* name, const Tensor& g, const char* value_name, const Tensor& v, bool param);

// One check per op, named and ordered as in ablate/backend.hpp, taking the op's arguments. Those
// of the attention op and of the optional ops also take the backend: a part of the op that
// `be.supports()` denies (attention bias, slopes, soft-capping, grouped k/v heads; an optional op)
// is refused here too.
void fill(const Tensor& y);
void copy_from_host(const Tensor& dst);
void copy_to_host(const Tensor& src);
void copy(const Tensor& dst, const Tensor& src);

void linear_forward(const Tensor& y, const Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b, Activation act);
void linear_backward(const Tensor* dx, const Tensor* dw, const Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w,
                     const Tensor* pre, const Tensor& y, Activation act);
void matmul_forward(const Tensor& c, const Tensor& a, const Tensor& b, bool trans_a, bool trans_b);
void matmul_backward(const Tensor* da, const Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b, bool trans_a,
                     bool trans_b);

void attention_forward(const Backend& be, const Tensor& out, const Tensor& lse, const Tensor* probs, const Tensor& q,
                       const Tensor& k, const Tensor& v, const AttentionParams& params);
void attention_backward(const Backend& be, const Tensor* dq, const Tensor* dk, const Tensor* dv, const Tensor& dout,
                        const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k, const Tensor& v,
                        const AttentionParams& params);

void layer_norm_forward(const Tensor& y, const Tensor& mean, const Tensor& rstd, const Tensor& x, const Tensor& gamma,
                        const Tensor& beta);
void layer_norm_backward(const Tensor* dx, const Tensor* dgamma, const Tensor* dbeta, const Tensor& dy, const Tensor& x,
                         const Tensor& mean, const Tensor& rstd, const Tensor& gamma);
void rms_norm_forward(const Tensor& y, const Tensor& rstd, const Tensor& x, const Tensor& gamma);
void rms_norm_backward(const Tensor* dx, const Tensor* dgamma, const Tensor& dy, const Tensor& x, const Tensor& rstd,
                       const Tensor& gamma);

void activation_forward(const Tensor& y, const Tensor& x);
void activation_backward(const Tensor& dx, const Tensor& dy, const Tensor& x);
void add_forward(const Tensor& y, const Tensor& a, const Tensor& b);
void add_backward(const Tensor* da, const Tensor* db, const Tensor& dy);
void mul_forward(const Tensor& y, const Tensor& a, const Tensor& b);
void mul_backward(const Tensor* da, const Tensor* db, const Tensor& dy, const Tensor& a, const Tensor& b);
void axpy(const Tensor& y, const Tensor& x);
void dropout_forward(const Tensor& y, const Tensor& x, float p);
void dropout_backward(const Tensor& dx, const Tensor& dy, float p);
void embedding_forward(const Tensor& y, const Tensor& ids, const Tensor& table);
void embedding_backward(const Tensor& dtable, const Tensor& dy, const Tensor& ids);

void split_heads_forward(const Tensor& y, const Tensor& x, int parts, int part);
void split_heads_backward(const Tensor& dx, const Tensor& dy, int parts, int part);
void merge_heads_forward(const Tensor& y, const Tensor& x);
void merge_heads_backward(const Tensor& dx, const Tensor& dy);
void write_time_slice(const Tensor& dst, const Tensor& src, std::int64_t offset);

void cross_entropy_forward(const Tensor& loss, const Tensor& dlogits, const Tensor& stats, const Tensor& logits,
                           const Tensor& targets, float label_smoothing);
void sum_squares(const Tensor& total, const Tensor& x);
void adam_update(const Tensor& w, const Tensor& m, const Tensor& v, const Tensor* w_low, const Tensor& grad,
                 const AdamParams& params);
void cast(const Tensor& y, const Tensor& x);

// The optional ops (OptionalOp): refused when be.supports(op) says no, then checked.
void rope_forward(const Backend& be, const Tensor& y, const Tensor& x, const Tensor& positions, int rotary, float base);
void rope_backward(const Backend& be, const Tensor& dx, const Tensor& dy, const Tensor& positions, int rotary, float base);
void slice_last_forward(const Backend& be, const Tensor& y, const Tensor& x, std::int64_t offset);
void slice_last_backward(const Backend& be, const Tensor& dx, const Tensor& dy, std::int64_t offset);
void softmax_last_forward(const Backend& be, const Tensor& y, const Tensor& x);
void softmax_last_backward(const Backend& be, const Tensor& dx, const Tensor& dy, const Tensor& y);
void sum_last_forward(const Backend& be, const Tensor& y, const Tensor& x);
void sum_last_backward(const Backend& be, const Tensor& dx, const Tensor& dy);
void pointwise_forward(const Backend& be, const Tensor& y, const Tensor& x);
void pointwise_backward(const Backend& be, const Tensor& dx, const Tensor& dy, const Tensor& y);
void dropout_add_forward(const Backend& be, const Tensor& y, const Tensor& x, const Tensor& h, float p);
void rope_frequencies_forward(const Backend& be, const Tensor& y, const Tensor& x, const Tensor& positions, const Tensor& freqs);
void rope_frequencies_backward(const Backend& be, const Tensor& dx, const Tensor& dy, const Tensor& positions,
                               const Tensor& freqs);
void compare_forward(const Backend& be, const Tensor& y, const Tensor& a, const Tensor& b, Compare c);
void permute_forward(const Backend& be, const Tensor& y, const Tensor& x, const Permutation& p);
void permute_backward(const Backend& be, const Tensor& dx, const Tensor& dy, const Permutation& p);
void linear_dropout_forward(const Backend& be, const Tensor& y, const Tensor* slope, const Tensor& x, const Tensor& w,
                            const Tensor* b, float p);
void linear_dropout_backward(const Backend& be, const Tensor* dx, const Tensor* dw, const Tensor* db, const Tensor& dy,
                             const Tensor& x, const Tensor& w, const Tensor* slope, const Tensor& y, Activation act, float p);

}  // namespace ablate::contract
