// Helpers shared by the plugin host tests: where the fixture plugins are, temporary
// directories, and capturing an ablate error's message and hint as one string.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <unistd.h>

#include <gtest/gtest.h>

#include "ablate/error.hpp"

namespace ablate::testing {

inline std::filesystem::path fixture_dir(const std::string& name) { return std::filesystem::path(ABLATE_FIXTURE_DIR) / name; }
inline std::filesystem::path fixture(const std::string& name) { return fixture_dir(name) / (name + ".so"); }

// A fresh empty directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("ablate_test_" + std::string(info ? info->name() : "x") + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// "what | hint" of the ablate::Error of type E that `f` throws; fails the test if none is thrown.
template <class E = Error>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

}  // namespace ablate::testing
