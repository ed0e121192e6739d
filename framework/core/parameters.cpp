// The parameter store (framework/include/ablate/parameters.hpp) and deterministic
// initialisation from the Philox RNG.
#include "ablate/parameters.hpp"

#include <cmath>
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
  const std::vector<float> values = init_values(init, shape, seed, name);
  backend_.copy_from_host(p.value, values.data());
  p.grad = backend_.empty(shape, DType::F32);
  backend_.fill(p.grad, 0.0f);
  p.compute = compute_ == DType::F32 ? p.value : backend_.empty(shape, compute_);
  if (compute_ != DType::F32) backend_.cast(p.compute, p.value);
  index_[name] = &p;
  return p;
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
  for (Parameter& p : params_) backend_.fill(p.grad, 0.0f);
}

double ParameterStore::grad_norm() {
  Tensor total = backend_.empty({1}, DType::F32);
  backend_.fill(total, 0.0f);
  for (Parameter& p : params_) backend_.sum_squares(total, p.grad);
  float host = 0.0f;
  backend_.copy_to_host(&host, total);
  return std::sqrt(static_cast<double>(host));
}

void ParameterStore::refresh_compute() {
  if (compute_ == DType::F32) return;
  for (Parameter& p : params_) backend_.cast(p.compute, p.value);
}

}  // namespace ablate
