// The factorial analysis of a grid sweep (see factorial.hpp): the design matrix with sum-to-zero
// coded factors, least squares through the normal equations (the designs are small: runs × a few
// dozen columns), contrasts for main effects and Type III F tests by refitting without each term.
#include "analysis/factorial.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "ablate/error.hpp"
#include "analysis/stats.hpp"

namespace ablate::analysis {
namespace {

// A term of the model and the design columns it owns.
struct Term {
  std::string name;
  std::vector<std::size_t> factors;  // 1 (main), 2 (interaction), none (block)
  std::size_t first = 0, count = 0;  // columns [first, first + count)
};

struct Model {
  std::vector<Term> terms;  // after the intercept (column 0)
  std::size_t columns = 1;
  std::vector<std::vector<double>> x;  // [observations][columns]
};

// Sum-to-zero coding of `level` among k levels: column j (j < k - 1) is 1 at level j, -1 at the
// last level, 0 elsewhere.
double sum_code(std::size_t level, std::size_t j, std::size_t k) {
  if (level == j) return 1.0;
  return level == k - 1 ? -1.0 : 0.0;
}

Model build_model(const FactorialDesign& d, bool interactions, bool blocked) {
  Model m;
  const std::size_t nf = d.factors.size();
  for (std::size_t f = 0; f < nf; ++f) {
    m.terms.push_back({d.factors[f], {f}, m.columns, d.levels[f].size() - 1});
    m.columns += d.levels[f].size() - 1;
  }
  if (interactions)
    for (std::size_t f = 0; f < nf; ++f)
      for (std::size_t g = f + 1; g < nf; ++g) {
        const std::size_t count = (d.levels[f].size() - 1) * (d.levels[g].size() - 1);
        m.terms.push_back({d.factors[f] + " × " + d.factors[g], {f, g}, m.columns, count});
        m.columns += count;
      }
  if (blocked) {
    m.terms.push_back({"seed (block)", {}, m.columns, d.blocks.size() - 1});
    m.columns += d.blocks.size() - 1;
  }
  for (const auto& obs : d.observations) {
    std::vector<double> row(m.columns, 0.0);
    row[0] = 1.0;
    for (const Term& t : m.terms) {
      if (t.factors.size() == 1) {
        const std::size_t f = t.factors[0], k = d.levels[f].size();
        for (std::size_t j = 0; j + 1 < k; ++j) row[t.first + j] = sum_code(obs.levels[f], j, k);
      } else if (t.factors.size() == 2) {
        const std::size_t f = t.factors[0], g = t.factors[1];
        const std::size_t kf = d.levels[f].size(), kg = d.levels[g].size();
        for (std::size_t i = 0; i + 1 < kf; ++i)
          for (std::size_t j = 0; j + 1 < kg; ++j)
            row[t.first + i * (kg - 1) + j] = sum_code(obs.levels[f], i, kf) * sum_code(obs.levels[g], j, kg);
      } else {
        for (std::size_t j = 0; j + 1 < d.blocks.size(); ++j) row[t.first + j] = sum_code(obs.block, j, d.blocks.size());
      }
    }
    m.x.push_back(std::move(row));
  }
  return m;
}

struct Fit {
  std::vector<double> beta;     // [p]
  std::vector<double> inverse;  // (X'X)^-1, [p, p] row-major
  double rss = NAN;
};

// Least squares on the columns `keep` of x; nullopt when X'X is singular (an effect the observed
// cells cannot estimate).
std::optional<Fit> least_squares(const std::vector<std::vector<double>>& x, const std::vector<double>& y,
                                 const std::vector<std::size_t>& keep) {
  const std::size_t n = x.size(), p = keep.size();
  std::vector<double> a(p * p, 0.0), inv(p * p, 0.0), b(p, 0.0);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i < p; ++i) {
      b[i] += x[r][keep[i]] * y[r];
      for (std::size_t j = 0; j < p; ++j) a[i * p + j] += x[r][keep[i]] * x[r][keep[j]];
    }
  double scale = 0.0;
  for (std::size_t i = 0; i < p; ++i) scale = std::max(scale, a[i * p + i]);
  for (std::size_t i = 0; i < p; ++i) inv[i * p + i] = 1.0;
  // Gauss–Jordan with partial pivoting: a -> I, inv -> a^-1.
  for (std::size_t c = 0; c < p; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < p; ++r)
      if (std::fabs(a[r * p + c]) > std::fabs(a[pivot * p + c])) pivot = r;
    if (std::fabs(a[pivot * p + c]) <= 1e-10 * scale) return std::nullopt;
    if (pivot != c)
      for (std::size_t j = 0; j < p; ++j) {
        std::swap(a[c * p + j], a[pivot * p + j]);
        std::swap(inv[c * p + j], inv[pivot * p + j]);
      }
    const double d = a[c * p + c];
    for (std::size_t j = 0; j < p; ++j) {
      a[c * p + j] /= d;
      inv[c * p + j] /= d;
    }
    for (std::size_t r = 0; r < p; ++r) {
      if (r == c || a[r * p + c] == 0.0) continue;
      const double factor = a[r * p + c];
      for (std::size_t j = 0; j < p; ++j) {
        a[r * p + j] -= factor * a[c * p + j];
        inv[r * p + j] -= factor * inv[c * p + j];
      }
    }
  }
  Fit fit;
  fit.inverse = std::move(inv);
  fit.beta.assign(p, 0.0);
  for (std::size_t i = 0; i < p; ++i)
    for (std::size_t j = 0; j < p; ++j) fit.beta[i] += fit.inverse[i * p + j] * b[j];
  fit.rss = 0.0;
  for (std::size_t r = 0; r < n; ++r) {
    double e = y[r];
    for (std::size_t i = 0; i < p; ++i) e -= x[r][keep[i]] * fit.beta[i];
    fit.rss += e * e;
  }
  return fit;
}

