// The named parameter store: every trainable tensor of a model under a dotted name
// ("decoder.layers.1.cross_attn.q.weight"), with its F32 master value, F32 gradient, optional
// BF16 compute copy (mixed precision) and optimizer moments. Initial values are drawn from the
// Philox RNG keyed by (seed, hash of the name): adding a parameter never changes the others'.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "ablate/backend.hpp"

namespace ablate {

struct Init {
  enum class Kind { Zeros, Ones, Uniform, Normal, XavierUniform, Constant } kind = Kind::Zeros;
  float scale = 0.0f;  // Uniform: bound a (U[-a, a]); Normal: standard deviation; Constant: the value
  static Init zeros() { return {Kind::Zeros, 0.0f}; }
  static Init ones() { return {Kind::Ones, 0.0f}; }
  static Init constant(float value) { return {Kind::Constant, value}; }
  static Init uniform(float bound) { return {Kind::Uniform, bound}; }
  static Init normal(float stddev) { return {Kind::Normal, stddev}; }
  // U[-a, a] with a = sqrt(6 / (fan_in + fan_out)), fans from the last two dims ([O, I]).
  static Init xavier_uniform() { return {Kind::XavierUniform, 0.0f}; }
};

struct Parameter {
  std::string name;
  Tensor value;    // F32 master weights
  Tensor grad;     // F32, accumulated by backward; zeroed by ParameterStore::zero_grad
  Tensor compute;  // what ops read: `value` itself, or its BF16 copy under mixed precision
  Tensor m, v;     // Adam moments (F32), allocated by the optimizer on first use
};

// Every parameter's tensors of one role side by side: value, grad, compute and the moments are
// each one [N] tensor, and each parameter's own tensors are views into them (at offsets rounded up
// to kAlign elements; the gaps stay zero). The steps that treat all parameters alike (zeroing,
// the norm, the optimizer's update) are then one backend call each, not one per parameter.
struct PackedParameters {
  static constexpr std::int64_t kAlign = 64;  // elements: 256-byte aligned f32, 128-byte bf16 views
  Tensor value, grad, compute;                // [N]: F32, F32, the compute dtype (`value` under F32)
  Tensor m, v;                                // [N] F32, once ParameterStore::packed(true) asked for them
};

class BOOST_SYMBOL_VISIBLE ParameterStore {
 public:
  // compute: F32, or BF16 for mixed precision (needs backend.caps().bf16).
  explicit ParameterStore(Backend& backend, DType compute = DType::F32);

  // Adds a parameter initialised by `init` from `seed`. Throws ablate::Error on a duplicate name.
  Parameter& add(const std::string& name, const Shape& shape, const Init& init, std::uint64_t seed);
  Parameter& get(const std::string& name);
  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // In creation order.
  std::vector<Parameter*> all();
  std::int64_t numel() const;
  DType compute_dtype() const { return compute_; }
  Backend& backend() const { return backend_; }

  // p.value *= factor, and its compute copy: a block re-scaling its sublayers' initial weights
  // (Block::init_sublayers), before training. Only the elements from `first` (row-major: the rows
  // from r of a [R, C] weight are first = r * C) to the end when first > 0. Nothing on a dry
  // build's backend.
  void scale_value(Parameter& p, float factor, std::int64_t first = 0);

  void zero_grad();
  // Global L2 norm of all gradients (one host synchronisation).
  double grad_norm();
  // Re-derives the compute copies from the masters (after loading a checkpoint).
  void refresh_compute();
  // The parameters packed (PackedParameters; with_moments: the Adam moments too, zero where a
  // parameter has none). Packs on first use, and again after add(); a parameter tensor replaced
  // since (a checkpoint's moments, say) is copied in and becomes a view again.
  const PackedParameters& packed(bool with_moments = false);

 private:
  Backend& backend_;
  DType compute_;
  std::deque<Parameter> params_;  // stable addresses
  std::map<std::string, Parameter*> index_;
  PackedParameters packed_;  // empty until packed(); cleared by add()
};

// Host-side values of `init` for a tensor of `shape`: deterministic in (seed, name).
std::vector<float> init_values(const Init& init, const Shape& shape, std::uint64_t seed, const std::string& name);

}  // namespace ablate
