// `ablate tokenize`: text files encoded once into token shards (llm.c's format, token_shards.hpp)
// with a tokenizer plugin that is trained on the --train text (or restored from a tokenizer file),
// which is stored beside the shards. docs/data.md describes the files.
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <set>

#include "ablate/error.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "cli/spec_loading.hpp"
#include "core/atomic_file.hpp"
#include "core/text.hpp"
#include "plugin_host/plugin_call.hpp"
#include "ablate/token_shards.hpp"
#include "train/tokenizer_store.hpp"

namespace ablate::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

// --tokenizer '{plugin: NAME, OPTION: VALUE, ...}' (or just NAME) as a plugin reference, every
// declared option present (its default where not given) so the cache key matches a run's.
spec::PluginRef tokenizer_ref(const std::string& text, const PluginRegistry& registry) {
  const std::string expected = "expected --tokenizer NAME or '{plugin: NAME, OPTION: VALUE, ...}'";
  YAML::Node n;
  try {
    n = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw UsageError("ablate tokenize: --tokenizer is not YAML (" + e.msg + "); " + expected);
  }
  spec::PluginRef ref;
  if (n.IsScalar()) {
    ref.name = n.as<std::string>();
  } else if (n.IsMap() && n["plugin"] && n["plugin"].IsScalar()) {
    for (const auto& kv : n) {
      if (!kv.second.IsScalar())
        throw UsageError("ablate tokenize: --tokenizer option '" + kv.first.as<std::string>() + "' is not a scalar; " + expected);
      if (kv.first.as<std::string>() == "plugin")
        ref.name = kv.second.as<std::string>();
      else
        ref.options[kv.first.as<std::string>()] = kv.second.as<std::string>();
    }
  } else {
    throw UsageError("ablate tokenize: --tokenizer '" + text + "'; " + expected);
  }
  const PluginDescriptor& d = registry.find(Tokenizer::kKind, ref.name);  // PluginError for an unknown one
  for (const OptionDescriptor& o : d.options)
    if (!ref.options.count(o.name) && o.default_value) ref.options[o.name] = *o.default_value;
  return ref;
}

// The lines of `file`, each with its line break, checked as UTF-8 (FILE:LINE on a bad one).
template <class F>
void each_line(const fs::path& file, F&& f) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw UsageError("ablate tokenize: cannot read " + file.string(), "check the path");
  std::string line;
  for (std::int64_t number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // a UTF-8 byte order mark
    if (const std::size_t bad = first_invalid_utf8(line); bad != std::string::npos)
      throw UsageError(file.string() + ":" + std::to_string(number) + ": invalid UTF-8 at byte " + std::to_string(bad + 1) +
                           " of the line; expected UTF-8 text",
                       "convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)");
    line += '\n';
    f(line);
  }
}

}  // namespace

