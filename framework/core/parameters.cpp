// The parameter store (framework/include/ablate/parameters.hpp) and deterministic
// initialisation from the Philox RNG.
#include "ablate/parameters.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <numbers>

#include "ablate/bf16.hpp"
#include "ablate/error.hpp"

namespace ablate {
namespace {

std::uint32_t fnv1a(const std::string& s) {
  std::uint32_t h = 2166136261u;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return h;
}

// A view's deleter: it frees the view's Storage record and, until then, holds the packed tensor
// whose memory the view points into.
struct KeepPacked {
  Tensor packed;
  void operator()(Storage* s) const { delete s; }
};

// A parameter's room in a packed tensor: its size rounded up to the alignment.
std::int64_t padded(std::int64_t numel) {
  constexpr std::int64_t a = PackedParameters::kAlign;
  return (numel + a - 1) / a * a;
}

// Where element `offset` of `packed` lies.
void* element_at(const Tensor& packed, std::int64_t offset) {
  return static_cast<std::byte*>(packed.raw()) + static_cast<std::size_t>(offset) * dtype_size(packed.dtype());
}

}  // namespace

std::vector<float> init_values(const Init& init, const Shape& shape, std::uint64_t seed, const std::string& name) {
  const auto n = static_cast<std::size_t>(shape.numel());
  std::vector<float> out(n, 0.0f);
  if (init.kind == Init::Kind::Zeros) return out;
  if (init.kind == Init::Kind::Ones) return std::vector<float>(n, 1.0f);
  if (init.kind == Init::Kind::Constant) return std::vector<float>(n, init.scale);

  const RngKey key{seed, 0, fnv1a(name)};
  float bound = init.scale;
  if (init.kind == Init::Kind::XavierUniform) {
    if (shape.rank() < 2) throw Error("Init::xavier_uniform needs a [O, I] shape, got " + shape.str() + " for " + name);
    const double fan_out = static_cast<double>(shape[shape.rank() - 2]), fan_in = static_cast<double>(shape.last());
    bound = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
  }
  float u[4];
  for (std::size_t i = 0; i < n; i += 2) {
    philox_uniform4(key, i / 2, u);
    if (init.kind == Init::Kind::Normal) {  // Box-Muller on (u0, u1)
      const double r = std::sqrt(-2.0 * std::log(1.0 - static_cast<double>(u[0])));
      const double t = 2.0 * std::numbers::pi * static_cast<double>(u[1]);
      out[i] = static_cast<float>(init.scale * r * std::cos(t));
      if (i + 1 < n) out[i + 1] = static_cast<float>(init.scale * r * std::sin(t));
    } else {
      out[i] = bound * (2.0f * u[0] - 1.0f);
      if (i + 1 < n) out[i + 1] = bound * (2.0f * u[1] - 1.0f);
    }
  }
  return out;
}

ParameterStore::ParameterStore(Backend& backend, DType compute) : backend_(backend), compute_(compute) {
  if (compute == DType::I32) throw Error("ParameterStore: compute dtype must be F32 or BF16");
  if (compute == DType::BF16 && !backend.caps().bf16)
    throw Error("ParameterStore: mixed precision (bf16) requested but this backend has no bf16 support");
}

Parameter& ParameterStore::add(const std::string& name, const Shape& shape, const Init& init, std::uint64_t seed) {
  if (index_.count(name)) throw Error("ParameterStore: parameter '" + name + "' is defined twice");
  Parameter& p = params_.emplace_back();
  p.name = name;
  p.value = backend_.empty(shape, DType::F32);
  p.grad = backend_.empty(shape, DType::F32);
  p.compute = compute_ == DType::F32 ? p.value : backend_.empty(shape, compute_);
  if (backend_.caps().computes) {  // a dry build (train/shape_backend.hpp) initialises nothing
    const std::vector<float> values = init_values(init, shape, seed, name);
    backend_.copy_from_host(p.value, values.data());
    backend_.fill(p.grad, 0.0f);
    if (compute_ != DType::F32) backend_.cast(p.compute, p.value);
  }
  index_[name] = &p;
  packed_ = {};    // the next packed() packs again, this one included
  order_.clear();  // in creation order, until the driver orders the groups again
  return p;
}

void ParameterStore::scale_value(Parameter& p, float factor, std::int64_t first) {
  if (first < 0 || first > p.value.numel())
    throw Error("ParameterStore::scale_value: element " + std::to_string(first) + " is outside '" + p.name + "' (" +
                std::to_string(p.value.numel()) + " elements)");
  if (!backend_.caps().computes) return;
  std::vector<float> values(static_cast<std::size_t>(p.value.numel()));
  backend_.copy_to_host(values.data(), p.value);
  for (auto i = static_cast<std::size_t>(first); i < values.size(); ++i) values[i] *= factor;
  backend_.copy_from_host(p.value, values.data());
  if (compute_ != DType::F32) backend_.cast(p.compute, p.value);
}

Parameter& ParameterStore::get(const std::string& name) {
  auto it = index_.find(name);
  if (it == index_.end()) throw Error("ParameterStore: no parameter named '" + name + "'");
  return *it->second;
}

std::vector<Parameter*> ParameterStore::all() {
  std::vector<Parameter*> out;
  for (Parameter& p : params_) out.push_back(&p);
  return out;
}

std::int64_t ParameterStore::numel() const {
  std::int64_t n = 0;
  for (const Parameter& p : params_) n += p.value.numel();
  return n;
}

void ParameterStore::zero_grad() {
  packed();
  if (packed_.grad.defined()) backend_.fill(packed_.grad, 0.0f);
}

double ParameterStore::grad_norm() {
  Tensor total = backend_.empty({1}, DType::F32);
  backend_.fill(total, 0.0f);
  packed();
  if (packed_.grad.defined()) backend_.sum_squares(total, packed_.grad);
  float host = 0.0f;
  backend_.copy_to_host(&host, total);
  return std::sqrt(static_cast<double>(host));
}

void ParameterStore::refresh_compute() {
  packed();
  if (compute_ != DType::F32 && packed_.value.defined()) backend_.cast(packed_.compute, packed_.value);
}

const PackedParameters& ParameterStore::packed(bool with_moments) {
  if (params_.empty()) return packed_;
  auto in_order = [&](auto&& f) {  // the packing order, without a copy (this runs every step)
    if (order_.empty())
      for (Parameter& p : params_) f(p);
    else
      for (Parameter* p : order_) f(*p);
  };
  std::int64_t n = 0;
  bool any_m = false, any_v = false;
  in_order([&](const Parameter& p) {
    n += padded(p.value.numel());
    any_m = any_m || p.state != OptimizerState::none;
    any_v = any_v || p.state == OptimizerState::m_and_v;
  });
  const bool fresh = !packed_.value.defined();  // packing anew: the offsets are set again
  auto zeros = [&](DType dtype) {
    Tensor t = backend_.empty({n}, dtype);
    backend_.fill(t, 0.0f);
    return t;
  };
  if (!packed_.value.defined()) {
    packed_.value = zeros(DType::F32);
    packed_.grad = zeros(DType::F32);
    packed_.compute = compute_ == DType::F32 ? packed_.value : zeros(compute_);
  }
  if (with_moments && any_m && !packed_.m.defined()) packed_.m = zeros(DType::F32);
  if (with_moments && any_v && !packed_.v.defined()) packed_.v = zeros(DType::F32);
  // Each parameter tensor that is not its view yet (all of them, on the first call) is copied in
  // and replaced by the view; an undefined one (moments a checkpoint did not have) becomes zeros.
  std::int64_t offset = 0;
  auto adopt = [&](Tensor& t, const Tensor& flat, const Shape& shape) {
    if (t.defined() && t.raw() == element_at(flat, offset)) return;
    const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * dtype_size(flat.dtype());
    Tensor view(std::shared_ptr<Storage>(new Storage{element_at(flat, offset), bytes}, KeepPacked{flat}), shape, flat.dtype());
    if (t.defined())
      backend_.copy(view, t);
    else
      backend_.fill(view, 0.0f);
    t = std::move(view);
  };
  if (fresh) offsets_.clear();
  in_order([&](Parameter& p) {
    const Shape shape = p.value.shape();
    if (fresh) offsets_[&p] = offset;
    adopt(p.value, packed_.value, shape);
    adopt(p.grad, packed_.grad, shape);
    if (compute_ == DType::F32)
      p.compute = p.value;
    else
      adopt(p.compute, packed_.compute, shape);
    if (with_moments) {  // else left as they are: undefined ones (dropped by a checkpoint) stay so
      if (p.state != OptimizerState::none) adopt(p.m, packed_.m, shape);
      if (p.state == OptimizerState::m_and_v) adopt(p.v, packed_.v, shape);
    }
    offset += padded(shape.numel());
  });
  return packed_;
}

void ParameterStore::set_packing_order(const std::vector<Parameter*>& order) {
  std::vector<Parameter*> sorted = order, mine = all();
  std::sort(sorted.begin(), sorted.end());
  std::sort(mine.begin(), mine.end());
  if (sorted != mine)
    throw Error("ParameterStore::set_packing_order: the order must name every parameter of the store once (" +
                std::to_string(order.size()) + " given, " + std::to_string(mine.size()) + " in the store)");
  if (order == (order_.empty() ? all() : order_)) return;
  order_ = order;
  packed_ = {};  // the next packed() packs again, in this order (the parameters' old views are copied in)
}

PackedSpan ParameterStore::packed_span(const std::vector<Parameter*>& members) {
  if (members.empty() || !packed_.value.defined()) throw Error("ParameterStore::packed_span: pack first, and name a parameter");
  std::int64_t begin = 0, end = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto it = offsets_.find(members[i]);
    if (it == offsets_.end()) throw Error("ParameterStore::packed_span: '" + members[i]->name + "' is not packed");
    if (i > 0 && it->second != end)
      throw Error("ParameterStore::packed_span: '" + members[i]->name + "' does not follow '" + members[i - 1]->name +
                      "' in the packing order",
                  "set_packing_order puts a group's parameters side by side");
    if (i == 0) begin = it->second;
    end = it->second + padded(members[i]->value.numel());
  }
  auto view = [&](const Tensor& flat) {
    if (!flat.defined()) return Tensor();
    const std::size_t bytes = static_cast<std::size_t>(end - begin) * dtype_size(flat.dtype());
    return Tensor(std::shared_ptr<Storage>(new Storage{element_at(flat, begin), bytes}, KeepPacked{flat}), Shape{end - begin},
                  flat.dtype());
  };
  return {view(packed_.value), view(packed_.grad), view(packed_.compute), view(packed_.m), view(packed_.v)};
}

}  // namespace ablate
