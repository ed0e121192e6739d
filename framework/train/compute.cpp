// Compute accounting (train/compute.hpp): parameter kinds from the model's scope names.
#include "train/compute.hpp"

#include <array>
#include <map>

namespace ablate::train {

namespace {

bool has_part(const std::string& name, const std::string& part) {
  return name.rfind(part + ".", 0) == 0 || name.find("." + part + ".") != std::string::npos;
}

constexpr std::array<const char*, 7> kKinds = {"embeddings", "positions", "attention", "ffn", "norms", "output", "other"};

}  // namespace

std::string parameter_kind(const std::string& name) {
  if (has_part(name, "positions")) return "positions";
  if (has_part(name, "self_attn") || has_part(name, "cross_attn")) return "attention";
  if (has_part(name, "ffn")) return "ffn";
  if (has_part(name, "embedding_norm") || has_part(name, "final_norm") || has_part(name, "layers")) return "norms";
  if (has_part(name, "embedding")) return "embeddings";
  if (has_part(name, "output") || has_part(name, "classifier")) return "output";
  return "other";
}

std::int64_t ParameterCounts::of(const std::string& kind) const {
  for (std::size_t i = 0; i < kinds.size(); ++i)
    if (kinds[i] == kind) return counts[i];
  return 0;
}

ParameterCounts count_parameters(ParameterStore& store) {
  std::map<std::string, std::int64_t> by_kind;
  std::int64_t total = 0;
  for (const Parameter* p : store.all()) {
    by_kind[parameter_kind(p->name)] += p->value.numel();
    total += p->value.numel();
  }
  ParameterCounts c;
  c.kinds = {"total", "non_embedding"};
  c.counts = {total, total - by_kind["embeddings"] - by_kind["positions"]};
  for (const char* kind : kKinds)
    if (by_kind.count(kind) && by_kind[kind] > 0) {
      c.kinds.push_back(kind);
      c.counts.push_back(by_kind[kind]);
    }
  return c;
}

}  // namespace ablate::train
