// sweep.yaml and the sweep lock (manifest.hpp).
#include "sweep/manifest.hpp"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "ablate/error.hpp"
#include "core/atomic_file.hpp"
#include "results/run_file.hpp"

namespace ablate::sweep {
namespace fs = std::filesystem;

inline constexpr const char* kFormat = "ablate-sweep";
inline constexpr int kFormatVersion = 1;

ManifestRun* Manifest::find(const std::string& id) {
  for (ManifestRun& r : runs)
    if (r.id == id) return &r;
  return nullptr;
}

std::size_t Manifest::merge(const SweepPlan& plan) {
  experiment = plan.experiment;
  spec_file = plan.spec_file.string();
  overrides = plan.overrides;
  std::size_t added = 0;
  const std::string now = results::utc_now_iso8601();
  for (const SweepRun& run : plan.runs) {
    if (find(run.id)) continue;
    runs.push_back({run.id, run.point.name, run.folder, run.point.settings, now, ""});
    ++added;
  }
  return added;
}

Manifest read_manifest(const fs::path& dir) {
  const fs::path file = dir / kManifestFile;
  Manifest m;
  std::error_code ec;
  if (!fs::exists(file, ec)) return m;
  auto bad = [&](const std::string& what) -> Error {
    return Error(
        "the sweep manifest " + file.string() + " is damaged: " + what,
        "it is written by `ablate sweep`; restore it, or move it away (the run folders are kept) and run the sweep again");
  };
  YAML::Node root;
  try {
    root = YAML::LoadFile(file.string());
  } catch (const YAML::Exception& e) {
    throw bad(e.what());
  }
  try {
    if (!root.IsMap() || root["format"].as<std::string>("") != kFormat) throw bad("it is not an ablate-sweep file");
    const int version = root["format_version"].as<int>(0);
    if (version != kFormatVersion)
      throw Error("the sweep manifest " + file.string() + " has format version " + std::to_string(version) +
                      ", this Ablate reads " + std::to_string(kFormatVersion),
                  "use the Ablate version that wrote it, or a new sweep directory (--out)");
    m.experiment = root["experiment"].as<std::string>("");
    m.spec_file = root["spec"].as<std::string>("");
    m.baseline = root["baseline"].as<std::string>("");
    if (const YAML::Node o = root["overrides"]; o && o.IsSequence())
      for (const auto& v : o) m.overrides.push_back(v.as<std::string>());
    if (const YAML::Node t = root["tuned_keys"]; t && t.IsSequence())
      for (const auto& v : t) m.tuned_keys.push_back(v.as<std::string>());
    const YAML::Node runs = root["runs"];
    if (runs && !runs.IsSequence()) throw bad("`runs` is not a list");
    if (runs) {
      for (const auto& r : runs) {
        ManifestRun run;
        run.id = r["id"].as<std::string>("");
        run.name = r["name"].as<std::string>("");
        run.folder = r["folder"].as<std::string>("");
        run.added = r["added"].as<std::string>("");
        run.slurm_job = r["slurm_job"].as<std::string>("");
        if (run.id.empty() || run.folder.empty())
          throw bad("run at line " + std::to_string(r.Mark().line + 1) + " has no id or folder");
        if (const YAML::Node s = r["settings"]; s && s.IsMap())
          for (const auto& kv : s) run.settings.emplace_back(kv.first.as<std::string>(), kv.second.as<std::string>());
        m.runs.push_back(std::move(run));
      }
    }
  } catch (const YAML::Exception& e) {
    throw bad(e.what());
  }
  return m;
}

void write_manifest(const fs::path& dir, const Manifest& m) {
  YAML::Emitter out;
  out << YAML::Comment("written by `ablate sweep`: every run this directory has held; state lives in each run's run.h5")
      << YAML::BeginMap << YAML::Key << "format" << YAML::Value << kFormat << YAML::Key << "format_version" << YAML::Value
      << kFormatVersion << YAML::Key << "experiment" << YAML::Value << m.experiment << YAML::Key << "spec" << YAML::Value
      << m.spec_file << YAML::Key << "overrides" << YAML::Value << YAML::Flow << m.overrides << YAML::Block << YAML::Key
      << "baseline" << YAML::Value << m.baseline;
  if (!m.tuned_keys.empty()) out << YAML::Key << "tuned_keys" << YAML::Value << YAML::Flow << m.tuned_keys << YAML::Block;
  out << YAML::Key << "runs" << YAML::Value << YAML::BeginSeq;
  for (const ManifestRun& r : m.runs) {
    out << YAML::BeginMap << YAML::Key << "id" << YAML::Value << r.id << YAML::Key << "name" << YAML::Value << r.name << YAML::Key
        << "folder" << YAML::Value << r.folder << YAML::Key << "settings" << YAML::Value << YAML::Flow << YAML::BeginMap;
    for (const auto& [k, v] : r.settings) out << YAML::Key << k << YAML::Value << v;
    out << YAML::EndMap << YAML::Block << YAML::Key << "added" << YAML::Value << r.added;
    if (!r.slurm_job.empty()) out << YAML::Key << "slurm_job" << YAML::Value << r.slurm_job;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  std::string text = out.c_str();
  text += "\n";
  write_file_atomically(dir / kManifestFile, text);
}

SweepLock::SweepLock(const fs::path& dir)
    : lock_(dir / ".sweep.lock", "another `ablate sweep` is running in " + dir.string(),
            "wait for it (or stop it); `ablate sweep SPEC --status` shows the runs meanwhile") {}

}  // namespace ablate::sweep
