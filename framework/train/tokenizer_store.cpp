// TokenizerStore (tokenizer_store.hpp): the spec's tokenizer plugin behind a wrapper that restores
// it from the run folder or the cache, or trains it once and caches what it learned.
#include "train/tokenizer_store.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <system_error>

#include "ablate/error.hpp"
#include "core/atomic_file.hpp"
#include "core/file_lock.hpp"
#include "core/text.hpp"
#include "plugin_host/plugin_call.hpp"

namespace ablate::train {
namespace fs = std::filesystem;

namespace {

constexpr const char* kMagic = "ablate-tokenizer 1 ";

fs::path run_file_of(const fs::path& run_dir, const std::string& role) { return run_dir / ("tokenizer-" + role + ".bin"); }

std::string stored_text(const StoredTokenizer& t) {
  return kMagic + t.plugin + " " + t.version + " " + t.key + "\n" + t.options + "\n" + t.bytes;
}

// "NAME=VALUE;..." of a plugin reference's options (a map: in name order), and back.
std::string options_text(const std::map<std::string, std::string>& options) {
  std::string out;
  for (const auto& [k, v] : options) out += k + "=" + v + ";";
  return out;
}
std::map<std::string, std::string> options_map(const std::string& text) {
  std::map<std::string, std::string> options;
  for (std::size_t pos = 0; pos < text.size();) {
    const std::size_t end = std::min(text.find(';', pos), text.size()), eq = text.find('=', pos);
    if (eq < end) options[text.substr(pos, eq - pos)] = text.substr(eq + 1, end - eq - 1);
    pos = end + 1;
  }
  return options;
}

// Stored options as the plugin declares its options now: one the text lacks (an option added to
// the plugin since the file was written) takes its default, so the file still names the tokenizer
// it holds.
std::string with_defaults(const std::string& text, const PluginDescriptor& d) {
  std::map<std::string, std::string> options = options_map(text);
  for (const OptionDescriptor& o : d.options)
    if (o.default_value && !options.count(o.name)) options[o.name] = *o.default_value;
  return options_text(options);
}

// The options line of a task's own table (TokenizerStore::keep): its role, so that a file renamed
// to another role is refused.
std::string own_options(const std::string& role) { return "role=" + role + ";"; }
// The key of a task's own table: the FNV-1a hash of its bytes (an edit of the file is seen).
std::string bytes_key(const std::string& bytes) { return hex16(fnv1a64(bytes.data(), bytes.size())); }

}  // namespace

fs::path tokenizer_cache_dir() {
  if (const char* d = std::getenv("ABLATE_CACHE_DIR"); d && *d) return fs::path(d) / "tokenizers";
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return fs::path(d) / "ablate" / "tokenizers";
  if (const char* d = std::getenv("HOME"); d && *d) return fs::path(d) / ".cache" / "ablate" / "tokenizers";
  return {};
}

StoredTokenizer read_stored_tokenizer(const fs::path& file) {
  const std::string text = read_small_file(file);
  const std::size_t end = text.find('\n'), options_end = end == std::string::npos ? end : text.find('\n', end + 1);
  std::vector<std::string> head;
  std::istringstream words(end == std::string::npos ? std::string() : text.substr(0, end));
  for (std::string w; words >> w;) head.push_back(w);
  if (!text.starts_with(kMagic) || head.size() != 5 || options_end == std::string::npos)
    throw UsageError(
        file.string() + " is not a tokenizer file of Ablate (its first line is not '" + kMagic +
            "tokenizer/NAME VERSION KEY', then a line of options)",
        "it is written by `ablate run` beside run.h5 and by `ablate tokenize`; remove it to train the tokenizer again");
  return StoredTokenizer{head[2], head[3], head[4], text.substr(end + 1, options_end - end - 1), text.substr(options_end + 1)};
}

std::vector<fs::path> run_tokenizer_files(const fs::path& run_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(run_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("tokenizer-") && name.ends_with(".bin")) out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::shared_ptr<Tokenizer> restore_tokenizer(const PluginRegistry& registry, const fs::path& file) {
  const StoredTokenizer t = read_stored_tokenizer(file);
  if (!t.plugin.starts_with(std::string(Tokenizer::kKind) + "/"))
    throw UsageError(file.string() + " holds " + t.plugin + "'s own vocabulary, not a tokenizer plugin's model",
                     "a run without task.tokenizer reads text with its task's own `tokens` options; to make token shards "
                     "give --tokenizer (e.g. '{plugin: word}') and --train");
  std::shared_ptr<Tokenizer> made = registry.create<Tokenizer>(t.plugin.substr(t.plugin.find('/') + 1), options_map(t.options));
  plugin_call(*made, "load", [&] { made->load(t.bytes); });
  return made;
}

// What the task sees: the plugin's tokenizer, every call guarded (a throw names the plugin), with
// train() answered by the run folder, the cache, or the plugin itself (then cached).
class TokenizerStore::Managed final : public Tokenizer {
 public:
  // `code`: the plugin file's hash, part of the cache key (a rebuilt plugin trains again).
  Managed(std::shared_ptr<Tokenizer> inner, std::string plugin, std::string version, std::string code, std::string options,
          std::string role, std::optional<StoredTokenizer> pinned, fs::path pinned_file)
      : inner_(std::move(inner)),
        plugin_(std::move(plugin)),
        version_(std::move(version)),
        code_(std::move(code)),
        options_(std::move(options)),
        role_(std::move(role)),
        pinned_(std::move(pinned)),
        pinned_file_(std::move(pinned_file)) {
    if (pinned_) {
      if (pinned_->plugin != plugin_)
        throw UsageError(
            pinned_file_.string() + " holds a " + pinned_->plugin + " tokenizer, but the spec's task.tokenizer is " + plugin_,
            "the run folder belongs to another spec; evaluate it with its own spec (run.h5 has it)");
      plugin_call(*inner_, "load", [&] { inner_->load(pinned_->bytes); });
      key_ = pinned_->key;
      trained_ = true;
    }
  }

  // A run's own tokenizer is not trained again (the run checked its data files are unchanged first).
  void train(const std::vector<std::string>& texts) override {
    if (pinned_) return;
    if (trained_) throw Error("tokenizer " + role_ + " trained twice", "a task trains each tokenizer once");
    const std::string key = key_ = key_of(texts);
    trained_ = true;
    const fs::path dir = tokenizer_cache_dir();
    std::error_code ec;
    if (dir.empty() || (fs::create_directories(dir, ec), ec)) {
      plugin_call(*inner_, "train", [&] { inner_->train(texts); });
      return;
    }
    const fs::path file = dir / (plugin_.substr(plugin_.find('/') + 1) + "-" + key + ".bin");
    FileLock lock(fs::path(file.string() + ".lock"));  // the runs of a sweep wait for one training
    if (fs::exists(file, ec)) {
      try {
        const StoredTokenizer cached = read_stored_tokenizer(file);
        if (cached.key == key && cached.plugin == plugin_ && cached.version == version_) {
          plugin_call(*inner_, "load", [&] { inner_->load(cached.bytes); });
          return;
        }
      } catch (const Error&) {
        // a damaged cache entry is trained again and replaced
      }
    }
    plugin_call(*inner_, "train", [&] { inner_->train(texts); });
    write_file_atomically(file, stored_text(stored()));
  }
  std::string save() const override {
    return plugin_call(*inner_, "save", [&] { return inner_->save(); });
  }
  void load(const std::string& bytes) override {
    plugin_call(*inner_, "load", [&] { inner_->load(bytes); });
  }
  std::int64_t vocab_size() const override {
    return plugin_call(*inner_, "vocab_size", [&] { return inner_->vocab_size(); });
  }
  std::vector<std::int32_t> encode(std::string_view text, std::int64_t* unknown) const override {
    return plugin_call(*inner_, "encode", [&] { return inner_->encode(text, unknown); });
  }
  std::string decode(const std::vector<std::int32_t>& ids) const override {
    return plugin_call(*inner_, "decode", [&] { return inner_->decode(ids); });
  }
  bool samples() const override {
    return plugin_call(*inner_, "samples", [&] { return inner_->samples(); });
  }
  std::vector<std::int32_t> encode_sampled(std::string_view text, std::uint64_t key) const override {
    return plugin_call(*inner_, "encode_sampled", [&] { return inner_->encode_sampled(text, key); });
  }

  bool trained() const { return trained_; }
  // The file it was restored from (the run folder's, or a file another command wrote), or empty.
  fs::path pinned_file() const { return pinned_ ? pinned_file_ : fs::path(); }
  StoredTokenizer stored() const { return StoredTokenizer{plugin_, version_, key_, options_, save()}; }

 private:
  // FNV-1a over the plugin, its version, code and options, and each text (with its terminator:
  // texts stay apart).
  std::string key_of(const std::vector<std::string>& texts) const {
    const std::string head = plugin_ + " " + version_ + " " + code_ + " " + options_;
    std::uint64_t h = fnv1a64(head.data(), head.size() + 1);
    for (const std::string& t : texts) h = fnv1a64(t.data(), t.size() + 1, h);
    return hex16(h);
  }

  std::shared_ptr<Tokenizer> inner_;
  std::string plugin_, version_, code_, options_, role_, key_;
  std::optional<StoredTokenizer> pinned_;
  fs::path pinned_file_;
  bool trained_ = false;
};

TokenizerStore::TokenizerStore(const spec::ExperimentSpec& spec, const PluginRegistry& registry, fs::path run_dir)
    : spec_(spec), registry_(registry), run_dir_(std::move(run_dir)) {}

std::shared_ptr<Tokenizer> TokenizerStore::make(const std::string& role, std::optional<StoredTokenizer> pinned,
                                                const fs::path& file) {
  const spec::PluginRef& ref = spec_.task_tokenizer;
  const PluginDescriptor& d = registry_.find(Tokenizer::kKind, ref.name);
  auto made = std::make_shared<Managed>(registry_.create<Tokenizer>(ref.name, ref.options), d.id(), d.version, d.code_hash,
                                        options_text(ref.options), role, std::move(pinned), file);
  made_[role] = made;
  return made;
}

std::shared_ptr<Tokenizer> TokenizerStore::tokenizer(const std::string& role) {
  if (auto it = made_.find(role); it != made_.end()) return it->second;
  std::optional<StoredTokenizer> pinned;
  const fs::path file = run_dir_.empty() ? fs::path() : run_file_of(run_dir_, role);
  std::error_code ec;
  if (!file.empty() && fs::exists(file, ec)) pinned = read_stored_tokenizer(file);
  return make(role, std::move(pinned), file);
}

std::shared_ptr<Tokenizer> TokenizerStore::stored(const std::string& role, const fs::path& file) {
  if (auto it = made_.find(role); it != made_.end()) return it->second;
  const spec::PluginRef& ref = spec_.task_tokenizer;
  const PluginDescriptor& d = registry_.find(Tokenizer::kKind, ref.name);
  const std::string options = with_defaults(options_text(ref.options), d);
  StoredTokenizer given = read_stored_tokenizer(file);
  if (given.plugin != d.id() || with_defaults(given.options, d) != options)
    throw UsageError(file.string() + " holds " + given.plugin + " with options '" + given.options +
                         "', but the spec's task.tokenizer is " + d.id() + " with options '" + options + "'",
                     "set task.tokenizer to what the shards were made with (the file's second line lists its options), "
                     "or make the shards again with `ablate tokenize --tokenizer` and the spec's tokenizer");
  const fs::path own = run_dir_.empty() ? fs::path() : run_file_of(run_dir_, role);
  std::error_code ec;
  if (!own.empty() && fs::exists(own, ec)) {
    const StoredTokenizer kept = read_stored_tokenizer(own);
    if (kept.key != given.key)
      throw UsageError(file.string() + " is not the tokenizer the run read its shards with (" + own.string() + ": key " +
                           kept.key + ", the file now: " + given.key + ")",
                       "the shards were made again since the run: evaluate them with a new run");
  }
  return make(role, std::move(given), file);
}

bool TokenizerStore::keep(const std::string& role, const std::shared_ptr<Tokenizer>& own) {
  if (made_.count(role) || own_.count(role))
    throw Error("tokenizer " + role + " kept twice", "a task keeps each of its vocabularies once");
  const fs::path file = run_dir_.empty() ? fs::path() : run_file_of(run_dir_, role);
  std::error_code ec;
  const bool stored = !file.empty() && fs::exists(file, ec);
  if (stored) {
    const PluginDescriptor& d = registry_.find(Task::kKind, spec_.task.name);
    const StoredTokenizer t = read_stored_tokenizer(file);
    if (t.plugin != d.id() || t.options != own_options(role))
      throw UsageError(file.string() + " holds " + t.plugin + " '" + t.options + "', not " + d.id() + "'s own table of role " +
                           role + " (the spec names no task.tokenizer)",
                       "the run folder's files belong to another run or were swapped; restore them from a copy of the run "
                       "folder, or evaluate the run with its own spec (run.h5 has it)");
    try {
      if (t.key != bytes_key(t.bytes)) throw Error("its content hash is not the " + t.key + " its first line records");
      own->load(t.bytes);
    } catch (const Error& e) {
      throw UsageError(file.string() + " is damaged: " + e.what(),
                       "it is the run's vocabulary as training read it; restore it from a copy of the run folder");
    }
  }
  own_[role] = Own{own, stored};
  return stored;
}

void TokenizerStore::save_to(const fs::path& run_dir) const {
  const auto from_here = [&](const fs::path& pinned, const fs::path& file) {
    std::error_code ec;
    return !pinned.empty() && fs::equivalent(pinned, file, ec);
  };
  for (const auto& [role, t] : made_) {
    const fs::path file = run_file_of(run_dir, role);
    if (t->trained() && !from_here(t->pinned_file(), file)) write_file_atomically(file, stored_text(t->stored()));
  }
  if (own_.empty()) return;
  const PluginDescriptor& d = registry_.find(Task::kKind, spec_.task.name);
  for (const auto& [role, own] : own_) {
    if (own.from_run_dir && from_here(run_file_of(run_dir_, role), run_file_of(run_dir, role))) continue;
    const std::string bytes = plugin_call(*own.tokenizer, "save", [&] { return own.tokenizer->save(); });
    write_file_atomically(run_file_of(run_dir, role),
                          stored_text({d.id(), d.version, bytes_key(bytes), own_options(role), bytes}));
  }
}

std::unique_ptr<TokenizerStore> prepare_task(Task& task, const spec::ExperimentSpec& spec, const PluginRegistry& registry,
                                             const fs::path& run_dir) {
  auto store = std::make_unique<TokenizerStore>(spec, registry, run_dir);
  // Each call into the store keeps what it refuses (TokenizerStore::refused).
  const auto host = [made = store.get()](auto call) {
    try {
      return call(*made);
    } catch (const UsageError&) {
      made->refused = std::current_exception();
      throw;
    }
  };
  TaskContext context;
  context.keep_tokenizer = [host](const std::string& role, const std::shared_ptr<Tokenizer>& own) {
    return host([&](TokenizerStore& s) { return s.keep(role, own); });
  };
  if (!spec.task_tokenizer.name.empty()) {
    context.tokenizer = [host](const std::string& role) { return host([&](TokenizerStore& s) { return s.tokenizer(role); }); };
    context.stored_tokenizer = [host](const std::string& role, const std::string& file) {
      return host([&](TokenizerStore& s) { return s.stored(role, file); });
    };
  }
  try {
    plugin_call(task, "prepare", [&] { task.prepare(context); });
  } catch (...) {
    if (store->refused) std::rethrow_exception(store->refused);
    throw;
  }
  return store;
}

}  // namespace ablate::train
