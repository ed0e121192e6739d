// model.match_parameters (parameter_matching.hpp): the reference spec, the count of a candidate
// model, and the search for the FFN width whose count is closest to the reference's.
#include "train/parameter_matching.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "ablate/error.hpp"
#include "core/text.hpp"
#include "train/compute.hpp"
#include "train/experiment.hpp"
#include "train/registry_catalog.hpp"
#include "train/shape_backend.hpp"

namespace ablate::train {
namespace {

std::string match_text(const spec::ExperimentSpec& spec) {
  std::vector<std::string> parts;
  for (const auto& [key, value] : spec.model.match_parameters) parts.push_back(key + ": " + value);
  return "{" + join(parts, ", ") + "}";
}

// "1,234,567": counts are read by people comparing them.
std::string grouped(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

}  // namespace

spec::ExperimentSpec reference_spec(const spec::ExperimentSpec& spec, const PluginRegistry& registry) {
  spec::ExperimentSpec base = spec;
  base.model.match_parameters.clear();
  std::vector<std::string> overrides;
  for (const auto& [key, value] : spec.model.match_parameters) overrides.push_back("model." + key + "=" + value);
  try {
    spec::ExperimentSpec ref = spec::parse_spec(spec::resolved_yaml(base), "the reference model", overrides);
    spec::validate_plugins(ref, RegistryCatalog(registry));
    return ref;
  } catch (const UsageError& e) {
    throw UsageError(match_text(spec) + " does not make a valid model: " + e.what(),
                     "name model keys and values as the model section takes them, e.g. {ffn: relu} or "
                     "{attention: mha}");
  }
}

std::int64_t non_embedding_parameters(const spec::ExperimentSpec& spec, std::int64_t d_ff, const PluginRegistry& registry,
                                      const TaskInfo& task) {
  model::ModelConfig config = model_config(spec, task);
  config.dims.d_ff = d_ff;
  ShapeBackend shapes;
  ParameterStore store(shapes, DType::F32);
  const model::Transformer model(config, component_factory(spec, registry), store, static_cast<std::uint64_t>(spec.train.seed));
  return count_parameters(store).of("non_embedding");
}

ParameterMatch match_parameters(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const TaskInfo& task) {
  const std::string where = spec.marks.of("model.match_parameters").str() + ": model.match_parameters: ";
  spec::ExperimentSpec ref;
  try {
    ref = reference_spec(spec, registry);
  } catch (const UsageError& e) {
    throw UsageError(where + e.what(), e.hint());
  }
  ParameterMatch m;
  m.reference = non_embedding_parameters(ref, ref.model.d_ff, registry, task);
  std::map<std::int64_t, std::int64_t> seen;  // width -> count: each candidate is built once
  const auto count = [&](std::int64_t f) {
    const auto it = seen.find(f);
    return it != seen.end() ? it->second : seen[f] = non_embedding_parameters(spec, f, registry, task);
  };
  // The count grows with the width (about linearly): a secant from d_ff and 2 d_ff estimates the
  // width, a bracket around the estimate is widened until it holds the reference, and bisection
  // finds the smallest width reaching it; that width or the one below is the closest.
  const std::int64_t f0 = spec.model.d_ff, f1 = 2 * f0;
  const std::int64_t c0 = count(f0), c1 = count(f1);
  if (c1 <= c0)
    throw UsageError(where + "the FFN width does not change this model's parameters (" + grouped(c0) + " at model.d_ff " +
                         std::to_string(f0) + " and " + std::to_string(f1) + ")",
                     "match_parameters turns the FFN width: use an FFN whose width follows model.d_ff (no fixed "
                     "hidden option)");
  const double slope = static_cast<double>(c1 - c0) / static_cast<double>(f1 - f0);
  const auto estimate =
      static_cast<std::int64_t>(std::llround(static_cast<double>(f0) + static_cast<double>(m.reference - c0) / slope));
  std::int64_t lo = std::max<std::int64_t>(1, estimate - 2), hi = std::max<std::int64_t>(lo + 1, estimate + 2);
  for (std::int64_t step = 4; count(lo) >= m.reference && lo > 1; step *= 2) lo = std::max<std::int64_t>(1, lo - step);
  for (std::int64_t step = 4; count(hi) < m.reference; step *= 2) hi += step;
  if (count(lo) > m.reference)  // lo is 1
    throw UsageError(where + "even FFN width 1 gives " + grouped(count(1)) +
                         " non-embedding parameters, more than the reference's " + grouped(m.reference),
                     "choose a reference with more parameters, or give the smaller model the reference's place");
  if (count(lo) == m.reference) hi = lo = 1;
  while (hi - lo > 1) {  // count(lo) < reference <= count(hi)
    const std::int64_t mid = lo + (hi - lo) / 2;
    (count(mid) < m.reference ? lo : hi) = mid;
  }
  m.d_ff = hi > 1 && m.reference - count(hi - 1) <= count(hi) - m.reference ? hi - 1 : hi;
  m.parameters = count(m.d_ff);
  const double apart = 100.0 * std::abs(static_cast<double>(m.parameters - m.reference)) / static_cast<double>(m.reference);
  m.text = "model.match_parameters " + match_text(spec) + ": FFN width " + std::to_string(f0) + " -> " + std::to_string(m.d_ff) +
           ", non-embedding parameters " + grouped(m.parameters) + " (reference " + grouped(m.reference) + ", " +
           printf_text(apart, "%.2f") + "% apart)";
  return m;
}

}  // namespace ablate::train
