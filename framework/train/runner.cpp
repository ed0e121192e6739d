// The training loop (runner.hpp): one optimizer step per batch (forward, loss, backward, clip,
// Adam with the schedule's lr), train metrics every log.every steps, evaluation and checkpoint
// every eval.every steps, stopping rules (steps, early stopping, loss threshold, NaN/Inf, a stop
// request), and the run directory's records. Resume restores weights, moments and counters from
// the checkpoint; the data order and dropout masks are functions of the step, so the resumed
// loss curve is the uninterrupted one.
#include "train/runner.hpp"

#include <atomic>
#include <chrono>
#include <cmath>
#include <optional>
#include <sstream>
#include <unistd.h>

#include "ablate/error.hpp"
#include "ablate/ops.hpp"
#include "core/text.hpp"
#include "plugins/plugin_call.hpp"
#include "train/checkpoint.hpp"
#include "train/data_order.hpp"
#include "train/evaluator.hpp"
#include "train/experiment.hpp"
#include "train/reference_dump.hpp"
#include "train/run_recorder.hpp"

namespace ablate::train {
namespace {

std::atomic<bool> g_stop_requested{false};

const std::vector<std::string> kTrainColumns = {"loss", "token_accuracy", "lr", "grad_norm", "tokens_per_s", "elapsed_s"};
constexpr std::int64_t kSamples = 5;  // decoded eval examples kept per evaluation (tasks with text)

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? std::string(buf) : std::string("unknown");
}

// The resolved spec a run records: every value, execution keys included, the sweep left out.
std::string resolved_run_yaml(spec::ExperimentSpec spec) {
  spec.sweep = {};
  return spec::resolved_yaml(spec);
}

std::string metrics_text(const std::map<std::string, double>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : " ") + k + " " + number_text(std::round(v * 1e4) / 1e4);
  return s;
}

// The state recorded in an existing run file, or nullopt if there is none.
std::optional<results::RunState> recorded_state(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) return std::nullopt;
  return results::RunReader(file).state();
}

// The first line where two texts differ, for "the spec changed" messages.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ha = static_cast<bool>(std::getline(ia, la)), hb = static_cast<bool>(std::getline(ib, lb));
    if (!ha && !hb) return "";
    if (!ha || !hb || la != lb)
      return "line " + std::to_string(line) + " of the resolved spec: checkpoint has '" + (ha ? la : "") + "', now '" +
             (hb ? lb : "") + "'";
  }
}

// What precision really runs: "f32", or "bf16 (how this backend computes it)".
std::string precision_text(const spec::ExperimentSpec& spec, const BackendCaps& caps) {
  if (spec.precision != spec::Precision::bf16) return "f32";
  return "bf16 (" + (caps.bf16_arithmetic.empty() ? std::string("arithmetic not described by the backend") : caps.bf16_arithmetic) + ")";
}

bool improved(const spec::EarlyStoppingSpec& es, double value, double best) {
  return es.mode == spec::MetricMode::max ? value > best : value < best;
}
bool reached(const spec::EarlyStoppingSpec& es, double value) {
  return es.target && (es.mode == spec::MetricMode::max ? value >= *es.target : value <= *es.target);
}

}  // namespace

void request_stop() { g_stop_requested.store(true); }

std::string run_id(const spec::ExperimentSpec& spec) {
  const std::string yaml = spec::identity_yaml(spec);
  const std::uint64_t h = fnv1a64(yaml.data(), yaml.size());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 12);
}

