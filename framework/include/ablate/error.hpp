// The error types Ablate throws. Each carries a message (what went wrong, with context such as
// the file) and an optional hint (what to do about it); the CLI maps the type to an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace ablate {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, std::string hint = {}) : std::runtime_error(message), hint_(std::move(hint)) {}
  const std::string& hint() const noexcept { return hint_; }

 private:
  std::string hint_;
};

// Bad command line, bad spec, bad option value: the user can fix the input (exit code 2).
class UsageError : public Error {
 public:
  using Error::Error;
};

// A plugin could not be found, loaded, trusted or created (exit code 3).
class PluginError : public Error {
 public:
  using Error::Error;
};

}  // namespace ablate
