// Helpers for the run file tests: a small seq2seq run layout with every kind of dataset, values
// that depend on the step (so rows can be checked after resume or a kill), and running Debian's
// /usr/bin/python3 (h5py, numpy) on a file.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "results/run_file.hpp"

namespace ablate::results::testing {

inline constexpr std::int64_t kE = 2;  // probe examples

inline RunInfo sample_info() {
  RunInfo i;
  i.run_id = "copy-pre_norm-s1-3f2a";
  i.experiment = "norm_placement";
  i.spec_yaml = "name: norm_placement\nmodel: {block: pre_norm}\n";
  i.resolved_spec_yaml = "name: norm_placement\nmodel:\n  block: pre_norm\n  d_model: 32\n# é ü 字\n";
  i.seed = 7;
  i.backend = "reference";
  i.plugins = {"backend/reference 0.1.0", "block/pre_norm 0.1.0", "task/copy 0.1.0"};
  i.host = "testhost";
  i.created = "2025-01-31T12:00:00Z";
  return i;
}

// Encoder-decoder: 2 encoder layers, 1 decoder layer, 2 heads; src length 4, tgt length 5.
inline RunLayout sample_layout() {
  RunLayout l;
  l.train_metrics = {"loss", "lr", "grad_norm", "tokens_per_s"};
  l.eval_metrics = {"loss", "token_accuracy", "exact_match"};
  l.probe.examples = kE;
  l.probe.src = {4, {5, 6, 7, 2, 8, 9, 2, 0}, {4, 3}, {"a b c", "d é"}};
  l.probe.tgt = {5, {5, 6, 7, 2, 1, 8, 9, 2, 1, 0}, {5, 4}, {"a b c", "d é"}};
  l.attention = {{"encoder", "self", 0, 2, 4, 4, AttentionMask::KeyPadding, "src", "src"},
                 {"encoder", "self", 1, 2, 4, 4, AttentionMask::KeyPadding, "src", "src"},
                 {"decoder", "self", 0, 2, 5, 5, AttentionMask::CausalKeyPadding, "tgt", "tgt"},
                 {"decoder", "cross", 0, 2, 5, 4, AttentionMask::KeyPadding, "tgt", "src"}};
  l.decode = {1, 2, 6, 4};
  l.stats = {{"residual_norm", {"encoder.layer_0", "encoder.layer_1", "decoder.layer_0"}},
             {"grad_norm", {"encoder.layer_0", "encoder.layer_1", "decoder.layer_0"}}};
  l.entropy = {{"encoder", "self", 0, 2}, {"encoder", "self", 1, 2}, {"decoder", "self", 0, 2}, {"decoder", "cross", 0, 2}};
  l.samples = {2, 16};
  return l;
}

// Metric values as a function of the step (and a variant, to tell rewritten rows apart).
inline std::vector<double> train_values(std::int64_t step, double variant = 0) {
  const double s = static_cast<double>(step);
  return {2.0 / (1.0 + 0.01 * s) + variant, 1e-3 * std::min(1.0, s / 100.0), 0.5 + 0.001 * s, 1000.0 + s};
}
inline std::vector<double> eval_values(std::int64_t step) {
  const double s = static_cast<double>(step);
  return {1.0 / (1.0 + 0.02 * s), std::min(1.0, s / 200.0), std::min(1.0, s / 400.0)};
}

// `rows` softmax rows of `keys` probabilities each (every row sums to 1), different per seed.
inline std::vector<float> softmax_rows(std::int64_t rows, std::int64_t keys, double seed) {
  std::vector<float> out(static_cast<std::size_t>(rows * keys));
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::int64_t k = 0; k < keys; ++k) sum += std::exp(std::sin(0.3 * r + 0.7 * k + seed));
    for (std::int64_t k = 0; k < keys; ++k)
      out[static_cast<std::size_t>(r * keys + k)] = static_cast<float>(std::exp(std::sin(0.3 * r + 0.7 * k + seed)) / sum);
  }
  return out;
}