std::vector<std::size_t> all_columns(std::size_t p) {
  std::vector<std::size_t> out(p);
  for (std::size_t i = 0; i < p; ++i) out[i] = i;
  return out;
}

// c'β and its standard error sqrt(σ² c' (X'X)^-1 c).
std::pair<double, double> contrast(const Fit& fit, const std::vector<double>& c, double sigma2) {
  const std::size_t p = c.size();
  double est = 0.0, var = 0.0;
  for (std::size_t i = 0; i < p; ++i) {
    est += c[i] * fit.beta[i];
    for (std::size_t j = 0; j < p; ++j) var += c[i] * fit.inverse[i * p + j] * c[j];
  }
  return {est, std::sqrt(sigma2 * var)};
}

// The seeds per cell at which the t-test of `e` reaches `power`: with s seeds the design has
// cells · s runs, its standard error shrinks as 1 / sqrt(runs) from the observed one, and the
// residual df is runs minus the parameters (plus s - 1 block parameters when seeds are blocks).
double seeds_per_cell(const MainEffect& e, const FactorialAnalysis& a, std::size_t parameters, bool blocked, double alpha,
                      double power) {
  if (!(e.se > 0.0) || !std::isfinite(e.estimate) || e.estimate == 0.0) return NAN;
  for (std::size_t s = 1; s <= 1000; ++s) {
    const double runs = static_cast<double>(a.cells * s);
    const double df = runs - static_cast<double>(parameters) - (blocked && s > 1 ? static_cast<double>(s - 1) : 0.0);
    if (df < 1.0) continue;
    const double se = e.se * std::sqrt(static_cast<double>(a.observations) / runs);
    if (t_power(std::fabs(e.estimate) / se, df, alpha) >= power) return static_cast<double>(s);
  }
  return NAN;
}

void check_design(const FactorialDesign& d) {
  if (d.levels.size() != d.factors.size())
    throw Error("factorial analysis: " + std::to_string(d.factors.size()) + " factors but " + std::to_string(d.levels.size()) +
                " level lists");
  for (std::size_t f = 0; f < d.factors.size(); ++f)
    if (d.levels[f].size() < 2) throw Error("factorial analysis: factor " + d.factors[f] + " has fewer than 2 levels");
  for (const auto& obs : d.observations) {
    if (obs.levels.size() != d.factors.size()) throw Error("factorial analysis: an observation lacks a factor level");
    for (std::size_t f = 0; f < d.factors.size(); ++f)
      if (obs.levels[f] >= d.levels[f].size()) throw Error("factorial analysis: a level index is out of range");
    if (d.blocks.size() > 1 && obs.block >= d.blocks.size()) throw Error("factorial analysis: a block index is out of range");
    if (!std::isfinite(obs.y)) throw Error("factorial analysis: an observation's value is not finite");
  }
}

// The largest model the data support: with two-way interactions if they leave a residual degree
// of freedom and can be estimated, else main effects only; none (and out.note says why) when not
// even the main effects can be estimated.
std::optional<std::pair<Model, Fit>> choose_model(const FactorialDesign& design, const std::vector<double>& y, bool blocked,
                                                  FactorialAnalysis& out) {
  for (const bool interactions : {true, false}) {
    if (interactions && design.factors.size() < 2) continue;
    Model m = build_model(design, interactions, blocked);
    if (y.size() <= m.columns) {
      if (interactions) {
        out.note =
            "two-way interactions are left out of the model: with them no residual degree of freedom would "
            "be left (" +
            std::to_string(y.size()) + " runs, " + std::to_string(m.columns) + " parameters)";
        continue;
      }
      out.note = "the main effects cannot be tested: " + std::to_string(y.size()) +
                 " runs leave no residual degree "
                 "of freedom for " +
                 std::to_string(m.columns) + " parameters; add seeds";
      return std::nullopt;
    }
    auto f = least_squares(m.x, y, all_columns(m.columns));
    if (!f) {
      if (interactions) {
        out.note = "two-way interactions are left out of the model: the observed cells cannot estimate them all";
        continue;
      }
      out.note = "the runs do not form a factorial design whose main effects can be estimated (cells are missing)";
      return std::nullopt;
    }
    out.interactions = interactions;
    return std::pair{std::move(m), std::move(*f)};
  }
  return std::nullopt;
}

