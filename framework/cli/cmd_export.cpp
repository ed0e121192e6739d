// `ablate export RUN --format safetensors`: a trained run's weights in a file Python's
// `safetensors` and PyTorch load, with the spec and vocabularies beside them (run_export.hpp);
// `--format tensorboard`: its run.h5 as a TensorBoard event file (results/tensorboard.hpp);
// `--format hf`: a Hugging Face transformers model folder (train/hf_export.hpp).
#include <filesystem>
#include <ostream>

#include "ablate/error.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "cli/spec_loading.hpp"
#include "results/run_file.hpp"
#include "results/tensorboard.hpp"
#include "train/hf_export.hpp"
#include "train/run_export.hpp"

namespace ablate::cli {
namespace po = boost::program_options;

int cmd_export(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description options(
      "ablate export RUN_DIR [options]\n\n"
      "--format safetensors (the default) writes the weights of a run's checkpoint (RUN_DIR/checkpoint.bin): every\n"
      "parameter under its dotted name (f32), and as metadata the resolved spec, the run id, the checkpoint's step\n"
      "and the task's vocabularies. docs/examples/load_in_torch.py rebuilds the model in PyTorch from it.\n"
      "--format tensorboard writes what run.h5 holds (train and eval metrics, per-layer statistics, decoded\n"
      "samples, the resolved spec) as one TensorBoard event file in RUN_DIR (or --out DIR), as log.tensorboard\n"
      "does while a run trains. --format hf writes a Hugging Face transformers folder (--out DIR, default\n"
      "RUN_DIR/hf): config.json and model.safetensors of a decoder-only model that is exactly a Llama (pre-norm\n"
      "RMSNorm, rotary, SwiGLU, grouped k/v heads allowed) or a GPT-2 (pre-norm LayerNorm, learned positions,\n"
      "ReLU/GELU), with ablate_logits.safetensors (Ablate's logits on the first eval examples) to check it\n"
      "against; any other model is refused naming the component. An existing file is never written over.\n"
      "Exit 0 done, 2 bad arguments (no checkpoint, the file exists, event files already there, a model that\n"
      "does not map), 3 plugin error.\n\n"
      "Options");
  // clang-format off
  options.add_options()
      ("help,h", "show this help")
      ("format", po::value<std::string>()->default_value("safetensors"), "safetensors | tensorboard | hf")
      ("out,o", po::value<std::string>(),
       "the file to write (default RUN_DIR/model.safetensors); for tensorboard, the folder (default RUN_DIR); for hf, "
       "the folder (default RUN_DIR/hf)");
  // clang-format on
  add_spec_options(options, nullptr);
  add_run_argument(options);
  po::variables_map vm;
  if (!parse_command("export", options, args, kRunArgument, vm, out)) return kExitOk;  // --help
  const std::filesystem::path dir = run_argument(vm, "export", "usage: ablate export RUN_DIR [--out FILE]");
  const std::string format = vm["format"].as<std::string>();
  if (format == "tensorboard") {
    if (!std::filesystem::is_regular_file(dir / "run.h5"))
      throw UsageError("ablate export: " + (dir / "run.h5").string() + " is missing: " + dir.string() + " is not a run's folder",
                       "name the folder `ablate run` wrote (it holds run.h5)");
    const results::RunReader run(dir / "run.h5");
    const std::filesystem::path file =
        results::export_tensorboard(run, vm.count("out") ? std::filesystem::path(vm["out"].as<std::string>()) : dir);
    out << "exported run " << run.info().run_id << " (step " << run.state().step << ") to " << file.string() << " ("
        << std::filesystem::file_size(file) << " bytes); view it with: tensorboard --logdir " << file.parent_path().string()
        << "\n";
    return kExitOk;
  }
  if (format != "safetensors" && format != "hf")
    throw UsageError("ablate export: --format " + format + ": expected safetensors, tensorboard or hf");
  if (format == "hf") {
    const std::filesystem::path folder = vm.count("out") ? std::filesystem::path(vm["out"].as<std::string>()) : dir / "hf";
    LoadedSpec loaded = validation::load_run_spec(dir, spec_options(vm), err);
    train::hf_architecture(loaded.spec);  // a model that does not map is refused before it is built
    train::TrainedRun run = train::open_trained_run(dir, loaded.spec, *loaded.registry, err);
    const train::HfExportResult r = train::export_hf(run, folder);
    out << "exported run " << run.run_id << " (step " << run.step << ") as a transformers " << r.architecture << " (" << r.tensors
        << " tensors) to " << r.dir.string() << "; load it with AutoModelForCausalLM.from_pretrained(\"" << r.dir.string()
        << "\"); ablate_logits.safetensors holds Ablate's logits on " << r.check_examples << " eval examples"
        << (r.tokenizer ? "; tokenizer.model is the run's SentencePiece model" : "") << "\n";
    return kExitOk;
  }
  const std::filesystem::path file =
      vm.count("out") ? std::filesystem::path(vm["out"].as<std::string>()) : dir / "model.safetensors";
  if (std::filesystem::exists(file))  // before the model is built: said at once
    throw UsageError("ablate export: " + file.string() + " already exists",
                     "export never writes over a file: name another with --out");
  LoadedSpec loaded = validation::load_run_spec(dir, spec_options(vm), err);
  train::TrainedRun run = train::open_trained_run(dir, loaded.spec, *loaded.registry, err);
  const train::ExportResult r = train::export_safetensors(run, file);
  out << "exported " << r.tensors << " tensors (step " << run.step << ") to " << r.file.string() << " (" << r.bytes
      << " bytes)\n";
  return kExitOk;
}

}  // namespace ablate::cli