// The buffers of one attention log of sample_layout() at `step`.
struct AttentionData {
  std::vector<std::vector<float>> slots, cross;
  std::vector<std::int32_t> tokens, lengths;
  AttentionLog log() const {
    AttentionLog l;
    for (const auto& s : slots) l.slots.emplace_back(s);
    l.decode.tokens = tokens;
    l.decode.lengths = lengths;
    for (const auto& c : cross) l.decode.cross.emplace_back(c);
    return l;
  }
};
inline AttentionData attention_data(const RunLayout& l, std::int64_t step, double variant = 0) {
  AttentionData d;
  for (std::size_t i = 0; i < l.attention.size(); ++i) {
    const AttentionSlot& s = l.attention[i];
    d.slots.push_back(softmax_rows(l.probe.examples * s.heads * s.queries, s.keys,
                                   static_cast<double>(step) + static_cast<double>(i) + variant));
  }
  for (std::int64_t i = 0; i < l.decode.layers; ++i)
    d.cross.push_back(softmax_rows(l.probe.examples * l.decode.heads * l.decode.steps, l.decode.keys,
                                   static_cast<double>(step) * 0.5 + variant));
  for (std::int64_t e = 0; e < l.probe.examples * l.decode.steps; ++e)
    d.tokens.push_back(static_cast<std::int32_t>((e + step) % 9));
  for (std::int64_t e = 0; e < l.probe.examples; ++e)
    d.lengths.push_back(static_cast<std::int32_t>((step + e) % (l.decode.steps + 1)));
  return d;
}

// The buffers of one stats row of sample_layout() at `step`.
struct StatsData {
  std::vector<std::vector<float>> tables, entropy;
  StatsLog log() const {
    StatsLog l;
    for (const auto& t : tables) l.tables.emplace_back(t);
    for (const auto& e : entropy) l.entropy.emplace_back(e);
    return l;
  }
};
inline StatsData stats_data(const RunLayout& l, std::int64_t step) {
  StatsData d;
  for (std::size_t t = 0; t < l.stats.size(); ++t) {
    std::vector<float> row;
    for (std::size_t c = 0; c < l.stats[t].columns.size(); ++c)
      row.push_back(static_cast<float>(step) * 0.01f + static_cast<float>(t * 10 + c));
    d.tables.push_back(row);
  }
  for (std::size_t s = 0; s < l.entropy.size(); ++s) {
    std::vector<float> row;
    for (std::int64_t h = 0; h < l.entropy[s].heads; ++h)
      row.push_back(1.0f + static_cast<float>(s) * 0.1f + static_cast<float>(h) * 0.01f + static_cast<float>(step) * 1e-4f);
    d.entropy.push_back(row);
  }
  return d;
}

inline SamplesLog samples_data(std::int64_t step) {
  return {{"a b c", "d é"}, {"a b c", "d é"}, {"a b " + std::to_string(step), "d"}};
}

inline std::string read_text(const std::filesystem::path& file) {
  std::ifstream in(file);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Debian's python3 with h5py and numpy (the `python3` on PATH may lack them).
inline constexpr const char* kPython = "/usr/bin/python3";
inline bool have_h5py() {
  return std::filesystem::exists(kPython) && std::system("/usr/bin/python3 -c 'import h5py, numpy' > /dev/null 2>&1") == 0;
}
#define ABLATE_REQUIRE_H5PY()                                                                            \
  do {                                                                                                   \
    if (!::ablate::results::testing::have_h5py())                                                        \
      GTEST_SKIP() << "needs /usr/bin/python3 with h5py and numpy (Debian: python3-h5py python3-numpy)"; \
  } while (0)

// Runs /usr/bin/python3 `script` with `args`; returns its exit status and puts stdout+stderr in `output`.
inline int run_python(const std::string& script, const std::string& args, const std::filesystem::path& out_file,
                      std::string* output) {
  const std::string cmd = std::string(kPython) + " '" + script + "' " + args + " > '" + out_file.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  *output = read_text(out_file);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace ablate::results::testing
