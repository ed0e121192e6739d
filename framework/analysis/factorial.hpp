// The factorial analysis of a grid sweep: a linear model over all runs (sum-to-zero coded factors,
// their two-way interactions, seeds as blocks when every cell ran the same seeds), giving each
// factor's main effect with a confidence interval and p, and Type III F tests; works with one seed.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace ablate::analysis {

// One run: the level index of each factor (into FactorialDesign::levels[f]) and its value.
struct FactorialObservation {
  std::vector<std::size_t> levels;  // [factors]
  std::size_t block = 0;            // index into FactorialDesign::blocks (ignored without blocks)
  double y = NAN;
};

struct FactorialDesign {
  std::vector<std::string> factors;              // "model.block", ...
  std::vector<std::vector<std::string>> levels;  // [factors][levels]; levels[f][0] is the reference
  std::vector<std::string> blocks;               // seeds; empty or one: no block term
  std::vector<FactorialObservation> observations;
};

// The effect of moving factor `factor` from its reference level to `level`, averaged over the
// other factors' levels (the difference of least-squares marginal means).
struct MainEffect {
  std::string factor, level, reference;
  double estimate = NAN, se = NAN, t = NAN, df = NAN, p = NAN, ci_low = NAN, ci_high = NAN;
  double seeds_per_cell_needed = NAN;  // see FactorialAnalysis; NaN when not computable
};

// One term's Type III F test (the model without the term against the full model). For an
// interaction of two 2-level factors, `estimate` (with CI) is the difference of differences:
// how much the first factor's effect changes when the second leaves its reference level.
struct AnovaTerm {
  std::string name;  // "model.block" or "model.block × model.ffn" or "seed (block)"
  double df = NAN, sum_sq = NAN, f = NAN, p = NAN;
  double estimate = NAN, ci_low = NAN, ci_high = NAN;
};

struct FactorialAnalysis {
  bool defined = false;
  std::string note;  // why it is undefined, or what was left out of the model; empty otherwise
  std::vector<std::string> factors;
  bool interactions = false;  // two-way interactions are in the model
  bool blocked = false;       // seeds are a block term
  std::size_t observations = 0, cells = 0;
  double df_resid = NAN, residual_sd = NAN, confidence = 0.95;
  std::vector<MainEffect> main_effects;  // per factor, per non-reference level
  std::vector<AnovaTerm> terms;          // main effects, then interactions, then the block
};

// Fits y ~ factors + their two-way interactions (+ block) by least squares. Two-way interactions are
// left out (and the note says so) when they would leave no residual degree of freedom or cannot
// all be estimated from the observed cells; the analysis is undefined (with a note) when even the
// main-effects model cannot be estimated or leaves no residual degree of freedom.
// `seeds_per_cell_needed` of a main effect: the seeds per cell at which a two-sided test at `alpha`
// detects the estimated effect with `power`, taking the fitted residual spread as the truth (the
// standard error shrinks with the square root of the runs; the residual df grows with them).
FactorialAnalysis factorial_analysis(const FactorialDesign& design, double confidence = 0.95, double alpha = 0.05,
                                     double power = 0.8);

}  // namespace ablate::analysis
