// The training loop (runner.hpp): one optimizer step per batch (forward, loss, backward, clip,
// Adam with the schedule's lr), train metrics every log.every steps, evaluation and checkpoint
// every eval.every steps, stopping rules (steps, early stopping, loss threshold, NaN/Inf, a stop
// request), and the run directory's records. Resume restores weights, moments and counters from
// the checkpoint; the data order and dropout masks are functions of the step, so the resumed
// loss curve is the uninterrupted one. run_experiment checks the run directory (RunDirectory)
// and hands the run to a Trainer: open, then step / log / evaluate until a stopping rule, finish.
#include "train/runner.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <numeric>
#include <optional>
#include <sstream>

#include "ablate/error.hpp"
#include "ablate/ops.hpp"
#include "core/text.hpp"
#include "plugin_host/plugin_call.hpp"
#include "train/checkpoint.hpp"
#include "train/compute.hpp"
#include "train/weight_ema.hpp"
#include "train/data_order.hpp"
#include "train/evaluator.hpp"
#include "train/experiment.hpp"
#include "train/reference_dump.hpp"
#include "train/run_directory.hpp"
#include "train/run_recorder.hpp"

namespace ablate::train {
namespace {

std::atomic<bool> g_stop_requested{false};

// tokens and flops: the target tokens and training FLOPs (train/compute.hpp) so far, cumulative.
const std::vector<std::string> kTrainColumns = {"loss",         "token_accuracy", "lr",     "grad_norm",
                                                "tokens_per_s", "elapsed_s",      "tokens", "flops"};
constexpr std::int64_t kSamples = 5;  // decoded eval examples kept per evaluation (tasks with text)

std::string metrics_text(const std::map<std::string, double>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : " ") + k + " " + number_text(std::round(v * 1e4) / 1e4);
  return s;
}

// What precision really runs: "f32", or "bf16 (how this backend computes it)".
std::string precision_text(const spec::ExperimentSpec& spec, const BackendCaps& caps) {
  if (spec.precision != spec::Precision::bf16) return "f32";
  return "bf16 (" +
         (caps.bf16_arithmetic.empty() ? std::string("arithmetic not described by the backend") : caps.bf16_arithmetic) + ")";
}

bool improved(const spec::EarlyStoppingSpec& es, double value, double best) {
  return es.mode == spec::MetricMode::max ? value > best : value < best;
}
bool reached(const spec::EarlyStoppingSpec& es, double value) {
  return es.target && (es.mode == spec::MetricMode::max ? value >= *es.target : value <= *es.target);
}

// The training split's order: batches of batch_size examples, or of about train.batch_tokens
// tokens (each example's size its row_tokens, as a batch row pads it).
DataOrder data_order(const spec::ExperimentSpec& spec, const Experiment& ex) {
  const auto seed = static_cast<std::uint64_t>(spec.train.seed);
  const std::int64_t n = ex.size(Split::Train);
  if (spec.train.batch_tokens == 0) return DataOrder(n, spec.train.batch_size, seed);
  std::vector<std::int64_t> all(static_cast<std::size_t>(n)), sizes;
  std::iota(all.begin(), all.end(), std::int64_t{0});
  sizes.reserve(all.size());
  for (const Example& e : ex.examples(Split::Train, all))
    sizes.push_back(row_tokens(static_cast<std::int64_t>(e.src.size()), static_cast<std::int64_t>(e.tgt.size())));
  return DataOrder::by_tokens(std::move(sizes), spec.train.batch_tokens, seed);
}

// One run from its first (or checkpointed) step to a stopping rule. open() builds the model,
// restores a checkpoint and starts the run file; run() loops step -> log -> evaluate; finish()
// records how it ended. A failure anywhere in the loop is recorded as the run's, then rethrown.
class Trainer {
 public:
  using Clock = std::chrono::steady_clock;

