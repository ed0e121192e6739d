// Plugin backend/reference: the backend object (memory, caps), the helpers the op files share
// (value checks with context, double views of tensors, activations), and the plugin record.
// Fresh tensors are poisoned with NaN (I32: INT32_MIN) so an op that forgets to write shows up.
#include "reference_backend.hpp"

#include <cstring>
#include <numbers>
#include <limits>

#include "ablate/bf16.hpp"
#include "ablate/error.hpp"

namespace backend_reference {

// ---------------------------------------------------------------------------- helpers

void fail(const char* op, const std::string& what) {
  throw ablate::Error(std::string("backend/reference ") + op + ": " + what,
                      "the values each op accepts are documented in ablate/backend.hpp");
}

std::vector<double> load(const Tensor& t) {
  const auto n = static_cast<std::size_t>(t.numel());
  std::vector<double> out(n);
  switch (t.dtype()) {
    case DType::F32:
      for (std::size_t i = 0; i < n; ++i) out[i] = t.data<float>()[i];
      break;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) out[i] = ablate::bf16_to_float(t.data<std::uint16_t>()[i]);
      break;
    case DType::I32:
      for (std::size_t i = 0; i < n; ++i) out[i] = t.data<std::int32_t>()[i];
      break;
  }
  return out;
}

std::vector<std::int32_t> load_i32(const Tensor& t) {
  const std::int32_t* p = t.data<std::int32_t>();
  return std::vector<std::int32_t>(p, p + t.numel());
}

void store(Tensor& t, const std::vector<double>& values) {
  const std::size_t n = values.size();
  switch (t.dtype()) {
    case DType::F32:
      for (std::size_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(values[i]);
      break;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) t.data<std::uint16_t>()[i] = ablate::float_to_bf16(static_cast<float>(values[i]));
      break;
    case DType::I32:
      for (std::size_t i = 0; i < n; ++i) t.data<std::int32_t>()[i] = static_cast<std::int32_t>(values[i]);
      break;
  }
}

void accumulate(Tensor* t, const std::vector<double>& delta) {
  if (t == nullptr) return;
  std::vector<double> sum = load(*t);
  for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += delta[i];
  store(*t, sum);
}

void accumulate(Tensor* t, const std::vector<double>& delta, ablate::GradStore store) {
  if (t == nullptr) return;
  if (store == ablate::GradStore::Write)
    backend_reference::store(*t, delta);
  else
    accumulate(t, delta);
}

double rounded(double v, DType dtype) {
  const auto f = static_cast<float>(v);
  return dtype == DType::BF16 ? ablate::round_to_bf16(f) : f;
}

double activate(Activation act, double x) {
  switch (act) {
    case Activation::None: return x;
    case Activation::ReLU: return x > 0 ? x : 0.0;
    case Activation::GeluErf: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::GeluTanh: {
      const double c = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(c * (x + 0.044715 * x * x * x)));
    }
    case Activation::SiLU: return x / (1.0 + std::exp(-x));
  }
  throw ablate::Error("backend/reference: unknown activation " + std::to_string(static_cast<int>(act)));
}

double activate_grad(Activation act, double x) {
  switch (act) {
    case Activation::None: return 1.0;
    case Activation::ReLU: return x > 0 ? 1.0 : 0.0;
    case Activation::GeluErf:  // Phi(x) + x phi(x)
      return 0.5 * (1.0 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi);
    case Activation::GeluTanh: {
      const double c = std::sqrt(2.0 / std::numbers::pi);
      const double t = std::tanh(c * (x + 0.044715 * x * x * x));
      return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x);
    }
    case Activation::SiLU: {
      const double s = 1.0 / (1.0 + std::exp(-x));
      return s * (1.0 + x * (1.0 - s));
    }
  }
  throw ablate::Error("backend/reference: unknown activation " + std::to_string(static_cast<int>(act)));
}

// ---------------------------------------------------------------------------- backend

ReferenceBackend::ReferenceBackend(bool all_optional_ops)
    : allocator_(ablate::HostAllocator::create()), all_optional_ops_(all_optional_ops) {}

ablate::BackendCaps ReferenceBackend::caps() const {
  ablate::BackendCaps c;
  c.device = "cpu";
  c.host_addressable = true;
  c.bf16 = true;
  c.bf16_arithmetic = "f32 arithmetic on bf16-rounded values (no bf16 speed-up)";
  c.deterministic = true;
  c.threads = 1;
  return c;
}

Tensor ReferenceBackend::empty(const Shape& shape, DType dtype) {
  const std::size_t bytes = static_cast<std::size_t>(shape.numel()) * ablate::dtype_size(dtype);
  // The storage holds this backend (and so its library) alive until the last tensor is gone.
  Tensor t(allocator_->allocate(bytes, shared_from_this()), shape, dtype);
  const auto n = static_cast<std::size_t>(shape.numel());
  switch (dtype) {
    case DType::F32:
      for (std::size_t i = 0; i < n; ++i) t.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
      break;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) t.data<std::uint16_t>()[i] = 0x7fc0;  // bf16 quiet NaN
      break;
    case DType::I32:
      for (std::size_t i = 0; i < n; ++i) t.data<std::int32_t>()[i] = std::numeric_limits<std::int32_t>::min();
      break;
  }
  return t;
}

void ReferenceBackend::do_fill(Tensor& y, float value) {
  store(y, std::vector<double>(static_cast<std::size_t>(y.numel()), static_cast<double>(value)));
}

void ReferenceBackend::do_copy_from_host(Tensor& dst, const void* src) {
  if (dst.bytes() > 0) std::memcpy(dst.raw(), src, dst.bytes());
}

void ReferenceBackend::do_copy_to_host(void* dst, const Tensor& src) {
  if (src.bytes() > 0) std::memcpy(dst, src.raw(), src.bytes());
}

void ReferenceBackend::do_copy(Tensor& dst, const Tensor& src) {
  if (dst.raw() != src.raw() && src.bytes() > 0) std::memmove(dst.raw(), src.raw(), src.bytes());
}

// ---------------------------------------------------------------------------- plugin record

constexpr ablate::OptionInfo kOptions[] = {
    {"optional_ops", ablate::OptionType::String, "all", "all|none",
     "the optional ops it has (Backend::supports): all, or none, so that ops.cpp composes them from the core ops "
     "(to test those compositions, or a model on a backend without them)"},
};

ablate::Component* create(const ablate::Options& o) { return new ReferenceBackend(o.get_string("optional_ops") == "all"); }

ABLATE_PLUGIN("backend", "reference", "1.1.0",
              "Plain single-threaded CPU backend: the op oracle every other backend is tested against",
              ablate::options_of(kOptions), create)

}  // namespace backend_reference
