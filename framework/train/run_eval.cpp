// evaluate_run() (run_eval.hpp): rebuild a run's model from its checkpoint's spec, load the
// weights, score a whole split with the evaluator training uses, and write predictions and scores.
#include "train/run_eval.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ablate/error.hpp"
#include "core/atomic_file.hpp"
#include "core/file_lock.hpp"
#include "core/text.hpp"
#include "results/run_file.hpp"
#include "train/checkpoint.hpp"
#include "train/evaluator.hpp"
#include "train/experiment.hpp"
#include "train/runner.hpp"
#include "train/tokenizer_store.hpp"
#include "train/weight_ema.hpp"

namespace ablate::train {
namespace fs = std::filesystem;

namespace {

// "1100, 1200, 1300": the steps of averaged checkpoints, for scores.json and the console.
std::string steps_text(const std::vector<std::int64_t>& steps) {
  std::string s;
  for (const std::int64_t step : steps) s += (s.empty() ? "" : ", ") + std::to_string(step);
  return s;
}

// Throws UsageError unless `file` (a kept checkpoint, an average of the weights) is of the run
// `run_id` (its checkpoint.bin's): weights copied in from another run are not scored as this run's.
void check_same_run(const fs::path& file, const std::string& run_id, const fs::path& run_dir) {
  if (run_id_of_identity(read_checkpoint(file).spec_yaml) != run_id)
    throw UsageError(file.string() + " holds another run's spec than " + run_checkpoint(run_dir).string(),
                     "a run folder's checkpoints/ and ema-STEP.bin belong to its checkpoint.bin: remove what was copied in");
}

// A sample's text, or its token ids separated by spaces where the task has no text.
std::string shown(const std::string& text, const std::vector<std::int32_t>& ids) {
  return !text.empty() || ids.empty() ? text : ids_text(ids);
}

// A TSV field: tabs, newlines and backslashes escaped (\t, \n, \r, \\), so each example is one line.
std::string tsv_field(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c == '\\')
      out += "\\\\";
    else
      out += c;
  }
  return out;
}

}  // namespace

const char* split_name(Split split) {
  switch (split) {
    case Split::Train: return "train";
    case Split::Eval: return "eval";
    case Split::Test: return "test";
  }
  return "?";
}

std::string eval_name(const RunEvalOptions& o) {
  return (o.data.empty() ? std::string(split_name(o.split)) : o.data.stem().string()) +
         (o.average_last > 0 ? "-avg" + std::to_string(o.average_last) : std::string()) + (o.ema ? "-ema" : "");
}

fs::path run_checkpoint(const fs::path& run_dir) {
  if (!fs::is_directory(run_dir))
    throw UsageError(run_dir.string() + " is not a run directory (no such directory)",
                     "give the directory `ablate run` trained into (it holds run.h5 and checkpoint.bin)");
  const fs::path file = run_dir / "checkpoint.bin";
  if (!fs::exists(file))
    throw UsageError("no checkpoint in " + run_dir.string() + ": checkpoint.bin is missing",
                     "a run writes checkpoint.bin at each evaluation and when it stops; evaluate a run that got that "
                     "far (a run that failed before its first checkpoint has no weights to evaluate)");
  return file;
}

std::string trained_run_id(const fs::path& run_dir) {
  return run_id_of_identity(read_checkpoint(run_checkpoint(run_dir)).spec_yaml);
}

std::string check_one_run(const fs::path& run_dir, const spec::ExperimentSpec& spec, DataUse use, std::ostream& warnings) {
  const fs::path file = run_dir / "run.h5";
  if (!fs::exists(file)) return {};  // weights alone: nothing to mislabel (eval refuses it for its own reason)
  const results::RunInfo info = results::RunReader(file).info();
  const std::string id = trained_run_id(run_dir);
  if (info.run_id != id)
    throw UsageError(run_dir.string() + " holds two runs: its checkpoint.bin is run " + id + " (seed " +
                         std::to_string(spec.train.seed) + "), its run.h5 is run " + info.run_id + " (seed " +
                         std::to_string(info.seed) + ")",
                     "a run's checkpoint.bin and run.h5 belong together: put back the file that was copied in (or train "
                     "the run again); nothing was written");
  for (const std::string& w : check_data_unchanged(info.data_files, spec, "cannot use the run in " + run_dir.string(), use,
                                                   run_tokenizer_files(run_dir)))
    warnings << "warning: " << w << "\n";
  return id;
}

