// Command dispatch for `ablate`: global --help/--version, the command table, and the one place
// where errors become messages on stderr and exit codes.
#include "cli/cli.hpp"

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <ostream>
#include <unistd.h>

#include "ablate/abi.hpp"
#include "ablate/error.hpp"
#include "ablate/version.hpp"
#include "cli/exit_codes.hpp"
#include "core/atomic_file.hpp"
#include "core/text.hpp"
#include "plugin_host/plugin_call.hpp"

namespace ablate::cli {
namespace po = boost::program_options;

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"compare",
       "compare the runs under directories: arms by varying keys, mean ± std over seeds, Δ vs a baseline, report files",
       cmd_compare},
      {"eval", "score a trained run's checkpoint on a whole split of its task: every metric, predictions written out", cmd_eval},
      {"export", "write a trained run's weights as safetensors, with its spec and vocabularies (for PyTorch)", cmd_export},
      {"generate", "continue prompts with a trained language model (greedy or sampled), one line per prompt", cmd_generate},
      {"plot", "draw curves per arm, attention heatmap grids, decode cross-attention and entropy figures (PNG/SVG)", cmd_plot},
      {"plugins", "list the discovered plugins: kind, name, version, file, description, options", cmd_plugins},
      {"inspect", "summarise a run file: status, last metrics, logged tensors; --follow a live run", cmd_inspect},
      {"keys", "list the spec's keys: type and range, default, meaning (--markdown: the tables of docs/spec-reference.md)",
       cmd_keys},
      {"run", "train an experiment spec into its run directory (resumable with --resume)", cmd_run},
      {"sweep", "run a spec's sweep (variants x seeds) locally or on Slurm: resumable, skips finished runs; --status, --dry-run",
       cmd_sweep},
      {"tokenize", "encode text files into token shards (llm.c's format) with a tokenizer trained on --train text", cmd_tokenize},
      {"translate", "translate sentences with a trained encoder-decoder model: greedy or beam search, one line each",
       cmd_translate},
      {"validate", "check an experiment spec (keys, values, extends, --set, plugins); --print the resolved spec", cmd_validate},
  };
  return table;
}

std::string version_line() {
  return std::string("ablate ") + ABLATE_VERSION + " (git " + ABLATE_GIT_REVISION + ", plugin API " +
         std::to_string(kPluginApiVersion) + ", ABI " + ABLATE_ABI_TAG + ")";
}

bool parse_command(const char* command, const po::options_description& options, const std::vector<std::string>& args,
                   Positional positional_arg, po::variables_map& vm, std::ostream& out) {
  po::positional_options_description positional;
  if (positional_arg.name) positional.add(positional_arg.name, positional_arg.count);
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string("ablate ") + command + ": " + e.what(), std::string("see `ablate ") + command + " --help`");
  }
  // No option means anything by an empty text (`--baseline ''`, `--out ''`): a value left out by a
  // script's empty variable, refused here for every command. Positional arguments say it their way.
  for (const auto& [name, value] : vm) {
    bool is_positional = false;
    for (unsigned i = 0; i < positional.max_total_count() && i < 8; ++i) is_positional |= positional.name_for_position(i) == name;
    const po::option_description* option = options.find_nothrow(name, false);
    const bool flag = option && option->semantic()->max_tokens() == 0;  // --json: no value to be empty
    if (is_positional || flag || value.defaulted()) continue;
    const auto* text = boost::any_cast<std::string>(&value.value());
    const auto* texts = boost::any_cast<std::vector<std::string>>(&value.value());
    if ((text && text->empty()) || (texts && std::find(texts->begin(), texts->end(), "") != texts->end()))
      throw UsageError(std::string("ablate ") + command + ": --" + name + " is given an empty value",
                       std::string("give it a value, or leave the option out; see `ablate ") + command + " --help`");
  }
  if (vm.count("help")) {
    out << options << "\n";
    return false;
  }
  return true;
}

void add_curve_axis_option(boost::program_options::options_description& options) {
  options.add_options()("x", boost::program_options::value<std::string>()->default_value("step"),
                        "the curves' x axis: step | tokens | flops (training FLOPs seen: arms of different cost at "
                        "matched compute) | time (wall seconds; machine-dependent)");
}

analysis::CurveAxis curve_axis(const boost::program_options::variables_map& vm, const char* command) {
  try {
    return analysis::parse_curve_axis(vm["x"].as<std::string>());
  } catch (const UsageError& e) {
    throw UsageError(std::string("ablate ") + command + ": --x: " + e.what(), e.hint());
  }
}

