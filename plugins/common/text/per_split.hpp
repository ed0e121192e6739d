// Per-split storage of the file-backed text tasks (translation, classification, language_model
// over a file): one vector per split (train / eval / test), and the bounds check with the error
// message every task gives for an index outside its split.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "ablate/task.hpp"

namespace ablate_text {

inline const char* split_name(ablate::Split s) {
  switch (s) {
    case ablate::Split::Train: return "train";
    case ablate::Split::Eval: return "eval";
    case ablate::Split::Test: return "test";
  }
  return "?";
}

// A vector of T per split: examples, their file lines, or window indices.
template <class T>
class PerSplit {
 public:
  std::vector<T>& operator[](ablate::Split s) { return parts_[slot(s)]; }
  const std::vector<T>& operator[](ablate::Split s) const { return parts_[slot(s)]; }
  std::int64_t size(ablate::Split s) const { return static_cast<std::int64_t>((*this)[s].size()); }
  // The element at `index` of split `s`; throws ablate::Error naming `plugin` ("task/translation")
  // for an index outside [0, size(s)).
  const T& at(ablate::Split s, std::int64_t index, const std::string& plugin) const {
    if (index < 0 || index >= size(s))
      throw ablate::Error(plugin + ": example index " + std::to_string(index) + " is outside the " + split_name(s) +
                              " split [0, " + std::to_string(size(s)) + ")",
                          "index with 0 .. size(split) - 1");
    return (*this)[s][static_cast<std::size_t>(index)];
  }

 private:
  static std::size_t slot(ablate::Split s) { return s == ablate::Split::Train ? 0 : s == ablate::Split::Eval ? 1 : 2; }
  std::array<std::vector<T>, 3> parts_;
};

}  // namespace ablate_text