namespace {

// The model of `run_dir`'s checkpoint with its weights, the folder checked already (check_one_run).
TrainedRun load_trained_run(const fs::path& run_dir, const spec::ExperimentSpec& spec, const PluginRegistry& registry) {
  TrainedRun run;
  run.experiment = std::make_unique<Experiment>(spec, registry, nullptr, run_dir);
  const LoadedCheckpoint loaded = load_checkpoint(run_checkpoint(run_dir), *run.experiment->store);
  run.step = loaded.state.step;
  run.run_id = run_id_of_identity(loaded.spec_yaml);
  return run;
}

}  // namespace

TrainedRun open_trained_run(const fs::path& run_dir, const spec::ExperimentSpec& spec, const PluginRegistry& registry,
                            std::ostream& warnings) {
  run_checkpoint(run_dir);
  check_one_run(run_dir, spec, DataUse::Text, warnings);
  return load_trained_run(run_dir, spec, registry);
}

void check_eval_options(const RunEvalOptions& options) {
  if (options.limit < 0) throw UsageError("--limit must be >= 0, got " + std::to_string(options.limit));
  if (options.average_last < 0)
    throw UsageError("--average-last must be >= 1, got " + std::to_string(options.average_last),
                     "the number of the run's last kept checkpoints to average");
  if (options.average_last > 0 && options.ema)
    throw UsageError("--average-last and --ema name two sets of weights to score",
                     "give one: --average-last N averages kept checkpoints, --ema scores the run's moving average");
  check_beam_options({options.beam, options.length_penalty, 0});
  if (!options.data.empty())
    if (const std::string problem = input_file_problem(options.data); !problem.empty())
      throw UsageError("--data " + options.data.string() + ": " + problem, "give a file in the task's own format");
}

