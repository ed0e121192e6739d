// The tape (framework/include/ablate/autograd.hpp): nodes, leaves, recording and the reverse
// replay. Gradients of intermediate nodes are allocated lazily, zeroed, and accumulated into
// by the backends' backward ops (`+=`); a node used twice simply receives two contributions.
// A node's gradient is freed once its entry has run: only leaves and parameters keep theirs.
#include "ablate/autograd.hpp"

#include "plugin_host/plugin_call.hpp"

#include "ablate/error.hpp"
#include "ablate/parameters.hpp"

namespace ablate {

struct Var::State {
  Tensor value;
  Tensor grad;
  bool requires_grad = false;
  std::string name;
  Parameter* parameter = nullptr;  // gradient goes to parameter->grad
};

const Tensor& Var::value() const {
  if (!state_) throw Error("Var: use of an undefined Var");
  return state_->value;
}
bool Var::requires_grad() const { return state_ && state_->requires_grad; }
const Tensor& Var::grad() const {
  if (!state_) throw Error("Var: use of an undefined Var");
  return state_->grad;
}
const std::string& Var::name() const {
  if (!state_) throw Error("Var: use of an undefined Var");
  return state_->name;
}

Graph::Graph(Backend& backend, std::uint64_t seed, std::uint64_t step, bool training, bool grad)
    : backend_(backend), seed_(seed), step_(step), training_(training), grad_(grad) {}

Graph::~Graph() = default;

Var Graph::constant(Tensor value, std::string name) {
  auto s = std::make_shared<Var::State>();
  s->value = std::move(value);
  s->name = std::move(name);
  return Var(std::move(s));
}

Var Graph::leaf(Tensor value, std::string name) {
  Var v = constant(std::move(value), std::move(name));
  v.state_->requires_grad = grad_;
  return v;
}

Var Graph::parameter(Parameter& p) {
  Var v = constant(p.compute, p.name);
  v.state_->requires_grad = grad_;
  v.state_->parameter = &p;
  return v;
}

Var Graph::result(Tensor value, std::initializer_list<const Var*> inputs, std::string name) {
  Var v = constant(std::move(value), std::move(name));
  if (grad_)
    for (const Var* in : inputs)
      if (in && in->requires_grad()) v.state_->requires_grad = true;
  return v;
}

void Graph::record(const Var& output, std::function<void(const Tensor&)> backward_fn) {
  if (!grad_ || !output.requires_grad()) return;
  tape_.push_back({output.state_, std::move(backward_fn), running_plugin()});
}

Tensor* Graph::grad_buffer(const Var& v) {
  if (Tensor* fresh = fresh_grad_buffer(v)) {  // a new buffer: zeroed for the additions
    backend_.fill(*fresh, 0.0f);
    return fresh;
  }
  if (!v.requires_grad()) return nullptr;
  Var::State& s = *v.state_;
  if (!s.grad.defined()) s.grad = s.parameter->grad;  // shared storage: accumulates into the store (zeroed per step)
  return &s.grad;
}

Tensor* Graph::fresh_grad_buffer(const Var& v) {
  if (!v.requires_grad()) return nullptr;
  Var::State& s = *v.state_;
  if (s.grad.defined() || s.parameter) return nullptr;
  s.grad = backend_.empty(s.value.shape(), s.value.dtype());
  return &s.grad;
}

Graph::GradOut Graph::grad_out(const Var& v) {
  if (Tensor* fresh = fresh_grad_buffer(v)) return {fresh, GradStore::Write};
  return {grad_buffer(v), GradStore::Add};
}

bool Graph::pass_grad(const Var& v, const Tensor& dy) {
  if (!v.requires_grad()) return true;
  Var::State& s = *v.state_;
  if (s.grad.defined() || s.parameter || dy.shape() != s.value.shape() || dy.dtype() != s.value.dtype()) return false;
  s.grad = dy;  // the output's gradient is spent once its entry has run: v owns the storage from here
  return true;
}

RngKey Graph::next_rng() { return RngKey{seed_, step_, next_op_id_++}; }

void Graph::backward(const Var& loss) {
  if (loss.value().numel() != 1 || loss.dtype() != DType::F32)
    throw Error("Graph::backward: the loss must be a single F32 value, got " + loss.value().str());
  Tensor one = backend_.empty(loss.shape(), DType::F32);
  backend_.fill(one, 1.0f);
  backward(loss, one);
}

void Graph::backward(const Var& output, const Tensor& doutput) {
  if (!grad_) throw Error("Graph::backward: this graph was built with gradients disabled");
  if (!output.requires_grad()) throw Error("Graph::backward: the output does not depend on any parameter or leaf");
  if (doutput.shape() != output.shape() || doutput.dtype() != output.dtype())
    throw Error("Graph::backward: gradient " + doutput.str() + " does not match output " + output.value().str());
  backend_.axpy(*grad_buffer(output), doutput, 1.0f);
  // Reverse program order: every consumer of a node was recorded after it, so a node's
  // gradient is complete when its own entry runs.
  for (auto it = tape_.rbegin(); it != tape_.rend(); ++it) {
    if (it->output->grad.defined()) {
      if (it->plugin)  // recorded while a plugin's code ran: a throw names that plugin
        plugin_call(*it->plugin, "backward", [&] { it->fn(it->output->grad); });
      else
        it->fn(it->output->grad);
    }
    // The node's gradient has reached its inputs and its entry is spent: free both now (the
    // tensors the entry saved go with its function), so that backward's peak memory holds the
    // activations and the gradients in flight, not every gradient of the step at once.
    it->fn = nullptr;
    if (!it->output->parameter) it->output->grad = Tensor();
  }
  tape_.clear();
}

}  // namespace ablate