  Trainer(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const RunOptions& options, const RunDirectory& dir,
          std::string identity, std::string id, std::ostream& out)
      : spec_(spec),
        registry_(registry),
        options_(options),
        dir_(dir),
        identity_(std::move(identity)),
        id_(std::move(id)),
        out_(out),
        profile_(options.profile ? std::make_shared<OpProfile>() : nullptr),
        // first: a spec problem leaves no directory behind. A new run reads no tokenizer its folder
        // may hold (left by a start killed before run.h5): it trains its own and writes it over;
        // a branch (train.branch_from) reads its run's, whose token ids it continues to train.
        ex_(spec, registry, profile_, dir.tokenizer_dir(options.resume)),
        order_(data_order(spec, ex_)) {}

  void open();
  RunResult run();

 private:
  // Step `step`: one optimizer step on its batch (its lr and the interval's throughput kept for
  // log()). A non-finite loss or gradient ends the run.
  std::optional<RunResult> step(std::int64_t step);
  // train.budget: the steps that spend it at step 1's cost (its micro-batches' target tokens, or
  // 3x their forward passes' FLOPs: the first batches as training reads them, so the count repeats
  // on resume), at most train.steps; the schedule's horizon follows. Without a budget, train.steps.
  std::int64_t planned_steps();
  // The step's forward and backward passes: its accumulate x batch_size examples as micro-batches
  // of batch_size, each loss weighted by its share of the step's target tokens, the gradients
  // summed into the parameters'. The step's loss (the token-weighted mean) and counts.
  struct Pass {
    float loss = 0.0f;
    double rows = 0, correct = 0;
    std::int64_t target_tokens = 0;
    double forward_flops = 0.0;  // Graph::flops of the micro-batches' forward passes
  };
  Pass forward_backward(std::int64_t step, const std::vector<std::vector<std::int64_t>>& micro_batches);
  // The data order's first batch of `step` (1-based): its accumulate micro-batches are this and the next K - 1.
  std::int64_t first_batch(std::int64_t step) const { return (step - 1) * spec_.train.accumulate + 1; }
  // The train row at log steps (and the probe); a stop reason when the loss threshold is crossed.
  std::optional<std::string> log(std::int64_t step);
  // The eval split scored (and eval.lengths, a language model's samples), with early stopping.
  void evaluate(std::int64_t step, std::optional<std::string>& stop);
  // The evaluation's row, the test split on the last one, the samples; printed.
  void record_evaluation(std::int64_t step, bool last);
  // checkpoint.bin; at an evaluation (`evaluated`) also the weights train.keep_checkpoints keeps.
  void save(bool evaluated);
  // The counters a checkpoint keeps that live elsewhere while training (wall time, optimizer steps).
  void sync_state();
  RunResult finish(RunStatus status, std::string reason);
  double elapsed() const { return elapsed_before_ + std::chrono::duration<double>(Clock::now() - process_start_).count(); }

