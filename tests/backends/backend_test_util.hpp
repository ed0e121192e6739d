// Shared by every test that runs a backend: the backend plugins of the built-in plugin dir
// (the plugin test kit's registry, ablate/testing/kit.hpp: loaded once per test process, kept for
// its whole life, since tensors may outlive a test),
// and host <-> backend helpers that read BF16 back as floats.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ablate/backend.hpp"
#include "ablate/testing/kit.hpp"
#include "core/testing_kit.hpp"

namespace ablate::testing {

// The kit's registry (the built-in plugin dir; ctest empties ABLATE_PLUGIN_PATH), scanned once; never destroyed.
PluginRegistry& builtin_registry();
// The names of the backend plugins found there, in discovery order.
std::vector<std::string> builtin_backend_names();
// Backend `name` with `options`, created once per (name, options) and shared by all callers.
std::shared_ptr<Backend> builtin_backend(const std::string& name, const std::map<std::string, std::string>& options = {});
// A freshly created backend instance (for tests that need one of their own).
std::shared_ptr<Backend> new_builtin_backend(const std::string& name, const std::map<std::string, std::string>& options = {});

// Why backend `name` cannot be created on this machine (the cudnn backend without a GPU), or ""
// if it can. Asked once per name and process.
std::string backend_unavailable(const std::string& name);
// Whether ABLATE_REQUIRE_BACKENDS (comma-separated names, e.g. "cudnn" on a GPU machine) lists
// `name`: then an unavailable backend fails its tests instead of skipping them.
bool backend_required(const std::string& name);

// Skips the current test (or fails it, if the backend is required) when backend `name` cannot
// be created here, saying why.
#define ABLATE_SKIP_IF_BACKEND_UNAVAILABLE(name)                                                             \
  if (const std::string ablate_why = ::ablate::testing::backend_unavailable(name); !ablate_why.empty()) {    \
    if (::ablate::testing::backend_required(name)) FAIL() << "required backend unavailable: " << ablate_why; \
    GTEST_SKIP() << ablate_why;                                                                              \
  }

Tensor f32_tensor(Backend& be, const Shape& shape, const std::vector<float>& values);
Tensor i32_tensor(Backend& be, const Shape& shape, const std::vector<std::int32_t>& values);
// The tensor's values as floats (F32 as is, BF16 widened).
std::vector<float> host(Backend& be, const Tensor& t);

// Forwards every call to another backend; a test overrides one op to break it on purpose or to
// count its calls.
class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::shared_ptr<Backend> inner) : in_(std::move(inner)) {}
  BackendCaps caps() const override { return in_->caps(); }
  Tensor empty(const Shape& s, DType t) override { return in_->empty(s, t); }
  void synchronize() override { in_->synchronize(); }
  bool supports(OptionalOp op) const override { return in_->supports(op); }

 protected:
#define ABLATE_FORWARD_OP(name, params, args, checks) \
  void do_##name params override { forward_##name(*in_, ABLATE_BACKEND_UNPAREN args); }
  ABLATE_BACKEND_OPS(ABLATE_FORWARD_OP)
#undef ABLATE_FORWARD_OP

  std::shared_ptr<Backend> in_;
};

}  // namespace ablate::testing
