// The trained tokenizers of a run (the spec's task.tokenizer, one per role a task asks for): what
// the host gives a task as TaskContext::tokenizer. A tokenizer the run folder already holds
// (tokenizer-ROLE.bin) is restored from it, so eval, export and a resume read text as training
// did; otherwise it is trained once per (plugin, version, options, training text) and cached, so
// the runs of a sweep share one training. A task's own vocabularies (TaskContext::keep_tokenizer)
// are kept in the same files. docs/data.md describes the files.
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ablate/task.hpp"
#include "ablate/tokenizer.hpp"
#include "plugin_host/plugin_registry.hpp"
#include "spec/experiment_spec.hpp"

namespace ablate::train {

// The directory trained tokenizers are cached in: $ABLATE_CACHE_DIR/tokenizers, else
// $XDG_CACHE_HOME/ablate/tokenizers, else $HOME/.cache/ablate/tokenizers; empty when none is set.
std::filesystem::path tokenizer_cache_dir();

// A tokenizer's file (in a run folder, the cache, `ablate tokenize`'s output): the line
// "ablate-tokenizer 1 tokenizer/NAME VERSION KEY", the line of its options "NAME=VALUE;..." and
// then the plugin's save() bytes. KEY is the 16-hex-digit FNV-1a hash of the plugin, its version,
// its file's hash, its options and the training texts.
struct StoredTokenizer {
  std::string plugin, version, key, options, bytes;
};
// Throws UsageError naming `file` when it is not such a file.
StoredTokenizer read_stored_tokenizer(const std::filesystem::path& file);
// The tokenizer a file holds, made by its plugin with its options and restored: ready to encode.
// Throws PluginError when the plugin is not installed, UsageError when the file holds a task's own
// vocabulary (no tokenizer plugin makes it).
std::shared_ptr<Tokenizer> restore_tokenizer(const PluginRegistry& registry, const std::filesystem::path& file);

// The tokenizer files (tokenizer-ROLE.bin) `run_dir` holds, in name order: a run that has them
// reads text with them (its vocabularies), whatever its data files hold now.
std::vector<std::filesystem::path> run_tokenizer_files(const std::filesystem::path& run_dir);

class TokenizerStore {
 public:
  // `run_dir` (may be empty: a new run, whose folder may hold leftovers of a killed start): where a
  // run's stored tokenizers are looked for.
  TokenizerStore(const spec::ExperimentSpec& spec, const PluginRegistry& registry, std::filesystem::path run_dir);
  // The tokenizer of `role` ([a-z]+), made on first ask: TaskContext::tokenizer.
  std::shared_ptr<Tokenizer> tokenizer(const std::string& role);
  // The tokenizer of `role` restored from `file` (TaskContext::stored_tokenizer): the spec's
  // plugin and options, or UsageError naming the file.
  std::shared_ptr<Tokenizer> stored(const std::string& role, const std::filesystem::path& file);
  // The task's own tokenizer of `role` (TaskContext::keep_tokenizer): loaded from the run folder's
  // tokenizer-ROLE.bin when it holds one (UsageError naming the file when that is not the task's
  // own vocabulary, or is damaged), else kept to be saved. True when loaded.
  bool keep(const std::string& role, const std::shared_ptr<Tokenizer>& own);
  // Writes each trained or kept tokenizer (tokenizer-ROLE.bin), atomically, but those restored from
  // the run folder itself.
  void save_to(const std::filesystem::path& run_dir) const;

  class Managed;  // the wrapper the task sees (tokenizer_store.cpp)

  // What the host's side of a TaskContext call (tokenizer, stored, keep) refused with a
  // UsageError (a run folder's file that is not the run's): prepare_task throws it as it is,
  // not as the task's fault, since it is about the files, not the task's options.
  std::exception_ptr refused;

 private:
  // The spec's tokenizer plugin for `role`, behind Managed: restored from `pinned` (read from
  // `file`) when given, else trained on the task's first train() call.
  std::shared_ptr<Tokenizer> make(const std::string& role, std::optional<StoredTokenizer> pinned,
                                  const std::filesystem::path& file);
  const spec::ExperimentSpec& spec_;
  const PluginRegistry& registry_;
  std::filesystem::path run_dir_;
  std::map<std::string, std::shared_ptr<Managed>> made_;
  struct Own {
    std::shared_ptr<Tokenizer> tokenizer;
    bool from_run_dir = false;  // loaded from run_dir_ (not written again)
  };
  std::map<std::string, Own> own_;
};

// Prepares `task` (Task::prepare, the one call the host makes before any other) with the spec's
// task.tokenizer, or with keep_tokenizer for a task reading text with its own vocabularies:
// returns the store the tokenizers it asked for or kept live in. What the task throws becomes a
// PluginFault naming it.
std::unique_ptr<TokenizerStore> prepare_task(Task& task, const spec::ExperimentSpec& spec, const PluginRegistry& registry,
                                             const std::filesystem::path& run_dir);

}  // namespace ablate::train
