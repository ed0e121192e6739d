// Plugin backend/reference: plain, obviously-correct, single-threaded C++ for every op of
// ablate::Backend. It is the oracle the other backends are tested against, so clarity wins over
// speed: each op reads its inputs into double vectors, computes in double, and rounds on store.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ablate/backend.hpp"
#include "ablate/backend_ops.hpp"
#include "ablate/backend_contract.hpp"
#include "ablate/host_allocator.hpp"

namespace backend_reference {

using ablate::Activation;
using ablate::DType;
using ablate::Shape;
using ablate::Tensor;

class ReferenceBackend final : public ablate::Backend {
 public:
  // all_optional_ops = false: it says it has none of the optional ops (option optional_ops: none)
  // and refuses them, so that ops.cpp's compositions run instead and can be tested against it.
  explicit ReferenceBackend(bool all_optional_ops = true);

  ablate::BackendCaps caps() const override;
  // The allocator behind every tensor of this backend (tests read its stats()).
  const ablate::HostAllocator& allocator() const { return *allocator_; }

  Tensor empty(const Shape& shape, DType dtype) override;

  void synchronize() override {}

  bool supports(ablate::OptionalOp) const override { return all_optional_ops_; }

 protected:
  // Every op (ablate/backend_ops.hpp: core and optional), in the *_ops.cpp files; Backend's
  // public op checks the contract and calls these.
  ABLATE_BACKEND_CORE_OPS(ABLATE_BACKEND_OVERRIDE)
  ABLATE_BACKEND_OPTIONAL_OPS(ABLATE_BACKEND_OVERRIDE)

 private:
  std::shared_ptr<ablate::HostAllocator> allocator_;
  bool all_optional_ops_ = true;
};

// ---- helpers shared by the op files (reference_backend.cpp) ----

// The argument contract is ablate::contract's (every op calls it first); the reference adds checks
// of values it reads anyway (ids, targets, key lengths, positions in range). Those throw
// ablate::Error("backend/reference <op>: <what>").
[[noreturn]] void fail(const char* op, const std::string& what);
// Host views: read any F32/BF16 tensor as doubles; store doubles rounded to the tensor's dtype;
// accumulate `t += delta` (a null `t` is skipped).
std::vector<double> load(const Tensor& t);
std::vector<std::int32_t> load_i32(const Tensor& t);
void store(Tensor& t, const std::vector<double>& values);
void accumulate(Tensor* t, const std::vector<double>& delta);
// A gradient output: += delta (GradStore::Add) or = delta (Write); nothing for null.
void accumulate(Tensor* t, const std::vector<double>& delta, ablate::GradStore store);

// v as a tensor of `dtype` stores it (rounded to float, and to bf16 for BF16).
double rounded(double v, DType dtype);
// Dropout's keep decision for element i (every element when p is 0), and v * keep / (1 - p) for
// each element i of v: dropout_forward's values before they are stored.
bool kept(const ablate::RngKey& rng, std::size_t i, float p);
std::vector<double> dropped(const std::vector<double>& v, float p, const ablate::RngKey& rng);

// Activations and their derivatives, in double (shared by linear and activation ops).
double activate(Activation act, double x);
double activate_grad(Activation act, double x);  // d act / dx at x
}  // namespace backend_reference
