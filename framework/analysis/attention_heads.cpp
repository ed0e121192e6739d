// Head scores, Jensen–Shannon distance and attention rollout on plain attention arrays (see
// attention_heads.hpp for the formulas), and the reading of one attention log of a run file into
// those arrays with the probe's valid lengths and token ids.
#include "analysis/attention_heads.hpp"

#include <algorithm>
#include <cstdlib>

#include "ablate/error.hpp"

namespace ablate::analysis {
namespace {

// Keys query q could see: k < Kv, and k <= q for a causal map.
std::size_t visible_keys(const AttentionMap& a, std::size_t q) { return a.causal ? std::min(a.k_valid, q + 1) : a.k_valid; }

// a[q][k], 0 for a padded (or missing) key.
double weight(const AttentionMap& a, std::size_t q, std::size_t k) { return k < a.k_valid ? a.at(q, k) : 0.0; }

// The mean over valid queries of per_query(q), leaving out queries where it is NaN.
template <class F>
double mean_over_queries(const AttentionMap& a, std::size_t first, F per_query) {
  check_map(a);
  double sum = 0;
  std::size_t n = 0;
  for (std::size_t q = first; q < a.q_valid; ++q) {
    const double v = per_query(q);
    if (std::isnan(v)) continue;
    sum += v;
    ++n;
  }
  return n > 0 ? sum / double(n) : NAN;
}

double row_distance(const AttentionMap& a, std::size_t q) {
  double d = 0;
  for (std::size_t k = 0; k < a.k_valid; ++k) d += a.at(q, k) * std::abs(double(q) - double(k));
  return d;
}

double row_entropy(const AttentionMap& a, std::size_t q) {
  double h = 0;
  for (std::size_t k = 0; k < a.k_valid; ++k) {
    const double p = a.at(q, k);
    if (p > 0) h -= p * std::log(p);
  }
  return h;
}

// The mean of the finite values (NaN when none).
double finite_mean(const std::vector<double>& values) {
  double sum = 0;
  std::size_t n = 0;
  for (double v : values)
    if (std::isfinite(v)) {
      sum += v;
      ++n;
    }
  return n > 0 ? sum / double(n) : NAN;
}

}  // namespace

void check_map(const AttentionMap& a) {
  if (a.weights.size() != a.queries * a.keys)
    throw Error("attention map has " + std::to_string(a.weights.size()) + " weights for " + std::to_string(a.queries) +
                    " queries x " + std::to_string(a.keys) + " keys",
                "weights are [Q, K] row-major");
  if (a.q_valid > a.queries || a.k_valid > a.keys)
    throw Error("attention map: valid lengths " + std::to_string(a.q_valid) + " x " + std::to_string(a.k_valid) + " exceed its " +
                    std::to_string(a.queries) + " x " + std::to_string(a.keys) + " positions",
                "valid lengths count the real tokens of each axis");
}

double diagonal_score(const AttentionMap& a) {
  return mean_over_queries(a, 0, [&](std::size_t q) { return weight(a, q, q); });
}

double previous_token_score(const AttentionMap& a) {
  return mean_over_queries(a, 1, [&](std::size_t q) { return weight(a, q, q - 1); });
}

double first_token_score(const AttentionMap& a) {
  return mean_over_queries(a, 0, [&](std::size_t q) { return weight(a, q, 0); });
}

double mean_distance(const AttentionMap& a) {
  return mean_over_queries(a, 0, [&](std::size_t q) { return row_distance(a, q); });
}

double normalized_distance(const AttentionMap& a) {
  return mean_over_queries(a, 0, [&](std::size_t q) {
    const std::size_t n = visible_keys(a, q);
    if (n == 0) return double(NAN);
    const double farthest = std::max(std::abs(double(q)), std::abs(double(q) - double(n - 1)));  // keys 0 .. n-1
    return farthest > 0 ? row_distance(a, q) / farthest : double(NAN);
  });
}

double entropy(const AttentionMap& a) {
  return mean_over_queries(a, 0, [&](std::size_t q) { return row_entropy(a, q); });
}

double normalized_entropy(const AttentionMap& a) {
  return mean_over_queries(a, 0, [&](std::size_t q) {
    const std::size_t n = visible_keys(a, q);
    return n >= 2 ? row_entropy(a, q) / std::log(double(n)) : double(NAN);
  });
}

double induction_score(const AttentionMap& a, std::span<const std::int32_t> query_tokens,
                       std::span<const std::int32_t> key_tokens) {
  check_map(a);
  if (query_tokens.size() < a.q_valid || key_tokens.size() < a.k_valid) return NAN;
  return mean_over_queries(a, 0, [&](std::size_t q) {
    double mass = 0;
    bool any = false;
    for (std::size_t j = 0; j < q && j + 1 < a.k_valid; ++j)
      if (key_tokens[j] == query_tokens[q]) {
        mass += a.at(q, j + 1);  // S_q is a set: each j gives a different j + 1
        any = true;
      }
    return any ? mass : double(NAN);
  });
}

HeadScores head_scores(const AttentionMap& a, std::span<const std::int32_t> query_tokens,
                       std::span<const std::int32_t> key_tokens) {
  HeadScores s;
  s.diagonal = diagonal_score(a);
  s.previous_token = previous_token_score(a);
  s.first_token = first_token_score(a);
  s.induction = induction_score(a, query_tokens, key_tokens);
  s.mean_distance = mean_distance(a);
  s.normalized_distance = normalized_distance(a);
  s.entropy = entropy(a);
  s.normalized_entropy = normalized_entropy(a);
  return s;
}

double js_distance(const AttentionMap& a, const AttentionMap& b) {
  check_map(b);
  if (a.queries != b.queries || a.keys != b.keys || a.q_valid != b.q_valid || a.k_valid != b.k_valid)
    throw Error("Jensen-Shannon distance of attention maps of different shapes (" + std::to_string(a.q_valid) + " x " +
                    std::to_string(a.k_valid) + " valid of " + std::to_string(a.queries) + " x " + std::to_string(a.keys) +
                    " vs " + std::to_string(b.q_valid) + " x " + std::to_string(b.k_valid) + " of " + std::to_string(b.queries) +
                    " x " + std::to_string(b.keys) + ")",
                "compare the same head on the same probe example: runs of one task and probe batch");
  return mean_over_queries(a, 0, [&](std::size_t q) {
    double js = 0;
    for (std::size_t k = 0; k < a.k_valid; ++k) {
      const double p = a.at(q, k), r = b.at(q, k), m = 0.5 * (p + r);
      if (p > 0) js += 0.5 * p * std::log(p / m);
      if (r > 0) js += 0.5 * r * std::log(r / m);
    }
    return std::sqrt(std::max(0.0, js));  // rounding can leave a tiny negative
  });
}

std::vector<double> attention_rollout(const std::vector<std::span<const float>>& layers, std::size_t heads, std::size_t tokens,
                                      std::size_t valid) {
  if (layers.empty()) throw Error("attention rollout of no layers", "pass the self-attention layers of one stack");
  if (heads == 0 || valid > tokens)
    throw Error("attention rollout: " + std::to_string(heads) + " heads, " + std::to_string(valid) + " valid of " +
                    std::to_string(tokens) + " tokens",
                "give at least one head and valid <= tokens");
  const std::size_t n = valid;
  std::vector<double> rollout(n * n, 0.0), m(n * n), next(n * n);
  for (std::size_t i = 0; i < n; ++i) rollout[i * n + i] = 1;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const auto& w = layers[l];
    if (w.size() != heads * tokens * tokens)
      throw Error("attention rollout: layer " + std::to_string(l) + " has " + std::to_string(w.size()) + " weights for " +
                      std::to_string(heads) + " x " + std::to_string(tokens) + " x " + std::to_string(tokens),
                  "each layer is [H, Q, Q] of one example");
    // M = rownorm(0.5 · mean over heads + 0.5 · I) on the valid block.
    for (std::size_t q = 0; q < n; ++q) {
      double row = 0;
      for (std::size_t k = 0; k < n; ++k) {
        double mean = 0;
        for (std::size_t h = 0; h < heads; ++h) mean += w[(h * tokens + q) * tokens + k];
        m[q * n + k] = 0.5 * mean / double(heads) + (q == k ? 0.5 : 0.0);
        row += m[q * n + k];
      }
      for (std::size_t k = 0; k < n; ++k) m[q * n + k] /= row;
    }
    // R <- M · R.
    for (std::size_t q = 0; q < n; ++q)
      for (std::size_t k = 0; k < n; ++k) {
        double v = 0;
        for (std::size_t j = 0; j < n; ++j) v += m[q * n + j] * rollout[j * n + k];
        next[q * n + k] = v;
      }
    rollout.swap(next);
  }
  std::vector<double> out(tokens * tokens, NAN);
  for (std::size_t q = 0; q < n; ++q)
    for (std::size_t k = 0; k < n; ++k) out[q * tokens + k] = rollout[q * n + k];
  return out;
}

