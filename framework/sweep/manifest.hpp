// The sweep directory's manifest, `sweep.yaml`: every run the directory has held (across edits of
// the spec), with its settings, folder and, once submitted, its Slurm job; and the lock that keeps
// two `ablate sweep` commands from driving one directory at the same time.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "analysis/run_summary.hpp"
#include "core/file_lock.hpp"
#include "sweep/sweep_plan.hpp"

namespace ablate::sweep {

inline constexpr const char* kManifestFile = analysis::kSweepManifestFile;

struct ManifestRun {
  std::string id;
  std::string name;    // the readable name, "block=pre_norm,seed=2"
  std::string folder;  // under the sweep directory
  std::vector<std::pair<std::string, std::string>> settings;
  std::string added;      // ISO-8601 UTC, when it first entered the manifest
  std::string slurm_job;  // "<job>_<array index>" of its last submission; "" if never submitted
};

struct Manifest {
  std::string experiment;
  std::string spec_file;                // of the last `ablate sweep` that changed the manifest
  std::vector<std::string> overrides;   // its --set
  std::string baseline;                 // the spec's base configuration as an arm, "key=value,..."; "" if it is
                                        // not one of the sweep's arms (`ablate compare` takes it as the baseline)
  std::vector<std::string> tuned_keys;  // sweep.tune's keys, set per arm: no arm axes for `ablate compare`
  std::vector<ManifestRun> runs;        // in the order they were added

  ManifestRun* find(const std::string& id);
  // Adds the plan's runs that are not in the manifest yet; returns how many were added.
  std::size_t merge(const SweepPlan& plan);
};

// The manifest in `dir`; an empty one (no runs) if there is none. Throws ablate::Error naming
// the file and the problem if it exists but is not a manifest.
Manifest read_manifest(const std::filesystem::path& dir);
// Writes it atomically (temporary file, fsync, rename).
void write_manifest(const std::filesystem::path& dir, const Manifest& manifest);

// An exclusive lock on a sweep directory (`.sweep.lock`), held while a sweep runs or submits
// there. Throws UsageError when another `ablate sweep` holds it.
class SweepLock {
 public:
  explicit SweepLock(const std::filesystem::path& dir);

 private:
  FileLock lock_;
};

}  // namespace ablate::sweep