int cmd_tokenize(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options(
      "ablate tokenize --out DIR (--tokenizer SPEC --train FILE... | --tokenizer-file FILE) INPUT...\n\n"
      "Encodes each INPUT text file, line by line (a line break is a token, as a language model reads a file),\n"
      "into the token shard DIR/<INPUT name>.bin in llm.c's format (256 int32 header: magic 20240520, version 1\n"
      "for uint16 tokens or 2 for uint32, the token count), never holding a file in memory. The tokenizer is\n"
      "trained on the --train files' lines (cached as a run's would be), or restored from a tokenizer file (a\n"
      "run's tokenizer-ROLE.bin), and written to DIR/tokenizer-text.bin. Nothing is written over.\n"
      "Exit 0 done, 2 bad arguments or input (FILE:LINE), 3 plugin error.\n\n"
      "Options");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("out,o", po::value<std::string>(), "the directory of the shards (made if absent)")
      ("tokenizer,t", po::value<std::string>(), "the tokenizer: NAME or '{plugin: NAME, OPTION: VALUE, ...}' (as task.tokenizer)")
      ("train", po::value<std::vector<std::string>>()->composing(), "a text file to train the tokenizer on (repeatable)")
      ("tokenizer-file", po::value<std::string>(), "a trained tokenizer (a run's tokenizer-ROLE.bin) instead of --tokenizer")
      ("input", po::value<std::vector<std::string>>()->composing(), "a text file to encode (positional, repeatable)");
  // clang-format on
  add_spec_options(options, nullptr);
  po::variables_map vm;
  if (!parse_command("tokenize", options, args, Positional{"input", -1}, vm, out)) return kExitOk;  // --help
  const std::string usage = "usage: ablate tokenize --out DIR --tokenizer SPEC --train FILE INPUT...";
  if (!vm.count("out")) throw UsageError("ablate tokenize: no --out directory", usage);
  const std::vector<std::string> inputs = repeated(vm, "input"), train_files = repeated(vm, "train");
  if (inputs.empty()) throw UsageError("ablate tokenize: no INPUT file to encode", usage);
  if (vm.count("tokenizer") == vm.count("tokenizer-file"))
    throw UsageError("ablate tokenize: give either --tokenizer (with --train) or --tokenizer-file", usage);
  if (vm.count("tokenizer") && train_files.empty())
    throw UsageError("ablate tokenize: --tokenizer needs --train FILE (the text it learns from)", usage);
  if (vm.count("tokenizer-file") && !train_files.empty())
    throw UsageError("ablate tokenize: --train does not apply to a trained --tokenizer-file", "remove --train");

  const fs::path dir = vm["out"].as<std::string>();
  std::set<std::string> names;
  std::vector<fs::path> shards;
  for (const std::string& input : inputs) {
    if (const std::string problem = input_file_problem(input); !problem.empty())
      throw UsageError("ablate tokenize: " + input + ": " + problem, "give UTF-8 text files");
    const fs::path shard = dir / (fs::path(input).stem().string() + ".bin");
    if (!names.insert(shard.filename().string()).second)
      throw UsageError("ablate tokenize: two inputs make the shard " + shard.string(), "rename one of the inputs");
    std::error_code ec;
    if (fs::exists(shard, ec)) throw UsageError("ablate tokenize: " + shard.string() + " already exists", "choose another --out");
    shards.push_back(shard);
  }
  const fs::path stored = dir / "tokenizer-text.bin";
  std::error_code ec;
  if (fs::exists(stored, ec)) throw UsageError("ablate tokenize: " + stored.string() + " already exists", "choose another --out");

  const std::vector<fs::path> search_path = [&] {
    std::vector<fs::path> extra;
    for (const auto& p : spec_options(vm).plugin_paths) extra.emplace_back(p);
    return plugin_search_path(extra);
  }();
  PluginRegistry registry;
  registry.scan(search_path);
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<Tokenizer> tokenizer;
  spec::ExperimentSpec spec;  // only its task.tokenizer: a run's TokenizerStore trains and caches the tokenizer
  std::unique_ptr<train::TokenizerStore> store;
  if (vm.count("tokenizer")) {
    spec.task_tokenizer = tokenizer_ref(vm["tokenizer"].as<std::string>(), registry);
    store = std::make_unique<train::TokenizerStore>(spec, registry, fs::path());
    tokenizer = store->tokenizer("text");
  } else {
    tokenizer = train::restore_tokenizer(registry, vm["tokenizer-file"].as<std::string>());
  }
  if (plugin_call(*tokenizer, "samples", [&] { return tokenizer->samples(); }))
    throw UsageError("ablate tokenize: the tokenizer samples segmentations (alpha), but shards hold one segmentation of the text",
                     "give the tokenizer without alpha: subword sampling is for a translation or classification task's "
                     "training batches");
  if (store) {
    std::vector<std::string> texts;
    for (const std::string& f : train_files) each_line(f, [&](const std::string& line) { texts.push_back(line); });
    tokenizer->train(texts);
  }
  const std::int64_t vocab = plugin_call(*tokenizer, "vocab_size", [&] { return tokenizer->vocab_size(); });
  fs::create_directories(dir);
  if (store)
    store->save_to(dir);
  else
    fs::copy_file(vm["tokenizer-file"].as<std::string>(), stored);

  std::int64_t total = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ShardWriter shard(shards[i], vocab);
    each_line(inputs[i], [&](const std::string& line) {
      shard.add(plugin_call(*tokenizer, "encode", [&] { return tokenizer->encode(line, nullptr); }));
    });
    shard.finish();
    total += shard.tokens();
    out << shards[i].string() << ": " << shard.tokens() << " tokens (version " << shard.version() << ")\n";
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  out << "tokenized " << inputs.size() << " file(s), " << total << " tokens, vocabulary " << vocab << ", in " << seconds
      << " s; tokenizer: " << stored.string() << "\n";
  (void)err;
  return kExitOk;
}

}  // namespace ablate::cli
