// What made a run, beyond its spec: Ablate's compute version and every plugin's kind/name,
// version and a hash of its library file. Recorded in run.h5 (`plugin_code`, `code_id`), so that
// a sweep reruns finished runs whose code has changed, `ablate run --resume` never continues a
// run with other code, and `ablate compare` says when an arm pools runs of different code. And
// the data it read: the content hash of every data file its task names (`data_files`), so that
// a corpus edited after training is never silently read as the one the run learned from.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "plugin_host/plugin_registry.hpp"
#include "spec/experiment_spec.hpp"

namespace ablate::train {

// Bump when the same spec and plugins would compute different numbers (model wiring, ops,
// autograd, optimizer, initialisation, data order): results of other versions are then rerun.
inline constexpr int kComputeVersion = 1;

struct CodeIdentity {
  std::vector<std::string> parts;  // "ablate compute 1", then "kind/name version <hash>" per plugin slot
  std::string id;                  // FNV-1a 64 of the parts, 16 hex digits ("" in files written before it)
};

CodeIdentity code_identity(const spec::ExperimentSpec& spec, const PluginRegistry& registry);

// For messages: the parts of `now` that `recorded` lacks, with the recorded part of the same
// plugin beside them: "ffn/swiglu 1.0.1 1a2b.. (was 1.0.0 9f8e..)"; "unknown (...)" for a file
// without code identity.
std::string code_difference(const std::vector<std::string>& recorded, const std::vector<std::string>& now);

// Every task option whose value names a regular file (task.file, ...), with the content's hash:
// "task.file=PATH 0123456789abcdef", in option order; an option whose value is a glob of files
// (task.shards) gives one such entry per file it matches. Files over 64 MiB are hashed by their
// size and 64 blocks of 64 KiB spread over them ("s2000000000:0123456789abcdef"), not whole: a
// 2 GB corpus is checked at every start in milliseconds. A path is as the spec writes it (relative
// to the current directory, as the task reads it).
std::vector<std::string> data_identity(const spec::ExperimentSpec& spec);

// What a command takes from a run's data files (check_data_unchanged).
enum class DataUse {
  Examples,  // the run's examples: a resumed run, an evaluation of a split
  Text,      // only how to read text (the vocabularies): export, translate, generate, eval --data
};

// Checks each data file `recorded` (RunInfo::data_files) names against its bytes now. A changed
// file ("task.file PATH changed since the run read it") is refused (UsageError; `doing` says what:
// "cannot evaluate RUN_DIR") when `use` takes examples from it (its splits would be drawn anew from
// other text), or when the run keeps no vocabularies (`kept`: its tokenizer files, none in runs
// made before they were kept) and the task would rebuild them from the new text; otherwise it is
// returned as a warning to print, naming the file and the kept files read instead. A file missing
// now is the task's to report; older runs record none.
std::vector<std::string> check_data_unchanged(const std::vector<std::string>& recorded, const spec::ExperimentSpec& spec,
                                              const std::string& doing, DataUse use,
                                              const std::vector<std::filesystem::path>& kept);

}  // namespace ablate::train
