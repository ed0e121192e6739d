// Reverse-mode automatic differentiation over backend ops. A component writes its forward once
// as a composition of the ops in ablate/ops.hpp on Vars; each op runs the backend's forward and
// records the backend's backward on the Graph's tape, so the component is differentiable on
// every backend with no hand-written backward. Graph::backward(loss) replays the tape in reverse.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ablate/backend.hpp"

namespace ablate {

struct Parameter;

// A value in the graph, with the gradient it accumulates during backward. Cheap to copy
// (shared state): every copy is the same node.
class BOOST_SYMBOL_VISIBLE Var {
 public:
  Var() = default;
  bool defined() const { return state_ != nullptr; }
  const Tensor& value() const;
  const Shape& shape() const { return value().shape(); }
  DType dtype() const { return value().dtype(); }
  bool requires_grad() const;
  // The accumulated gradient; undefined until backward reached this node (or for constants).
  // Only a leaf's is kept after backward: an intermediate node's is freed once propagated.
  const Tensor& grad() const;
  const std::string& name() const;

 private:
  friend class Graph;
  struct State;
  explicit Var(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

// One forward pass and its backward. Holds the backend, the tape, and the RNG identity of the
// pass (seed, step): dropout op ids are assigned in program order, so the same program draws
// the same masks on every backend and on resume.
class BOOST_SYMBOL_VISIBLE Graph {
 public:
  // training = false: dropout is the identity; grad = false: nothing is recorded (evaluation,
  // attention probes) and no gradient memory is touched.
  Graph(Backend& backend, std::uint64_t seed, std::uint64_t step, bool training = true, bool grad = true);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Backend& backend() const { return backend_; }
  bool training() const { return training_; }
  bool grad_enabled() const { return grad_; }

  // A leaf that needs no gradient (inputs, masks, token ids).
  Var constant(Tensor value, std::string name = {});
  // A leaf whose gradient is wanted (tests, gradcheck); read it with Var::grad() after backward.
  Var leaf(Tensor value, std::string name = {});
  // A trainable parameter: the value used is the compute copy (bf16 when mixed precision),
  // the gradient accumulates (F32) into parameter.grad, which the caller zeroes per step.
  Var parameter(Parameter& parameter);

  // Seeds d(loss) = 1 (loss: one element, F32) and runs the tape in reverse.
  void backward(const Var& loss);
  // The vector-Jacobian product: seeds d(output) = doutput (output's shape and dtype) and runs
  // the tape in reverse. The tape is consumed: a graph runs backward once.
  void backward(const Var& output, const Tensor& doutput);

  // --- for op implementations (ops.cpp and components that add their own ops)
  // A new node holding `value`; it requires grad iff any of `inputs` does (and grad is enabled).
  Var result(Tensor value, std::initializer_list<const Var*> inputs, std::string name = {});
  // Records how to propagate `output`'s gradient to its inputs. Runs during backward only if
  // output's gradient was reached. Not recorded when grad is disabled.
  void record(const Var& output, std::function<void(const Tensor& doutput)> backward_fn);
  // The gradient buffer of `v`, allocated and zeroed on first use (for accumulation `+=`),
  // or nullptr if v does not require grad.
  Tensor* grad_buffer(const Var& v);
  // For an input whose gradient is exactly doutput (a residual add, a reshape): hands `dy` to v
  // as its gradient buffer when v has none yet, so nothing is zeroed or copied; the caller then
  // skips v. False when v must accumulate instead (it has a buffer, is a parameter, or dy's shape
  // or dtype differs); true too when v needs no gradient.
  bool pass_grad(const Var& v, const Tensor& dy);
  // For an op that can write its whole gradient to v rather than add it (dropout's is a dropout of
  // dy with the same mask): v's new, *unzeroed* gradient buffer when v has none yet, which the
  // caller must then overwrite entirely; nullptr when v already has one or is a parameter (then
  // grad_buffer and add) or needs no gradient. Saves the zero-fill and its re-read.
  Tensor* fresh_grad_buffer(const Var& v);
  // For a backward op with a GradStore for this output (linear, the norms, attention): v's new,
  // unzeroed buffer and Write when v has none yet, else its buffer (grad_buffer) and Add; {nullptr,
  // Add} when v needs no gradient.
  struct GradOut {
    Tensor* grad;
    GradStore store;
  };
  GradOut grad_out(const Var& v);
  // The RNG identity of the next random op in this pass.
  RngKey next_rng();
  // Matrix-product FLOPs of this pass's forward so far, 2 per multiply-add: ops::linear, matmul and
  // attention add theirs as they run (the run's compute accounting, docs/training.md "Compute").
  void add_flops(double flops) { flops_ += flops; }
  double flops() const { return flops_; }

 private:
  struct Entry {
    std::shared_ptr<Var::State> output;
    std::function<void(const Tensor&)> fn;
    const Component* plugin;  // the plugin whose code recorded it (host-side call tracking), or null
  };
  Backend& backend_;
  std::uint64_t seed_;
  std::uint64_t step_;
  bool training_;
  bool grad_;
  std::uint32_t next_op_id_ = 0;
  std::vector<Entry> tape_;
  double flops_ = 0.0;
};

}  // namespace ablate