namespace {

// Where an evaluation goes: its directory, and its record in run.h5 (/evals), named by the
// directory; `record` is false for a run file older than /evals (scores.json is the record then).
struct EvalPlace {
  fs::path dir, run_file;
  std::string record_name;
  bool record = false;
  bool own_dir = false;  // the run's own evals/<name>/, not --out
};

// The place checked before any work: run.h5 is there, not being written, and has no evaluation of
// this name yet.
EvalPlace eval_place(const fs::path& run_dir, const RunEvalOptions& options) {
  EvalPlace p;
  p.own_dir = options.out_dir.empty();
  p.dir = p.own_dir ? run_dir / "evals" / eval_name(options) : options.out_dir;
  p.run_file = run_dir / "run.h5";
  p.record_name = (p.dir / "").parent_path().filename().string();
  if (!fs::is_regular_file(p.run_file))
    throw UsageError("no run file in " + run_dir.string() + ": run.h5 is missing",
                     "give the directory `ablate run` trained into");
  return p;
}

void check_run_file(const fs::path& run_dir, EvalPlace& p) {
  const results::RunReader reader(p.run_file);  // closed before the record is written (run_file.hpp)
  if (reader.writer_alive())
    throw UsageError(run_dir.string() + " is being written now (training, or another `ablate eval` recording into run.h5)",
                     "evaluate it when that process stops; its checkpoint changes while it trains");
  p.record = reader.records_evaluations();
  if (p.record && (p.record_name.empty() || p.record_name.size() > results::kEvalNameBytes))
    throw UsageError("the evaluation's name '" + p.record_name + "' (its directory's) must be 1 to " +
                         std::to_string(results::kEvalNameBytes) + " bytes to be recorded in run.h5",
                     "name a shorter directory with --out");
  for (const results::EvalRecord& r : reader.evaluations())
    if (r.name == p.record_name)
      throw UsageError(p.run_file.string() + " records an evaluation named '" + p.record_name + "' already (at step " +
                           std::to_string(r.checkpoint_step) + ")",
                       "evaluations are never written over: name this one another directory with --out");
}

// An evaluation is on disk with its record or not at all: in the run's own evals/, files that
// run.h5 does not record are what an `ablate eval` of this run left when it stopped before its
// record, and this one replaces them. Elsewhere (--out), or where run.h5 records no evaluations
// (an older file: scores.json is the record), an evaluation's files are never written over.
void clear_leftovers(const EvalPlace& p, const std::string& run_id, std::ostream& out) {
  const std::string own_id = "\"run_id\": " + json_quote(run_id);
  for (const char* name : {"scores.json", "predictions.tsv", "predictions.jsonl"}) {
    if (!fs::exists(p.dir / name)) continue;
    const bool leftover = p.record && p.own_dir &&
                          (name != std::string("scores.json") || read_small_file(p.dir / name).find(own_id) != std::string::npos);
    if (!leftover)
      throw UsageError(p.dir.string() + " already holds an evaluation (" + name + ")",
                       "evaluations are never written over: name another directory with --out, or remove that one");
    std::error_code ec;
    fs::remove(p.dir / name, ec);
    if (ec) throw UsageError("cannot remove " + (p.dir / name).string() + ", left by an interrupted evaluation: " + ec.message());
    out << "note: removed " << (p.dir / name).string() << ": run.h5 does not record it (an interrupted `ablate eval`)\n";
  }
}

// What is scored: the first n of `size` examples of a split, or of a new file (--data), whose
// examples are encoded with the run's vocabularies (`unknown`: tokens outside them).
struct EvalInput {
  std::vector<Example> examples;  // --data only
  ReadReport read;                // --data only: the file's <unk>s, and what the task's rules left out
  std::int64_t size = 0, n = 0;
};

EvalInput eval_input(Experiment& ex, const RunEvalOptions& options, std::ostream& out) {
  EvalInput in;
  const bool data = !options.data.empty();
  if (data) {
    try {
      in.examples = ex.task->read_examples(options.data.string(), in.read);
    } catch (const Error& e) {
      throw UsageError("--data " + options.data.string() + ": " + e.what(), e.hint());
    }
    if (in.examples.empty()) throw UsageError("--data " + options.data.string() + ": no examples in the file");
  }
  in.size = data ? static_cast<std::int64_t>(in.examples.size()) : ex.size(options.split);
  if (in.size == 0)
    throw UsageError(std::string("the task has no examples in its ") + split_name(options.split) + " split",
                     "choose another split with --split (eval or test)");
  in.n = options.limit > 0 ? std::min(options.limit, in.size) : in.size;
  if (data) {
    in.examples.resize(static_cast<std::size_t>(in.n));
    if (in.read.unknown > 0)
      out << "note: " << in.read.unknown << " token(s) of " << options.data.string()
          << " are not in the run's vocabulary (<unk>)\n";
    if (in.read.dropped > 0)  // a score over fewer examples than the file holds says so
      out << "note: " << in.read.dropped << " of the " << in.read.read << " examples of " << options.data.string()
          << " are left out by the run's task: " << (in.read.dropped_why.empty() ? "no reason given" : in.read.dropped_why)
          << "\n";
    if (in.read.truncated > 0)
      out << "note: " << in.read.truncated << " of the " << in.read.read << " examples of " << options.data.string()
          << " are cut to the run's length limit (long_examples: truncate)\n";
  }
  return in;
}

// The decoded examples, one per line (TSV with a header, or JSON lines).
std::string predictions_text(const std::vector<DecodedSample>& samples, PredictionFormat format) {
  std::ostringstream p;
  if (format == PredictionFormat::Tsv) p << "index\tsource\treference\tprediction\n";
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const DecodedSample& d = samples[i];
    const std::string src = shown(d.src, d.src_ids), ref = shown(d.reference, d.reference_ids),
                      pred = shown(d.prediction, d.prediction_ids);
    if (format == PredictionFormat::Tsv)
      p << i << "\t" << tsv_field(src) << "\t" << tsv_field(ref) << "\t" << tsv_field(pred) << "\n";
    else
      p << "{\"index\": " << i << ", \"source\": " << json_quote(src) << ", \"reference\": " << json_quote(ref)
        << ", \"prediction\": " << json_quote(pred) << "}\n";
  }
  return p.str();
}

