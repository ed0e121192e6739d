// What the text task plugins' own tests (plugins/task_*/tests/) share: a scratch directory and an
// error's message with its hint. Header-only, on the public SDK and GoogleTest alone, so that those
// tests need nothing of tests/; included by tests only, not part of ablate_plugin_text.
#pragma once

#include <stdlib.h>

#include <cerrno>
#include <filesystem>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

#include "ablate/error.hpp"

namespace ablate_text::testing {

// A new empty directory under the system temp dir (mkdtemp: unique also across parallel ctest
// processes), removed with what it holds when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "ablate_text_test_XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::filesystem::filesystem_error("mkdtemp", pattern, std::error_code(errno, std::generic_category()));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// "what | hint" of the ablate::Error that `f` throws; fails the test if it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ablate::Error& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  ADD_FAILURE() << "expected an ablate::Error";
  return {};
}

}  // namespace ablate_text::testing
