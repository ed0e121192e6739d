// summary.csv and summary.json of `ablate compare` (report.hpp): every arm's counts and
// statistics at full precision (round-trip numbers, NaN as an empty field or null), for scripts.
#include "analysis/report.hpp"

#include <cmath>
#include <ostream>
#include <sstream>
#include <vector>

#include "core/text.hpp"

namespace ablate::analysis {

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (const char ch : s) {
    if (ch == '"') out += '"';
    out += ch;
  }
  return out + "\"";
}

std::string csv_number(double v) { return std::isnan(v) ? std::string() : number_text(v); }

}  // namespace

std::string summary_csv(const Comparison& c) {
  std::vector<std::string> head = {"arm", "key_label"};
  head.insert(head.end(), c.keys.begin(), c.keys.end());
  for (const char* name : {"baseline",
                           "runs",
                           "completed",
                           "diverged",
                           "failed",
                           "interrupted",
                           "running",
                           "missing_metric",
                           "censored",
                           "metric",
                           "summary",
                           "n",
                           "mean",
                           "std",
                           "delta",
                           "ci_low",
                           "ci_high",
                           "t",
                           "df",
                           "p",
                           "p_holm",
                           "paired",
                           "p_note",
                           "bootstrap_low",
                           "bootstrap_high",
                           "seeds_needed",
                           "tokens_per_s_mean",
                           "parameters",
                           "non_embedding_parameters",
                           "flops_per_token"})
    head.push_back(name);
  std::string out;
  const auto line = [&](const std::vector<std::string>& fields) {
    std::vector<std::string> quoted;
    for (const auto& f : fields) quoted.push_back(csv_field(f));
    out += join(quoted, ",") + "\n";
  };
  line(head);
  for (const auto& arm : c.arms) {
    std::vector<std::string> f = {arm.label, arm.key_label};
    for (const auto& key : c.keys) {
      const auto it = arm.values.find(key);
      f.push_back(it == arm.values.end() ? std::string() : it->second);
    }
    f.push_back(arm.is_baseline ? "true" : "false");
    for (const std::size_t n : {arm.n_runs, arm.n_completed, arm.n_diverged, arm.n_failed, arm.n_interrupted, arm.n_running,
                                arm.n_missing_metric, arm.n_censored})
      f.push_back(std::to_string(n));
    f.push_back(c.metric);
    f.push_back(c.summary.text());
    f.push_back(std::to_string(arm.n()));
    for (const double v :
         {arm.mean, arm.std, arm.delta, arm.test.ci_low, arm.test.ci_high, arm.test.t, arm.test.df, arm.test.p, arm.p_holm})
      f.push_back(csv_number(v));
    f.push_back(arm.is_baseline ? std::string() : arm.test.paired ? "true" : "false");
    f.push_back(arm.is_baseline ? std::string() : arm.test.note);
    f.push_back(csv_number(arm.bootstrap.low));
    f.push_back(csv_number(arm.bootstrap.high));
    f.push_back(arm.seeds_needed ? std::to_string(*arm.seeds_needed) : std::string());
    f.push_back(csv_number(arm.tokens_per_s_mean));
    for (const std::int64_t n : {arm.parameters, arm.non_embedding_parameters})
      f.push_back(n >= 0 ? std::to_string(n) : std::string());
    f.push_back(csv_number(arm.flops_per_token));
    line(f);
  }
  return out;
}

namespace {

std::string json_number(double v) { return std::isfinite(v) ? number_text(v) : std::string("null"); }

std::string json_strings(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const auto& s : items) quoted.push_back(json_quote(s));
  std::string out = "[";  // appended, not "[" + join(...): GCC 12 warns falsely (-Wrestrict) on that
  out += join(quoted, ", ");
  return out + "]";
}

std::string json_numbers(const std::vector<double>& values) {
  std::vector<std::string> items;
  for (double v : values) items.push_back(json_number(v));
  std::string out = "[";
  out += join(items, ", ");
  return out + "]";
}