RunResult run_experiment(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const RunOptions& options,
                         std::ostream& out) {
  namespace fs = std::filesystem;
  using Clock = std::chrono::steady_clock;
  g_stop_requested.store(false);
  const fs::path dir = options.out_dir;
  const fs::path checkpoint_file = dir / "checkpoint.bin", run_file = dir / "run.h5";
  const std::string spec_yaml = resolved_run_yaml(spec);
  const std::string identity = spec::identity_yaml(spec);  // what a checkpoint must match
  const std::string id = run_id(spec);
  const bool dumping = !options.dump_reference.empty();
  if (dumping && options.resume)
    throw UsageError("--dump-reference records a run from its first step; it cannot continue one with --resume",
                     "dump a new run into another directory");
  if (dumping && fs::exists(options.dump_reference))
    throw UsageError("the reference dump " + options.dump_reference.string() + " already exists",
                     "--dump-reference never overwrites: remove it or name another file");

  // --- the run directory: never overwrite another run's results
  const std::optional<results::RunState> recorded = recorded_state(run_file);
  const bool has_checkpoint = fs::exists(checkpoint_file);
  if (!options.resume && recorded)
    throw UsageError("results already exist in " + dir.string() + " (status " + results::to_string(recorded->status) + ")",
                     "continue that run with --resume, or choose another directory with --out");
  if (options.resume && !has_checkpoint && !recorded)
    throw UsageError("nothing to resume in " + dir.string() + ": no checkpoint.bin and no run.h5",
                     "start the run without --resume (or point --out at the run's directory)");
  // The run file, the checkpoint and the spec must be one run; checked before anything is touched.
  if (options.resume) {
    const std::string hint = "resume with the same spec and --set options, or start a new run in another directory";
    const std::string code_hint =
        "a run continues only with the code that started it: start it afresh in another directory "
        "(ablate sweep reruns such runs and keeps the old folder under .attempts/)";
    const std::optional<results::RunInfo> info =
        recorded ? std::optional<results::RunInfo>(results::RunReader(run_file).info()) : std::nullopt;
    const CodeIdentity code = code_identity(spec, registry);
    const bool other_code = info && info->code_id != code.id;
    if (has_checkpoint) {
      const std::string started = read_checkpoint(checkpoint_file).spec_yaml;
      if (started != identity && other_code)  // the likely cause first: a spec key an older Ablate did not have
        throw UsageError("cannot resume " + dir.string() + ": the run was made by other code (another Ablate build or "
                             "changed plugins), and its spec differs from this one (" +
                             first_difference(started, identity) + "); code now: " +
                             code_difference(info->plugin_code, code.parts),
                         code_hint);
      if (started != identity)
        throw UsageError("cannot resume " + dir.string() + ": the spec differs from the one the run started with (" +
                             first_difference(started, identity) + ")",
                         hint);
    }
    if (info && info->run_id != id)
      throw UsageError("cannot resume " + dir.string() + ": its run file belongs to run " + info->run_id + " (seed " +
                           std::to_string(info->seed) + "), this spec is run " + id + " (seed " +
                           std::to_string(spec.train.seed) + ")",
                       hint);
    if (other_code)
      throw UsageError("cannot resume " + dir.string() + ": the run was made by other code; now: " +
                           code_difference(info->plugin_code, code.parts),
                       code_hint);
  }
  if (options.resume && recorded && recorded->status == RunStatus::Completed) {
    out << "run in " << dir.string() << " is already completed; nothing to do\n";
    RunResult done;
    done.status = RunStatus::Completed;
    done.reason = "already completed";
    return done;
  }
  const std::shared_ptr<OpProfile> profile = options.profile ? std::make_shared<OpProfile>() : nullptr;
  Experiment ex(spec, registry, profile);  // first: a spec problem leaves no directory behind
  std::optional<ReferenceDump> dump;  // written before training: the parameters' initial values
  if (dumping)
    dump.emplace(options.dump_reference, spec_yaml, *ex.store, ex.model->config().arch != model::Arch::Decoder,
                 spec.train.batch_size, ex.task_info.max_src_len, ex.task_info.max_tgt_len + 1);
  std::string generate_note;
  const bool generate = generates(ex, &generate_note);  // a language model's sampled continuations
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError("cannot create the run directory " + dir.string() + ": " + ec.message());
  for (const auto& entry : fs::directory_iterator(dir)) {  // temp files of a writer killed mid-write
    const std::string name = entry.path().filename().string();
    if (name.find(".tmp") != std::string::npos || name.find(".creating.") != std::string::npos) fs::remove(entry.path(), ec);
  }

  TrainState state;
  if (options.resume && has_checkpoint) {
    LoadedCheckpoint loaded = load_checkpoint(checkpoint_file, *ex.store);  // its spec was checked above
    state = loaded.state;
    ex.optimizer->set_steps_taken(state.optimizer_steps);
  }

  std::vector<std::string> skipped;
  const std::vector<spec::Metric> metrics = applicable_metrics(spec, ex.task_info, &skipped);
  for (const std::string& s : skipped) out << "note: eval metric skipped: " << s << "\n";
  if (!generate_note.empty()) out << "note: skipped: " << generate_note << "\n";
  const std::vector<std::string> base_cols = evaluated_names(metrics, ex.score_names());
  std::vector<std::string> eval_cols = base_cols;
  // eval.lengths: the same metrics on examples of each length, as METRIC_at_LENGTH; a length past
  // what the positional encoding represents is recorded as NaN (said once, here).
  std::vector<std::int64_t> lengths;  // those evaluated
  const std::int64_t limit = ex.model->max_positions();
  for (std::int64_t length : spec.eval.lengths) {
    for (const std::string& c : base_cols) eval_cols.push_back(at_length(c, length));
    if (limit > 0 && positions_needed(ex, length) > limit)
      out << "note: eval.lengths " << length << ": positional_encoding/" << spec.model.positional_encoding.name
          << " represents " << limit << " positions and examples of length " << length << " need "
          << positions_needed(ex, length) << "; their metrics are recorded as NaN\n";
    else
      lengths.push_back(length);
  }
  // A task with a test split is scored on it once, in the last eval row, as test_<metric>.
  const bool has_test = ex.size(Split::Test) > 0;
  if (has_test)
    for (const std::string& c : base_cols) eval_cols.push_back("test_" + c);
  // Decoded eval samples as text, where the task has text and decoding runs; a language model's
  // sampled continuations (generate implies text).
  const bool decodes = std::find(metrics.begin(), metrics.end(), spec::Metric::exact_match) != metrics.end();
  const bool has_text = ex.has_text();
  const std::int64_t samples =
      (decodes && has_text) || generate ? std::min<std::int64_t>(kSamples, ex.size(Split::Eval)) : 0;
  RunRecorder record(ex, kTrainColumns, eval_cols, samples);
  if (options.resume) {
    record.resume(run_file, state.step);
  } else {
    results::RunInfo info;
    info.run_id = id;
    info.experiment = spec.name;
    info.spec_yaml = options.spec_text;
    info.resolved_spec_yaml = spec_yaml;
    info.seed = spec.train.seed;
    info.backend = spec.backend.name;
    const BackendCaps caps = ex.backend->caps();
    info.backend_device = caps.device;
    info.backend_deterministic = caps.deterministic;
    info.precision = precision_text(spec, caps);
    info.plugins = ex.plugin_versions;
    info.plugin_code = ex.code.parts;
    info.code_id = ex.code.id;
    info.host = host_name();
    record.create(run_file, info);
  }
  RunResult result;
  result.status = RunStatus::Running;
  result.step = state.step;

  out << "run " << id << " of " << spec.name << " -> " << dir.string() << "\n"
      << "model " << spec::to_string(spec.model.arch) << " d_model " << spec.model.d_model << ", " << ex.store->numel()
      << " parameters; backend " << spec.backend.name << " (" << ex.backend->caps().device << ", "
      << ex.backend->caps().threads << " threads), " << precision_text(spec, ex.backend->caps()) << "; " << (options.resume ? "resuming at step " + std::to_string(state.step) : std::string("from step 0"))
      << " of " << spec.train.steps << "\n";

  DataOrder order(ex.size(Split::Train), spec.train.batch_size, static_cast<std::uint64_t>(spec.train.seed));
  Progress progress(out, options.progress, spec.train.steps, state.step, spec.log.every);
  const auto process_start = Clock::now();
  const double elapsed_before = state.elapsed_seconds;
  auto elapsed = [&] { return elapsed_before + std::chrono::duration<double>(Clock::now() - process_start).count(); };

  Evaluation evaluation;  // the last one; recorded by record_eval once the step's stop decision is made
  auto run_eval = [&](std::int64_t step) {
    evaluation = evaluate(ex, metrics, Split::Eval, static_cast<std::size_t>(samples));
    for (std::int64_t length : spec.eval.lengths) {
      const bool represented = std::find(lengths.begin(), lengths.end(), length) != lengths.end();
      std::map<std::string, double> at;
      if (represented) at = evaluate(ex, metrics, Split::Eval, 0, length).metrics;
      for (const std::string& c : base_cols)
        evaluation.metrics[at_length(c, length)] = represented && at.count(c) ? at[c] : std::nan("");
    }
    if (generate) evaluation.samples = generate_samples(ex, Split::Eval, static_cast<std::size_t>(samples), step);
    result.eval = evaluation.metrics;
  };
  auto record_eval = [&](std::int64_t step, bool last) {
    std::map<std::string, double> row = evaluation.metrics;
    std::string text = "eval @ " + std::to_string(step) + ": " + metrics_text(evaluation.metrics);
    if (last && has_test) {
      const std::map<std::string, double> test = evaluate(ex, metrics, Split::Test).metrics;
      for (const auto& [k, v] : test) row["test_" + k] = result.eval["test_" + k] = v;
      text += "\ntest @ " + std::to_string(step) + ": " + metrics_text(test);
    }
    for (auto it = row.begin(); it != row.end();)  // the declared columns
      it = std::find(eval_cols.begin(), eval_cols.end(), it->first) == eval_cols.end() ? row.erase(it) : std::next(it);
    record.eval(step, row);
    if (samples > 0) {
      results::SamplesLog log;
      for (const DecodedSample& d : evaluation.samples) {
        log.src.push_back(d.src);
        log.reference.push_back(d.reference);
        log.prediction.push_back(d.prediction);
      }
      log.src.resize(static_cast<std::size_t>(samples));  // fewer decoded than declared: empty texts
      log.reference.resize(static_cast<std::size_t>(samples));
      log.prediction.resize(static_cast<std::size_t>(samples));
      record.samples(step, log);
    }
    progress.message(text);
  };
  auto save = [&] {
    record.flush();  // the run file holds every row up to the checkpoint before the checkpoint exists
    state.elapsed_seconds = elapsed();
    state.optimizer_steps = ex.optimizer->steps_taken();
    save_checkpoint(checkpoint_file, *ex.store, state, identity);
  };
  auto finish = [&](RunStatus status, std::string reason) {
    result.status = status;
    result.reason = std::move(reason);
    result.step = state.step;
    progress.finish();
    record.state({status, result.reason, state.step, results::utc_now_iso8601()});
    record.flush();
    out << results::to_string(status) << " at step " << state.step << ": " << result.reason << " (" << format_duration(elapsed())
        << ")\n";
    if (profile) out << profile->report();
    return result;
  };

  // Throughput of the train log's interval (wall time: not part of the resumable state).
  std::int64_t interval_tokens = 0;
  auto interval_start = Clock::now();
  std::int64_t steps_this_call = 0;
  const float smoothing = static_cast<float>(spec.train.label_smoothing);
  const auto seed = static_cast<std::uint64_t>(spec.train.seed);

  const char* phase = "training";  // what the loop is doing at step phase_step, for error messages
  std::int64_t phase_step = state.step + 1;
  try {
    while (state.step < spec.train.steps) {
      const std::int64_t step = state.step + 1;
      phase = "training";
      phase_step = step;
      if (profile) profile->begin_step();
      const HostBatch host_batch = make_batch(ex.examples(Split::Train, order.batch(step)));
      const model::DeviceBatch batch = ex.batch(host_batch);
      ex.store->zero_grad();
      Graph g(*ex.backend, seed, static_cast<std::uint64_t>(step), /*training=*/true);
      const ops::CrossEntropyResult ce = ops::cross_entropy(g, ex.model->logits(g, batch), batch.targets,
                                                            HostBatch::kIgnore, smoothing);
      float loss = 0.0f;
      ex.backend->copy_to_host(&loss, ce.loss.value());
      if (!std::isfinite(loss)) return finish(RunStatus::Diverged, "loss is " + number_text(loss) + " at step " + std::to_string(step));
      g.backward(ce.loss);
      const double lr = ex.learning_rate(step);
      const double grad_norm = ex.optimizer->step(*ex.store, lr, spec.train.clip_grad_norm);
      if (!std::isfinite(grad_norm))
        return finish(RunStatus::Diverged, "gradient norm is " + number_text(grad_norm) + " at step " + std::to_string(step));
      if (profile) profile->end_step();
      if (dump) dump->record(host_batch, loss, lr);
      state.step = step;
      state.tokens_seen += batch.target_tokens;
      ++steps_this_call;
      state.log_loss_sum += loss;
      state.log_rows += ce.rows;
      state.log_correct += ce.correct;
      state.log_grad_norm_sum += grad_norm;
      ++state.log_steps;
      interval_tokens += batch.target_tokens;
      const double interval_s = std::chrono::duration<double>(Clock::now() - interval_start).count();
      const double tokens_per_s = interval_s > 0 ? static_cast<double>(interval_tokens) / interval_s : 0.0;
      progress.update({step, loss, lr, tokens_per_s, elapsed()});

      std::optional<std::string> stop;
      const bool log_now = step % spec.log.every == 0 || step == spec.train.steps;
      const bool attention_now = spec.log.attention.every > 0 && step % spec.log.attention.every == 0;
      phase = "logging";
      record.probe(step, log_now, attention_now);  // one probe pass serves both
      if (log_now) {
        const auto n = static_cast<double>(state.log_steps);
        const double mean_loss = state.log_loss_sum / n;
        record.train(step, {mean_loss, state.log_rows > 0 ? state.log_correct / state.log_rows : 0.0, lr,
                            state.log_grad_norm_sum / n, tokens_per_s, elapsed()});
        if (spec.train.loss_threshold && mean_loss < *spec.train.loss_threshold)
          stop = "train loss " + number_text(mean_loss) + " below loss_threshold " + number_text(*spec.train.loss_threshold);
        state.log_loss_sum = state.log_rows = state.log_correct = state.log_grad_norm_sum = 0.0;
        state.log_steps = interval_tokens = 0;
        record.state({RunStatus::Running, "", step, ""});
        record.flush();  // a crash loses at most the current log interval
        interval_start = Clock::now();
      }
      const bool eval_now = step % spec.eval.every == 0 || step == spec.train.steps || stop;
      if (eval_now) {
        phase = "evaluation";
        run_eval(step);
        if (const auto& es = spec.train.early_stopping) {
          const double value = result.eval.at(es->metric);
          if (!state.has_best || improved(*es, value, state.best_metric)) {
            state.has_best = true;
            state.best_metric = value;
            state.best_step = step;
            state.evals_since_best = 0;
          } else {
            ++state.evals_since_best;
          }
          if (reached(*es, value))
            stop = "early stopping: " + es->metric + " " + number_text(value) + " reached target " + number_text(*es->target);
          else if (es->patience > 0 && state.evals_since_best >= es->patience)
            stop = "early stopping: " + es->metric + " did not improve in " + std::to_string(es->patience) +
                   " evaluations (best " + number_text(state.best_metric) + " at step " + std::to_string(state.best_step) + ")";
        }
        record_eval(step, stop.has_value() || step == spec.train.steps);
        save();
      }
      if (stop) return finish(RunStatus::Completed, *stop);
      if (g_stop_requested.load() || (options.stop_after > 0 && steps_this_call >= options.stop_after)) {
        if (!eval_now) save();
        return finish(RunStatus::Interrupted, std::string(g_stop_requested.load() ? "stopped by a signal" : "--stop-after") +
                                                  "; continue with --resume");
      }
    }
    return finish(RunStatus::Completed, "reached train.steps");
  } catch (...) {
    // Where the run was, added to a plugin's fault; then recorded as the run's failure.
    const std::exception_ptr error = in_context("at step " + std::to_string(phase_step) + " (" + phase + ")");
    result.status = RunStatus::Failed;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      result.reason = e.what();
    }
    result.step = state.step;
    progress.finish();
    try {
      record.state({RunStatus::Failed, result.reason, state.step, results::utc_now_iso8601()});
      record.flush();
    } catch (const std::exception&) {  // the original error is the one to report
    }
    std::rethrow_exception(error);
  }
}

}  // namespace ablate::train
