// A fresh, empty scratch folder for a test or a test suite, under the system's temp folder and
// named by tag, process and test, so that parallel ctest processes never share one: the one way
// the tests that write files make their folder (each removes it in its TearDown).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace ablate::testing {

// <temp>/ablate_<tag>_<pid>_<current test's name>, or <temp>/ablate_<tag>_<pid> for a suite's
// folder (per_test false, from SetUpTestSuite); whatever was there is removed first.
inline std::filesystem::path fresh_dir(const std::string& tag, bool per_test = true) {
  std::string name = "ablate_" + tag + "_" + std::to_string(::getpid());
  if (per_test) name += std::string("_") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace ablate::testing