// ---- A run's attention log -----------------------------------------------------------------------
const results::ProbeTokens* probe_side(const results::Probe& probe, std::string_view side) {
  const results::ProbeTokens* p = side == "src" ? &probe.src : side == "tgt" ? &probe.tgt : nullptr;
  return p && p->length > 0 && !p->ids.empty() ? p : nullptr;
}

std::size_t valid_positions(const results::ProbeTokens* side, std::size_t example, std::size_t n) {
  if (!side) return n;
  const std::int64_t length = example < side->lengths.size() ? side->lengths[example] : side->length;
  return std::min<std::size_t>(n, static_cast<std::size_t>(std::max<std::int64_t>(0, length)));
}

std::string head_name(std::string_view stack, std::string_view kind, std::int64_t layer, std::size_t head) {
  const std::string_view short_stack = stack == "encoder" ? "enc" : stack == "decoder" ? "dec" : stack;
  return std::string(short_stack) + "." + std::string(kind) + " L" + std::to_string(layer) + " H" + std::to_string(head);
}

AttentionMap SlotAttention::map(std::size_t example, std::size_t head) const {
  const auto H = static_cast<std::size_t>(weights.shape[1]), Q = static_cast<std::size_t>(weights.shape[2]),
             K = static_cast<std::size_t>(weights.shape[3]);
  AttentionMap a;
  a.weights = std::span<const float>(weights.values).subspan((example * H + head) * Q * K, Q * K);
  a.queries = Q;
  a.keys = K;
  a.q_valid = q_valid.at(example);
  a.k_valid = k_valid.at(example);
  a.causal = slot.mask == results::AttentionMask::Causal || slot.mask == results::AttentionMask::CausalKeyPadding;
  return a;
}