// One arm of summary.json: "    {...}", its label, values, counts, statistics, test and runs.
void json_arm(std::ostream& out, const Arm& arm) {
  out << "    {\n";
  out << "      \"label\": " << json_quote(arm.label) << ",\n";
  out << "      \"key_label\": " << json_quote(arm.key_label) << ",\n";
  out << "      \"baseline\": " << (arm.is_baseline ? "true" : "false") << ",\n";
  std::vector<std::string> values;
  for (const auto& [k, v] : arm.values) values.push_back(json_quote(k) + ": " + json_quote(v));
  out << "      \"values\": {" << join(values, ", ") << "},\n";
  out << "      \"counts\": {\"runs\": " << arm.n_runs << ", \"completed\": " << arm.n_completed
      << ", \"diverged\": " << arm.n_diverged << ", \"failed\": " << arm.n_failed << ", \"interrupted\": " << arm.n_interrupted
      << ", \"running\": " << arm.n_running << ", \"missing_metric\": " << arm.n_missing_metric
      << ", \"censored\": " << arm.n_censored << "},\n";
  out << "      \"n\": " << arm.n() << ",\n";
  out << "      \"mean\": " << json_number(arm.mean) << ",\n";
  out << "      \"std\": " << json_number(arm.std) << ",\n";
  out << "      \"values_used\": " << json_numbers(arm.metric_values) << ",\n";
  out << "      \"delta\": " << json_number(arm.delta) << ",\n";
  if (arm.is_baseline) {
    out << "      \"test\": null,\n";
  } else {
    out << "      \"test\": {\"name\": " << (arm.test.paired ? "\"paired_t\"" : "\"welch_t\"")
        << ", \"t\": " << json_number(arm.test.t) << ", \"df\": " << json_number(arm.test.df)
        << ", \"p\": " << json_number(arm.test.p) << ", \"p_holm\": " << json_number(arm.p_holm) << ", \"ci\": ["
        << json_number(arm.test.ci_low) << ", " << json_number(arm.test.ci_high) << "]"
        << ", \"bootstrap_ci\": [" << json_number(arm.bootstrap.low) << ", " << json_number(arm.bootstrap.high) << "]"
        << ", \"seeds_needed\": " << (arm.seeds_needed ? std::to_string(*arm.seeds_needed) : "null")
        << ", \"note\": " << (arm.test.note.empty() ? "null" : json_quote(arm.test.note)) << "},\n";
  }
  out << "      \"tokens_per_s\": {\"mean\": " << json_number(arm.tokens_per_s_mean) << ", \"n\": " << arm.tokens_per_s_n
      << "},\n";
  const auto count = [](std::int64_t n) { return n >= 0 ? std::to_string(n) : std::string("null"); };
  out << "      \"compute\": {\"parameters\": " << count(arm.parameters)
      << ", \"non_embedding_parameters\": " << count(arm.non_embedding_parameters)
      << ", \"flops_per_token\": " << json_number(arm.flops_per_token) << "},\n";
  out << "      \"runs\": [";
  for (std::size_t r = 0; r < arm.runs.size(); ++r) {
    const ArmRun& run = arm.runs[r];
    out << (r == 0 ? "\n" : ",\n") << "        {\"run_id\": " << json_quote(run.run_id) << ", \"path\": " << json_quote(run.path)
        << ", \"status\": " << json_quote(to_string(run.status))
        << ", \"seed\": " << (run.seed.empty() ? "null" : json_quote(run.seed)) << ", \"value\": " << json_number(run.value)
        << ", \"censored\": " << (run.censored ? "true" : "false") << ", \"tokens_per_s\": " << json_number(run.tokens_per_s)
        << "}";
  }
  out << (arm.runs.empty() ? "]\n" : "\n      ]\n") << "    }";
}

