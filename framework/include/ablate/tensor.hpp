// Tensor: a shape (rank 0-4), a dtype and ref-counted storage owned by a backend. Tensors are
// always dense and row-major; an op that reshapes (head split/merge) writes a new tensor.
// The storage may be device memory: read it through Backend::copy_to_host, never directly,
// unless Backend::caps().host_addressable says the pointer is a host pointer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <boost/config.hpp>

namespace ablate {

// F32 and BF16 for values; I32 for token ids, targets and lengths.
enum class DType : std::uint8_t { F32 = 0, BF16 = 1, I32 = 2 };

inline std::size_t dtype_size(DType t) { return t == DType::BF16 ? 2 : 4; }
inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
  }
  return "invalid";
}

class Shape {
 public:
  static constexpr int kMaxRank = 4;
  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(const std::vector<std::int64_t>& dims);
  std::vector<std::int64_t> dims() const { return {dims_.begin(), dims_.begin() + rank_}; }
  // This shape with the last dimension replaced by `last` ([B, T, I] -> [B, T, O]).
  Shape with_last(std::int64_t last) const;
  int rank() const { return rank_; }
  std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  std::int64_t numel() const;
  // Product of all dims but the last: the "rows" of a row-wise op ([B, T, D] -> B*T).
  std::int64_t rows() const { return rank_ == 0 ? 1 : numel() / dims_[static_cast<std::size_t>(rank_ - 1)]; }
  std::int64_t last() const { return rank_ == 0 ? 1 : dims_[static_cast<std::size_t>(rank_ - 1)]; }
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "[2, 3, 4]"

 private:
  std::array<std::int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

// Memory handed out by a backend. The deleter (set by the backend) returns it to the backend's
// allocator and keeps the backend alive while any storage it made exists.
struct BOOST_SYMBOL_VISIBLE Storage {
  void* data = nullptr;
  std::size_t bytes = 0;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  DType dtype() const { return dtype_; }
  std::int64_t numel() const { return shape_.numel(); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }

  // Raw pointer into backend memory (a device pointer on a GPU backend).
  void* raw() const { return storage_ ? storage_->data : nullptr; }
  template <class T>
  T* data() const {
    return static_cast<T*>(raw());
  }

  // Same storage, another shape with the same number of elements (no copy).
  Tensor reshaped(Shape shape) const;
  // "f32[2, 3, 4]"
  std::string str() const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::F32;
};

}  // namespace ablate
