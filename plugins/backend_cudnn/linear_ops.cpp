// backend/cudnn: linear (x·W^T + b, the activation fused in cuBLASLt's epilogue) and batched
// matmul on cuBLASLt, forward and backward side by side.
#include "cuda_check.hpp"
#include "cudnn_backend.hpp"

namespace backend_cudnn {

using kernels::VT;

namespace {

// The [N, I] x [O, I] geometry of a linear op (its shapes checked by ablate::contract).
struct LinearDims {
  VT t;
  std::int64_t N, I, O;
};
LinearDims linear_dims(const Tensor& x, const Tensor& w) { return {value_type(x), x.shape().rows(), w.shape()[1], w.shape()[0]}; }

}  // namespace

// ------------------------------------------------------------------------------------------
// linear and batched matmul on cuBLASLt

void CudnnBackend::do_linear_forward(Tensor& y, Tensor* pre, const Tensor& x, const Tensor& w, const Tensor* b,
                                     ablate::Activation act) {
  const char* op = "linear_forward";
  const auto [t, N, I, O] = linear_dims(x, w);
  GemmEpilogue ep{b ? b->raw() : nullptr, act_of(act), pre ? pre->raw() : nullptr};
  gemm_->run(y.raw(), t, operand(x, 1, N, I, false), operand(w, 1, I, O, true), 1.0f, 0.0f, ep, op);
}

void CudnnBackend::do_linear_backward(Tensor* dx, Tensor* dw, Tensor* db, const Tensor& dy, const Tensor& x, const Tensor& w,
                                      const Tensor* pre, const Tensor& y, ablate::Activation act, ablate::GradStore dx_store) {
  const char* op = "linear_backward";
  const auto [t, N, I, O] = linear_dims(x, w);
  // g = dy ⊙ act'(pre), or dy itself without an activation
  const void* g = dy.raw();
  if (act != ablate::Activation::None) {
    void* gbuf = scratch(kLinG, dy.bytes());
    const bool from_output = pre == nullptr;  // ReLU: y > 0
    kernels::activation_grad(gbuf, t, dy.raw(), from_output ? y.raw() : pre->raw(), t, N * O, act_of(act), from_output, stream_);
    g = gbuf;
  }
  const GemmOperand gop{g, t, 1, N, O, false};
  if (dx) {  // dx[N, I] += g[N, O] · w[O, I] (=, beta 0, for Write: the old dx is not read)
    gemm_->run(dx->raw(), t, gop, operand(w, 1, O, I, false), 1.0f, dx_store == ablate::GradStore::Write ? 0.0f : 1.0f, {}, op);
  }
  if (dw) {  // dw[O, I] += g^T[O, N] · x[N, I]
    const VT wt = value_type(*dw);
    gemm_->run(dw->raw(), wt, GemmOperand{g, t, 1, O, N, true}, operand(x, 1, N, I, false), 1.0f, 1.0f, {}, op);
  }
  if (db) {  // db[O] += column sums of g
    const VT bt = value_type(*db);
    kernels::column_sum(db->raw(), bt, g, t, N, O, 1.0f, scratch(kReduce, kernels::column_sum_scratch_bytes(N, O)), stream_);
  }
}

namespace {

// c = op(a) · op(b) with a and b [..., R, C] (rank >= 2, checked by ablate::contract): the batch
// Bt (a's leading elements) and the product's M, K, N.
struct MatmulDims {
  std::int64_t Bt, M, K, N;
};
MatmulDims matmul_dims(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const int ra = a.shape().rank(), rb = b.shape().rank();
  const std::int64_t ar = a.shape()[ra - 2], ac = a.shape()[ra - 1], br = b.shape()[rb - 2], bc = b.shape()[rb - 1];
  return {ar * ac == 0 ? 0 : a.numel() / (ar * ac), ta ? ac : ar, ta ? ar : ac, tb ? br : bc};
}

}  // namespace

void CudnnBackend::do_matmul_forward(Tensor& c, const Tensor& a, const Tensor& b, bool ta, bool tb, float alpha) {
  const char* op = "matmul_forward";
  const VT t = value_type(a);
  const auto [Bt, M, K, N] = matmul_dims(a, b, ta, tb);
  gemm_->run(c.raw(), t, operand(a, Bt, M, K, ta), operand(b, Bt, K, N, tb), alpha, 0.0f, {}, op);
}

// With C = alpha op(A)·op(B): d op(A) = alpha dC·op(B)^T and d op(B) = alpha op(A)^T·dC, written
// into the stored layouts (a stored transposed gets the transposed product).
void CudnnBackend::do_matmul_backward(Tensor* da, Tensor* db, const Tensor& dc, const Tensor& a, const Tensor& b, bool ta,
                                      bool tb, float alpha) {
  const char* op = "matmul_backward";
  const VT t = value_type(a);
  const auto [Bt, M, K, N] = matmul_dims(a, b, ta, tb);
  const GemmOperand dC{dc.raw(), t, Bt, M, N, false}, dCt{dc.raw(), t, Bt, N, M, true};
  if (da) {
    need_value_dtype(op, "da", *da, "a", a);
    if (!ta)  // da[M, K] += alpha dC[M, N] · op(B)^T[N, K]
      gemm_->run(da->raw(), t, dC, operand(b, Bt, N, K, !tb), alpha, 1.0f, {}, op);
    else  // da[K, M] += alpha op(B)[K, N] · dC^T[N, M]
      gemm_->run(da->raw(), t, operand(b, Bt, K, N, tb), dCt, alpha, 1.0f, {}, op);
  }
  if (db) {
    need_value_dtype(op, "db", *db, "b", b);
    if (!tb)  // db[K, N] += alpha op(A)^T[K, M] · dC[M, N]
      gemm_->run(db->raw(), t, operand(a, Bt, K, M, !ta), dC, alpha, 1.0f, {}, op);
    else  // db[N, K] += alpha dC^T[N, M] · op(A)[M, K]
      gemm_->run(db->raw(), t, dCt, operand(a, Bt, M, K, ta), alpha, 1.0f, {}, op);
  }
}

}  // namespace backend_cudnn