train::ProgressMode progress_mode(const char* command, const std::string& name) {
  if (name == "auto") return train::detect_progress_mode(STDOUT_FILENO);
  if (name == "bar") return train::ProgressMode::Bar;
  if (name == "lines") return train::ProgressMode::Lines;
  if (name == "quiet") return train::ProgressMode::Quiet;
  throw UsageError(std::string("ablate ") + command + ": --progress '" + name + "' is not one of auto, bar, lines, quiet");
}

StopSignals::StopSignals(void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;  // interrupted reads and writes resume; the handler only sets a flag
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

std::vector<std::string> repeated(const po::variables_map& vm, const char* key) {
  return vm.count(key) ? vm[key].as<std::vector<std::string>>() : std::vector<std::string>{};
}

std::vector<std::string> input_lines(const po::variables_map& vm, const char* command) {
  std::ifstream file;
  if (vm.count("input")) {
    const std::string path = vm["input"].as<std::string>();
    if (const std::string problem = input_file_problem(path); !problem.empty())
      throw UsageError(std::string("ablate ") + command + ": --input " + path + ": " + problem,
                       "give a text file, one line each");
    file.open(path);
    if (!file) throw UsageError(std::string("ablate ") + command + ": cannot read --input " + path, "check its permissions");
  }
  std::istream& in = vm.count("input") ? static_cast<std::istream&>(file) : std::cin;
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(l);
  }
  return lines;
}

namespace {

void print_help(std::ostream& out) {
  out << "ablate " << ABLATE_VERSION << " - Transformer ablation research framework\n\n"
      << "Usage: ablate <command> [options]\n"
      << "       ablate --help | --version\n\n"
      << "Commands:\n";
  for (const Command& c : commands()) {
    out << "  " << std::left << std::setw(12) << c.name << c.summary << "\n";
  }
  out << "\nRun `ablate <command> --help` for the options of a command.\n\n"
      << "Exit codes:\n"
      << "  0  success\n"
      << "  1  a run failed, or runs of a sweep failed (or an internal error)\n"
      << "  2  usage or spec error: bad command line, spec or option value\n"
      << "  3  plugin error: a plugin could not be found, loaded or created, or its code failed (threw) in a run\n"
      << "  4  a run diverged (NaN/Inf loss or gradient; the step is recorded)\n"
      << "  130  a run or sweep was interrupted (Ctrl-C / SIGTERM; checkpointed: --resume, or the same ablate sweep)\n\n"
      << "Environment:\n"
      << "  ABLATE_PLUGIN_PATH  extra plugin directories or files, colon-separated, searched after the built-in ones\n";
}

int dispatch(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_help(out);
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    out << version_line() << "\n";
    return kExitOk;
  }
  std::vector<std::string> names;
  for (const Command& c : commands()) {
    if (args[0] == c.name) return c.main(std::vector<std::string>(args.begin() + 1, args.end()), out, err);
    names.emplace_back(c.name);
  }
  std::string hint = "commands: " + join(names, ", ") + "; see `ablate --help`";
  if (auto near = closest_match(args[0], names)) hint = "did you mean '" + *near + "'? " + hint;
  throw UsageError(args[0].starts_with("-") ? "unknown option '" + args[0] + "'" : "unknown command '" + args[0] + "'", hint);
}

// Messages may quote a damaged file's bytes: printed as valid UTF-8.
void report(std::ostream& err, const char* kind, const std::exception& e, const std::string& hint) {
  err << "ablate: " << kind << ": " << valid_utf8(e.what()) << "\n";
  if (!hint.empty()) err << "  hint: " << valid_utf8(hint) << "\n";
}

}  // namespace

int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  try {
    return dispatch(args, out, err);
  } catch (const UsageError& e) {
    report(err, "error", e, e.hint());
    return kExitUsage;
  } catch (const PluginError& e) {
    report(err, "plugin error", e, e.hint());
    return kExitPluginError;
  } catch (const Error& e) {
    report(err, "error", e, e.hint());
    return kExitRunFailed;
  } catch (const std::exception& e) {
    report(err, "internal error", e, "please report this with the command that caused it");
    return kExitRunFailed;
  } catch (...) {  // plugin calls turn these into PluginFaults; this is the last net
    err << "ablate: internal error: " << thrown_text().what << "\n  hint: please report this with the command that caused it\n";
    return kExitRunFailed;
  }
}

}  // namespace ablate::cli
