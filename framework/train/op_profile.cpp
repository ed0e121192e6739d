// The per-op profile of `ablate run --profile` (op_profile.hpp).
#include "train/op_profile.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace ablate::train {
namespace {

struct OpName {
  const char* op;
  const char* direction;
};

constexpr OpName kNames[] = {
    {"linear", "fwd"},
    {"linear", "bwd"},
    {"matmul", "fwd"},
    {"matmul", "bwd"},
    {"attention", "fwd"},
    {"attention", "bwd"},
    {"layer_norm", "fwd"},
    {"layer_norm", "bwd"},
    {"rms_norm", "fwd"},
    {"rms_norm", "bwd"},
    {"activation", "fwd"},
    {"activation", "bwd"},
    {"add", "fwd"},
    {"add", "bwd"},
    {"mul", "fwd"},
    {"mul", "bwd"},
    {"dropout", "fwd"},
    {"dropout", "bwd"},
    {"dropout + residual add", "fwd"},
    {"linear + dropout", "fwd"},
    {"linear + dropout", "bwd"},
    {"embedding", "fwd"},
    {"embedding", "bwd"},
    {"split/merge heads", "fwd"},
    {"split/merge heads", "bwd"},
    {"rope", "fwd"},
    {"rope", "bwd"},
    {"slice/concat last", "fwd"},
    {"slice/concat last", "bwd"},
    {"softmax/sum/exp/sigmoid", "fwd"},
    {"softmax/sum/exp/sigmoid", "bwd"},
    {"compare/permute", "fwd"},
    {"compare/permute", "bwd"},
    {"cross_entropy", "fwd+bwd"},
    {"axpy", "bwd"},
    {"sum_squares", "optim"},
    {"adam_update", "optim"},
    {"memory: alloc", "-"},
    {"memory: fill", "-"},
    {"memory: copy", "-"},
    {"memory: cast", "-"},
};
static_assert(std::size(kNames) == static_cast<std::size_t>(ProfiledOp::Count), "one name per profiled op");

}  // namespace

void OpProfile::begin_step() {
  in_step_ = warmed_up_;
  warmed_up_ = true;
  step_start_ = Clock::now();
}

void OpProfile::end_step() {
  if (!in_step_) return;
  in_step_ = false;
  step_seconds_ += std::chrono::duration<double>(Clock::now() - step_start_).count();
  ++steps_;
}

void OpProfile::add(ProfiledOp op, double seconds, double flops) {
  if (!in_step_) return;
  Row& r = rows_[static_cast<std::size_t>(op)];
  r.seconds += seconds;
  r.flops += flops;
  ++r.calls;
}

std::string OpProfile::report() const {
  if (steps_ == 0) return "profile: no training step was timed\n";
  const double steps = static_cast<double>(steps_);
  std::vector<std::size_t> order;
  double backend_seconds = 0.0;
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    backend_seconds += rows_[i].seconds;
    if (rows_[i].calls > 0) order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rows_[a].seconds > rows_[b].seconds; });

  std::string out;
  char line[160];
  std::snprintf(line, sizeof line,
                "profile of %lld training steps after the first: %.1f ms per step (evaluation, probes, logging not included)\n",
                static_cast<long long>(steps_), 1e3 * step_seconds_ / steps);
  out += line;
  std::snprintf(line, sizeof line, "%-34s %-7s %10s %7s %10s %9s\n", "op", "pass", "ms/step", "share", "calls/step", "GFLOP/s");
  out += line;
  const auto row = [&](const char* op, const char* pass, double seconds, double calls, double flops) {
    char gflops[16] = "";
    if (flops > 0.0 && seconds > 0.0) std::snprintf(gflops, sizeof gflops, "%.1f", flops / seconds / 1e9);
    std::snprintf(line, sizeof line, "%-34s %-7s %10.2f %6.1f%% %10.1f %9s\n", op, pass, 1e3 * seconds / steps,
                  step_seconds_ > 0.0 ? 100.0 * seconds / step_seconds_ : 0.0, calls / steps, gflops);
    out += line;
  };
  for (std::size_t i : order)
    row(kNames[i].op, kNames[i].direction, rows_[i].seconds, static_cast<double>(rows_[i].calls), rows_[i].flops);
  row("outside the backend (graph, batch)", "-", std::max(0.0, step_seconds_ - backend_seconds), 0.0, 0.0);
  double flops = 0.0;
  for (const Row& r : rows_) flops += r.flops;
  row("step", "all", step_seconds_, 0.0, flops);
  return out;
}

std::string profiled_op_label(ProfiledOp op) {
  const OpName& name = kNames[static_cast<std::size_t>(op)];
  return std::string(name.op) + " (" + name.direction + ")";
}

}  // namespace ablate::train
