// Run files -> RunSummary (run_summary.hpp): the one place where the analysis library reads HDF5
// (through results::RunReader) and YAML (the resolved spec, through yaml-cpp).
#include "analysis/run_summary.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <set>

#include "ablate/error.hpp"
#include "results/run_file.hpp"

namespace ablate::analysis {
namespace fs = std::filesystem;

std::vector<fs::path> find_runs(const std::vector<fs::path>& paths) {
  std::set<fs::path> found;
  for (const fs::path& p : paths) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      found.insert(fs::weakly_canonical(p));
      continue;
    }
    if (!fs::is_directory(p, ec)) {
      throw UsageError("no such run directory or run file: " + p.string(),
                       "pass the directory `ablate run --out` wrote to, or an experiment directory holding runs");
    }
    for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code probe;
      if ((name.starts_with(".") ||
           (name == kTuningRunsFolder && fs::exists(it->path().parent_path() / kSweepManifestFile, probe))) &&
          it->is_directory(ec)) {
        it.disable_recursion_pending();  // failed attempts a sweep set aside (.attempts/), its tuning runs
        continue;
      }
      if (name == "run.h5" && it->is_regular_file(ec)) found.insert(fs::weakly_canonical(it->path()));
    }
    if (ec) throw Error("cannot list " + p.string() + ": " + ec.message(), "check the directory's permissions");
  }
  return {found.begin(), found.end()};
}

namespace {

std::string flow_text(const YAML::Node& node) {
  YAML::Emitter e;
  e << YAML::Flow << node;
  return e.c_str();
}

void flatten(const YAML::Node& node, const std::string& key, std::map<std::string, std::string>& out) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      for (const auto& kv : node) {
        const std::string child = kv.first.as<std::string>();
        const std::string path = key.empty() ? child : key + "." + child;
        // A plugin reference: its name stands at the key itself, its options below it.
        if (child == "plugin" && !key.empty() && kv.second.IsScalar()) {
          out[key] = kv.second.Scalar();
        } else {
          flatten(kv.second, path, out);
        }
      }
      break;
    }
    case YAML::NodeType::Sequence: out[key] = flow_text(node); break;
    case YAML::NodeType::Scalar: out[key] = node.Scalar(); break;
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: out[key] = "null"; break;
  }
}

}  // namespace

std::map<std::string, std::string> flatten_spec(const std::string& yaml) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::Exception& e) {
    throw Error(std::string("resolved spec is not valid YAML: ") + e.what(), "the run file may be damaged; rerun the run");
  }
  if (!root.IsMap()) throw Error("resolved spec is not a YAML mapping", "the run file may be damaged; rerun the run");
  std::map<std::string, std::string> out;
  flatten(root, "", out);
  return out;
}

std::vector<EvalScores> evaluation_scores(const results::RunReader& run) {
  std::vector<std::pair<EvalScores, std::string>> texts;  // (record, its scores.json text)
  if (run.records_evaluations()) {
    for (const results::EvalRecord& e : run.evaluations()) texts.push_back({{e.name, e.checkpoint_step, {}}, e.scores});
  } else {
    std::error_code ec;
    const fs::path dir = run.path().parent_path() / "evals";
    if (fs::is_directory(dir, ec))
      for (const auto& entry : fs::directory_iterator(dir, ec))
        if (std::ifstream f{entry.path() / "scores.json"}) {
          std::ostringstream text;
          text << f.rdbuf();
          texts.push_back({{entry.path().filename().string(), -1, {}}, text.str()});
        }
  }
  std::vector<EvalScores> out;
  for (auto& [scores, text] : texts) {
    try {
      for (const auto& m : YAML::Load(text)["metrics"])  // JSON is YAML
        scores.metrics[m.first.as<std::string>()] = m.second.IsNull() ? std::nan("") : m.second.as<double>();
    } catch (const YAML::Exception& e) {
      throw Error(run.path().string() + ": cannot read the scores of evaluation '" + scores.name + "': " + e.what(),
                  "its record is damaged; evaluate the run again into another directory (ablate eval --out)");
    }
    out.push_back(std::move(scores));
  }
  return out;
}

RunSummary summarize(const results::RunReader& run) {
  RunSummary s;
  const results::RunInfo& info = run.info();
  s.run_id = info.run_id;
  s.code_id = info.code_id;
  s.path = run.path().string();
  s.status = results::to_string(run.state().status);
  try {
    s.config = flatten_spec(info.resolved_spec_yaml);
  } catch (const Error& e) {
    throw Error(s.path + ": " + e.what(), e.hint());
  }

  const results::MetricTable eval = run.metrics(results::MetricSplit::Eval);
  for (std::size_t m = 0; m < eval.names.size(); ++m) {
    const std::vector<double>& column = eval.columns[m];
    auto& curve = s.eval_curves[eval.names[m]];
    for (std::size_t r = 0; r < eval.steps.size() && r < column.size(); ++r) curve.emplace_back(eval.steps[r], column[r]);
    if (!column.empty()) s.final_metrics[eval.names[m]] = column.back();
  }

  for (const EvalScores& e : evaluation_scores(run))
    for (const auto& [metric, value] : e.metrics) s.final_metrics["evals/" + e.name + "/" + metric] = value;

  const results::MetricTable train = run.metrics(results::MetricSplit::Train);
  if (const auto* tps = train.find("tokens_per_s")) {
    std::vector<double> v;
    for (double x : *tps)
      if (std::isfinite(x)) v.push_back(x);
    s.tokens_per_s = median(v);
  }
  for (std::size_t k = 0; k < info.parameter_kinds.size() && k < info.parameter_counts.size(); ++k) {
    if (info.parameter_kinds[k] == "total") s.parameters = info.parameter_counts[k];
    if (info.parameter_kinds[k] == "non_embedding") s.non_embedding_parameters = info.parameter_counts[k];
  }
  const auto* tokens = train.find("tokens");
  const auto* flops = train.find("flops");
  if (tokens && flops && !tokens->empty() && !flops->empty() && tokens->back() > 0)
    s.flops_per_token = flops->back() / tokens->back();
  if (const auto* elapsed = train.find("elapsed_s"))
    for (std::size_t r = 0; r < train.steps.size() && r < elapsed->size(); ++r)
      if (std::isfinite((*elapsed)[r])) s.elapsed_s.emplace_back(train.steps[r], (*elapsed)[r]);
  return s;
}

}  // namespace ablate::analysis
