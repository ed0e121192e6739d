// `ablate generate RUN`: a trained language model continues prompts (--prompt, --input FILE, or
// stdin), one continuation per output line; greedy by default, sampled with --temperature.
#include <filesystem>
#include <ostream>

#include "ablate/error.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "cli/spec_loading.hpp"
#include "train/run_generate.hpp"

namespace ablate::cli {
namespace po = boost::program_options;

namespace {
// One output per line: a continuation's line breaks and backslashes escaped as \n and \\.
std::string one_line(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\\')
      out += "\\\\";
    else if (c != '\r')
      out += c;
  }
  return out;
}

}  // namespace

int cmd_generate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options(
      "ablate generate RUN_DIR [options]\n\n"
      "Continues prompts with the language model of a run's checkpoint (a decoder-only model on a task with\n"
      "text): each prompt is tokenized with the run's vocabulary (unknown words become <unk>, counted on\n"
      "stderr), bos is put before it, and up to --max-tokens tokens follow (fewer where eos comes). Prompts\n"
      "come from --prompt (repeatable), else --input FILE, else stdin, one per line; the continuations are\n"
      "written one per line in the same order (line breaks inside one written as \\n). Sampled as the run's\n"
      "eval.generate says (temperature, top_k) unless given here; --temperature 0 is greedy. Exit 0 done, 2 bad arguments (no checkpoint, not a language model, an empty input,\n"
      "a prompt longer than the model's positions allow), 3 plugin error.\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("prompt", po::value<std::vector<std::string>>()->composing(), "a prompt (repeatable)")
      ("input,i", po::value<std::string>(), "a file of prompts, one per line (default: stdin)")
      ("max-tokens", po::value<std::int64_t>(), "new tokens per prompt (default: the run's eval.generate.max_tokens)")
      ("temperature", po::value<double>(), "0: greedy; > 0: sample (default: the run's eval.generate.temperature)")
      ("top-k", po::value<std::int64_t>(), "sample among the k most likely tokens; 0: all (default: eval.generate.top_k)")
      ("seed", po::value<std::int64_t>(), "the sampling seed, >= 0 (default: the run's train.seed)");
  // clang-format on
  add_spec_options(options, kExecutionKeysHelp);
  add_run_argument(options);
  po::variables_map vm;
  if (!parse_command("generate", options, args, kRunArgument, vm, out)) return kExitOk;  // --help
  const std::filesystem::path dir = run_argument(vm, "generate", "usage: ablate generate RUN_DIR --prompt TEXT");
  LoadedSpec loaded = validation::load_run_spec(dir, spec_options(vm), err);
  const spec::GenerateSpec& g = loaded.spec.eval.generate;
  train::GenerateRequest request;
  request.max_tokens = vm.count("max-tokens") ? vm["max-tokens"].as<std::int64_t>() : g.max_tokens;
  request.temperature = vm.count("temperature") ? vm["temperature"].as<double>() : g.temperature;
  request.top_k = vm.count("top-k") ? vm["top-k"].as<std::int64_t>() : g.top_k;
  const std::int64_t seed = vm.count("seed") ? vm["seed"].as<std::int64_t>() : loaded.spec.train.seed;
  if (seed < 0) throw UsageError("--seed must be >= 0, got " + std::to_string(seed), "give a seed from 0 to 2^63 - 1");
  request.seed = static_cast<std::uint64_t>(seed);
  request.prompts = vm.count("prompt") ? repeated(vm, "prompt") : input_lines(vm, "generate");
  train::TrainedRun run = train::open_trained_run(dir, loaded.spec, *loaded.registry, err);
  const std::vector<train::Generated> generated = train::generate_text(run, request);
  std::int64_t unknown = 0;
  for (const train::Generated& x : generated) {
    out << one_line(x.text) << "\n";
    unknown += x.unknown;
  }
  if (unknown > 0) err << "note: " << unknown << " prompt token(s) are not in the run's vocabulary and were read as <unk>\n";
  return kExitOk;
}

}  // namespace ablate::cli
