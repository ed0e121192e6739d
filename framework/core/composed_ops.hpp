// The optional ops (ablate::OptionalOp) built from core ops, for a backend whose supports() says
// no: ops.cpp calls these instead of refusing, so a new op can land in the reference backend first
// and in the fast backends later. Slower than a kernel (constants built per call), same results.
#pragma once

#include <cstdint>
#include <vector>

#include "ablate/autograd.hpp"

namespace ablate::ops::composed {

// A constant of `shape` and `dtype` from host floats (copied as f32, cast if needed): the tables
// the compositions below build, and ops::iota's ramp.
Var constant(Graph& g, const Shape& shape, DType dtype, const std::vector<float>& values);
// x: [..., C] -> [..., 1]: x @ ones[C, 1] (matmul).
Var sum_last(Graph& g, const Var& x);
// x: [..., C] -> [..., W]: x @ E[C, W] with E[offset + j, j] = 1 (matmul; exact for finite x).
Var slice_last(Graph& g, const Var& x, std::int64_t offset, std::int64_t width);
// a: [..., Ca], b: [..., Cb] -> [..., Ca + Cb]: a @ Ea + b @ Eb (matmul, add; exact for finite values).
Var concat_last(Graph& g, const Var& a, const Var& b);
// x: [..., C]: the attention of the N rows of x as queries [1, 1, N, C] over C keys and values
// e_0..e_{C-1} (identity, scale 1): logit j of row i is x[i, j], the output its softmax. Finite x.
Var softmax_last(Graph& g, const Var& x);
// sigmoid(x) = softmax([x, 0])[0], through softmax_last (itself composed when missing).
Var sigmoid(Graph& g, const Var& x);
// x: [B, H, T, Dh] -> x * cos + rotate_half(x) * sin, tables [T, Dh] built on the host from
// positions (I32 [T], copied from the backend) with ablate::rope_angle (mul, matmul, add).
Var rope(Graph& g, const Var& x, const Tensor& positions, int rotary, float base);
// The same with given frequencies (F32 [R/2], copied from the backend): ablate::rope_frequency_angle.
Var rope(Graph& g, const Var& x, const Tensor& positions, const Tensor& freqs);
// kv: [B, Hkv, S, Dh] -> [B, H, S, Dh], head h a copy of kv head h / (H / Hkv) (matmul with a
// 0/1 selection; its backward sums each group's gradients), for attention without grouped heads.
Var repeat_heads(Graph& g, const Var& kv, std::int64_t heads);

}  // namespace ablate::ops::composed
