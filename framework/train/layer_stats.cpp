// Per-layer statistics (layer_stats.hpp): host-side reductions over captured tensors, and the
// backend's sum_squares over each layer's gradients.
#include "train/layer_stats.hpp"

#include <cmath>
#include <map>

#include "ablate/error.hpp"

namespace ablate::train {

std::string layer_of(const std::string& name) {
  const auto at = name.find(".layers.");
  if (at == std::string::npos) return "";
  const auto start = at + 8, end = name.find('.', start);
  return name.substr(0, end == std::string::npos ? name.size() : end);
}

std::vector<std::string> layer_names(ParameterStore& store) {
  std::vector<std::string> out;
  for (Parameter* p : store.all()) {
    const std::string l = layer_of(p->name);
    if (!l.empty() && (out.empty() || out.back() != l)) out.push_back(l);
  }
  return out;
}

std::vector<double> layer_grad_norms(ParameterStore& store, const std::vector<std::string>& layers) {
  Backend& be = store.backend();
  std::map<std::string, Tensor> totals;
  for (const std::string& l : layers) {
    Tensor t = be.empty({1}, DType::F32);
    be.fill(t, 0.0f);
    totals.emplace(l, t);
  }
  for (Parameter* p : store.all()) {
    const auto it = totals.find(layer_of(p->name));
    if (it != totals.end()) be.sum_squares(it->second, p->grad);
  }
  std::vector<double> out;
  for (const std::string& l : layers) {
    float sum = 0.0f;
    be.copy_to_host(&sum, totals.at(l));
    out.push_back(std::sqrt(static_cast<double>(sum)));
  }
  return out;
}

std::vector<double> residual_norms(Backend& be, const model::ForwardCapture& capture,
                                   const std::vector<std::int32_t>& src_lengths, const std::vector<std::int32_t>& tgt_lengths) {
  std::vector<double> out;
  for (const auto& r : capture.residuals) {
    const std::vector<float> x = host_floats(be, r.x);
    const Shape& s = r.x.shape();  // [B, T, D]
    const std::vector<std::int32_t>& lengths = r.stack == "encoder" ? src_lengths : tgt_lengths;
    if (static_cast<std::int64_t>(lengths.size()) != s[0])
      throw Error("residual_norms: " + std::to_string(lengths.size()) + " lengths for a batch of " + std::to_string(s[0]));
    double total = 0.0;
    std::int64_t count = 0;
    for (std::int64_t b = 0; b < s[0]; ++b)
      for (std::int64_t t = 0; t < std::min<std::int64_t>(lengths[static_cast<std::size_t>(b)], s[1]); ++t) {
        double sq = 0.0;
        for (std::int64_t d = 0; d < s[2]; ++d) {
          const double v = x[static_cast<std::size_t>((b * s[1] + t) * s[2] + d)];
          sq += v * v;
        }
        total += std::sqrt(sq);
        ++count;
      }
    out.push_back(count > 0 ? total / static_cast<double>(count) : 0.0);
  }
  return out;
}

std::vector<double> attention_entropy(const std::vector<float>& probs, const Shape& s,
                                      const std::vector<std::int32_t>& query_lengths) {
  if (s.rank() != 4 || static_cast<std::int64_t>(probs.size()) != s.numel() ||
      static_cast<std::int64_t>(query_lengths.size()) != s[0])
    throw Error("attention_entropy: probabilities " + s.str() + " with " + std::to_string(probs.size()) + " values and " +
                std::to_string(query_lengths.size()) + " query lengths");
  std::vector<double> out(static_cast<std::size_t>(s[1]), 0.0);
  for (std::int64_t h = 0; h < s[1]; ++h) {
    double total = 0.0;
    std::int64_t count = 0;
    for (std::int64_t b = 0; b < s[0]; ++b)
      for (std::int64_t q = 0; q < std::min<std::int64_t>(query_lengths[static_cast<std::size_t>(b)], s[2]); ++q) {
        const float* row = probs.data() + ((b * s[1] + h) * s[2] + q) * s[3];
        double e = 0.0;
        for (std::int64_t k = 0; k < s[3]; ++k)
          if (row[k] > 0.0f) e -= row[k] * std::log(static_cast<double>(row[k]));
        total += e;
        ++count;
      }
    out[static_cast<std::size_t>(h)] = count > 0 ? total / static_cast<double>(count) : 0.0;
  }
  return out;
}

}  // namespace ablate::train