  const spec::ExperimentSpec& spec_;
  const PluginRegistry& registry_;
  const RunOptions& options_;
  const RunDirectory& dir_;
  const std::string identity_, id_;
  std::ostream& out_;
  const std::shared_ptr<OpProfile> profile_;
  Experiment ex_;
  DataOrder order_;
  std::optional<ReferenceDump> dump_;  // written before training: the parameters' initial values
  std::optional<WeightEma> ema_;       // train.ema: the average of the weights
  bool generate_ = false;              // a language model's sampled continuations
  std::vector<spec::Metric> metrics_;
  std::vector<std::string> base_cols_, eval_cols_;
  std::vector<std::int64_t> lengths_;       // eval.lengths evaluated (the others are NaN)
  std::vector<std::int64_t> test_lengths_;  // eval.lengths the test split has windows of
  bool has_test_ = false;
  std::int64_t samples_ = 0;
  std::optional<RunRecorder> record_;
  std::optional<Progress> progress_;
  TrainState state_;
  RunResult result_;
  Evaluation evaluation_;  // the last one; recorded once the step's stop decision is made
  Clock::time_point process_start_ = Clock::now(), interval_start_ = Clock::now();
  double elapsed_before_ = 0.0;
  std::int64_t interval_tokens_ = 0;  // throughput of the train log's interval (wall time: not resumable state)
  std::int64_t steps_this_call_ = 0;
  double lr_ = 0.0, tokens_per_s_ = 0.0;  // of the last step
  std::int64_t steps_ = 0;                // the run's length: train.steps, or train.budget's steps (planned_steps)
  std::string budget_text_;               // "train.budget.flops 1e+12: 730 steps of 1.37e+09" ("" without one)
};

std::int64_t Trainer::planned_steps() {
  if (!spec_.train.budget) return spec_.train.steps;
  const spec::BudgetSpec& budget = *spec_.train.budget;
  double tokens = 0.0, flops = 0.0;
  for (std::int64_t k = 0; k < spec_.train.accumulate; ++k) {
    const std::int64_t batch_number = first_batch(1) + k;
    const model::DeviceBatch batch = ex_.batch(make_batch(ex_.train_examples(order_.batch(batch_number), batch_number)));
    tokens += static_cast<double>(batch.target_tokens);
    if (budget.flops) {
      Graph g(*ex_.backend, static_cast<std::uint64_t>(spec_.train.seed), 1, /*training=*/false, /*grad=*/false);
      ex_.model->logits(g, batch);
      flops += kTrainFlopsPerForwardFlop * g.flops();
    }
  }
  const char* what = budget.tokens ? "tokens" : "flops";
  const double amount = budget.tokens ? *budget.tokens : *budget.flops, per_step = budget.tokens ? tokens : flops;
  const double steps = std::ceil(amount / per_step);
  std::ostringstream text;
  text << "train.budget." << what << " " << std::setprecision(4) << amount << ": " << static_cast<std::int64_t>(steps)
       << " steps of " << per_step;
  budget_text_ = text.str();
  if (steps > static_cast<double>(spec_.train.steps))
    throw UsageError(budget_text_ + " (step 1's cost), more than train.steps " + std::to_string(spec_.train.steps) +
                         ", the most the budget may take",
                     "raise train.steps (with a budget it only caps the run), or lower the budget");
  ex_.set_schedule_horizon(registry_, static_cast<std::int64_t>(steps));
  return static_cast<std::int64_t>(steps);
}

void Trainer::open() {
  const spec::ExperimentSpec& spec = spec_;
  steps_ = planned_steps();  // before anything is written: a budget past train.steps is refused
  const ParameterCounts counts = count_parameters(*ex_.store);
  const std::string spec_yaml = resolved_run_yaml(spec);  // recorded in the dump and the run file
  if (!options_.dump_reference.empty())
    dump_.emplace(options_.dump_reference, spec_yaml, *ex_.store, ex_.model->config().arch != model::Arch::Decoder,
                  spec.train.batch_size * spec.train.accumulate, ex_.task_info.max_src_len, ex_.task_info.max_tgt_len + 1);
  std::string generate_note;
  generate_ = generates(ex_, &generate_note);
  dir_.prepare();
  ex_.tokenizers->save_to(dir_.path());  // the run reads text with these from now on

  // Where training starts: the run's own checkpoint (a resume), the whole state another run kept
  // (a branch), or the initial weights; RunDirectory checked that either file continues this run.
  const bool resuming = options_.resume && dir_.has_checkpoint();
  if (resuming && spec.train.ema > 0) {
    ema_.emplace(*ex_.store, spec.train.ema);
    ema_->restore(dir_.path(), read_checkpoint(dir_.checkpoint_file()).state.step);  // before the moments load
  }
  if (const std::optional<std::filesystem::path> start = resuming ? dir_.checkpoint_file() : dir_.branch_point()) {
    state_ = load_checkpoint(*start, *ex_.store).state;
    ex_.optimizer->set_steps_taken(state_.optimizer_steps);
  }
  if (!resuming && spec.train.ema > 0) ema_.emplace(*ex_.store, spec.train.ema);  // from the initial (or branch point's) weights
  ex_.optimizer->form_groups(*ex_.store);  // after a checkpoint's state is in: the rule checks what it needs now
  for (const std::string& g : ex_.optimizer->unmatched_rules())
    out_ << "warning: train.optimizer.groups: group '" << g << "' matches no parameter of this model\n";

  std::vector<std::string> skipped;
  metrics_ = applicable_metrics(spec, ex_.task_info, ex_.has_text(), &skipped);
  for (const std::string& s : skipped) out_ << "note: eval metric skipped: " << s << "\n";
  if (!generate_note.empty()) out_ << "note: skipped: " << generate_note << "\n";
  base_cols_ = evaluated_names(metrics_, ex_.score_names());
  eval_cols_ = base_cols_;
  // eval.lengths: the same metrics on examples of each length, as METRIC_at_LENGTH; a length past
  // what the positional encoding represents is recorded as NaN (said once, here).
  const std::int64_t limit = ex_.model->max_positions();
  for (std::int64_t length : spec.eval.lengths) {
    for (const std::string& c : base_cols_) eval_cols_.push_back(at_length(c, length));
    if (limit > 0 && positions_needed(ex_, length) > limit)
      out_ << "note: eval.lengths " << length << ": positional_encoding/" << spec.model.positional_encoding.name << " represents "
           << limit << " positions and examples of length " << length << " need " << positions_needed(ex_, length)
           << "; their metrics are recorded as NaN\n";
    else
      lengths_.push_back(length);
  }
  // A task with a test split is scored on it once, in the last eval row, as test_<metric>.
  has_test_ = ex_.size(Split::Test) > 0;
  if (has_test_)
    for (const std::string& c : base_cols_) eval_cols_.push_back("test_" + c);
  // The test split at eval.lengths too (test_METRIC_at_LENGTH), where the task cuts it at that
  // length: a sweep tunes on the eval split and reports extrapolation on text it never chose by.
  // A length past what the encoding represents is NaN here too.
  if (has_test_)
    for (std::int64_t length : spec.eval.lengths)
      if (ex_.size(Split::Test, length) > 0) {
        test_lengths_.push_back(length);
        for (const std::string& c : base_cols_) eval_cols_.push_back("test_" + at_length(c, length));
      }
  // Decoded eval samples as text, where the task has text and decoding runs; a language model's
  // sampled continuations (generate implies text).
  const bool decodes = std::find(metrics_.begin(), metrics_.end(), spec::Metric::exact_match) != metrics_.end();
  samples_ = (decodes && ex_.has_text()) || generate_ ? std::min<std::int64_t>(kSamples, ex_.size(Split::Eval)) : 0;
  record_.emplace(ex_, kTrainColumns, eval_cols_, samples_);
  if (options_.resume) {
    record_->resume(dir_.run_file(), state_.step);
  } else {
    results::RunInfo info;
    info.run_id = id_;
    info.experiment = spec.name;
    info.spec_yaml = options_.spec_text;
    info.resolved_spec_yaml = spec_yaml;
    info.seed = spec.train.seed;
    info.backend = spec.backend.name;
    const BackendCaps caps = ex_.backend->caps();
    info.backend_device = caps.device;
    info.backend_deterministic = caps.deterministic;
    info.precision = precision_text(spec, caps);
    info.plugins = ex_.plugin_versions;
    info.plugin_code = ex_.code.parts;
    info.code_id = ex_.code.id;
    info.data_files = data_identity(spec);
    info.parameter_kinds = counts.kinds;
    info.parameter_counts = counts.counts;
    if (ex_.parameter_match) info.parameter_match = ex_.parameter_match->text;
    info.host = results::host_name();
    record_->create(dir_.run_file(), info);
  }
  result_.status = RunStatus::Running;
  result_.step = state_.step;

  out_ << "run " << id_ << " of " << spec.name << " -> " << dir_.path().string() << "\n"
       << "model " << spec::to_string(spec.model.arch) << " d_model " << spec.model.d_model << ", " << ex_.store->numel()
       << " parameters (" << counts.of("non_embedding") << " non-embedding); backend " << spec.backend.name << " ("
       << ex_.backend->caps().device << ", " << ex_.backend->caps().threads << " threads), "
       << precision_text(spec, ex_.backend->caps()) << "; "
       << (options_.resume ? "resuming at step " + std::to_string(state_.step)
           : dir_.branch_point().has_value()
               ? "from step " + std::to_string(state_.step) + " of run " + dir_.branch_run().string()
               : std::string("from step 0"))
       << " of " << steps_ << (budget_text_.empty() ? "" : " (" + budget_text_ + ")") << "\n";
  if (ex_.parameter_match) out_ << ex_.parameter_match->text << "\n";
  progress_.emplace(out_, options_.progress, steps_, state_.step, spec.log.every);
  process_start_ = interval_start_ = Clock::now();
  elapsed_before_ = state_.elapsed_seconds;
}

Trainer::Pass Trainer::forward_backward(std::int64_t step, const std::vector<std::vector<std::int64_t>>& micro_batches) {
  const auto K = static_cast<std::int64_t>(micro_batches.size());
  std::vector<model::DeviceBatch> micro;  // [K]: token ids only; the activations live one pass at a time
  micro.reserve(micro_batches.size());
  Pass pass;
  for (std::size_t k = 0; k < micro_batches.size(); ++k) {
    const std::vector<std::int64_t>& part = micro_batches[k];
    micro.push_back(ex_.batch(make_batch(ex_.train_examples(part, first_batch(step) + static_cast<std::int64_t>(k)))));
    pass.target_tokens += micro.back().target_tokens;
  }
  ex_.store->zero_grad();
  double weighted = 0.0;
  for (std::int64_t k = 0; k < K; ++k) {
    const model::DeviceBatch& batch = micro[static_cast<std::size_t>(k)];
    // Micro-batch k > 0 draws its dropout masks from its own stream of the step (k = 0: the step's).
    const std::uint64_t stream = static_cast<std::uint64_t>(step) + (static_cast<std::uint64_t>(k) << 40);
    Graph g(*ex_.backend, static_cast<std::uint64_t>(spec_.train.seed), stream, /*training=*/true);
    const ops::CrossEntropyResult ce = ops::cross_entropy(g, ex_.model->logits(g, batch), batch.targets, HostBatch::kIgnore,
                                                          static_cast<float>(spec_.train.label_smoothing));
    pass.forward_flops += g.flops();  // before backward: only the forward's products count
    float loss = 0.0f;
    ex_.backend->copy_to_host(&loss, ce.loss.value());
    if (!std::isfinite(loss)) return {loss, 0, 0, pass.target_tokens};
    pass.rows += ce.rows;
    pass.correct += ce.correct;
    if (K == 1) {  // the whole batch: no weighting (bit-identical to a run without accumulation)
      g.backward(ce.loss);
      weighted = loss;
    } else {
      const double share = static_cast<double>(batch.target_tokens) / static_cast<double>(pass.target_tokens);
      g.backward(ops::scale(g, ce.loss, static_cast<float>(share)));
      weighted += share * loss;
    }
  }
  pass.loss = static_cast<float>(weighted);
  return pass;
}

std::optional<RunResult> Trainer::step(std::int64_t step) {
  if (profile_) profile_->begin_step();
  // The step's micro-batches: batches (step - 1) K + 1 .. step K of the data order (with fixed
  // batches, the same examples as one batch of K x batch_size).
  const std::int64_t K = spec_.train.accumulate;
  std::vector<std::vector<std::int64_t>> micro_batches;
  for (std::int64_t k = 0; k < K; ++k) micro_batches.push_back(order_.batch(first_batch(step) + k));
  const Pass pass = forward_backward(step, micro_batches);
  const float loss = pass.loss;
  if (!std::isfinite(loss))
    return finish(RunStatus::Diverged, "loss is " + number_text(loss) + " at step " + std::to_string(step));
  lr_ = ex_.learning_rate(step);
  const double grad_norm = ex_.optimizer->step(*ex_.store, lr_, spec_.train.clip_grad_norm);
  if (!std::isfinite(grad_norm))
    return finish(RunStatus::Diverged, "gradient norm is " + number_text(grad_norm) + " at step " + std::to_string(step));
  if (ema_) ema_->update(step);
  if (profile_) profile_->end_step();
  if (dump_) {
    std::vector<Example> examples;  // the step's examples as it read them
    for (std::size_t k = 0; k < micro_batches.size(); ++k)
      for (Example& e : ex_.train_examples(micro_batches[k], first_batch(step) + static_cast<std::int64_t>(k)))
        examples.push_back(std::move(e));
    dump_->record(make_batch(examples), loss, lr_);
  }
  state_.step = step;
  state_.tokens_seen += pass.target_tokens;
  state_.flops_seen += kTrainFlopsPerForwardFlop * pass.forward_flops;
  ++steps_this_call_;
  state_.log_loss_sum += loss;
  state_.log_rows += pass.rows;
  state_.log_correct += pass.correct;
  state_.log_grad_norm_sum += grad_norm;
  ++state_.log_steps;
  interval_tokens_ += pass.target_tokens;
  const double interval_s = std::chrono::duration<double>(Clock::now() - interval_start_).count();
  tokens_per_s_ = interval_s > 0 ? static_cast<double>(interval_tokens_) / interval_s : 0.0;
  progress_->update({step, loss, lr_, tokens_per_s_, elapsed()});
  return std::nullopt;
}

std::optional<std::string> Trainer::log(std::int64_t step) {
  std::optional<std::string> stop;
  const bool log_now = step % spec_.log.every == 0 || step == steps_;
  const bool attention_now = spec_.log.attention.every > 0 && step % spec_.log.attention.every == 0;
  record_->probe(step, log_now && spec_.log.stats, attention_now);  // one probe pass serves both
  if (!log_now) return stop;
  const auto n = static_cast<double>(state_.log_steps);
  const double mean_loss = state_.log_loss_sum / n;
  record_->train(step,
                 {mean_loss, state_.log_rows > 0 ? state_.log_correct / state_.log_rows : 0.0, lr_, state_.log_grad_norm_sum / n,
                  tokens_per_s_, elapsed(), static_cast<double>(state_.tokens_seen), state_.flops_seen});
  if (spec_.train.loss_threshold && mean_loss < *spec_.train.loss_threshold)
    stop = "train loss " + number_text(mean_loss) + " below loss_threshold " + number_text(*spec_.train.loss_threshold);
  state_.log_loss_sum = state_.log_rows = state_.log_correct = state_.log_grad_norm_sum = 0.0;
  state_.log_steps = interval_tokens_ = 0;
  record_->state({RunStatus::Running, "", step, ""});
  record_->flush();  // a crash loses at most the current log interval
  interval_start_ = Clock::now();
  return stop;
}

void Trainer::evaluate(std::int64_t step, std::optional<std::string>& stop) {
  evaluation_ = train::evaluate(ex_, metrics_, Split::Eval, static_cast<std::size_t>(samples_));
  for (std::int64_t length : spec_.eval.lengths) {
    const bool represented = std::find(lengths_.begin(), lengths_.end(), length) != lengths_.end();
    std::map<std::string, double> at;
    if (represented) at = train::evaluate(ex_, metrics_, Split::Eval, 0, length).metrics;
    for (const std::string& c : base_cols_)
      evaluation_.metrics[at_length(c, length)] = represented && at.count(c) ? at[c] : std::nan("");
  }
  if (generate_) evaluation_.samples = generate_samples(ex_, Split::Eval, static_cast<std::size_t>(samples_), step);
  result_.eval = evaluation_.metrics;
  if (const auto& es = spec_.train.early_stopping) {
    const double value = result_.eval.at(es->metric);
    if (!state_.has_best || improved(*es, value, state_.best_metric)) {
      state_.has_best = true;
      state_.best_metric = value;
      state_.best_step = step;
      state_.evals_since_best = 0;
    } else {
      ++state_.evals_since_best;
    }
    if (reached(*es, value))
      stop = "early stopping: " + es->metric + " " + printf_text(value, "%.4g") + " reached target " + number_text(*es->target);
    else if (es->patience > 0 && state_.evals_since_best >= es->patience)
      stop = "early stopping: " + es->metric + " did not improve in " + std::to_string(es->patience) + " evaluations (best " +
             printf_text(state_.best_metric, "%.4g") + " at step " + std::to_string(state_.best_step) + ")";
  }
  record_evaluation(step, stop.has_value() || step == steps_);
}

void Trainer::record_evaluation(std::int64_t step, bool last) {
  std::map<std::string, double> row = evaluation_.metrics;
  std::string text = "eval @ " + std::to_string(step) + ": " + metrics_text(evaluation_.metrics);
  if (last && has_test_) {
    const std::map<std::string, double> test = train::evaluate(ex_, metrics_, Split::Test).metrics;
    for (const auto& [k, v] : test) row["test_" + k] = result_.eval["test_" + k] = v;
    text += "\ntest @ " + std::to_string(step) + ": " + metrics_text(test);
    for (std::int64_t length : test_lengths_) {
      if (std::find(lengths_.begin(), lengths_.end(), length) == lengths_.end()) {  // not represented
        for (const std::string& c : base_cols_)
          row["test_" + at_length(c, length)] = result_.eval["test_" + at_length(c, length)] = std::nan("");
        continue;
      }
      const std::map<std::string, double> at = train::evaluate(ex_, metrics_, Split::Test, 0, length).metrics;
      for (const auto& [k, v] : at) row["test_" + at_length(k, length)] = result_.eval["test_" + at_length(k, length)] = v;
      text += "\ntest at length " + std::to_string(length) + ": " + metrics_text(at);
    }
  }
  for (auto it = row.begin(); it != row.end();)  // the declared columns
    it = std::find(eval_cols_.begin(), eval_cols_.end(), it->first) == eval_cols_.end() ? row.erase(it) : std::next(it);
  record_->eval(step, row);
  if (samples_ > 0) {
    results::SamplesLog log;
    for (const DecodedSample& d : evaluation_.samples) {
      log.src.push_back(d.src);
      log.reference.push_back(d.reference);
      log.prediction.push_back(d.prediction);
    }
    log.src.resize(static_cast<std::size_t>(samples_));  // fewer decoded than declared: empty texts
    log.reference.resize(static_cast<std::size_t>(samples_));
    log.prediction.resize(static_cast<std::size_t>(samples_));
    record_->samples(step, log);
  }
  progress_->message(text);
}

void Trainer::sync_state() {
  state_.elapsed_seconds = elapsed();
  state_.optimizer_steps = ex_.optimizer->steps_taken();
}

void Trainer::save(bool evaluated) {
  record_->flush();  // the run file holds every row up to the checkpoint before the checkpoint exists
  sync_state();
  if (ema_) ema_->save(dir_.path(), state_, identity_);  // before checkpoint.bin: a checkpoint always has its average
  save_checkpoint(dir_.checkpoint_file(), *ex_.store, state_, identity_);
  if (ema_) WeightEma::keep_newest(dir_.path());
  if (evaluated && spec_.train.keep_checkpoints > 0)
    keep_checkpoint(dir_.path(), *ex_.store, state_, identity_, spec_.train.keep_checkpoints);
}

RunResult Trainer::finish(RunStatus status, std::string reason) {
  result_.status = status;
  result_.reason = std::move(reason);
  result_.step = state_.step;
  progress_->finish();
  record_->state({status, result_.reason, state_.step, results::utc_now_iso8601()});
  record_->flush();
  out_ << results::to_string(status) << " at step " << state_.step << ": " << result_.reason << " (" << format_duration(elapsed())
       << ")\n";
  if (profile_) out_ << profile_->report();
  return result_;
}

RunResult Trainer::run() {
  const char* phase = "training";  // what the loop is doing at step phase_step, for error messages
  std::int64_t phase_step = state_.step + 1;
  try {
    while (state_.step < steps_) {
      if (options_.stop_at > 0 && state_.step >= options_.stop_at)
        return finish(RunStatus::Interrupted, "--stop-at " + std::to_string(options_.stop_at) + "; continue with --resume");
      const std::int64_t step = state_.step + 1;
      phase = "training";
      phase_step = step;
      if (std::optional<RunResult> diverged = this->step(step)) return *diverged;
      phase = "logging";
      std::optional<std::string> stop = log(step);
      const bool eval_now = step % spec_.eval.every == 0 || step == steps_ || stop;
      if (eval_now) {
        phase = "evaluation";
        evaluate(step, stop);
        save(true);
      }
      if (std::binary_search(spec_.train.branch_points.begin(), spec_.train.branch_points.end(), step)) {
        sync_state();
        keep_branch_point(dir_.path(), *ex_.store, state_, identity_);  // train.branch_points: the whole state
      }
      if (stop) return finish(RunStatus::Completed, *stop);
      const bool at_stop = options_.stop_at > 0 && step >= options_.stop_at && step < steps_;
      if (g_stop_requested.load() || (options_.stop_after > 0 && steps_this_call_ >= options_.stop_after) || at_stop) {
        if (!eval_now) save(false);
        const std::string why = g_stop_requested.load() ? "stopped by a signal"
                                : at_stop               ? "--stop-at " + std::to_string(options_.stop_at)
                                                        : std::string("--stop-after");
        return finish(RunStatus::Interrupted, why + "; continue with --resume");
      }
    }
    return finish(RunStatus::Completed, budget_text_.empty() ? "reached train.steps" : "spent " + budget_text_);
  } catch (...) {
    // Where the run was, added to a plugin's fault; then recorded as the run's failure.
    const std::exception_ptr error = in_context("at step " + std::to_string(phase_step) + " (" + phase + ")");
    result_.status = RunStatus::Failed;
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      result_.reason = e.what();
    }
    result_.step = state_.step;
    progress_->finish();
    try {
      record_->state({RunStatus::Failed, result_.reason, state_.step, results::utc_now_iso8601()});
      record_->flush();
    } catch (const std::exception&) {  // the original error is the one to report
    }
    std::rethrow_exception(error);
  }
}

}  // namespace