AttentionLogData read_attention_log(const results::RunReader& run, std::size_t log) {
  const std::vector<std::int64_t> steps = run.attention_steps();
  if (log >= steps.size())
    throw Error(
        run.path().string() + " has no attention log " + std::to_string(log) + " (it has " + std::to_string(steps.size()) + ")",
        "train with log.attention.every > 0, or pick a logged step");
  const results::RunLayout& layout = run.layout();
  AttentionLogData d;
  d.step = steps[log];
  d.examples = static_cast<std::size_t>(layout.probe.examples);
  for (std::size_t s = 0; s < layout.attention.size(); ++s) {
    SlotAttention sa;
    sa.slot = layout.attention[s];
    sa.weights = run.attention(s, log);  // [E, H, Q, K]
    const auto& shape = sa.weights.shape;
    if (shape.size() != 4 || shape[0] != layout.probe.examples || shape[1] != sa.slot.heads || shape[2] != sa.slot.queries ||
        shape[3] != sa.slot.keys)
      throw Error(run.path().string() + ": attention " + sa.slot.path() + " has an unexpected shape",
                  "the run file may be damaged; rerun the run");
    const results::ProbeTokens* qs = probe_side(layout.probe, sa.slot.query_tokens);
    const results::ProbeTokens* ks = probe_side(layout.probe, sa.slot.key_tokens);
    auto ids = [](const results::ProbeTokens* side, std::size_t e) {
      if (!side) return std::vector<std::int32_t>{};
      const auto L = static_cast<std::size_t>(side->length);
      return std::vector<std::int32_t>(side->ids.begin() + static_cast<std::ptrdiff_t>(e * L),
                                       side->ids.begin() + static_cast<std::ptrdiff_t>((e + 1) * L));
    };
    for (std::size_t e = 0; e < d.examples; ++e) {
      sa.q_valid.push_back(valid_positions(qs, e, static_cast<std::size_t>(shape[2])));
      sa.k_valid.push_back(valid_positions(ks, e, static_cast<std::size_t>(shape[3])));
      sa.q_tokens.push_back(ids(qs, e));
      sa.k_tokens.push_back(ids(ks, e));
    }
    d.slots.push_back(std::move(sa));
  }
  return d;
}

RunHeadScores run_head_scores(const AttentionLogData& log) {
  RunHeadScores r;
  r.step = log.step;
  for (const SlotAttention& s : log.slots) {
    const bool self = s.slot.kind == "self";  // induction compares a token with earlier tokens of the same sequence
    for (std::size_t h = 0; h < static_cast<std::size_t>(s.weights.shape[1]); ++h) {
      r.heads.push_back(head_name(s.slot.stack, s.slot.kind, s.slot.layer, h));
      std::vector<HeadScores> per_example;
      for (std::size_t e = 0; e < log.examples; ++e)
        per_example.push_back(self ? head_scores(s.map(e, h), s.q_tokens[e], s.k_tokens[e]) : head_scores(s.map(e, h)));
      r.example0.push_back(per_example.empty() ? HeadScores{} : per_example.front());
      HeadScores mean;
      for (double HeadScores::*field : {&HeadScores::diagonal, &HeadScores::previous_token, &HeadScores::first_token,
                                        &HeadScores::induction, &HeadScores::mean_distance, &HeadScores::normalized_distance,
                                        &HeadScores::entropy, &HeadScores::normalized_entropy}) {
        std::vector<double> values;
        for (const HeadScores& x : per_example) values.push_back(x.*field);
        mean.*field = finite_mean(values);
      }
      r.mean.push_back(mean);
    }
  }
  return r;
}

RunHeadScores run_head_scores(const results::RunReader& run) {
  const std::size_t logs = run.attention_steps().size();
  if (logs == 0) throw Error(run.path().string() + " has no attention logs", "train with log.attention.every > 0");
  return run_head_scores(read_attention_log(run, logs - 1));
}

}  // namespace ablate::analysis
