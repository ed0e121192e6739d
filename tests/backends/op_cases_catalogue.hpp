// The op-case catalogue's shared vocabulary (tests/backends/op_cases*.cpp): how a case names its
// tensors and shapes, and one function per op family that appends its cases. op_cases.cpp's
// all_op_cases() calls every family; a new op's cases go into its family's file.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends/op_cases.hpp"

namespace ablate::testing::catalogue {

inline TensorSpec spec(std::string name, Shape shape, Role role) {
  TensorSpec s;
  s.name = std::move(name);
  s.shape = shape;
  s.role = role;
  return s;
}

inline std::string num(std::int64_t v) { return std::to_string(v); }
// Concatenation through a stream (GCC 12 warns falsely, -Wrestrict, on long "a" + s chains at -O3).
template <class... A>
inline std::string cat(const A&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
inline std::string dims(const Shape& s) {  // "3x7": shapes in case names (gtest allows [A-Za-z0-9_])
  std::string out;
  for (int i = 0; i < s.rank(); ++i) {
    if (i > 0) out += 'x';
    out += num(s[i]);
  }
  return out;
}

inline TensorSpec value(std::string name, Shape shape, double lo = -1, double hi = 1) {
  TensorSpec s = spec(std::move(name), shape, Role::Value);
  s.lo = lo, s.hi = hi;
  return s;
}
inline TensorSpec param(std::string name, Shape shape, double lo = -1, double hi = 1) {
  TensorSpec s = spec(std::move(name), shape, Role::Param);
  s.lo = lo, s.hi = hi;
  return s;
}
inline TensorSpec f32(std::string name, Shape shape, double lo = -1, double hi = 1) {
  TensorSpec s = spec(std::move(name), shape, Role::F32);
  s.lo = lo, s.hi = hi;
  return s;
}
inline TensorSpec fixed_i32(std::string name, Shape shape, std::vector<double> v) {
  TensorSpec s = spec(std::move(name), shape, Role::I32);
  s.fixed = std::move(v);
  return s;
}

inline const char* act_tag(Activation a) { return activation_name(a); }

// The families, one file each.
void add_linear(std::vector<OpCase>& out);           // op_cases_linear_attention.cpp
void add_matmul(std::vector<OpCase>& out);           // op_cases_linear_attention.cpp
void add_attention(std::vector<OpCase>& out);        // op_cases_linear_attention.cpp
void add_norms(std::vector<OpCase>& out);            // op_cases_norm_elementwise.cpp
void add_elementwise(std::vector<OpCase>& out);      // op_cases_norm_elementwise.cpp
void add_embedding_heads(std::vector<OpCase>& out);  // op_cases_norm_elementwise.cpp
void add_loss_optim(std::vector<OpCase>& out);       // op_cases_optional_loss.cpp
void add_rope(std::vector<OpCase>& out);             // op_cases_optional_loss.cpp
void add_slice(std::vector<OpCase>& out);            // op_cases_optional_loss.cpp
void add_rowwise(std::vector<OpCase>& out);          // op_cases_optional_loss.cpp
void add_index(std::vector<OpCase>& out);            // op_cases_index.cpp

}  // namespace ablate::testing::catalogue
