// Multi-head attention, the one sublayer every architecture shares: self-attention with a fused
// q/k/v projection, or cross-attention (queries from the decoder, keys/values from the encoder
// output), with the bias options the tutorial variants differ on (model.qkv_bias, model.out_bias).
#pragma once

#include <cstdint>

#include "ablate/components.hpp"
#include "ablate/ops.hpp"

namespace ablate::model {

// Keys and values split into heads: k, v [B, H, S, Dh]. What a cross-attention computes once
// from the encoder output, and what the decoding cache holds for self-attention.
struct KeyValues {
  Var k, v;
};

class MultiHeadAttention {
 public:
  enum class Kind { Self, Cross };

  MultiHeadAttention() = default;
  // Adds, under `scope` ("decoder.layers.0.self_attn"), with D = dims.d_model:
  //   Self:  qkv.weight [3D, D] (+ qkv.bias [3D])       Cross: q.weight [D, D], kv.weight [2D, D] (+ biases)
  //   both:  out.weight [D, D] (+ out.bias [D])
  // Weights are Xavier-uniform (as PyTorch's nn.MultiheadAttention), biases zero.
  MultiHeadAttention(const ParamScope& scope, const ModelDims& dims, Kind kind);

  // Self-attention over x, or cross-attention from x to `memory` (undefined Var for Self).
  // x: [B, T, D], memory: [B, S, D] -> [B, T, D]. `mask` says causal / key lengths / offset;
  // its dropout and scale are filled from the model's dims.
  Var forward(Graph& g, const Var& x, const Var& memory, ops::AttentionOptions mask) const;

  // The pieces of forward, for incremental decoding:
  // Self: q, k, v of x [B, T, D], each [B, H, T, Dh].
  struct Projected {
    Var q;
    KeyValues kv;
  };
  Projected project_self(Graph& g, const Var& x) const;
  // Cross: keys and values of the memory [B, S, D] -> [B, H, S, Dh] (computed once per decode).
  KeyValues project_memory(Graph& g, const Var& memory) const;
  // Cross: queries of x [B, T, D] -> [B, H, T, Dh].
  Var project_query(Graph& g, const Var& x) const;
  // Attention of q [B, H, T, Dh] over kv [B, H, S, Dh], heads merged and projected: [B, T, D].
  Var attend(Graph& g, const Var& q, const KeyValues& kv, ops::AttentionOptions mask) const;

  Kind kind() const { return kind_; }

 private:
  static Var bias_of(Graph& g, Parameter* p) { return p ? g.parameter(*p) : Var(); }

  Kind kind_ = Kind::Self;
  int heads_ = 1;
  float dropout_ = 0.0f;
  Parameter* in_w_ = nullptr;  // Self: qkv [3D, D]; Cross: q [D, D]
  Parameter* in_b_ = nullptr;
  Parameter* kv_w_ = nullptr;  // Cross only: kv [2D, D]
  Parameter* kv_b_ = nullptr;
  Parameter* out_w_ = nullptr;
  Parameter* out_b_ = nullptr;
};

}  // namespace ablate::model