// scores.json: what was scored, how, by which code, and the metrics (null where not finite).
std::string scores_json(const fs::path& run_dir, const Experiment& ex, const TrainedRun& run, const RunEvalOptions& options,
                        const EvalInput& in, const std::string& decoding, const RunEvalResult& result) {
  const bool data = !options.data.empty();
  const std::int64_t step = run.step;
  std::ostringstream s;
  s << "{\n  \"run\": " << json_quote(run_dir.string()) << ",\n  \"run_id\": " << json_quote(run.run_id)
    << ",\n  \"checkpoint_step\": " << step
    << ",\n  \"split\": " << (data ? std::string("null") : json_quote(split_name(options.split)))
    << ",\n  \"data\": " << (data ? json_quote(options.data.string()) : std::string("null"))
    << ",\n  \"unknown_tokens\": " << (data ? std::to_string(in.read.unknown) : std::string("null"))
    << ",\n  \"file_examples\": " << (data ? std::to_string(in.read.read) : std::string("null"))
    << ",\n  \"dropped_examples\": " << (data ? std::to_string(in.read.dropped) : std::string("null"))
    << ",\n  \"dropped_why\": " << (data && in.read.dropped > 0 ? json_quote(in.read.dropped_why) : std::string("null"))
    << ",\n  \"truncated_examples\": " << (data ? std::to_string(in.read.truncated) : std::string("null"))
    << ",\n  \"examples\": " << in.n << ",\n  \"split_size\": " << in.size
    << ",\n  \"decoding\": " << (decoding.empty() ? std::string("null") : json_quote(decoding))
    << ",\n  \"averaged_checkpoints\": "
    << (result.averaged_steps.empty() ? std::string("null") : "[" + steps_text(result.averaged_steps) + "]")
    << ",\n  \"ema\": " << (options.ema ? "true" : "false") << ",\n  \"code_id\": " << json_quote(ex.code.id)
    << ",\n  \"metrics\": {";
  bool first = true;
  for (const auto& [name, value] : result.metrics) {
    s << (first ? "\n" : ",\n") << "    " << json_quote(name) << ": "
      << (std::isfinite(value) ? number_text(value) : std::string("null"));
    first = false;
  }
  s << "\n  }";
  if (!result.predictions.empty()) s << ",\n  \"predictions\": " << json_quote(result.predictions.filename().string());
  s << "\n}\n";
  return s.str();
}

// The record in run.h5, all or nothing: if it cannot be written, the evaluation's files go too.
void record_evaluation(const EvalPlace& p, std::int64_t step, const std::string& scores, RunEvalResult& result) {
  try {
    results::RunWriter::record_evaluation(p.run_file, {p.record_name, step, scores, ""});
  } catch (const Error& e) {
    std::error_code ec;
    for (const fs::path& f : {result.predictions, result.scores})
      if (!f.empty()) fs::remove(f, ec);
    throw Error(std::string(e.what()) + " (the evaluation's files were removed: nothing was recorded)", e.hint());
  }
  result.record = p.record_name;
}

}  // namespace

RunEvalOptions split_for_run(const fs::path& run_dir, RunEvalOptions options, std::ostream* out) {
  if (options.split_given || !options.data.empty() || !fs::is_regular_file(run_dir / "run.h5")) return options;
  const std::vector<std::string> names = results::RunReader(run_dir / "run.h5").metrics(results::MetricSplit::Eval).names;
  const bool test = std::any_of(names.begin(), names.end(), [](const std::string& n) { return n.starts_with("test_"); });
  options.split = test ? Split::Test : Split::Eval;
  options.split_given = true;
  if (!test && out) *out << "note: the run's task has no test split: scoring its eval split\n";
  return options;
}

