// gradcheck (framework/include/ablate/testing/gradcheck.hpp): analytic gradients from one
// backward pass against central differences of L = sum(r ⊙ f(x)), evaluated in double on
// the host from downloaded F32 outputs.
#include "ablate/testing/gradcheck.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ablate/error.hpp"

namespace ablate::testing {
namespace {

std::vector<float> download(Backend& be, const Tensor& t) {
  if (t.dtype() != DType::F32) throw Error("gradcheck: expects F32 tensors, got " + t.str());
  std::vector<float> host(static_cast<std::size_t>(t.numel()));
  be.copy_to_host(host.data(), t);
  return host;
}

Tensor upload(Backend& be, const Shape& shape, const std::vector<float>& values) {
  Tensor t = be.empty(shape, DType::F32);
  be.copy_from_host(t, values.data());
  return t;
}

// Output weights r in [-1, 1], fixed by the seed.
std::vector<float> output_weights(std::int64_t n, std::uint64_t seed) {
  std::vector<float> r(static_cast<std::size_t>(n));
  float u[4];
  for (std::int64_t i = 0; i < n; ++i) {
    philox_uniform4(RngKey{seed, 0, 0xC0FFEEu}, static_cast<std::uint64_t>(i / 4), u);
    r[static_cast<std::size_t>(i)] = 2.0f * u[i % 4] - 1.0f;
  }
  return r;
}

// Records one element: its analytic gradient against the central difference of the objective at
// +eps and -eps (the report keeps the first 10 mismatches).
struct Tally {
  explicit Tally(const GradcheckOptions& o) : options(o) {}
  const GradcheckOptions& options;
  GradcheckResult result;
  std::ostringstream report;
  int reported = 0;

  void element(const std::string& where, double analytic, double plus, double minus) {
    const double numeric = (plus - minus) / (2.0 * options.eps);
    const double err = std::abs(analytic - numeric);
    result.max_abs_error = std::max(result.max_abs_error, err);
    ++result.checked;
    if (err > options.atol + options.rtol * std::max(std::abs(analytic), std::abs(numeric))) {
      result.ok = false;
      if (reported++ < 10) report << where << ": analytic " << analytic << ", numeric " << numeric << "\n";
    }
  }
  GradcheckResult finish() {
    if (!result.ok) report << "(" << reported << " of " << result.checked << " checked elements differ)\n";
    result.report = report.str();
    return result;
  }
};

}  // namespace

GradcheckResult gradcheck(Backend& backend, const GradcheckFn& f, const std::vector<Tensor>& inputs,
                          const GradcheckOptions& options) {
  std::vector<std::vector<float>> host_inputs;
  for (const Tensor& t : inputs) host_inputs.push_back(download(backend, t));

  // Analytic: one backward pass seeded with r.
  std::vector<float> r;
  std::vector<std::vector<float>> analytic;
  {
    Graph g(backend, options.seed, 0, /*training=*/true, /*grad=*/true);
    std::vector<Var> leaves;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      leaves.push_back(g.leaf(upload(backend, inputs[i].shape(), host_inputs[i]), "input" + std::to_string(i)));
    const Var y = f(g, leaves);
    if (y.dtype() != DType::F32) throw Error("gradcheck: f must return an F32 value, got " + y.value().str());
    r = output_weights(y.value().numel(), options.seed);
    g.backward(y, upload(backend, y.shape(), r));
    for (const Var& leaf : leaves)
      analytic.push_back(leaf.grad().defined() ? download(backend, leaf.grad())
                                               : std::vector<float>(static_cast<std::size_t>(leaf.value().numel()), 0.0f));
  }

  // L(x) with one input replaced, in a graph without gradients but with the same RNG identity.
  auto objective = [&](std::size_t which, const std::vector<float>& values) {
    Graph g(backend, options.seed, 0, /*training=*/true, /*grad=*/false);
    std::vector<Var> leaves;
    for (std::size_t i = 0; i < inputs.size(); ++i)
      leaves.push_back(g.constant(upload(backend, inputs[i].shape(), i == which ? values : host_inputs[i])));
    const std::vector<float> y = download(backend, f(g, leaves).value());
    double sum = 0.0;
    for (std::size_t j = 0; j < y.size(); ++j) sum += static_cast<double>(r[j]) * y[j];
    return sum;
  };

  Tally tally{options};
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto n = static_cast<std::int64_t>(host_inputs[i].size());
    const std::int64_t stride = std::max<std::int64_t>(1, n / options.max_elements_per_input);
    for (std::int64_t j = (n > options.max_elements_per_input ? (7 * static_cast<std::int64_t>(i)) % stride : 0); j < n;
         j += stride) {
      std::vector<float> x = host_inputs[i];
      const auto e = static_cast<std::size_t>(j);
      x[e] = static_cast<float>(host_inputs[i][e] + options.eps);
      const double plus = objective(i, x);
      x[e] = static_cast<float>(host_inputs[i][e] - options.eps);
      const double minus = objective(i, x);
      tally.element("input " + std::to_string(i) + " element " + std::to_string(j), analytic[i][e], plus, minus);
    }
  }
  return tally.finish();
}

GradcheckResult parameter_gradcheck(Backend& backend, ParameterStore& store, const std::function<Var(Graph&)>& f,
                                    const GradcheckOptions& options) {
  std::vector<float> r;
  store.zero_grad();
  {
    Graph g(backend, options.seed, 0, /*training=*/true, /*grad=*/true);
    const Var y = f(g);
    if (y.dtype() != DType::F32) throw Error("parameter_gradcheck: f must return an F32 value, got " + y.value().str());
    r = output_weights(y.value().numel(), options.seed);
    g.backward(y, upload(backend, y.shape(), r));
  }
  auto objective = [&] {  // same RNG identity: dropout draws the same masks
    Graph g(backend, options.seed, 0, /*training=*/true, /*grad=*/false);
    const std::vector<float> y = download(backend, f(g).value());
    double sum = 0.0;
    for (std::size_t j = 0; j < y.size(); ++j) sum += static_cast<double>(r[j]) * y[j];
    return sum;
  };
  Tally tally{options};
  for (Parameter* p : store.all()) {
    const std::vector<float> analytic = download(backend, p->grad);
    std::vector<float> v = download(backend, p->value);
    const auto n = static_cast<std::int64_t>(v.size());
    const std::int64_t stride = std::max<std::int64_t>(1, n / options.max_elements_per_input);
    for (std::int64_t k = 0; k < n; k += stride) {
      const auto i = static_cast<std::size_t>(k);
      const float saved = v[i];
      const auto at = [&](double value) {
        v[i] = static_cast<float>(value);
        backend.copy_from_host(p->value, v.data());
        return objective();
      };
      const double plus = at(saved + options.eps), minus = at(saved - options.eps);
      at(saved);  // restored
      tally.element(p->name + "[" + std::to_string(k) + "]", analytic[i], plus, minus);
    }
  }
  if (tally.result.checked == 0) {
    tally.result.ok = false;
    tally.report << "no parameter elements checked: the store is empty\n";
  }
  return tally.finish();
}

}  // namespace ablate::testing