// "factorial": null, {"defined": false, "note"}, or the model's main effects and terms.
void json_factorial(std::ostream& out, const FactorialAnalysis& f) {
  if (!f.defined) {
    out << "  \"factorial\": " << (f.note.empty() ? "null" : "{\"defined\": false, \"note\": " + json_quote(f.note) + "}")
        << ",\n";
  } else {
    out << "  \"factorial\": {\"defined\": true, \"observations\": " << f.observations << ", \"cells\": " << f.cells
        << ", \"interactions\": " << (f.interactions ? "true" : "false") << ", \"blocked\": " << (f.blocked ? "true" : "false")
        << ", \"df_resid\": " << json_number(f.df_resid) << ", \"residual_sd\": " << json_number(f.residual_sd)
        << ", \"note\": " << (f.note.empty() ? "null" : json_quote(f.note)) << ",\n    \"main_effects\": [";
    for (std::size_t i = 0; i < f.main_effects.size(); ++i) {
      const MainEffect& e = f.main_effects[i];
      out << (i ? ",\n" : "\n") << "      {\"factor\": " << json_quote(e.factor) << ", \"level\": " << json_quote(e.level)
          << ", \"reference\": " << json_quote(e.reference) << ", \"estimate\": " << json_number(e.estimate)
          << ", \"se\": " << json_number(e.se) << ", \"t\": " << json_number(e.t) << ", \"df\": " << json_number(e.df)
          << ", \"p\": " << json_number(e.p) << ", \"ci\": [" << json_number(e.ci_low) << ", " << json_number(e.ci_high)
          << "], \"seeds_per_cell_needed\": " << json_number(e.seeds_per_cell_needed) << "}";
    }
    out << "\n    ],\n    \"terms\": [";
    for (std::size_t i = 0; i < f.terms.size(); ++i) {
      const AnovaTerm& t = f.terms[i];
      out << (i ? ",\n" : "\n") << "      {\"name\": " << json_quote(t.name) << ", \"df\": " << json_number(t.df)
          << ", \"sum_sq\": " << json_number(t.sum_sq) << ", \"F\": " << json_number(t.f) << ", \"p\": " << json_number(t.p)
          << ", \"estimate\": " << json_number(t.estimate) << ", \"ci\": [" << json_number(t.ci_low) << ", "
          << json_number(t.ci_high) << "]}";
    }
    out << "\n    ]},\n";
  }
}

// "scaling": null, or the size keys, each series' points and fit, and the ranking statements.
void json_scaling(std::ostream& out, const ScalingAnalysis& s) {
  if (!s.defined()) {
    out << "  \"scaling\": null,\n";
    return;
  }
  out << "  \"scaling\": {\"keys\": " << json_strings(s.keys) << ", \"fit\": \"least squares of the value against E + A "
      << "N^-alpha\", \"series\": [";
  for (std::size_t i = 0; i < s.series.size(); ++i) {
    const ScaleSeries& series = s.series[i];
    out << (i ? ",\n" : "\n") << "    {\"label\": " << json_quote(series.label) << ", \"points\": [";
    for (std::size_t k = 0; k < series.points.size(); ++k) {
      const ScalePoint& p = series.points[k];
      out << (k ? ", " : "") << "{\"arm\": " << json_quote(p.arm) << ", \"size\": " << json_quote(p.size)
          << ", \"n\": " << json_number(p.n) << ", \"mean\": " << json_number(p.mean)
          << ", \"values\": " << json_numbers(p.values) << "}";
    }
    out << "], \"E\": " << json_number(series.fit.e) << ", \"A\": " << json_number(series.fit.a)
        << ", \"alpha\": " << json_number(series.fit.alpha) << ", \"alpha_interval\": [" << json_number(series.alpha_interval.low)
        << ", " << json_number(series.alpha_interval.high) << "], \"rss\": " << json_number(series.fit.rss)
        << ", \"next_n\": " << json_number(series.next_n) << ", \"note\": " << json_quote(series.note) << "}";
  }
  out << "\n  ], \"statements\": " << json_strings(s.statements) << "},\n";
}

}  // namespace

std::string summary_json(const Comparison& c) {
  std::ostringstream out;
  out << "{\n  \"format\": \"ablate-compare\",\n  \"format_version\": 2,\n";
  out << "  \"metric\": " << json_quote(c.metric) << ",\n";
  out << "  \"summary\": " << json_quote(c.summary.text()) << ",\n";
  out << "  \"value\": " << json_quote(c.value_label) << ",\n";
  out << "  \"higher_is_better\": " << (c.higher_is_better ? "true" : "false") << ",\n";
  out << "  \"keys\": " << json_strings(c.keys) << ",\n";
  out << "  \"baseline\": " << json_quote(c.arms.empty() ? std::string() : c.arms[c.baseline].label) << ",\n";
  out << "  \"alpha\": " << json_number(c.alpha) << ",\n";
  out << "  \"paired\": " << (c.paired ? "true" : "false") << ",\n";
  out << "  \"arms\": [";
  for (std::size_t a = 0; a < c.arms.size(); ++a) {
    out << (a == 0 ? "\n" : ",\n");
    json_arm(out, c.arms[a]);
  }
  out << (c.arms.empty() ? "],\n" : "\n  ],\n");
  json_factorial(out, c.factorial);
  json_scaling(out, c.scaling);
  out << "  \"notes\": " << json_strings(c.notes) << "\n}\n";
  return out.str();
}

}  // namespace ablate::analysis
