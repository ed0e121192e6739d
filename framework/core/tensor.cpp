// Shape and Tensor (framework/include/ablate/tensor.hpp) and the small out-of-line pieces of
// the backend interface (activation_name, host_floats).
#include "ablate/tensor.hpp"

#include "ablate/backend.hpp"
#include "ablate/bf16.hpp"
#include "ablate/error.hpp"

namespace ablate {

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::vector<std::int64_t>(dims)) {}

Shape::Shape(const std::vector<std::int64_t>& dims) {
  if (dims.size() > static_cast<std::size_t>(kMaxRank))
    throw Error("Shape: rank " + std::to_string(dims.size()) + " exceeds the maximum of 4");
  for (const std::int64_t d : dims) {
    if (d < 0) throw Error("Shape: negative dimension " + std::to_string(d));
    dims_[static_cast<std::size_t>(rank_++)] = d;
  }
}

Shape Shape::with_last(std::int64_t last) const {
  if (rank_ == 0) throw Error("Shape::with_last: a scalar has no last dimension");
  Shape s = *this;
  s.dims_[static_cast<std::size_t>(rank_ - 1)] = last;
  return s;
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (int i = 0; i < rank_; ++i)
    if (__builtin_mul_overflow(n, dims_[static_cast<std::size_t>(i)], &n) || n > (std::int64_t{1} << 56))
      throw Error("shape " + str() + " has more elements than can be addressed",
                  "a size in the spec (model width, vocabulary, batch or length) is far too large");
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[static_cast<std::size_t>(i)] != o.dims_[static_cast<std::size_t>(i)]) return false;
  return true;
}

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) s += (i ? ", " : "") + std::to_string(dims_[static_cast<std::size_t>(i)]);
  return s + "]";
}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype)
    : storage_(std::move(storage)), shape_(shape), dtype_(dtype) {
  if (storage_ && storage_->bytes < bytes())
    throw Error("Tensor: storage of " + std::to_string(storage_->bytes) + " bytes is too small for " + str());
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape.numel() != numel()) throw Error("Tensor::reshaped: " + shape.str() + " does not match " + str());
  return Tensor(storage_, shape, dtype_);
}

std::string Tensor::str() const { return std::string(dtype_name(dtype_)) + shape_.str(); }

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::None: return "none";
    case Activation::ReLU: return "relu";
    case Activation::GeluErf: return "gelu_erf";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::SiLU: return "silu";
  }
  return "invalid";
}

std::vector<float> host_floats(Backend& backend, const Tensor& t) {
  if (t.dtype() == DType::I32) throw Error("host_floats: " + t.str() + " holds ids, not values");
  std::vector<float> host(static_cast<std::size_t>(t.numel()));
  if (t.dtype() == DType::BF16) {
    std::vector<std::uint16_t> bits(host.size());
    backend.copy_to_host(bits.data(), t);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = bf16_to_float(bits[i]);  // exact
  } else {
    backend.copy_to_host(host.data(), t);
  }
  return host;
}

}  // namespace ablate
