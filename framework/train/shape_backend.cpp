// ShapeBackend (shape_backend.hpp): tensors with a shape and a byte count but no memory.
#include "train/shape_backend.hpp"

#include <memory>

namespace ablate::train {

BackendCaps ShapeBackend::caps() const {
  BackendCaps c;
  c.device = "none (dry build)";
  c.host_addressable = false;
  c.bf16 = true;
  c.computes = false;
  return c;
}

Tensor ShapeBackend::empty(const Shape& shape, DType dtype) {
  const auto bytes = static_cast<std::size_t>(shape.numel()) * dtype_size(dtype);
  bytes_ += static_cast<std::int64_t>(bytes);
  return Tensor(std::make_shared<Storage>(Storage{nullptr, bytes}), shape, dtype);
}

}  // namespace ablate::train
