// `ablate translate RUN`: a trained encoder-decoder model translates lines (--input FILE or stdin),
// one output line per input line, with greedy decoding or --beam N.
#include <filesystem>
#include <ostream>

#include "ablate/error.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "cli/spec_loading.hpp"
#include "train/run_translate.hpp"

namespace ablate::cli {
namespace po = boost::program_options;

int cmd_translate(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options(
      "ablate translate RUN_DIR [options]\n\n"
      "Translates sentences with the encoder-decoder model of a run's checkpoint (a task with text, such as\n"
      "task/translation): each input line is tokenized with the run's source vocabulary (unknown words become\n"
      "<unk>, counted on stderr) and decoded greedily, or with beam search for --beam > 1; one output line per\n"
      "input line, in order. Lines come from --input FILE, else stdin. Exit 0 done, 2 bad arguments (no\n"
      "checkpoint, not an encoder-decoder, an empty input or a blank line, --beam 0, a line longer than the\n"
      "positions allow), 3 plugin error.\n\nOptions");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("input,i", po::value<std::string>(), "a file of sentences, one per line (default: stdin)")
      ("beam", po::value<std::int64_t>()->default_value(1), "hypotheses kept per sentence (1: greedy decoding)")
      ("length-penalty", po::value<double>()->default_value(1.0), "beam search: a hypothesis scores log p / length^A")
      ("max-len", po::value<std::int64_t>()->default_value(0), "target tokens at most (0: the task's longest target)");
  // clang-format on
  add_spec_options(options, kExecutionKeysHelp);
  add_run_argument(options);
  po::variables_map vm;
  if (!parse_command("translate", options, args, kRunArgument, vm, out)) return kExitOk;  // --help
  const std::filesystem::path dir = run_argument(vm, "translate", "usage: ablate translate RUN_DIR --input FILE");
  train::BeamOptions beam;
  beam.beam = vm["beam"].as<std::int64_t>();
  beam.length_penalty = vm["length-penalty"].as<double>();
  beam.max_len = vm["max-len"].as<std::int64_t>();
  train::check_beam_options(beam);  // before the model is loaded: said at once
  LoadedSpec loaded = validation::load_run_spec(dir, spec_options(vm), err);
  const std::vector<std::string> lines = input_lines(vm, "translate");
  train::TrainedRun run = train::open_trained_run(dir, loaded.spec, *loaded.registry, err);
  std::int64_t unknown = 0;
  for (const train::Translated& t : train::translate_text(run, lines, beam)) {
    out << t.text << "\n";
    unknown += t.unknown;
  }
  if (unknown > 0) err << "note: " << unknown << " source token(s) are not in the run's vocabulary and were read as <unk>\n";
  return kExitOk;
}

}  // namespace ablate::cli