RunEvalResult evaluate_run(const fs::path& run_dir, const spec::ExperimentSpec& spec, const PluginRegistry& registry,
                           const RunEvalOptions& given, std::ostream& out) {
  run_checkpoint(run_dir);  // the first thing to say when there is none
  const RunEvalOptions options = split_for_run(run_dir, given, &out);
  check_eval_options(options);
  EvalPlace place = eval_place(run_dir, options);
  // before anything in the folder is touched; --data takes only how to read text from the run's data
  const std::string id = check_one_run(run_dir, spec, options.data.empty() ? DataUse::Examples : DataUse::Text, out);
  // One `ablate eval` of a run at a time, so that files without a record are never those of an
  // evaluation still under way.
  const FileLock lock(run_dir / ".eval.lock", run_dir.string() + " is being evaluated now by another `ablate eval`",
                      "wait for it to finish, then evaluate again");
  check_run_file(run_dir, place);
  clear_leftovers(place, id, out);

  TrainedRun run = load_trained_run(run_dir, spec, registry);  // checked above (check_one_run)
  Experiment& ex = *run.experiment;
  std::vector<std::int64_t> averaged;  // the steps of the averaged checkpoints
  if (options.average_last > 0) {
    std::vector<fs::path> kept = kept_checkpoints(run_dir);
    if (static_cast<std::int64_t>(kept.size()) < options.average_last)
      throw UsageError("--average-last " + std::to_string(options.average_last) + ": " + run_dir.string() + " keeps " +
                           std::to_string(kept.size()) + " checkpoint(s) in checkpoints/",
                       "train with train.keep_checkpoints >= " + std::to_string(options.average_last) +
                           " (the weights of the last evaluations), or average fewer");
    kept.erase(kept.begin(), kept.end() - options.average_last);
    check_same_run(kept.front(), run.run_id, run_dir);
    run.step = load_average(kept, *ex.store).state.step;  // every file checked against the first
    for (const fs::path& f : kept) averaged.push_back(step_of(f));
  }
  if (options.ema) {
    const fs::path file = ema_file(run_dir, run.step);
    if (!fs::exists(file))
      throw UsageError("--ema: " + run_dir.string() + " has no average of its weights at step " + std::to_string(run.step) +
                           " (" + file.filename().string() + ")",
                       "train with train.ema (e.g. 0.999) to keep one");
    check_same_run(file, run.run_id, run_dir);
    load_checkpoint(file, *ex.store);
  }
  const EvalInput in = eval_input(ex, options, out);
  std::vector<std::string> skipped;
  const std::vector<spec::Metric> metrics = applicable_metrics(ex.spec, ex.task_info, ex.has_text(), &skipped);
  for (const std::string& s : skipped) out << "note: metric skipped: " << s << "\n";
  const bool decodes = std::find(metrics.begin(), metrics.end(), spec::Metric::exact_match) != metrics.end();
  out << "evaluating " << run_dir.string() << " (step " << run.step
      << (averaged.empty() ? std::string() : "; the average of the checkpoints of steps " + steps_text(averaged))
      << (options.ema ? "; the moving average of its weights, " + ema_file(run_dir, run.step).filename().string() : std::string())
      << ") on " << in.n << " of " << in.size << " "
      << (options.data.empty() ? std::string(split_name(options.split)) : options.data.string()) << " examples\n";
  if (options.beam > 1 && ex.model->config().arch != model::Arch::EncoderDecoder)
    throw UsageError("--beam " + std::to_string(options.beam) + ": beam search decodes encoder-decoder models; this run is " +
                         spec::to_string(ex.spec.model.arch),
                     "drop --beam");
  const BeamOptions beam{options.beam, options.length_penalty, 0};
  const std::string decoding =
      !decodes           ? std::string()
      : options.beam > 1 ? "beam " + std::to_string(options.beam) + ", length penalty " + number_text(options.length_penalty)
                         : std::string("greedy");
  if (decodes) out << "decoding: " << decoding << "\n";
  const std::size_t samples = decodes ? static_cast<std::size_t>(in.n) : 0;
  const BeamOptions* beam_or_greedy = options.beam > 1 ? &beam : nullptr;
  const Evaluation e = options.data.empty() ? evaluate(ex, metrics, options.split, samples, 0, in.n, beam_or_greedy)
                                            : evaluate_examples(ex, metrics, in.examples, samples, beam_or_greedy);

  std::error_code ec;
  fs::create_directories(place.dir, ec);
  if (ec) throw UsageError("cannot create " + place.dir.string() + ": " + ec.message());
  RunEvalResult result;
  result.metrics = e.metrics;
  result.examples = in.n;
  result.step = run.step;
  result.averaged_steps = averaged;
  if (!e.samples.empty()) {
    result.predictions = place.dir / (options.format == PredictionFormat::Tsv ? "predictions.tsv" : "predictions.jsonl");
    write_file_atomically(result.predictions, predictions_text(e.samples, options.format));
  }
  const std::string scores = scores_json(run_dir, ex, run, options, in, decoding, result);
  result.scores = place.dir / "scores.json";
  write_file_atomically(result.scores, scores);
  if (place.record)
    record_evaluation(place, run.step, scores, result);
  else
    out << "note: " << place.run_file.string()
        << " was written before run files recorded evaluations: scores.json is the record\n";
  return result;
}

}  // namespace ablate::train
