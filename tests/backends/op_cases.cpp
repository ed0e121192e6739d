// The backend op-case catalogue and runner (op_cases.hpp). Cases are small so the whole suite
// runs in seconds, yet cover odd sizes (1, 3, 7, 33, 65), every mask kind, dropout on and off,
// ignore_index and label smoothing, and BF16 values with F32 parameter gradients.
#include "backends/op_cases.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "ablate/bf16.hpp"
#include "ablate/error.hpp"
#include "backends/op_cases_catalogue.hpp"

namespace ablate::testing {

// ---------------------------------------------------------------------------- runs

Tensor& OpRun::operator[](const std::string& name) {
  auto it = tensors.find(name);
  if (it == tensors.end()) throw Error("op case: no tensor named '" + name + "' in this run");
  return it->second;
}

Tensor* OpRun::opt(const std::string& name) {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

float OpRun::scalar(const std::string& name) {
  Tensor& t = (*this)[name];
  if (t.dtype() != DType::F32) throw Error("op case: scalar '" + name + "' must be f32, is " + t.str());
  std::vector<float> v(static_cast<std::size_t>(t.numel()));
  backend.copy_to_host(v.data(), t);
  return v.at(0);
}

namespace {

// splitmix64: a tiny portable generator, so case data is the same on every platform.
struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1)
};

std::uint64_t seed_of(const std::string& text) {  // FNV-1a
  std::uint64_t h = 1469598103934665603ull;
  for (const char ch : text) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

DType dtype_of(Role role, DType run) {
  switch (role) {
    case Role::Value:
    case Role::Param: return run;
    case Role::F32: return DType::F32;
    case Role::BF16: return DType::BF16;
    case Role::I32: return DType::I32;
  }
  return run;
}

DType grad_dtype_of(Role role, DType run) { return role == Role::Param ? DType::F32 : dtype_of(role, run); }

std::vector<float> generate(const TensorSpec& s, Rng& rng, DType dtype) {
  const auto n = static_cast<std::size_t>(s.shape.numel());
  std::vector<float> v(n);
  if (!s.fixed.empty()) {
    if (s.fixed.size() != n) throw Error("op case: fixed values of '" + s.name + "' do not match " + s.shape.str());
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(s.fixed[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      double x = s.lo + (s.hi - s.lo) * rng.uniform();
      if (s.min_abs > 0 && std::abs(x) < s.min_abs) x = x < 0 ? -s.min_abs - std::abs(x) : s.min_abs + x;
      v[i] = dtype == DType::I32 ? std::floor(static_cast<float>(x)) : static_cast<float>(x);
    }
  }
  if (dtype == DType::BF16)
    for (float& x : v) x = round_to_bf16(x);
  return v;
}

const TensorSpec& find_spec(const std::vector<TensorSpec>& specs, const std::string& name, const OpCase& c) {
  for (const TensorSpec& s : specs)
    if (s.name == name) return s;
  throw Error("op case " + c.id() + ": no tensor spec named '" + name + "'");
}

Tensor upload(Backend& be, const Shape& shape, DType dtype, const std::vector<float>& v) {
  Tensor t = be.empty(shape, dtype);
  const std::size_t n = v.size();
  if (dtype == DType::F32) {
    be.copy_from_host(t, v.data());
  } else if (dtype == DType::BF16) {
    be.copy_from_host(t, to_bf16(v).data());
  } else {
    std::vector<std::int32_t> b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::int32_t>(v[i]);
    be.copy_from_host(t, b.data());
  }
  return t;
}

std::vector<float> download(Backend& be, const Tensor& t) {
  const auto n = static_cast<std::size_t>(t.numel());
  std::vector<float> v(n);
  if (t.dtype() == DType::F32) {
    be.copy_to_host(v.data(), t);
  } else if (t.dtype() == DType::BF16) {
    std::vector<std::uint16_t> b(n);
    be.copy_to_host(b.data(), t);
    for (std::size_t i = 0; i < n; ++i) v[i] = bf16_to_float(b[i]);
  } else {
    std::vector<std::int32_t> b(n);
    be.copy_to_host(b.data(), t);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(b[i]);
  }
  return v;
}

}  // namespace

HostMap case_inputs(const OpCase& c, DType dtype) {
  Rng rng{seed_of(c.id() + "/inputs")};
  HostMap m;
  for (const TensorSpec& s : c.inputs) m[s.name] = generate(s, rng, dtype_of(s.role, dtype));
  return m;
}

namespace {

// "d<name>" for each of `names`, drawn in turn under the seed "<case id>/<tag>" from its spec in
// `specs` once `redraw` has changed it (its range, say), in the dtype `redraw` returns.
template <class Redraw>
HostMap gradients(const OpCase& c, const std::string& tag, const std::vector<std::string>& names,
                  const std::vector<TensorSpec>& specs, Redraw redraw) {
  Rng rng{seed_of(c.id() + "/" + tag)};
  HostMap m;
  for (const std::string& name : names) {
    TensorSpec s = find_spec(specs, name, c);
    const DType gradient_dtype = redraw(s);
    m["d" + name] = generate(s, rng, gradient_dtype);
  }
  return m;
}

}  // namespace

HostMap case_grad_prefill(const OpCase& c, DType dtype) {
  HostMap m = gradients(c, "prefill", c.grad_inputs, c.inputs, [dtype](TensorSpec& s) {
    s.fixed.clear();
    s.lo = -0.5, s.hi = 0.5, s.min_abs = 0;
    return grad_dtype_of(s.role, dtype);
  });
  for (const std::string& name : c.written) {
    std::vector<float>& v = m.at("d" + name);
    std::fill(v.begin(), v.end(), std::numeric_limits<float>::quiet_NaN());
  }
  return m;
}

GradStore grad_store(const OpCase& c, const std::string& input) {
  return std::find(c.written.begin(), c.written.end(), input) != c.written.end() ? GradStore::Write : GradStore::Add;
}

HostMap case_upstream(const OpCase& c, DType dtype) {
  return gradients(c, "upstream", c.grad_outputs, c.outputs, [dtype](TensorSpec& s) {
    s.lo = -1, s.hi = 1, s.min_abs = 0;
    return dtype_of(s.role, dtype);
  });
}

std::string missing_optional_op(const Backend& backend, const OpCase& c) {
  for (OptionalOp op : c.needs)
    if (!backend.supports(op)) return optional_op_name(op);
  return "";
}

OpResult run_case(Backend& be, const OpCase& c, DType dtype, const HostMap* overrides, bool backward, const Mistake* mistake) {
  OpRun run{be, dtype, {}};
  HostMap in = case_inputs(c, dtype);
  if (overrides)
    for (const auto& [name, v] : *overrides) in[name] = v;
  // The tensor `name` as the case has it, or with the mistake's shape (zeros).
  const auto make = [&](const std::string& name, const Shape& shape, DType d, const std::vector<float>* values) {
    if (mistake && mistake->name == name)
      return upload(be, mistake->shape, d, std::vector<float>(static_cast<std::size_t>(mistake->shape.numel()), 0.0f));
    return values ? upload(be, shape, d, *values) : be.empty(shape, d);
  };
  for (const TensorSpec& s : c.inputs) run.tensors[s.name] = make(s.name, s.shape, dtype_of(s.role, dtype), &in[s.name]);
  for (const TensorSpec& s : c.outputs) run.tensors[s.name] = make(s.name, s.shape, dtype_of(s.role, dtype), nullptr);
  c.forward(run);
  OpResult r;
  if (backward && c.backward) {
    const HostMap prefill = case_grad_prefill(c, dtype), up = case_upstream(c, dtype);
    for (const std::string& name : c.grad_inputs) {
      const TensorSpec& s = find_spec(c.inputs, name, c);
      run.tensors["d" + name] = make("d" + name, s.shape, grad_dtype_of(s.role, dtype), &prefill.at("d" + name));
    }
    for (const std::string& name : c.grad_outputs) {
      const TensorSpec& s = find_spec(c.outputs, name, c);
      run.tensors["d" + name] = make("d" + name, s.shape, dtype_of(s.role, dtype), &up.at("d" + name));
    }
    c.backward(run);
    for (const std::string& name : c.grad_inputs) r.values["d" + name] = download(be, run["d" + name]);
  }
  for (const TensorSpec& s : c.outputs) r.values[s.name] = download(be, run[s.name]);
  for (const std::string& name : c.inplace) r.values[name] = download(be, run[name]);
  return r;
}

// ---------------------------------------------------------------------------- comparison

Tolerance parity_tolerance(const OpCase&, DType dtype) {
  return dtype == DType::F32 ? Tolerance{1e-4, 1e-5} : Tolerance{2e-2, 2e-2};
}

CompareResult compare_results(const OpCase& c, DType dtype, const OpResult& expected, const OpResult& actual) {
  CompareResult res;
  std::ostringstream os;
  const Tolerance tol = parity_tolerance(c, dtype);
  for (const auto& [name, e] : expected.values) {
    auto it = actual.values.find(name);
    if (it == actual.values.end()) {
      res.ok = false;
      os << "  " << name << ": missing\n";
      continue;
    }
    const std::vector<float>& a = it->second;
    if (a.size() != e.size()) {
      res.ok = false;
      os << "  " << name << ": " << a.size() << " elements, expected " << e.size() << "\n";
      continue;
    }
    double maxabs = 1.0;
    for (const float x : e)
      if (std::isfinite(x)) maxabs = std::max(maxabs, static_cast<double>(std::abs(x)));
    const double scale = dtype == DType::F32 ? maxabs * std::sqrt(std::max(1.0, c.reduction)) : maxabs;
    std::size_t bad = 0, worst = 0;
    double worst_excess = -1;
    for (std::size_t i = 0; i < e.size(); ++i) {
      const double x = e[i], y = a[i];
      bool ok;
      double excess = 0;
      if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y)) {
        ok = (std::isnan(x) && std::isnan(y)) || x == y;
        excess = ok ? 0 : 1e30;
      } else {
        const double allowed = tol.atol * scale + tol.rtol * std::abs(x);
        excess = std::abs(x - y) / allowed;
        ok = excess <= 1.0;
      }
      if (!ok) ++bad;
      if (excess > worst_excess) worst_excess = excess, worst = i;
    }
    if (bad > 0) {
      res.ok = false;
      os << "  " << name << ": " << bad << " of " << e.size() << " elements differ; worst [" << worst << "] expected " << e[worst]
         << " got " << a[worst] << " (" << worst_excess << "x the tolerance rtol " << tol.rtol << " atol " << tol.atol << " * "
         << scale << ")\n";
    }
  }
  res.report = os.str();
  return res;
}

// ---------------------------------------------------------------------------- the catalogue
// One file per op family (op_cases_*.cpp, sharing op_cases_catalogue.hpp).

std::vector<OpCase> all_op_cases() {
  using namespace catalogue;  // NOLINT(google-build-using-namespace): the family functions
  std::vector<OpCase> cases;
  add_linear(cases);
  add_matmul(cases);
  add_attention(cases);
  add_norms(cases);
  add_elementwise(cases);
  add_embedding_heads(cases);
  add_loss_optim(cases);
  add_rope(cases);
  add_slice(cases);
  add_rowwise(cases);
  add_index(cases);
  return cases;
}

const std::vector<OpCase>& shared_op_cases() {
  static const std::vector<OpCase> all = all_op_cases();
  return all;
}

std::vector<int> gradcheck_case_indices() {
  std::vector<int> out;
  for (std::size_t i = 0; i < shared_op_cases().size(); ++i)
    if (shared_op_cases()[i].backward && shared_op_cases()[i].finite_differences) out.push_back(static_cast<int>(i));
  return out;
}

}  // namespace ablate::testing
