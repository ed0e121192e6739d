// Finite-difference gradient checks of backend ops (gradcheck_ops.hpp): a 4-point central
// difference of L = sum(r ⊙ y) over forward runs, against the op's backward, element by element.
#include "backends/gradcheck_ops.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "ablate/error.hpp"

namespace ablate::testing {

GradCheckResult check_gradients(Backend& be, const OpCase& c, const GradCheckOptions& o) {
  if (!c.backward) throw Error("check_gradients: case " + c.id() + " has no backward");
  GradCheckResult res;
  std::ostringstream os;
  const HostMap inputs = case_inputs(c, DType::F32);
  const HostMap prefill = case_grad_prefill(c, DType::F32);
  const HostMap up = case_upstream(c, DType::F32);
  const OpResult analytic = run_case(be, c, DType::F32);

  // L(inputs with one override) in double.
  auto loss = [&](const HostMap& overrides) {
    const OpResult r = run_case(be, c, DType::F32, &overrides, false);
    double L = 0;
    for (const std::string& name : c.grad_outputs) {
      const std::vector<float>& y = r.values.at(name);
      const std::vector<float>& w = up.at("d" + name);
      for (std::size_t i = 0; i < y.size(); ++i) L += static_cast<double>(w[i]) * static_cast<double>(y[i]);
    }
    return L;
  };

  std::uint64_t pick = 0x1234567ull;  // a fixed LCG for the element subset
  for (const std::string& name : c.grad_inputs) {
    const std::vector<float>& x0 = inputs.at(name);
    const std::vector<float>& after = analytic.values.at("d" + name);
    const std::vector<float>& before = prefill.at("d" + name);
    const bool written = grad_store(c, name) == GradStore::Write;  // it holds the gradient alone
    std::vector<double> grad(x0.size());
    double gmax = 0;
    for (std::size_t i = 0; i < x0.size(); ++i) {
      grad[i] = static_cast<double>(after[i]) - (written ? 0.0 : static_cast<double>(before[i]));
      gmax = std::max(gmax, std::abs(grad[i]));
    }
    std::vector<std::size_t> idx(x0.size());
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    if (idx.size() > static_cast<std::size_t>(o.max_elements)) {
      for (std::size_t i = 0; i + 1 < idx.size(); ++i) {  // Fisher-Yates with the LCG
        pick = pick * 6364136223846793005ull + 1442695040888963407ull;
        std::swap(idx[i], idx[i + static_cast<std::size_t>((pick >> 33) % (idx.size() - i))]);
      }
      idx.resize(static_cast<std::size_t>(o.max_elements));
      std::sort(idx.begin(), idx.end());
    }
    // The 4-point central difference of L along element i with step h.
    auto difference = [&](std::size_t i, double h) {
      HostMap ov{{name, x0}};
      std::vector<float>& x = ov[name];
      auto at = [&](double step) {  // (x + step is rounded to f32: ~1e-7 relative, far below the tolerance)
        x[i] = static_cast<float>(static_cast<double>(x0[i]) + step);
        return loss(ov);
      };
      const double L1 = at(h), Lm1 = at(-h), L2 = at(2 * h), Lm2 = at(-2 * h);
      return (8.0 * (L1 - Lm1) - (L2 - Lm2)) / (12.0 * h);
    };
    // First pass: the finite differences; then the tolerance scale from the largest of both.
    std::vector<double> fd(idx.size());
    for (std::size_t j = 0; j < idx.size(); ++j) {
      fd[j] = difference(idx[j], o.h);
      gmax = std::max(gmax, std::abs(fd[j]));
    }
    int shown = 0;
    for (std::size_t j = 0; j < idx.size(); ++j) {
      const double an = grad[idx[j]];
      auto excess_of = [&](double f) { return std::abs(f - an) / (o.rtol * std::abs(f) + o.atol * std::max(gmax, 1e-3)); };
      double excess = excess_of(fd[j]);
      if (!(excess <= 1.0) && o.kink_retry > 1) {
        // A non-smooth point (a ReLU kink) within 2h of x gives a wrong difference; a smaller
        // step moves past it. A wrong backward stays wrong at every step.
        const double retry = excess_of(difference(idx[j], o.h / o.kink_retry));
        if (retry <= 1.0) {
          ++res.retried;
          excess = retry;
        }
      }
      ++res.checked;
      res.worst = std::max(res.worst, excess);
      if (!(excess <= 1.0)) {
        ++res.failed;
        if (shown++ < 5)
          os << "  d" << name << "[" << idx[j] << "]: backward " << an << ", finite difference " << fd[j] << " (" << excess
             << "x the tolerance)\n";
      }
    }
  }
  res.ok = res.failed == 0;
  std::ostringstream head;
  head << c.id() << ": " << res.failed << " of " << res.checked << " gradient elements fail (worst " << res.worst
       << "x the tolerance; " << res.retried << " passed only with the smaller step)\n";
  res.report = head.str() + os.str();
  return res;
}

}  // namespace ablate::testing
