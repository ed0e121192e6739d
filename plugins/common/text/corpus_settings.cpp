// Reading and checking the options every text task shares (corpus_settings.hpp).
#include "corpus_settings.hpp"

#include <algorithm>
#include <string>

#include "ablate/error.hpp"

namespace ablate_text {

std::string dropped_text(std::int64_t too_long, const std::string& what, std::int64_t max_len, std::int64_t empty,
                         const std::string& empty_what) {
  std::string out;
  if (too_long > 0)
    out = std::to_string(too_long) + " with " + what + " longer than max_len " + std::to_string(max_len) +
          " tokens (long_examples: filter; truncate would keep them, cut to " + std::to_string(max_len) + ")";
  if (empty > 0) out += (out.empty() ? "" : ", ") + std::to_string(empty) + " with " + empty_what;
  return out;
}

CorpusSettings corpus_settings(const ablate::Options& o, std::string_view plugin, std::string_view unit) {
  CorpusSettings s;
  s.max_examples = o.get_int("max_examples");
  s.min_freq = o.get_int("min_freq");
  s.valid_fraction = o.get_float("valid_fraction");
  s.test_fraction = o.get_float("test_fraction");
  s.split_seed = static_cast<std::uint64_t>(o.get_int("split_seed"));
  const std::string prefix = std::string(plugin) + ": ";
  if (s.min_freq < 1)
    throw ablate::Error(prefix + "min_freq must be >= 1, got " + std::to_string(s.min_freq), "1 keeps every train token");
  if (s.max_examples < 0)
    throw ablate::Error(prefix + "max_examples must be >= 0, got " + std::to_string(s.max_examples),
                        "0 keeps every " + std::string(unit));
  return s;
}

SplitIndices split(const CorpusSettings& s, std::int64_t n) {
  return s.contiguous ? contiguous_split_indices(n, s.valid_fraction, s.test_fraction)
                      : split_indices(n, s.valid_fraction, s.test_fraction, s.split_seed);
}

bool differs_from_default(const ablate::Options& o, const ablate::OptionInfo& info) {
  const std::string d = info.default_value;
  switch (info.type) {
    case ablate::OptionType::Bool: return o.get_bool(info.name) != (d == "true");
    case ablate::OptionType::Int: return o.get_int(info.name) != std::stoll(d);
    case ablate::OptionType::Float: return o.get_float(info.name) != std::stod(d);
    case ablate::OptionType::String: return o.get_string(info.name) != d;
  }
  return false;
}

void refuse_with_tokenizer(const ablate::Options& o, const ablate::OptionList& declared, const std::vector<std::string>& names,
                           const std::string& plugin, const std::string& why) {
  std::string stray;
  for (std::uint32_t i = 0; i < declared.size; ++i) {
    const ablate::OptionInfo& info = declared.data[i];
    if (std::find(names.begin(), names.end(), info.name) == names.end() || !differs_from_default(o, info)) continue;
    stray += (stray.empty() ? "" : ", ") + std::string(info.name);
  }
  if (!stray.empty())
    throw ablate::Error(plugin + ": " + stray + ": not with task.tokenizer (" + why + ")",
                        "remove them, and set the tokenizer's own options under task.tokenizer");
}

}  // namespace ablate_text
