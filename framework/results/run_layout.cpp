// The run file's vocabulary (run_file.hpp): statuses and masks as text, slot paths, the time
// stamp format, and the validation of a RunLayout before anything is written.
#include <unistd.h>

#include <ctime>
#include <initializer_list>
#include <set>
#include <tuple>

#include "ablate/error.hpp"
#include "results/run_file.hpp"

namespace ablate::results {
namespace {

constexpr const char* kLayoutHint = "fix the RunLayout given to RunWriter::create (docs/results-format.md lists the rules)";

[[noreturn]] void bad(const std::string& what) { throw Error("invalid run layout: " + what, kLayoutHint); }

// A dataset name: [A-Za-z0-9_.-]+, not starting with '.'.
void check_name(const std::string& what, const std::string& name) {
  if (name.empty()) bad(what + ": the name is empty");
  if (name.front() == '.') bad(what + " '" + name + "': a name cannot start with '.'");
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) bad(what + " '" + name + "': use only letters, digits, '_', '.' and '-'");
  }
}

void check_names(const std::string& what, const std::vector<std::string>& names, const std::set<std::string>& reserved) {
  std::set<std::string> seen;
  for (const std::string& n : names) {
    check_name(what, n);
    if (reserved.count(n)) bad(what + " '" + n + "': the name is reserved");
    if (!seen.insert(n).second) bad(what + " '" + n + "' is declared twice");
  }
}

void check_stack_kind(const std::string& what, const std::string& stack, const std::string& kind) {
  if (stack != "encoder" && stack != "decoder") bad(what + ": stack '" + stack + "' is not one of encoder, decoder");
  if (kind != "self" && kind != "cross") bad(what + ": kind '" + kind + "' is not one of self, cross");
}

void check_positive(const std::string& what, const char* field, std::int64_t v) {
  if (v < 1) bad(what + ": " + field + " must be at least 1, not " + std::to_string(v));
}

void check_probe_side(const std::string& side, const ProbeTokens& t, std::int64_t examples) {
  const std::string what = "probe " + side;
  if (t.length < 0) bad(what + ": length " + std::to_string(t.length) + " is negative");
  if (static_cast<std::int64_t>(t.ids.size()) != examples * t.length)
    bad(what + ": ids has " + std::to_string(t.ids.size()) + " values, expected [E=" + std::to_string(examples) +
        ", L=" + std::to_string(t.length) + "]");
  if (static_cast<std::int64_t>(t.lengths.size()) != examples)
    bad(what + ": lengths has " + std::to_string(t.lengths.size()) + " values, expected E=" + std::to_string(examples));
  for (std::int32_t n : t.lengths)
    if (n < 0 || n > t.length) bad(what + ": a length of " + std::to_string(n) + " is outside 0.." + std::to_string(t.length));
  if (static_cast<std::int64_t>(t.texts.size()) != examples)
    bad(what + ": texts has " + std::to_string(t.texts.size()) + " entries, expected E=" + std::to_string(examples) +
        " (\"\" where there is no text)");
}

}  // namespace

// The value of `all` that to_string names `text`; else an Error naming `what` and listing them.
template <class E>
E parse_named(std::string_view text, std::initializer_list<E> all, const char* what) {
  std::string names;
  for (E e : all) {
    if (text == to_string(e)) return e;
    names += std::string(names.empty() ? "" : ", ") + to_string(e);
  }
  throw Error("unknown " + std::string(what) + " '" + std::string(text) + "'", "it is one of " + names);
}

const char* to_string(RunStatus s) {
  switch (s) {
    case RunStatus::Running: return "running";
    case RunStatus::Completed: return "completed";
    case RunStatus::Failed: return "failed";
    case RunStatus::Diverged: return "diverged";
    case RunStatus::Interrupted: return "interrupted";
  }
  return "unknown";
}

RunStatus parse_run_status(std::string_view text) {
  return parse_named(text,
                     {RunStatus::Running, RunStatus::Completed, RunStatus::Failed, RunStatus::Diverged, RunStatus::Interrupted},
                     "run status");
}

const char* to_string(AttentionMask m) {
  switch (m) {
    case AttentionMask::None: return "none";
    case AttentionMask::Causal: return "causal";
    case AttentionMask::KeyPadding: return "key_padding";
    case AttentionMask::CausalKeyPadding: return "causal+key_padding";
  }
  return "unknown";
}

