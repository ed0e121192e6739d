// The run's view of its backend plugin, HostedBackend: every op forwarded to the plugin, and what
// the plugin throws turned into a PluginFault naming it (plugin_host/plugin_call.hpp): the run's
// fault boundary for its backend. A contract violation is refused by HostedBackend's own public op
// before the plugin runs, so it stays the caller's error. With a profile (`ablate run --profile`,
// op_profile.hpp) it also times every op call into its row; on a device backend (not
// host-addressable) each op is then followed by synchronize(), so the profile serialises the
// stream: the per-op times are right, the step time is pessimistic.
#pragma once

#include <memory>

#include "ablate/backend.hpp"
#include "ablate/backend_ops.hpp"
#include "train/op_profile.hpp"

namespace ablate::train {

// A Backend that forwards every call to `inner` (a plugin's backend), turns what it throws into a
// PluginFault, and with a `profile` (may be null) times the call into it.
class HostedBackend final : public Backend {
 public:
  HostedBackend(std::shared_ptr<Backend> inner, std::shared_ptr<OpProfile> profile);

  BackendCaps caps() const override;
  Tensor empty(const Shape& shape, DType dtype) override;
  void synchronize() override;
  bool supports(OptionalOp op) const override;  // as the plugin announces it

 protected:
  // Every other op, forwarded (ablate/backend_ops.hpp).
  ABLATE_BACKEND_CORE_OPS(ABLATE_BACKEND_OVERRIDE)
  ABLATE_BACKEND_OPTIONAL_OPS(ABLATE_BACKEND_OVERRIDE)

 private:
  // Runs `call` on the inner backend, timed into `op` with `flops` of work.
  template <typename F>
  void timed(ProfiledOp op, double flops, F&& call);

  std::shared_ptr<Backend> inner_;
  std::shared_ptr<OpProfile> profile_;
  bool sync_each_op_;
};

}  // namespace ablate::train
