// A backend that gives tensors their shapes and nothing else: no memory behind them, every op a
// no-op. A model built on it (its plugins run their build code as in a run) says what it would
// refuse and how many bytes its parameters would take, without allocating them: validation's dry
// build and model.match_parameters' candidates.
#pragma once

#include <cstdint>

#include "ablate/backend.hpp"

namespace ablate::train {

class ShapeBackend final : public Backend {
 public:
  BackendCaps caps() const override;
  Tensor empty(const Shape& shape, DType dtype) override;
  void synchronize() override {}
  bool supports(OptionalOp) const override { return true; }  // every op does nothing alike
  std::int64_t bytes() const { return bytes_; }              // of every tensor made so far

 protected:
#define ABLATE_SHAPE_BACKEND_NOOP(name, params, args, checks) \
  void do_##name params override {}
  ABLATE_BACKEND_OPS(ABLATE_SHAPE_BACKEND_NOOP)
#undef ABLATE_SHAPE_BACKEND_NOOP

 private:
  std::int64_t bytes_ = 0;
};

}  // namespace ablate::train