AttentionMask parse_attention_mask(std::string_view text) {
  return parse_named(text,
                     {AttentionMask::None, AttentionMask::Causal, AttentionMask::KeyPadding, AttentionMask::CausalKeyPadding},
                     "attention mask");
}

namespace {
constexpr const char* kIso8601 = "%Y-%m-%dT%H:%M:%SZ";
}  // namespace

std::string utc_now_iso8601() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, kIso8601, &tm);
  return buf;
}

double iso8601_seconds(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), kIso8601, &tm);
  return end && *end == '\0' ? static_cast<double>(timegm(&tm)) : 0.0;
}

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 && buf[0] ? std::string(buf) : std::string("unknown");
}

std::string AttentionSlot::path() const { return "/attention/" + stack + "/" + kind + "/layer_" + std::to_string(layer); }
std::string EntropySlot::path() const {
  return "/stats/attention_entropy/" + stack + "/" + kind + "/layer_" + std::to_string(layer);
}

void validate(const RunLayout& l) {
  check_names("train metric", l.train_metrics, {"step"});
  check_names("eval metric", l.eval_metrics, {"step"});

  const std::int64_t e = l.probe.examples;
  if (e < 0) bad("probe: examples " + std::to_string(e) + " is negative");
  check_probe_side("src", l.probe.src, e);
  check_probe_side("tgt", l.probe.tgt, e);

  std::set<std::tuple<std::string, std::string, std::int64_t>> seen;
  for (std::size_t i = 0; i < l.attention.size(); ++i) {
    const AttentionSlot& s = l.attention[i];
    const std::string what = "attention slot " + std::to_string(i) + " (" + s.path() + ")";
    check_stack_kind(what, s.stack, s.kind);
    if (s.layer < 0) bad(what + ": layer " + std::to_string(s.layer) + " is negative");
    check_positive(what, "heads", s.heads);
    check_positive(what, "queries", s.queries);
    check_positive(what, "keys", s.keys);
    for (const std::string* side : {&s.query_tokens, &s.key_tokens})
      if (!side->empty() && *side != "src" && *side != "tgt")
        bad(what + ": token axis '" + *side + "' is not one of src, tgt, \"\"");
    if (!seen.insert({s.stack, s.kind, s.layer}).second) bad(what + " is declared twice");
    if (e < 1) bad(what + ": attention logs need a probe batch (probe.examples >= 1)");
  }
  if (l.decode.layers < 0) bad("decode: layers " + std::to_string(l.decode.layers) + " is negative");
  if (l.decode.layers > 0) {
    check_positive("decode", "heads", l.decode.heads);
    check_positive("decode", "steps", l.decode.steps);
    check_positive("decode", "keys", l.decode.keys);
    if (e < 1) bad("decode: decode logs need a probe batch (probe.examples >= 1)");
  }

  std::vector<std::string> names;
  for (const StatsTable& s : l.stats) {
    names.push_back(s.name);
    const std::string what = "stats table '" + s.name + "'";
    if (s.columns.empty()) bad(what + ": it has no columns");
    std::set<std::string> cols;
    for (const std::string& c : s.columns) {
      if (c.empty() || c.find('\0') != std::string::npos) bad(what + ": a column name is empty or contains NUL");
      if (!cols.insert(c).second) bad(what + ": column '" + c + "' is declared twice");
    }
  }
  check_names("stats table", names, {"steps", "attention_entropy"});
  seen.clear();
  for (std::size_t i = 0; i < l.entropy.size(); ++i) {
    const EntropySlot& s = l.entropy[i];
    const std::string what = "entropy slot " + std::to_string(i) + " (" + s.path() + ")";
    check_stack_kind(what, s.stack, s.kind);
    if (s.layer < 0) bad(what + ": layer " + std::to_string(s.layer) + " is negative");
    check_positive(what, "heads", s.heads);
    if (!seen.insert({s.stack, s.kind, s.layer}).second) bad(what + " is declared twice");
  }
  if (l.samples.count < 0) bad("samples: count " + std::to_string(l.samples.count) + " is negative");
  check_positive("samples", "text_bytes", l.samples.text_bytes);
}

const std::vector<double>* MetricTable::find(std::string_view name) const {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return &columns[i];
  return nullptr;
}

const std::vector<double>& MetricTable::column(std::string_view name) const {
  if (const std::vector<double>* c = find(name)) return *c;
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  throw Error("no metric '" + std::string(name) + "' in this table", "the metrics recorded are: " + known);
}

}  // namespace ablate::results