// Main effects: level L minus the reference, as least-squares marginal means α_l (α_l = β_l for
// l < k - 1, α_{k-1} = -Σ β); q: the t quantile of the intervals.
void main_effects(const FactorialDesign& design, const Model& model, const Fit& fit, double sigma2, double q, double alpha,
                  double power, FactorialAnalysis& out) {
  for (const Term& t : model.terms) {
    if (t.factors.size() != 1) continue;
    const std::size_t f = t.factors[0], k = design.levels[f].size();
    const auto add_mean = [&](std::vector<double>& c, std::size_t level, double sign) {
      if (level + 1 < k)
        c[t.first + level] += sign;
      else
        for (std::size_t j = 0; j + 1 < k; ++j) c[t.first + j] -= sign;
    };
    for (std::size_t level = 1; level < k; ++level) {
      std::vector<double> c(model.columns, 0.0);
      add_mean(c, level, 1.0);
      add_mean(c, 0, -1.0);
      MainEffect e;
      e.factor = design.factors[f];
      e.level = design.levels[f][level];
      e.reference = design.levels[f][0];
      std::tie(e.estimate, e.se) = contrast(fit, c, sigma2);
      e.df = out.df_resid;
      if (e.se > 0.0) {
        e.t = e.estimate / e.se;
        e.p = student_t_two_sided_p(e.t, e.df);
      }
      e.ci_low = e.estimate - q * e.se;
      e.ci_high = e.estimate + q * e.se;
      e.seeds_per_cell_needed =
          seeds_per_cell(e, out, model.columns - (out.blocked ? design.blocks.size() - 1 : 0), out.blocked, alpha, power);
      out.main_effects.push_back(std::move(e));
    }
  }
}

// Type III tests: refit without each term's columns; a 2 × 2 interaction also gets its estimate
// (the difference of differences is 4 β) with its interval.
void type3_tests(const Model& model, const Fit& fit, const std::vector<double>& y, double sigma2, double q,
                 FactorialAnalysis& out) {
  for (const Term& t : model.terms) {
    std::vector<std::size_t> keep;
    for (std::size_t col = 0; col < model.columns; ++col)
      if (col < t.first || col >= t.first + t.count) keep.push_back(col);
    const auto reduced = least_squares(model.x, y, keep);
    AnovaTerm a;
    a.name = t.name;
    a.df = static_cast<double>(t.count);
    if (reduced) {
      a.sum_sq = std::max(0.0, reduced->rss - fit.rss);
      if (sigma2 > 0.0) {
        a.f = (a.sum_sq / a.df) / sigma2;
        a.p = f_upper_tail(a.f, a.df, out.df_resid);
      }
    }
    if (t.factors.size() == 2 && t.count == 1) {
      std::vector<double> c(model.columns, 0.0);
      c[t.first] = 4.0;
      const auto [est, se] = contrast(fit, c, sigma2);
      a.estimate = est;
      a.ci_low = est - q * se;
      a.ci_high = est + q * se;
    }
    out.terms.push_back(std::move(a));
  }
}

}  // namespace

FactorialAnalysis factorial_analysis(const FactorialDesign& design, double confidence, double alpha, double power) {
  check_design(design);
  FactorialAnalysis out;
  out.factors = design.factors;
  out.confidence = confidence;
  out.observations = design.observations.size();
  std::set<std::vector<std::size_t>> cells;
  for (const auto& obs : design.observations) cells.insert(obs.levels);
  out.cells = cells.size();
  const bool blocked = design.blocks.size() > 1;
  std::vector<double> y;
  for (const auto& obs : design.observations) y.push_back(obs.y);

  const auto chosen = choose_model(design, y, blocked, out);
  if (!chosen) return out;
  const auto& [model, fit] = *chosen;
  out.defined = true;
  out.blocked = blocked;
  out.df_resid = static_cast<double>(y.size() - model.columns);
  const double sigma2 = fit.rss / out.df_resid;
  out.residual_sd = std::sqrt(sigma2);
  const double q = student_t_quantile(0.5 + 0.5 * confidence, out.df_resid);
  main_effects(design, model, fit, sigma2, q, alpha, power, out);
  type3_tests(model, fit, y, sigma2, q, out);
  if (sigma2 == 0.0)
    out.note += std::string(out.note.empty() ? "" : "; ") + "the model fits the runs exactly (zero residual): no test applies";
  return out;
}

}  // namespace ablate::analysis
