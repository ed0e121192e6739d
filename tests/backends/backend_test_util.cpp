// Implementation of the shared backend test helpers (backend_test_util.hpp).
#include "backends/backend_test_util.hpp"

#include <cstdlib>
#include <sstream>

#include "ablate/bf16.hpp"
#include "ablate/error.hpp"

namespace ablate::testing {

PluginRegistry& builtin_registry() { return kit_registry(); }

std::vector<std::string> builtin_backend_names() {
  std::vector<std::string> names;
  for (const PluginDescriptor* d : builtin_registry().list(Backend::kKind)) names.push_back(d->name);
  return names;
}

std::shared_ptr<Backend> new_builtin_backend(const std::string& name, const std::map<std::string, std::string>& options) {
  return make_backend(name, options);
}

std::shared_ptr<Backend> builtin_backend(const std::string& name, const std::map<std::string, std::string>& options) {
  static std::map<std::pair<std::string, std::map<std::string, std::string>>, std::shared_ptr<Backend>> made;
  auto& slot = made[{name, options}];
  if (!slot) slot = new_builtin_backend(name, options);
  return slot;
}

std::string backend_unavailable(const std::string& name) {
  static std::map<std::string, std::string> reasons;
  if (auto it = reasons.find(name); it != reasons.end()) return it->second;
  std::string why;
  try {
    builtin_backend(name);
  } catch (const Error& e) {
    why = "backend '" + name + "' cannot run on this machine: " + e.what() + (e.hint().empty() ? "" : " (" + e.hint() + ")");
  } catch (const std::exception& e) {
    why = "backend '" + name + "' cannot run on this machine: " + e.what();
  }
  return reasons[name] = why;
}

bool backend_required(const std::string& name) {
  const char* env = std::getenv("ABLATE_REQUIRE_BACKENDS");
  std::istringstream list(env ? env : "");
  for (std::string item; std::getline(list, item, ',');)
    if (item == name) return true;
  return false;
}

Tensor f32_tensor(Backend& be, const Shape& shape, const std::vector<float>& values) {
  Tensor t = be.empty(shape, DType::F32);
  be.copy_from_host(t, values.data());
  return t;
}

Tensor i32_tensor(Backend& be, const Shape& shape, const std::vector<std::int32_t>& values) {
  Tensor t = be.empty(shape, DType::I32);
  be.copy_from_host(t, values.data());
  return t;
}

std::vector<float> host(Backend& be, const Tensor& t) {
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  if (t.dtype() == DType::BF16) {
    std::vector<std::uint16_t> b(v.size());
    be.copy_to_host(b.data(), t);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = bf16_to_float(b[i]);
  } else {
    be.copy_to_host(v.data(), t);
  }
  return v;
}

}  // namespace ablate::testing
