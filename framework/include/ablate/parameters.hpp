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

// The state an optimizer keeps for a parameter: F32 tensors of the parameter's shape (Parameter::m,
// Parameter::v), zero before the first update, saved in checkpoints. The optimizer says which
// (Optimizer::state, ablate/optimizer.hpp): Adam both moments, Lion and SGD with momentum m alone.
enum class OptimizerState : std::uint8_t { none = 0, m = 1, m_and_v = 2 };

struct Parameter {
  std::string name;
  Tensor value;    // F32 master weights
  Tensor grad;     // F32, accumulated by backward; zeroed by ParameterStore::zero_grad
  Tensor compute;  // what ops read: `value` itself, or its BF16 copy under mixed precision
  Tensor m, v;     // the optimizer's state (F32), allocated when packed with it (ParameterStore::packed)
  OptimizerState state = OptimizerState::m_and_v;  // which of m, v it keeps: set by the optimizer driver
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

// Packed views of a run of consecutive parameters (in packing order): what one optimizer group
// updates with one call per op. Elements between the parameters are zero and stay zero under
// every elementwise update (a zero gradient and zero state change nothing).
struct PackedSpan {
  Tensor value, grad, compute, m, v;  // [Ng] views into the store's PackedParameters (m, v: when packed)
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
  // The parameters packed (PackedParameters; with_moments: the optimizer state too, each
  // parameter's m and v as its Parameter::state says, zero where a checkpoint had none). Packs on
  // first use, and again after add() or set_packing_order(); a parameter tensor replaced since (a
  // checkpoint's moments, say) is copied in and becomes a view again.
  const PackedParameters& packed(bool with_moments = false);
  // Packs in this order from now on (a permutation of all(): the optimizer driver puts each group's
  // parameters side by side). The default is creation order. Throws ablate::Error otherwise.
  void set_packing_order(const std::vector<Parameter*>& order);
  // The packed views of `members`, which must lie side by side in the packing order (after packed()).
  PackedSpan packed_span(const std::vector<Parameter*>& members);

 private:
  Backend& backend_;
  DType compute_;
  std::deque<Parameter> params_;  // stable addresses
  std::map<std::string, Parameter*> index_;
  PackedParameters packed_;                           // empty until packed(); cleared by add()
  std::vector<Parameter*> order_;                     // packing order; empty: creation order
  std::map<const Parameter*, std::int64_t> offsets_;  // each parameter's first element in packed_
};

// Host-side values of `init` for a tensor of `shape`: deterministic in (seed, name).
std::vector<float> init_values(const Init& init, const Shape& shape, std::uint64_t seed, const std::string& name);

}  // namespace ablate
