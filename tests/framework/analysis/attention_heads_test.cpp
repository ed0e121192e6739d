// Tests for framework/analysis/attention_heads: each head score on hand-built maps whose value is
// known (a diagonal, a shifted, a sink, a uniform causal and an induction map), padding left out,
// Jensen–Shannon distance at its bounds, and attention rollout against its definition.
#include "analysis/attention_heads.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "ablate/error.hpp"

namespace ablate::analysis {
namespace {

// A [Q, K] map with row q from row(q) (K weights each).
std::vector<float> build(std::size_t Q, std::size_t K, const std::function<std::vector<float>(std::size_t)>& row) {
  std::vector<float> w;
  for (std::size_t q = 0; q < Q; ++q) {
    const std::vector<float> r = row(q);
    EXPECT_EQ(r.size(), K) << "row " << q;
    w.insert(w.end(), r.begin(), r.end());
  }
  return w;
}
// All mass of row q on key f(q).
std::vector<float> one_hot(std::size_t Q, std::size_t K, const std::function<std::size_t(std::size_t)>& f) {
  return build(Q, K, [&](std::size_t q) {
    std::vector<float> r(K, 0.0f);
    r[f(q)] = 1.0f;
    return r;
  });
}
AttentionMap map_of(const std::vector<float>& w, std::size_t Q, std::size_t K, bool causal = false) {
  return {w, Q, K, Q, K, causal};
}

TEST(HeadScores, DiagonalMapScoresOneOnDiagonalAndZeroOnPreviousToken) {
  const auto w = one_hot(6, 6, [](std::size_t q) { return q; });
  const HeadScores s = head_scores(map_of(w, 6, 6));
  EXPECT_DOUBLE_EQ(s.diagonal, 1.0);
  EXPECT_DOUBLE_EQ(s.previous_token, 0.0);
  EXPECT_DOUBLE_EQ(s.first_token, 1.0 / 6);  // only query 0 puts its mass on key 0
  EXPECT_DOUBLE_EQ(s.mean_distance, 0.0);
  EXPECT_DOUBLE_EQ(s.normalized_distance, 0.0);
  EXPECT_DOUBLE_EQ(s.entropy, 0.0);
  EXPECT_DOUBLE_EQ(s.normalized_entropy, 0.0);
  EXPECT_TRUE(std::isnan(s.induction)) << "no tokens given";
}

TEST(HeadScores, MapShiftedByOneScoresOneOnPreviousToken) {
  // Query 0 has no previous token: it attends to itself (and is not counted by the score).
  const auto w = one_hot(5, 5, [](std::size_t q) { return q == 0 ? 0 : q - 1; });
  const AttentionMap a = map_of(w, 5, 5, true);
  EXPECT_DOUBLE_EQ(previous_token_score(a), 1.0);
  EXPECT_DOUBLE_EQ(diagonal_score(a), 1.0 / 5);
  EXPECT_DOUBLE_EQ(mean_distance(a), 4.0 / 5);  // distance 1 for queries 1..4
  // Causal: query q sees keys 0..q, the farthest at distance q; normalized distance 1/q, q >= 1.
  EXPECT_NEAR(normalized_distance(a), (1.0 + 1.0 / 2 + 1.0 / 3 + 1.0 / 4) / 4, 1e-12);
  const std::vector<float> one_row = {1.0f};
  EXPECT_TRUE(std::isnan(previous_token_score(map_of(one_row, 1, 1)))) << "no query has a previous token";
}

TEST(HeadScores, AllMassOnTheFirstKeyIsASink) {
  const auto w = one_hot(4, 7, [](std::size_t) { return 0; });
  const AttentionMap a = map_of(w, 4, 7);
  EXPECT_DOUBLE_EQ(first_token_score(a), 1.0);
  EXPECT_DOUBLE_EQ(diagonal_score(a), 1.0 / 4);
  EXPECT_DOUBLE_EQ(mean_distance(a), (0 + 1 + 2 + 3) / 4.0);
}

TEST(HeadScores, UniformCausalMapMatchesTheClosedForms) {
  // a[q][k] = 1/(q+1) for k <= q: row distance sum_k (q-k)/(q+1) = q/2, mean over q < n = (n-1)/4;
  // row entropy ln(q+1); normalized entropy 1 (uniform over what each query sees).
  const std::size_t n = 9;
  const auto w = build(n, n, [&](std::size_t q) {
    std::vector<float> r(n, 0.0f);
    for (std::size_t k = 0; k <= q; ++k) r[k] = 1.0f / float(q + 1);
    return r;
  });
  const AttentionMap a = map_of(w, n, n, true);
  EXPECT_NEAR(mean_distance(a), (n - 1) / 4.0, 1e-6);
  double h = 0;
  for (std::size_t q = 0; q < n; ++q) h += std::log(double(q + 1));
  EXPECT_NEAR(entropy(a), h / n, 1e-6);
  EXPECT_NEAR(normalized_entropy(a), 1.0, 1e-6);
  EXPECT_NEAR(normalized_distance(a), 0.5, 1e-6);  // (q/2) / q for every q >= 1
}

TEST(HeadScores, InductionMapOnARepeatedSequenceScoresOne) {
  // [r1..rn r1..rn] with distinct random tokens; an induction head at q = n + i attends to i + 1,
  // the position after the earlier occurrence of its token (the first half attends to itself).
  const std::size_t n = 7, T = 2 * n;
  std::mt19937 rng(42);
  std::vector<std::int32_t> r(50);
  for (std::size_t i = 0; i < r.size(); ++i) r[i] = std::int32_t(i + 3);
  std::shuffle(r.begin(), r.end(), rng);
  std::vector<std::int32_t> tokens(r.begin(), r.begin() + n);
  tokens.insert(tokens.end(), r.begin(), r.begin() + n);
  const auto induction = one_hot(T, T, [&](std::size_t q) { return q < n ? q : q - n + 1; });
  EXPECT_DOUBLE_EQ(induction_score(map_of(induction, T, T, true), tokens, tokens), 1.0);
  const auto diagonal = one_hot(T, T, [](std::size_t q) { return q; });
  EXPECT_NEAR(induction_score(map_of(diagonal, T, T, true), tokens, tokens), 0.0, 1e-12);
  // A previous-token head on it: q = n + i attends to n + i - 1, not to i + 1 (n > 2).
  const auto previous = one_hot(T, T, [](std::size_t q) { return q == 0 ? 0 : q - 1; });
  EXPECT_NEAR(induction_score(map_of(previous, T, T, true), tokens, tokens), 0.0, 1e-12);
  // Without a repeated token the score is undefined; without enough tokens too.
  const std::vector<std::int32_t> distinct(r.begin(), r.begin() + T);
  EXPECT_TRUE(std::isnan(induction_score(map_of(induction, T, T, true), distinct, distinct)));
  EXPECT_TRUE(std::isnan(induction_score(map_of(induction, T, T, true), std::vector<std::int32_t>(3, 1), tokens)));
}

TEST(HeadScores, PaddingIsLeftOutOfEveryScore) {
  // 4 real tokens of 6: padded rows hold garbage (all on key 5), which no score may see.
  const auto w = one_hot(6, 6, [](std::size_t q) { return q < 4 ? q : 5; });
  AttentionMap a = map_of(w, 6, 6);
  a.q_valid = a.k_valid = 4;
  EXPECT_DOUBLE_EQ(diagonal_score(a), 1.0);
  EXPECT_DOUBLE_EQ(first_token_score(a), 0.25);
  EXPECT_DOUBLE_EQ(mean_distance(a), 0.0);
  a.q_valid = 0;
  EXPECT_TRUE(std::isnan(diagonal_score(a)));
}

TEST(HeadScores, JensenShannonDistanceAtItsBounds) {
  const auto diag = one_hot(5, 5, [](std::size_t q) { return q; });
  const auto other = one_hot(5, 5, [](std::size_t q) { return (q + 1) % 5; });
  EXPECT_NEAR(js_distance(map_of(diag, 5, 5), map_of(diag, 5, 5)), 0.0, 1e-12);
  EXPECT_NEAR(js_distance(map_of(diag, 5, 5), map_of(other, 5, 5)), std::sqrt(std::log(2.0)), 1e-9);
  // Half the rows equal, half disjoint: the mean of the row distances.
  const auto half = one_hot(4, 4, [](std::size_t q) { return q < 2 ? q : 0; });
  const auto diag4 = one_hot(4, 4, [](std::size_t q) { return q; });
  EXPECT_NEAR(js_distance(map_of(half, 4, 4), map_of(diag4, 4, 4)), std::sqrt(std::log(2.0)) / 2, 1e-9);
  const auto small = one_hot(4, 5, [](std::size_t q) { return q; });
  EXPECT_THROW(js_distance(map_of(diag, 5, 5), map_of(small, 4, 5)), Error);
}

TEST(HeadScores, RolloutOfIdentityIsIdentityAndOfOneLayerIsHalfAPlusHalfI) {
  const std::size_t Q = 4, H = 2;
  std::vector<float> identity;
  for (std::size_t h = 0; h < H; ++h) {
    const auto w = one_hot(Q, Q, [](std::size_t q) { return q; });
    identity.insert(identity.end(), w.begin(), w.end());
  }
  const std::vector<double> r = attention_rollout({identity, identity, identity}, H, Q, Q);
  for (std::size_t q = 0; q < Q; ++q)
    for (std::size_t k = 0; k < Q; ++k) EXPECT_NEAR(r[q * Q + k], q == k ? 1.0 : 0.0, 1e-12);

  // One layer: head 0 all on key 0, head 1 uniform; mean A = 0.5 e0 + 0.5 / Q.
  std::vector<float> layer = one_hot(Q, Q, [](std::size_t) { return 0; });
  for (std::size_t i = 0; i < Q * Q; ++i) layer.push_back(1.0f / Q);
  const std::vector<double> one = attention_rollout({layer}, H, Q, Q);
  for (std::size_t q = 0; q < Q; ++q)
    for (std::size_t k = 0; k < Q; ++k) {
      const double mean_a = 0.5 * (k == 0 ? 1.0 : 0.0) + 0.5 / Q;
      EXPECT_NEAR(one[q * Q + k], 0.5 * mean_a + (q == k ? 0.5 : 0.0), 1e-7) << q << " " << k;
    }
  // Two of those layers: the product M · M, rows summing to 1.
  const std::vector<double> two = attention_rollout({layer, layer}, H, Q, Q);
  for (std::size_t q = 0; q < Q; ++q) {
    double row = 0;
    for (std::size_t k = 0; k < Q; ++k) {
      double want = 0;
      for (std::size_t j = 0; j < Q; ++j) want += one[q * Q + j] * one[j * Q + k];
      EXPECT_NEAR(two[q * Q + k], want, 1e-7);
      row += two[q * Q + k];
    }
    EXPECT_NEAR(row, 1.0, 1e-7);
  }
  // Padding: only the valid block is rolled out, the rest NaN.
  const std::vector<double> padded = attention_rollout({identity}, H, Q, 3);
  EXPECT_NEAR(padded[0], 1.0, 1e-12);
  EXPECT_TRUE(std::isnan(padded[3]));
  EXPECT_TRUE(std::isnan(padded[3 * Q + 3]));
  EXPECT_THROW(attention_rollout({}, H, Q, Q), Error);
  EXPECT_THROW(attention_rollout({layer}, H, Q + 1, Q), Error);
}

TEST(HeadScores, BadMapsThrow) {
  const std::vector<float> w(6, 0.5f);
  EXPECT_THROW(diagonal_score(map_of(w, 2, 4)), Error);  // 6 weights for 2 x 4
  AttentionMap a = map_of(w, 2, 3);
  a.k_valid = 4;
  EXPECT_THROW(entropy(a), Error);
}

}  // namespace
}  // namespace ablate::analysis
