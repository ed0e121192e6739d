// beam_search() (beam_search.hpp): per step, one teacher-forced forward pass over every open
// hypothesis of every source (the source repeated per hypothesis), log-softmax of the last
// position on the host, and the per-source bookkeeping of open and finished hypotheses.
#include "train/beam_search.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ablate/autograd.hpp"
#include "ablate/error.hpp"
#include "core/text.hpp"

namespace ablate::train {

namespace {
struct Hypothesis {
  std::vector<std::int32_t> tokens;  // content tokens so far
  double logp = 0.0;                 // summed log probability
};
struct Finished {
  std::vector<std::int32_t> tokens;
  double score;  // logp / length^alpha, length = tokens + eos
};
}  // namespace

void check_beam_options(const BeamOptions& o) {
  if (o.beam < 1 || o.beam > kMaxBeam)
    throw UsageError("--beam must be >= 1 and <= " + std::to_string(kMaxBeam) + " (1: greedy decoding), got " +
                     std::to_string(o.beam));
  if (!std::isfinite(o.length_penalty))
    throw UsageError("--length-penalty must be a finite number (0: no length normalisation), got " +
                     number_text(o.length_penalty));
  if (o.max_len < 0) throw UsageError("--max-len must be >= 0 (0: the task's longest target), got " + std::to_string(o.max_len));
}

std::vector<std::vector<std::int32_t>> beam_search(Experiment& ex, const std::vector<std::vector<std::int32_t>>& sources,
                                                   const BeamOptions& o) {
  if (ex.model->config().arch != model::Arch::EncoderDecoder)
    throw Error("beam_search: needs an encoder-decoder model, this one is " + std::string(spec::to_string(ex.spec.model.arch)));
  check_beam_options(o);
  const std::int64_t K = o.beam, V = ex.task_info.vocab_size;
  const std::int64_t max_len = o.max_len > 0 ? o.max_len : ex.task_info.max_tgt_len;
  const std::size_t N = sources.size();
  std::vector<std::vector<Hypothesis>> open(N, std::vector<Hypothesis>(1));
  std::vector<std::vector<Finished>> finished(N);
  const auto finish = [&](std::size_t n, const Hypothesis& h) {
    const double length = static_cast<double>(h.tokens.size() + 1);
    finished[n].push_back({h.tokens, h.logp / std::pow(length, o.length_penalty)});
  };

  for (std::int64_t t = 0;; ++t) {
    if (t == max_len) {  // the length limit: what is still open finishes as it is (as greedy decoding stops)
      for (std::size_t n = 0; n < N; ++n)
        for (const Hypothesis& h : open[n]) finish(n, h);
      break;
    }
    // Every open hypothesis as one example: the source, and the hypothesis as teacher-forced target.
    std::vector<Example> batch;
    std::vector<std::pair<std::size_t, std::size_t>> who;  // (source, hypothesis) per row
    for (std::size_t n = 0; n < N; ++n)
      for (std::size_t k = 0; k < open[n].size(); ++k) {
        batch.push_back({sources[n], open[n][k].tokens, {}});
        who.emplace_back(n, k);
      }
    if (batch.empty()) break;
    Graph g(*ex.backend, static_cast<std::uint64_t>(ex.spec.train.seed), 0, /*training=*/false, /*grad=*/false);
    const model::DeviceBatch device = ex.batch(batch);
    const std::vector<float> logits = host_floats(*ex.backend, ex.model->logits(g, device).value());  // [R, t+1, V]
    const std::int64_t T = device.T;  // t + 1: bos + the hypothesis (every row the same length)

    std::vector<std::vector<Hypothesis>> next(N);
    std::size_t row = 0;
    for (std::size_t n = 0; n < N; ++n) {
      if (open[n].empty()) continue;
      // Candidates (hypothesis k, token, logp) of this source: the 2K best tokens of each hypothesis.
      struct Candidate {
        std::size_t k;
        std::int32_t token;
        double logp;
      };
      std::vector<Candidate> candidates;
      for (std::size_t k = 0; k < open[n].size(); ++k, ++row) {
        // The hypothesis's length within the padded target: its last position holds the next-token scores.
        const std::int64_t last = static_cast<std::int64_t>(open[n][k].tokens.size());
        const float* z = logits.data() + (static_cast<std::int64_t>(row) * T + last) * V;
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t v = 0; v < V; ++v) mx = std::max(mx, static_cast<double>(z[v]));
        double sum = 0.0;
        for (std::int64_t v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[v]) - mx);
        const double lse = mx + std::log(sum);
        std::vector<std::int32_t> ids(static_cast<std::size_t>(V));
        std::iota(ids.begin(), ids.end(), 0);
        const auto take = static_cast<std::ptrdiff_t>(std::min<std::int64_t>(2 * K + 2, V));
        std::partial_sort(ids.begin(), ids.begin() + take, ids.end(), [&](std::int32_t a, std::int32_t b) {
          return z[a] != z[b] ? z[a] > z[b] : a < b;  // ties: the lower id, as argmax takes the first
        });
        int kept = 0;
        for (std::ptrdiff_t i = 0; i < take && kept < 2 * K; ++i) {
          const std::int32_t v = ids[static_cast<std::size_t>(i)];
          if (v == TaskInfo::kPad || v == TaskInfo::kBos) continue;
          candidates.push_back({k, v, open[n][k].logp + static_cast<double>(z[v]) - lse});
          ++kept;
        }
      }
      std::stable_sort(candidates.begin(), candidates.end(),
                       [](const Candidate& a, const Candidate& b) { return a.logp > b.logp; });
      for (const Candidate& c : candidates) {
        if (static_cast<std::int64_t>(next[n].size()) >= K) break;
        Hypothesis h{open[n][c.k].tokens, c.logp};
        if (c.token == TaskInfo::kEos) {
          finish(n, h);
          if (static_cast<std::int64_t>(finished[n].size()) >= K) break;
          continue;
        }
        h.tokens.push_back(c.token);
        next[n].push_back(std::move(h));
      }
      if (static_cast<std::int64_t>(finished[n].size()) >= K) next[n].clear();  // done: K finished
    }
    open = std::move(next);
  }
  std::vector<std::vector<std::int32_t>> out(N);
  for (std::size_t n = 0; n < N; ++n) {
    if (finished[n].empty()) continue;
    const auto best = std::max_element(finished[n].begin(), finished[n].end(),
                                       [](const Finished& a, const Finished& b) { return a.score < b.score; });
    out[n] = best->tokens;
  }
  return out;
}

}  // namespace ablate::train
