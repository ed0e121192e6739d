// The backend op-case catalogue and runner (op_cases.hpp). Cases are small so the whole suite
// runs in seconds, yet cover odd sizes (1, 3, 7, 33, 65), every mask kind, dropout on and off,
// ignore_index and label smoothing, and BF16 values with F32 parameter gradients.
#include "backends/op_cases.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ablate/bf16.hpp"
#include "ablate/error.hpp"

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
    std::vector<std::uint16_t> b(n);
    for (std::size_t i = 0; i < n; ++i) b[i] = float_to_bf16(v[i]);
    be.copy_from_host(t, b.data());
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

HostMap case_grad_prefill(const OpCase& c, DType dtype) {
  Rng rng{seed_of(c.id() + "/prefill")};
  HostMap m;
  for (const std::string& name : c.grad_inputs) {
    TensorSpec s = find_spec(c.inputs, name, c);
    s.fixed.clear();
    s.lo = -0.5, s.hi = 0.5, s.min_abs = 0;
    m["d" + name] = generate(s, rng, grad_dtype_of(s.role, dtype));
  }
  return m;
}

HostMap case_upstream(const OpCase& c, DType dtype) {
  Rng rng{seed_of(c.id() + "/upstream")};
  HostMap m;
  for (const std::string& name : c.grad_outputs) {
    TensorSpec s = find_spec(c.outputs, name, c);
    s.lo = -1, s.hi = 1, s.min_abs = 0;
    m["d" + name] = generate(s, rng, dtype_of(s.role, dtype));
  }
  return m;
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

namespace {

TensorSpec spec(std::string name, Shape shape, Role role) {
  TensorSpec s;
  s.name = std::move(name);
  s.shape = shape;
  s.role = role;
  return s;
}

std::string num(std::int64_t v) { return std::to_string(v); }
// Concatenation through a stream (GCC 12 warns falsely, -Wrestrict, on long "a" + s chains at -O3).
template <class... A>
std::string cat(const A&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}
std::string dims(const Shape& s) {  // "3x7": shapes in case names (gtest allows [A-Za-z0-9_])
  std::string out;
  for (int i = 0; i < s.rank(); ++i) {
    if (i > 0) out += 'x';
    out += num(s[i]);
  }
  return out;
}

TensorSpec value(std::string name, Shape shape, double lo = -1, double hi = 1) {
  TensorSpec s = spec(std::move(name), shape, Role::Value);
  s.lo = lo, s.hi = hi;
  return s;
}
TensorSpec param(std::string name, Shape shape, double lo = -1, double hi = 1) {
  TensorSpec s = spec(std::move(name), shape, Role::Param);
  s.lo = lo, s.hi = hi;
  return s;
}
TensorSpec f32(std::string name, Shape shape, double lo = -1, double hi = 1) {
  TensorSpec s = spec(std::move(name), shape, Role::F32);
  s.lo = lo, s.hi = hi;
  return s;
}
TensorSpec fixed_i32(std::string name, Shape shape, std::vector<double> v) {
  TensorSpec s = spec(std::move(name), shape, Role::I32);
  s.fixed = std::move(v);
  return s;
}

const char* act_tag(Activation a) { return activation_name(a); }

// ---- linear: y[N, O] = act(x[N, I] w[O, I]^T + b[O])
void add_linear(std::vector<OpCase>& out) {
  struct L {
    Shape x;
    std::int64_t O;
    Activation act;
    bool bias, pre, dx;
    bool dw = true;  // false: only dx (and db) requested
  };
  const Activation acts[] = {Activation::None, Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU};
  std::vector<L> ls;
  for (const Activation a : acts) ls.push_back({Shape{3, 7}, 5, a, true, true, true});
  ls.push_back({Shape{1, 1}, 1, Activation::None, true, false, true});
  ls.push_back({Shape{2, 3, 33}, 4, Activation::None, false, false, true});
  ls.push_back({Shape{2, 3, 33}, 4, Activation::GeluErf, false, true, true});
  ls.push_back({Shape{65, 16}, 9, Activation::ReLU, true, false, true});
  ls.push_back({Shape{7, 5}, 3, Activation::SiLU, true, true, false});             // null dx: skipped
  ls.push_back({Shape{7, 5}, 3, Activation::GeluTanh, true, true, true, false});   // null dw: skipped
  ls.push_back({Shape{3, 100, 130}, 129, Activation::GeluErf, true, true, true});  // above the threading grain
  // Shapes whose dw (and dx) GEMMs run on operands copied to padded rows in backend/onednn
  // (aliasing_shape: 4 KiB rows against a short side).
  ls.push_back({Shape{2, 12, 256}, 1024, Activation::None, true, false, true});
  ls.push_back({Shape{24, 1024}, 256, Activation::None, true, false, true});
  for (const L& l : ls) {
    OpCase c;
    c.op = "linear";
    const std::int64_t N = l.x.rows(), I = l.x.last();
    c.name = "x" + dims(l.x) + "_O" + num(l.O) + "_" + act_tag(l.act) + (l.bias ? "" : "_nobias") + (l.pre ? "" : "_nopre") +
             (l.dx ? "" : "_nodx") + (l.dw ? "" : "_nodw");
    c.reduction = static_cast<double>(std::max(I, std::max(N, l.O)));
    c.inputs = {value("x", l.x), param("w", Shape{l.O, I})};
    if (l.act == Activation::ReLU) c.inputs[0].min_abs = 0.05;
    if (l.bias) c.inputs.push_back(param("b", Shape{l.O}));
    Shape ys = l.x.rank() == 3 ? Shape{l.x[0], l.x[1], l.O} : Shape{N, l.O};
    c.outputs = {value("y", ys)};
    if (l.pre) c.outputs.push_back(value("pre", ys));
    if (l.dw) c.grad_inputs.push_back("w");
    if (l.dx) c.grad_inputs.push_back("x");
    if (l.bias) c.grad_inputs.push_back("b");
    c.grad_outputs = {"y"};
    const Activation act = l.act;
    c.forward = [act](OpRun& r) { r.backend.linear_forward(r["y"], r.opt("pre"), r["x"], r["w"], r.opt("b"), act); };
    c.backward = [act](OpRun& r) {
      r.backend.linear_backward(r.opt("dx"), r.opt("dw"), r.opt("db"), r["dy"], r["x"], r["w"], r.opt("pre"), r["y"], act);
    };
    out.push_back(std::move(c));
  }
}

// ---- matmul: c[Bt, M, N] = alpha op(a) op(b)
void add_matmul(std::vector<OpCase>& out) {
  struct M {
    std::int64_t Bt, M, K, N;
    bool ta, tb;
    float alpha;
    bool rank4;
  };
  std::vector<M> ms = {{1, 1, 1, 1, false, false, 1.0f, false},  {2, 3, 7, 5, false, false, 1.0f, false},
                       {2, 3, 7, 5, true, false, 0.5f, false},   {2, 3, 7, 5, false, true, 1.0f, false},
                       {2, 3, 7, 5, true, true, -2.0f, false},   {4, 7, 33, 3, false, true, 0.25f, true},
                       {1, 9, 4, 65, false, false, 1.0f, false}, {4, 64, 48, 70, true, true, 1.0f, false}};
  for (const M& m : ms) {
    OpCase c;
    c.op = "matmul";
    c.name = cat("B", m.Bt, "_M", m.M, "_K", m.K, "_N", m.N, m.ta ? "_ta" : "", m.tb ? "_tb" : "", m.rank4 ? "_rank4" : "");
    c.reduction = static_cast<double>(std::max({m.M, m.K, m.N}));
    auto shape = [&](std::int64_t r, std::int64_t cc) { return m.rank4 ? Shape{2, m.Bt / 2, r, cc} : Shape{m.Bt, r, cc}; };
    c.inputs = {value("a", m.ta ? shape(m.K, m.M) : shape(m.M, m.K)), value("b", m.tb ? shape(m.N, m.K) : shape(m.K, m.N))};
    c.outputs = {value("c", shape(m.M, m.N))};
    c.grad_inputs = {"a", "b"};
    c.grad_outputs = {"c"};
    const bool ta = m.ta, tb = m.tb;
    const float alpha = m.alpha;
    c.forward = [=](OpRun& r) { r.backend.matmul_forward(r["c"], r["a"], r["b"], ta, tb, alpha); };
    c.backward = [=](OpRun& r) { r.backend.matmul_backward(r.opt("da"), r.opt("db"), r["dc"], r["a"], r["b"], ta, tb, alpha); };
    out.push_back(std::move(c));
  }
}

// ---- attention: q[B, H, T, Dh], k/v[B, Hkv, S, Dh] -> out[B, H, T, Dh], lse[B, H, T], probs[B, H, T, S]
void add_attention(std::vector<OpCase>& out) {
  struct A {
    std::string tag;
    std::int64_t B, H, T, S, Dh;
    bool causal;
    std::vector<double> lengths;  // empty: no key padding
    std::int64_t offset;
    float dropout;
    bool probs;
  };
  std::vector<A> as = {
      {"none", 2, 2, 5, 7, 4, false, {}, 0, 0.0f, true},
      {"tiny", 1, 1, 1, 1, 1, false, {}, 0, 0.0f, true},
      {"causal", 2, 2, 7, 7, 4, true, {}, 0, 0.0f, true},
      {"causal_offset", 1, 2, 3, 7, 4, true, {}, 4, 0.0f, true},
      {"padding", 3, 2, 5, 7, 4, false, {7, 3, 0}, 0, 0.0f, true},
      {"causal_padding", 3, 1, 7, 7, 3, true, {7, 4, 0}, 0, 0.0f, true},
      {"causal_offset_padding", 2, 2, 3, 9, 4, true, {9, 5}, 6, 0.0f, true},
      {"causal_more_queries", 1, 2, 9, 5, 4, true, {}, 0, 0.0f, true},
      {"dropout", 2, 2, 5, 7, 4, false, {}, 0, 0.2f, true},
      {"causal_padding_dropout", 3, 2, 7, 7, 4, true, {5, 7, 0}, 0, 0.3f, false},
      {"long", 1, 3, 33, 65, 5, false, {}, 0, 0.0f, false},
      {"long_padding_dropout", 2, 1, 33, 65, 5, false, {65, 17}, 0, 0.1f, true},
      {"large_causal_offset_padding_dropout", 2, 4, 64, 72, 8, true, {72, 40}, 8, 0.1f, true},  // above the grain
      // Shapes a GPU backend runs as one fused kernel (cudnn: bf16, Dh a multiple of 8, no probs, no
      // offset; tests/plugins/backend_cudnn checks that it did): masks, dropout, an item without keys.
      {"sdpa_causal_dropout", 2, 4, 128, 128, 64, true, {}, 0, 0.1f, false},
      {"sdpa_padding_dropout", 2, 2, 96, 160, 64, false, {160, 77}, 0, 0.2f, false},
      {"sdpa_causal_padding_Dh128", 3, 2, 64, 64, 128, true, {64, 0, 33}, 0, 0.0f, false},
  };
  for (const A& a : as) {
    OpCase c;
    c.op = "attention";
    c.name = a.tag + "_B" + num(a.B) + "_H" + num(a.H) + "_T" + num(a.T) + "_S" + num(a.S) + "_Dh" + num(a.Dh);
    c.reduction = static_cast<double>(std::max(a.S, a.Dh));
    c.finite_differences = a.B * a.H * a.T * a.Dh <= 4096;  // the sdpa_ shapes: parity only
    c.inputs = {value("q", Shape{a.B, a.H, a.T, a.Dh}, -1.5, 1.5), value("k", Shape{a.B, a.H, a.S, a.Dh}, -1.5, 1.5),
                value("v", Shape{a.B, a.H, a.S, a.Dh})};
    if (!a.lengths.empty()) c.inputs.push_back(fixed_i32("key_lengths", Shape{a.B}, a.lengths));
    c.outputs = {value("out", Shape{a.B, a.H, a.T, a.Dh}), f32("lse", Shape{a.B, a.H, a.T})};
    if (a.probs) c.outputs.push_back(f32("probs", Shape{a.B, a.H, a.T, a.S}));
    c.grad_inputs = {"q", "k", "v"};
    c.grad_outputs = {"out"};
    AttentionParams base;
    base.causal = a.causal;
    base.query_offset = a.offset;
    base.scale = 1.0f / std::sqrt(static_cast<float>(a.Dh));
    base.dropout = a.dropout;
    base.rng = RngKey{12345, 7, 3};
    c.forward = [base](OpRun& r) {
      AttentionParams p = base;
      p.key_lengths = r.opt("key_lengths");
      r.backend.attention_forward(r["out"], r["lse"], r.opt("probs"), r["q"], r["k"], r["v"], p);
    };
    c.backward = [base](OpRun& r) {
      AttentionParams p = base;
      p.key_lengths = r.opt("key_lengths");
      r.backend.attention_backward(r.opt("dq"), r.opt("dk"), r.opt("dv"), r["dout"], r["out"], r["lse"], r["q"], r["k"], r["v"],
                                   p);
    };
    out.push_back(std::move(c));
  }

  // Grouped k/v heads (k/v [B, Hkv, S, Dh]), a logit bias [1 or H, T, S] with its gradient, and
  // ALiBi slopes [H], alone and with the masks, offset and dropout.
  struct X {
    std::string tag;
    std::int64_t B, H, Hkv, T, S, Dh;
    bool causal;
    std::vector<double> lengths;  // empty: no key padding
    std::int64_t offset;
    std::int64_t bias_heads;  // 0: no bias
    bool slopes;
    float dropout;
    float softcap = 0.0f;  // 0: none
  };
  const std::vector<X> xs = {
      {"gqa", 2, 4, 2, 5, 7, 4, false, {}, 0, 0, false, 0.0f},
      {"mqa_causal_padding", 2, 3, 1, 6, 6, 4, true, {6, 3}, 0, 0, false, 0.0f},
      {"bias_shared", 2, 2, 2, 5, 7, 4, false, {}, 0, 1, false, 0.0f},
      {"bias_per_head_causal_padding", 2, 2, 2, 6, 6, 3, true, {6, 4}, 0, 2, false, 0.0f},
      {"alibi_causal_offset", 1, 4, 4, 3, 7, 4, true, {}, 4, 0, true, 0.0f},
      {"alibi_bidirectional_padding", 2, 2, 2, 5, 7, 4, false, {7, 3}, 0, 0, true, 0.0f},
      {"gqa_bias_alibi_dropout", 2, 4, 2, 7, 7, 4, true, {7, 5}, 0, 4, true, 0.2f},
      {"large_gqa_bias_alibi", 2, 8, 2, 40, 48, 8, true, {48, 30}, 8, 1, true, 0.0f},  // above the grain
      {"softcap", 2, 2, 2, 5, 7, 4, false, {7, 4}, 0, 0, false, 0.0f, 0.8f},  // q·k up to ~4.5 scaled: well into tanh's bend
      {"softcap_gqa_bias_alibi_causal_dropout", 2, 4, 2, 6, 6, 4, true, {6, 5}, 0, 4, true, 0.2f, 1.5f},
  };
  for (const X& a : xs) {
    OpCase c;
    c.op = "attention";
    c.name = a.tag + "_B" + num(a.B) + "_H" + num(a.H) + "_Hkv" + num(a.Hkv) + "_T" + num(a.T) + "_S" + num(a.S);
    if (a.Hkv != a.H) c.needs.push_back(OptionalOp::grouped_attention);
    if (a.bias_heads > 0 || a.slopes) c.needs.push_back(OptionalOp::attention_bias);
    if (a.softcap > 0.0f) c.needs.push_back(OptionalOp::attention_softcap);
    c.reduction = static_cast<double>(std::max(a.S, a.Dh));
    c.finite_differences = a.B * a.H * a.T * a.Dh <= 4096;  // the sdpa_ shapes: parity only
    c.inputs = {value("q", Shape{a.B, a.H, a.T, a.Dh}, -1.5, 1.5), value("k", Shape{a.B, a.Hkv, a.S, a.Dh}, -1.5, 1.5),
                value("v", Shape{a.B, a.Hkv, a.S, a.Dh})};
    c.grad_inputs = {"q", "k", "v"};
    if (!a.lengths.empty()) c.inputs.push_back(fixed_i32("key_lengths", Shape{a.B}, a.lengths));
    if (a.bias_heads > 0) {
      c.inputs.push_back(f32("bias", Shape{a.bias_heads, a.T, a.S}, -1.0, 1.0));
      c.grad_inputs.push_back("bias");
    }
    if (a.slopes) c.inputs.push_back(f32("slopes", Shape{a.H}, 0.05, 0.6));
    c.outputs = {value("out", Shape{a.B, a.H, a.T, a.Dh}), f32("lse", Shape{a.B, a.H, a.T}),
                 f32("probs", Shape{a.B, a.H, a.T, a.S})};
    c.grad_outputs = {"out"};
    AttentionParams base;
    base.causal = a.causal;
    base.query_offset = a.offset;
    base.scale = 1.0f / std::sqrt(static_cast<float>(a.Dh));
    base.dropout = a.dropout;
    base.softcap = a.softcap;
    base.rng = RngKey{12345, 7, 3};
    const auto params = [base](OpRun& r) {
      AttentionParams p = base;
      p.key_lengths = r.opt("key_lengths");
      p.bias = r.opt("bias");
      p.slopes = r.opt("slopes");
      return p;
    };
    c.forward = [params](OpRun& r) {
      const AttentionParams p = params(r);
      r.backend.attention_forward(r["out"], r["lse"], r.opt("probs"), r["q"], r["k"], r["v"], p);
    };
    c.backward = [params](OpRun& r) {
      AttentionParams p = params(r);
      p.dbias = r.opt("dbias");
      r.backend.attention_backward(r.opt("dq"), r.opt("dk"), r.opt("dv"), r["dout"], r["out"], r["lse"], r["q"], r["k"], r["v"],
                                   p);
    };
    out.push_back(std::move(c));
  }
}

// ---- layer norm / RMS norm over the last dim: x[N, D]
// (D 256, 384, 1024: rows a backend may take in 16-byte packs, e.g. cudnn's warp-per-row kernels)
void add_norms(std::vector<OpCase>& out) {
  const std::vector<Shape> shapes = {Shape{1, 1},     Shape{3, 7},    Shape{7, 33},  Shape{2, 3, 65},
                                     Shape{300, 130}, Shape{40, 256}, Shape{5, 384}, Shape{17, 1024}};
  for (const Shape& s : shapes) {
    const std::int64_t D = s.last();
    {
      OpCase c;
      c.op = "layer_norm";
      c.name = "x" + dims(s);
      c.reduction = static_cast<double>(D);
      c.inputs = {value("x", s, -2, 2), param("gamma", Shape{D}, 0.5, 1.5), param("beta", Shape{D})};
      c.outputs = {value("y", s), f32("mean", Shape{s.rows()}), f32("rstd", Shape{s.rows()})};
      c.grad_inputs = {"x", "gamma", "beta"};
      c.grad_outputs = {"y"};
      c.forward = [](OpRun& r) {
        r.backend.layer_norm_forward(r["y"], r["mean"], r["rstd"], r["x"], r["gamma"], r["beta"], 1e-5f);
      };
      c.backward = [](OpRun& r) {
        r.backend.layer_norm_backward(r.opt("dx"), r.opt("dgamma"), r.opt("dbeta"), r["dy"], r["x"], r["mean"], r["rstd"],
                                      r["gamma"]);
      };
      out.push_back(std::move(c));
    }
    {
      OpCase c;
      c.op = "rms_norm";
      c.name = "x" + dims(s);
      c.reduction = static_cast<double>(D);
      c.inputs = {value("x", s, -2, 2), param("gamma", Shape{D}, 0.5, 1.5)};
      c.inputs[0].min_abs = 0.25;  // D = 1: y = x rstd is steep within sqrt(eps) of 0
      c.outputs = {value("y", s), f32("rstd", Shape{s.rows()})};
      c.grad_inputs = {"x", "gamma"};
      c.grad_outputs = {"y"};
      c.forward = [](OpRun& r) { r.backend.rms_norm_forward(r["y"], r["rstd"], r["x"], r["gamma"], 1e-5f); };
      c.backward = [](OpRun& r) {
        r.backend.rms_norm_backward(r.opt("dx"), r.opt("dgamma"), r["dy"], r["x"], r["rstd"], r["gamma"]);
      };
      out.push_back(std::move(c));
    }
  }
}

// ---- elementwise: activation, add, mul, axpy, dropout (any shape)
void add_elementwise(std::vector<OpCase>& out) {
  const Activation acts[] = {Activation::None, Activation::ReLU, Activation::GeluErf, Activation::GeluTanh, Activation::SiLU};
  // The last shape is above backend_onednn's 32K-element threading grain (multi-thread path).
  const std::vector<Shape> shapes = {Shape{1}, Shape{3, 33}, Shape{2, 3, 65}, Shape{4, 100, 90}};
  for (const Activation a : acts)
    for (const Shape& s : shapes) {
      OpCase c;
      c.op = "activation";
      c.name = std::string(act_tag(a)) + "_x" + dims(s);
      c.inputs = {value("x", s, -3, 3)};
      if (a == Activation::ReLU) c.inputs[0].min_abs = 0.05;
      c.outputs = {value("y", s)};
      c.grad_inputs = {"x"};
      c.grad_outputs = {"y"};
      c.forward = [a](OpRun& r) { r.backend.activation_forward(r["y"], r["x"], a); };
      c.backward = [a](OpRun& r) { r.backend.activation_backward(r["dx"], r["dy"], r["x"], a); };
      out.push_back(std::move(c));
    }
  struct Ad {
    Shape a, b;
    float alpha, beta;
  };
  const std::vector<Ad> adds = {{Shape{7}, Shape{7}, 1.0f, 1.0f},
                                {Shape{2, 3, 5}, Shape{2, 3, 5}, 0.5f, -2.0f},
                                {Shape{3, 7, 33}, Shape{7, 33}, 1.0f, 1.0f},
                                {Shape{5, 65}, Shape{65}, 2.0f, 0.25f},
                                {Shape{4, 100, 90}, Shape{100, 90}, 1.0f, -1.0f},
                                {Shape{2, 3, 5}, Shape{1}, 1.0f, 0.5f}};  // a scalar
  for (const Ad& d : adds) {
    OpCase c;
    c.op = "add";
    c.name = "a" + dims(d.a) + "_b" + dims(d.b) + (d.alpha != 1.0f || d.beta != 1.0f ? "_scaled" : "");
    c.reduction = static_cast<double>(d.a.numel() / d.b.numel());
    c.inputs = {value("a", d.a), param("b", d.b)};
    c.outputs = {value("y", d.a)};
    c.grad_inputs = {"a", "b"};
    c.grad_outputs = {"y"};
    const float alpha = d.alpha, beta = d.beta;
    c.forward = [=](OpRun& r) { r.backend.add_forward(r["y"], r["a"], r["b"], alpha, beta); };
    c.backward = [=](OpRun& r) { r.backend.add_backward(r.opt("da"), r.opt("db"), r["dy"], alpha, beta); };
    out.push_back(std::move(c));
  }
  // b of a's shape, then gates repeated over a's leading elements: per channel [D], a [T, D]
  // table, a scalar [1]; the last is above the threading grain.
  std::vector<std::pair<Shape, Shape>> muls;
  for (const Shape& s : shapes) muls.emplace_back(s, s);
  muls.insert(muls.end(), {{Shape{3, 7, 33}, Shape{33}},
                           {Shape{3, 7, 33}, Shape{7, 33}},
                           {Shape{2, 3, 5}, Shape{1}},
                           {Shape{4, 100, 90}, Shape{90}}});
  for (const auto& [as, bs] : muls) {
    OpCase c;
    c.op = "mul";
    c.name = as == bs ? "x" + dims(as) : "a" + dims(as) + "_b" + dims(bs);
    c.reduction = static_cast<double>(as.numel() / bs.numel());
    c.inputs = {value("a", as), value("b", bs)};
    c.outputs = {value("y", as)};
    c.grad_inputs = {"a", "b"};
    c.grad_outputs = {"y"};
    c.forward = [](OpRun& r) { r.backend.mul_forward(r["y"], r["a"], r["b"]); };
    c.backward = [](OpRun& r) { r.backend.mul_backward(r.opt("da"), r.opt("db"), r["dy"], r["a"], r["b"]); };
    out.push_back(std::move(c));
  }
  for (const Shape& s : shapes) {  // y (F32) += alpha * x (run dtype): gradient accumulation
    OpCase c;
    c.op = "axpy";
    c.name = "x" + dims(s);
    c.inputs = {f32("y", s), value("x", s)};
    c.inplace = {"y"};
    c.forward = [](OpRun& r) { r.backend.axpy(r["y"], r["x"], -0.75f); };
    out.push_back(std::move(c));
  }
  for (const float p : {0.0f, 0.1f, 0.5f})
    for (const Shape& s : shapes) {
      OpCase c;
      c.op = "dropout";
      c.name = cat("p", static_cast<int>(p * 100), "_x", dims(s));
      c.inputs = {value("x", s)};
      c.outputs = {value("y", s)};
      c.grad_inputs = {"x"};
      c.grad_outputs = {"y"};
      const RngKey key{99, 5, 17};
      c.forward = [=](OpRun& r) { r.backend.dropout_forward(r["y"], r["x"], p, key); };
      c.backward = [=](OpRun& r) { r.backend.dropout_backward(r["dx"], r["dy"], p, key); };
      out.push_back(std::move(c));
    }
}

// ---- embedding, head split/merge, KV-cache time-slice write
void add_embedding_heads(std::vector<OpCase>& out) {
  struct E {
    Shape ids;
    std::int64_t V, D;
  };
  for (const E& e : std::vector<E>{{Shape{7}, 5, 3}, {Shape{2, 9}, 33, 8}, {Shape{1}, 1, 65}, {Shape{3, 100}, 50, 130}}) {
    OpCase c;
    c.op = "embedding";
    c.name = "ids" + dims(e.ids) + "_V" + num(e.V) + "_D" + num(e.D);
    std::vector<double> ids;
    for (std::int64_t n = 0; n < e.ids.numel(); ++n) ids.push_back(static_cast<double>((n * 7 + 3) % e.V));  // repeats
    c.inputs = {fixed_i32("ids", e.ids, ids), param("table", Shape{e.V, e.D})};
    const Shape ys = e.ids.rank() == 2 ? Shape{e.ids[0], e.ids[1], e.D} : Shape{e.ids[0], e.D};
    c.outputs = {value("y", ys)};
    c.grad_inputs = {"table"};
    c.grad_outputs = {"y"};
    c.reduction = static_cast<double>(e.ids.numel());
    c.forward = [](OpRun& r) { r.backend.embedding_forward(r["y"], r["ids"], r["table"]); };
    c.backward = [](OpRun& r) { r.backend.embedding_backward(r["dtable"], r["dy"], r["ids"]); };
    out.push_back(std::move(c));
  }
  struct Hd {
    std::int64_t B, T, H, Dh;
    int parts, part;
  };
  for (const Hd& h :
       std::vector<Hd>{{2, 3, 2, 4, 1, 0}, {2, 7, 3, 5, 3, 0}, {1, 5, 2, 3, 3, 1}, {3, 1, 1, 7, 3, 2}, {4, 64, 4, 32, 3, 2}}) {
    OpCase c;
    c.op = "split_heads";
    c.name = "B" + num(h.B) + "_T" + num(h.T) + "_H" + num(h.H) + "_Dh" + num(h.Dh) + "_part" + num(h.part) + "of" + num(h.parts);
    c.inputs = {value("x", Shape{h.B, h.T, h.parts * h.H * h.Dh})};
    c.outputs = {value("y", Shape{h.B, h.H, h.T, h.Dh})};
    c.grad_inputs = {"x"};
    c.grad_outputs = {"y"};
    const int parts = h.parts, part = h.part;
    c.forward = [=](OpRun& r) { r.backend.split_heads_forward(r["y"], r["x"], parts, part); };
    c.backward = [=](OpRun& r) { r.backend.split_heads_backward(r["dx"], r["dy"], parts, part); };
    out.push_back(std::move(c));
  }
  for (const Hd& h : std::vector<Hd>{{2, 3, 2, 4, 1, 0}, {1, 7, 3, 5, 1, 0}, {3, 1, 1, 7, 1, 0}, {4, 64, 4, 32, 1, 0}}) {
    OpCase c;
    c.op = "merge_heads";
    c.name = "B" + num(h.B) + "_T" + num(h.T) + "_H" + num(h.H) + "_Dh" + num(h.Dh);
    c.inputs = {value("x", Shape{h.B, h.H, h.T, h.Dh})};
    c.outputs = {value("y", Shape{h.B, h.T, h.H * h.Dh})};
    c.grad_inputs = {"x"};
    c.grad_outputs = {"y"};
    c.forward = [](OpRun& r) { r.backend.merge_heads_forward(r["y"], r["x"]); };
    c.backward = [](OpRun& r) { r.backend.merge_heads_backward(r["dx"], r["dy"]); };
    out.push_back(std::move(c));
  }
  // KV-cache write (forward only): rows offset .. offset+T-1 of cache[B, H, S, Dh] = kv[B, H, T, Dh].
  // The cache is an in-place input with random contents, so parity covers the untouched rows too.
  struct W {
    std::int64_t B, H, S, T, Dh, offset;
  };
  for (const W& w : std::vector<W>{{2, 3, 7, 1, 4, 0},        // first decoding step
                                   {2, 3, 7, 1, 4, 3},        // a middle step
                                   {2, 3, 7, 1, 4, 6},        // the last row of the cache
                                   {1, 2, 9, 3, 5, 4},        // T > 1 in the middle
                                   {3, 1, 5, 2, 7, 3},        // T > 1 ending exactly at S
                                   {1, 2, 4, 4, 3, 0},        // T = S: the whole cache
                                   {4, 4, 72, 64, 32, 8}}) {  // at backend_onednn's threading grain, ending at S
    OpCase c;
    c.op = "write_time_slice";
    c.name = "B" + num(w.B) + "_H" + num(w.H) + "_S" + num(w.S) + "_T" + num(w.T) + "_Dh" + num(w.Dh) + "_offset" + num(w.offset);
    c.inputs = {value("cache", Shape{w.B, w.H, w.S, w.Dh}), value("kv", Shape{w.B, w.H, w.T, w.Dh})};
    c.inplace = {"cache"};
    const std::int64_t offset = w.offset;
    c.forward = [offset](OpRun& r) { r.backend.write_time_slice(r["cache"], r["kv"], offset); };
    out.push_back(std::move(c));
  }
}

// ---- cross entropy (fused: its "backward" scales the forward's dlogits by the upstream
// gradient of the loss into the logits' gradient), sum of squares, Adam, cast, memory ops
// ---- rope: x[B, H, T, Dh] turned by position (an optional op: backends that lack it skip)
void add_rope(std::vector<OpCase>& out) {
  struct Rp {
    std::string name;
    Shape x;
    int rotary;
    float base;
    std::vector<double> positions;  // [T]
  };
  auto from = [](std::int64_t first, std::int64_t T) {
    std::vector<double> p;
    for (std::int64_t t = 0; t < T; ++t) p.push_back(static_cast<double>(first + t));
    return p;
  };
  const std::vector<Rp> ropes = {
      {"full", Shape{2, 3, 5, 8}, 8, 10000.0f, from(0, 5)},
      {"partial_offset", Shape{1, 2, 7, 6}, 4, 10000.0f, from(3, 7)},   // half-rotary dims copied; decoding offset
      {"far_positions", Shape{2, 2, 3, 4}, 4, 500.0f, {100, 2047, 5}},  // large angles
      {"above_grain", Shape{4, 4, 64, 64}, 32, 10000.0f, from(0, 64)},  // onednn's threaded path
  };
  for (const Rp& p : ropes) {
    OpCase c;
    c.op = "rope";
    c.name = p.name + "_x" + dims(p.x) + "_r" + std::to_string(p.rotary);
    c.needs = {OptionalOp::rope};
    c.inputs = {value("x", p.x), fixed_i32("positions", Shape{p.x[2]}, p.positions)};
    c.outputs = {value("y", p.x)};
    c.grad_inputs = {"x"};
    c.grad_outputs = {"y"};
    const int rotary = p.rotary;
    const float base = p.base;
    c.forward = [=](OpRun& r) { r.backend.rope_forward(r["y"], r["x"], r["positions"], rotary, base); };
    c.backward = [=](OpRun& r) { r.backend.rope_backward(r["dx"], r["dy"], r["positions"], rotary, base); };
    out.push_back(std::move(c));
  }
}

// ---- slice_last: y[N, W] = x[N, offset : offset + W] (an optional op)
void add_slice(std::vector<OpCase>& out) {
  struct Sl {
    Shape x;
    std::int64_t offset, width;
  };
  const std::vector<Sl> slices = {{Shape{5}, 0, 5},              // the whole
                                  {Shape{3, 7}, 2, 3},           // the middle
                                  {Shape{2, 3, 65}, 33, 32},     // the end
                                  {Shape{4, 100, 96}, 32, 64}};  // above onednn's threading grain
  for (const Sl& s : slices) {
    OpCase c;
    c.op = "slice_last";
    c.name = "x" + dims(s.x) + "_at" + std::to_string(s.offset) + "_w" + std::to_string(s.width);
    c.needs = {OptionalOp::slice_last};
    c.inputs = {value("x", s.x)};
    c.outputs = {value("y", s.x.with_last(s.width))};
    c.grad_inputs = {"x"};
    c.grad_outputs = {"y"};
    const std::int64_t offset = s.offset;
    c.forward = [=](OpRun& r) { r.backend.slice_last_forward(r["y"], r["x"], offset); };
    c.backward = [=](OpRun& r) { r.backend.slice_last_backward(r["dx"], r["dy"], offset); };
    out.push_back(std::move(c));
  }
}

// ---- the small general set: softmax and sum over the last dim, exp and sigmoid (optional ops)
void add_rowwise(std::vector<OpCase>& out) {
  const std::vector<Shape> shapes = {Shape{1}, Shape{3, 7}, Shape{2, 3, 65}, Shape{4, 100, 96}};  // the last above the grain
  for (const Shape& s : shapes) {
    {
      OpCase c;
      c.op = "softmax_last";
      c.name = "x" + dims(s);
      c.needs = {OptionalOp::softmax_last};
      c.reduction = static_cast<double>(s.last());
      c.inputs = {value("x", s, -3, 3)};
      c.outputs = {value("y", s)};
      c.grad_inputs = {"x"};
      c.grad_outputs = {"y"};
      c.forward = [](OpRun& r) { r.backend.softmax_last_forward(r["y"], r["x"]); };
      c.backward = [](OpRun& r) { r.backend.softmax_last_backward(r["dx"], r["dy"], r["y"]); };
      out.push_back(std::move(c));
    }
    {
      OpCase c;
      c.op = "sum_last";
      c.name = "x" + dims(s);
      c.needs = {OptionalOp::sum_last};
      c.reduction = static_cast<double>(s.last());
      c.inputs = {value("x", s)};
      c.outputs = {value("y", s.with_last(1))};
      c.grad_inputs = {"x"};
      c.grad_outputs = {"y"};
      c.forward = [](OpRun& r) { r.backend.sum_last_forward(r["y"], r["x"]); };
      c.backward = [](OpRun& r) { r.backend.sum_last_backward(r["dx"], r["dy"]); };
      out.push_back(std::move(c));
    }
    for (const Pointwise f : {Pointwise::exp, Pointwise::sigmoid}) {
      OpCase c;
      c.op = pointwise_name(f);
      c.name = "x" + dims(s);
      c.needs = {OptionalOp::pointwise};
      c.inputs = {value("x", s, -2, 2)};
      c.outputs = {value("y", s)};
      c.grad_inputs = {"x"};
      c.grad_outputs = {"y"};
      c.forward = [f](OpRun& r) { r.backend.pointwise_forward(r["y"], r["x"], f); };
      c.backward = [f](OpRun& r) { r.backend.pointwise_backward(r["dx"], r["dy"], r["y"], f); };
      out.push_back(std::move(c));
    }
  }
}

void add_loss_optim(std::vector<OpCase>& out) {
  struct X {
    std::int64_t N, V;
    float ls;
    std::vector<double> targets;
  };
  const std::vector<X> xs = {{1, 1, 0.0f, {0}},
                             {7, 3, 0.0f, {0, 1, 2, -100, 1, 1, 0}},
                             {7, 3, 0.1f, {0, 1, 2, -100, 1, 1, 0}},
                             {5, 33, 0.2f, {32, -100, 0, 17, 5}},
                             {3, 65, 0.0f, {-100, -100, -100}},  // every row ignored
                             {4, 65, 0.1f, {64, 3, 3, 40}},
                             {400, 100, 0.1f, {}}};  // above the grain; targets generated below
  for (const X& x : xs) {
    OpCase c;
    c.op = "cross_entropy";
    c.name = "N" + num(x.N) + "_V" + num(x.V) + "_ls" + num(static_cast<std::int64_t>(x.ls * 100));
    c.reduction = static_cast<double>(x.V);
    std::vector<double> targets = x.targets;
    for (std::int64_t n = static_cast<std::int64_t>(targets.size()); n < x.N; ++n)  // every 9th row ignored
      targets.push_back(n % 9 == 4 ? -100.0 : static_cast<double>((n * 13) % x.V));
    c.inputs = {value("logits", Shape{x.N, x.V}, -3, 3), fixed_i32("targets", Shape{x.N}, targets)};
    c.outputs = {f32("loss", Shape{1}), value("grad_logits", Shape{x.N, x.V}), f32("stats", Shape{2})};
    c.grad_inputs = {"logits"};
    c.grad_outputs = {"loss"};
    c.finite_differences = x.N * x.V < 10000;
    const float ls = x.ls;
    c.forward = [=](OpRun& r) {
      r.backend.cross_entropy_forward(r["loss"], r["grad_logits"], r["stats"], r["logits"], r["targets"], -100, ls);
    };
    c.backward = [](OpRun& r) { r.backend.axpy(r["dlogits"], r["grad_logits"], r.scalar("dloss")); };
    out.push_back(std::move(c));
  }
  for (const Shape& s : {Shape{1}, Shape{3, 33}, Shape{2, 3, 65}}) {
    OpCase c;
    c.op = "sum_squares";
    c.name = "x" + dims(s);
    c.reduction = static_cast<double>(s.numel());
    c.inputs = {f32("total", Shape{1}, 0.5, 2), value("x", s)};
    c.inplace = {"total"};
    c.forward = [](OpRun& r) { r.backend.sum_squares(r["total"], r["x"]); };
    out.push_back(std::move(c));
  }
  struct Ad {
    std::string tag;
    AdamParams p;
    bool low;
  };
  AdamParams adam;
  adam.lr = 1e-2f;
  AdamParams adam_l2 = adam;
  adam_l2.weight_decay = 0.1f;
  adam_l2.step = 10;
  adam_l2.grad_scale = 0.5f;
  AdamParams adamw = adam_l2;
  adamw.decoupled = true;
  adamw.beta2 = 0.98f;
  adamw.eps = 1e-6f;
  // 7x33 and 8x36 (a multiple of 4 elements: what a backend may move in vector packs)
  for (const Ad& a :
       std::vector<Ad>{{"adam_step1", adam, false}, {"adam_l2_step10", adam_l2, true}, {"adamw_step10", adamw, true}})
    for (const Shape& s : {Shape{7, 33}, Shape{8, 36}}) {
      OpCase c;
      c.op = "adam_update";
      c.name = a.tag + "_x" + dims(s);
      c.bf16 = false;
      c.inputs = {f32("w", s), f32("m", s, -0.1, 0.1), f32("v", s, 0.0, 0.01), f32("grad", s)};
      if (a.low) c.outputs = {spec("w_low", s, Role::BF16)};
      c.inplace = {"w", "m", "v"};
      const AdamParams p = a.p;
      c.forward = [p](OpRun& r) { r.backend.adam_update(r["w"], r["m"], r["v"], r.opt("w_low"), r["grad"], p); };
      out.push_back(std::move(c));
    }
  for (const Shape& s : {Shape{1}, Shape{3, 33}}) {
    OpCase c;
    c.op = "cast";
    c.name = "to_bf16_x" + dims(s);
    c.bf16 = false;
    c.inputs = {f32("x", s, -100, 100)};
    c.outputs = {spec("y", s, Role::BF16)};
    c.forward = [](OpRun& r) { r.backend.cast(r["y"], r["x"]); };
    out.push_back(c);
    c.name = "to_run_dtype_x" + dims(s);  // bf16 run: bf16 -> f32; f32 run: a copy
    c.bf16 = true;
    c.inputs = {value("x", s, -100, 100)};
    c.outputs = {f32("y", s)};
    out.push_back(std::move(c));
  }
  {
    OpCase c;
    c.op = "memory";
    c.name = "fill_copy_x3x33";
    c.inputs = {value("x", Shape{3, 33})};
    c.outputs = {value("copied", Shape{99}), value("filled", Shape{3, 33}), spec("ids", Shape{5}, Role::I32)};
    c.forward = [](OpRun& r) {
      r.backend.copy(r["copied"], r["x"]);
      r.backend.fill(r["filled"], -1.25f);
      r.backend.fill(r["ids"], 7.0f);
      r.backend.synchronize();
    };
    out.push_back(std::move(c));
  }
}

}  // namespace

std::vector<OpCase> all_op_cases() {
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
