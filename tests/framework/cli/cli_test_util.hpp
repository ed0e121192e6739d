// Runs the `ablate` CLI in-process for tests (ablate::cli::run with string streams) and returns
// its exit code, stdout and stderr.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

namespace ablate::testing {

struct CliResult {
  int code;
  std::string out;
  std::string err;
};

inline CliResult run_cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = cli::run(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace ablate::testing
