// Helpers for the spec tests: writing YAML files into a temporary directory and capturing the
// message of the UsageError a spec operation throws.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "ablate/error.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"

namespace ablate::spec::testing {

inline std::filesystem::path write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path;
}

// The UsageError message `f` throws ("" and a test failure if it throws none).
inline std::string usage_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a UsageError";
  return {};
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// The smallest valid spec (the required keys only).
inline const char* kMinimal = "name: tiny\ntask: copy\ntrain:\n  steps: 10\n";

}  // namespace ablate::spec::testing
