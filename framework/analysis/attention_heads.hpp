// What attention heads do, as numbers: per-head scores on a run's logged probe attention (diagonal,
// previous-token, first-token sink, induction, distance, entropy), how far two arms' heads differ
// (Jensen–Shannon distance) and attention rollout through a stack. Pure functions on plain arrays;
// read_attention_log() is the one part that reads a run file. Formulas: docs/analysis.md.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "results/run_file.hpp"

namespace ablate::analysis {

// One head's attention on one probe example: a[q][k], the weight query q puts on key k. Queries
// q < q_valid and keys k < k_valid are real tokens, the rest padding (left out of every score);
// a valid row sums to 1 over the valid keys. `causal`: query q saw only keys k <= q.
struct AttentionMap {
  std::span<const float> weights;        // [Q, K] row-major
  std::size_t queries = 0, keys = 0;     // Q, K
  std::size_t q_valid = 0, k_valid = 0;  // <= Q, <= K
  bool causal = false;
  double at(std::size_t q, std::size_t k) const { return weights[q * keys + k]; }
};
// Throws ablate::Error when weights.size() != Q * K or a valid length exceeds its axis.
void check_map(const AttentionMap& a);

// Each score is a mean over the valid queries q < Qv (Qv = q_valid, Kv = k_valid), NaN when no
// query counts; a[q][k] is read as 0 where k >= Kv.
//   diagonal        D = mean_q a[q][q]                        (a head that attends to itself: copy)
//   previous token  P = mean_{1<=q<Qv} a[q][q-1]              (NaN when Qv < 2)
//   first token     F = mean_q a[q][0]                        (the "attention sink" on position 0)
//   mean distance   M = mean_q sum_k a[q][k] |q - k|          (positions)
//   normalized distance  mean_q M_q / max_{k visible to q} |q - k|, over queries that see a key at
//                   distance > 0 (0 = attends to itself, 1 = to the farthest key it can see)
//   entropy         H = mean_q -sum_k a[q][k] ln a[q][k]     (nats; 0 ln 0 = 0)
//   normalized entropy   mean_q H_q / ln n_q, n_q = keys visible to q, over queries with n_q >= 2
//                   (0 = one key, 1 = uniform over what it can see)
// A key is visible to q when k < Kv (and k <= q for a causal map).
double diagonal_score(const AttentionMap& a);
double previous_token_score(const AttentionMap& a);
double first_token_score(const AttentionMap& a);
double mean_distance(const AttentionMap& a);
double normalized_distance(const AttentionMap& a);
double entropy(const AttentionMap& a);
double normalized_entropy(const AttentionMap& a);

// Induction: for each valid query q whose token occurred earlier, at key positions j < q with
// key_tokens[j] == query_tokens[q], the mass on the positions right after those occurrences,
//   I_q = sum_{k in S_q} a[q][k],  S_q = { j + 1 : j < q, key_tokens[j] == query_tokens[q], j + 1 < Kv },
// averaged over the queries with a non-empty S_q; NaN when no query has an earlier occurrence (a
// probe without repeated tokens says nothing about induction). Meant for self-attention, where
// both sides are the same tokens (query_tokens [>= Qv], key_tokens [>= Kv]; shorter: NaN).
double induction_score(const AttentionMap& a, std::span<const std::int32_t> query_tokens,
                       std::span<const std::int32_t> key_tokens);

// Every score of one map (induction NaN without tokens).
struct HeadScores {
  double diagonal = NAN, previous_token = NAN, first_token = NAN, induction = NAN;
  double mean_distance = NAN, normalized_distance = NAN, entropy = NAN, normalized_entropy = NAN;
};
HeadScores head_scores(const AttentionMap& a, std::span<const std::int32_t> query_tokens = {},
                       std::span<const std::int32_t> key_tokens = {});

// Jensen–Shannon distance between two maps of the same shape and valid lengths (the same head of
// two arms on the same probe example), averaged over the valid query rows:
//   JSD(p, r) = sqrt( 1/2 KL(p || m) + 1/2 KL(r || m) ),  m = (p + r) / 2,  natural log,
// over the valid keys of each row; 0 for equal rows, sqrt(ln 2) ≈ 0.833 for rows with disjoint
// support. NaN when no query is valid. Throws ablate::Error when the shapes or lengths differ.
double js_distance(const AttentionMap& a, const AttentionMap& b);

// Attention rollout (Abnar & Zuidema, 2020) through a stack's self-attention layers on one example:
//   R = M_L · … · M_2 · M_1,  M_l = rownorm(0.5 · mean_h A_l,h + 0.5 · I)
// restricted to the `valid` real tokens (rows renormalised to sum to 1 there). R[q][k] is how much
// of token k reaches position q at the top of the stack through attention and the residual path.
// layers[l]: [H, Q, Q] weights of layer l (0 = first); returns [Q, Q], NaN outside the valid block.
// Throws ablate::Error for no layers, or a layer whose size is not H * Q * Q.
std::vector<double> attention_rollout(const std::vector<std::span<const float>>& layers, std::size_t heads, std::size_t tokens,
                                      std::size_t valid);

// ---- A run's attention log -----------------------------------------------------------------------
// The probe side ("src" | "tgt") that labels an attention axis; nullptr for "" or an empty side.
const results::ProbeTokens* probe_side(const results::Probe& probe, std::string_view side);
// The real (non-padding) positions of probe example `example` on an axis of n positions labelled
// by `side`: min(n, its length); n when the axis has no probe side.
std::size_t valid_positions(const results::ProbeTokens* side, std::size_t example, std::size_t n);
// "enc.self L0 H1": how figures and tables name a head.
std::string head_name(std::string_view stack, std::string_view kind, std::int64_t layer, std::size_t head);

// One slot (stack, kind, layer) of one attention log, with what the scores need per example.
struct SlotAttention {
  results::AttentionSlot slot;
  results::FloatTensor weights;                               // [E, H, Q, K]
  std::vector<std::size_t> q_valid, k_valid;                  // [E]
  std::vector<std::vector<std::int32_t>> q_tokens, k_tokens;  // [E][L] probe ids of each axis (empty: none)
  AttentionMap map(std::size_t example, std::size_t head) const;
};
struct AttentionLogData {
  std::int64_t step = 0;
  std::size_t examples = 0;          // E
  std::vector<SlotAttention> slots;  // in the run layout's order
};
// Reads attention log `log` (index into attention_steps()) of a run. Throws ablate::Error for a
// log it does not have or a tensor whose shape disagrees with the layout.
AttentionLogData read_attention_log(const results::RunReader& run, std::size_t log);

// The scores of every head of every slot: on probe example 0, and the mean over the probe
// examples (each score's NaN values left out of its mean).
struct RunHeadScores {
  std::int64_t step = 0;
  std::vector<std::string> heads;    // head_name() per slot and head, in layout order
  std::vector<HeadScores> example0;  // [heads]
  std::vector<HeadScores> mean;      // [heads]
};
RunHeadScores run_head_scores(const AttentionLogData& log);
// The same for a run's last attention log; throws ablate::Error when the run has none.
RunHeadScores run_head_scores(const results::RunReader& run);

}  // namespace ablate::analysis
