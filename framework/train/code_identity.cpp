// The code identity of a run (code_identity.hpp).
#include "train/code_identity.hpp"

#include <algorithm>

#include "core/text.hpp"

namespace ablate::train {

CodeIdentity code_identity(const spec::ExperimentSpec& spec, const PluginRegistry& registry) {
  CodeIdentity c;
  c.parts.push_back("ablate compute " + std::to_string(kComputeVersion));
  for (const spec::PluginSlot& slot : spec::plugin_slots()) {
    const PluginDescriptor& d = registry.find(slot.kind, spec::plugin_at(spec, slot.path).name);
    c.parts.push_back(d.id() + " " + d.version + " " + d.code_hash);
  }
  std::uint64_t h = kFnv1a64Basis;
  for (const std::string& p : c.parts) h = fnv1a64(p.data(), p.size() + 1, h);  // with the terminator: parts stay apart
  c.id = hex16(h);
  return c;
}

std::string code_difference(const std::vector<std::string>& recorded, const std::vector<std::string>& now) {
  if (recorded.empty()) return "unknown (the run file predates code identities)";
  std::vector<std::string> out;
  for (const std::string& part : now) {
    if (std::find(recorded.begin(), recorded.end(), part) != recorded.end()) continue;
    const std::string who = part.substr(0, part.find(' '));  // "ffn/swiglu", or "ablate"
    const auto was =
        std::find_if(recorded.begin(), recorded.end(), [&](const std::string& r) { return r.starts_with(who + " "); });
    out.push_back(part + (was != recorded.end() ? " (was " + was->substr(who.size() + 1) + ")" : " (new)"));
  }
  return out.empty() ? "the same parts in another order" : join(out, ", ");
}

}  // namespace ablate::train