void request_stop() { g_stop_requested.store(true); }

std::string resolved_run_yaml(spec::ExperimentSpec spec) {
  spec.sweep = {};
  return spec::resolved_yaml(spec);
}

std::string run_id(const spec::ExperimentSpec& spec) { return run_id_of_identity(spec::identity_yaml(spec)); }

std::string run_id_of_identity(const std::string& yaml) {
  const std::uint64_t h = fnv1a64(yaml.data(), yaml.size());
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 12);
}

RunResult run_experiment(const spec::ExperimentSpec& spec, const PluginRegistry& registry, const RunOptions& options,
                         std::ostream& out) {
  g_stop_requested.store(false);
  const bool dumping = !options.dump_reference.empty();
  if (dumping && options.resume)
    throw UsageError("--dump-reference records a run from its first step; it cannot continue one with --resume",
                     "dump a new run into another directory");
  if (dumping && spec.train.batch_tokens > 0)
    throw UsageError(
        "--dump-reference records batches of train.batch_size rows; train.batch_tokens makes batches of "
        "varying rows",
        "dump a run without train.batch_tokens");
  if (dumping && std::filesystem::exists(options.dump_reference))
    throw UsageError("the reference dump " + options.dump_reference.string() + " already exists",
                     "--dump-reference never overwrites: remove it or name another file");
  const std::string identity = spec::identity_yaml(spec);  // what a checkpoint must match
  const std::string id = run_id(spec);
  const RunDirectory dir(spec, registry, options, identity, id);  // never another run's results
  if (options.resume && dir.completed()) {
    out << "run in " << dir.path().string() << " is already completed; nothing to do\n";
    RunResult done;
    done.status = RunStatus::Completed;
    done.reason = "already completed";
    return done;
  }
  Trainer trainer(spec, registry, options, dir, identity, id, out);
  trainer.open();
  return trainer.run();
}

}  // namespace ablate::train
