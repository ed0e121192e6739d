// Tests for framework/analysis/compare and report: arms from varying keys, seed aggregation,
// Welch or paired tests against the baseline with Holm, diverged runs, censored steps-to-target,
// the factorial model through compare(), and the renderings (≤ 100 columns; JSON checked by
// Debian's python3). Expected t/df/p come from mpmath at 40 digits (see stats_test).
#include "analysis/compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "analysis/report.hpp"

namespace ablate::analysis {
namespace {

using Curve = std::vector<std::pair<std::int64_t, double>>;

RunSummary make_run(const std::string& id, const std::string& block, int seed, const std::string& status, double exact_match,
                    Curve curve, double tokens_per_s) {
  RunSummary r;
  r.run_id = id;
  r.path = "results/quickstart/" + id + "/run.h5";
  r.status = status;
  r.config = {{"name", "quickstart"}, {"model.block", block}, {"train.seed", std::to_string(seed)}, {"train.steps", "300"}};
  r.final_metrics = {{"exact_match", exact_match}, {"loss", 1.0 - exact_match}};
  r.eval_curves = {{"exact_match", std::move(curve)}};
  r.tokens_per_s = tokens_per_s;
  return r;
}

// 2 arms x 3 seeds. post_norm: 0.90, 0.91, 0.89 (mean 0.90, std 0.01). pre_norm: 0.95, 0.97 and a
// diverged seed 3 (mean 0.96, std sqrt(2)/100). Input order puts pre_norm first on purpose.
std::vector<RunSummary> synthetic_runs() {
  return {
      make_run("pre-s1", "pre_norm", 1, "completed", 0.95, {{100, 0.7}, {200, 0.95}}, 900),
      make_run("post-s1", "post_norm", 1, "completed", 0.90, {{100, 0.5}, {200, 0.85}, {300, 0.90}}, 1000),
      make_run("pre-s2", "pre_norm", 2, "completed", 0.97, {{100, 0.92}, {200, 0.97}}, 950),
      make_run("post-s2", "post_norm", 2, "completed", 0.91, {{100, 0.6}, {200, 0.91}, {300, 0.91}}, 1100),
      make_run("pre-s3", "pre_norm", 3, "diverged", 0.10, {{100, 0.93}, {200, NAN}}, 10000),
      make_run("post-s3", "post_norm", 3, "completed", 0.89, {{100, 0.5}, {200, 0.8}, {300, 0.89}}, 1200),
  };
}

Comparison synthetic_comparison() { return compare(synthetic_runs()); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> split_csv_simple(const std::string& line) {  // rows without quoted fields
  std::vector<std::string> fields(1);
  for (const char ch : line) {
    if (ch == ',')
      fields.emplace_back();
    else
      fields.back() += ch;
  }
  return fields;
}

// Text wrapped at 100 columns read back as one line per paragraph (continuations joined).
std::string unwrapped(std::string text) {
  for (auto at = text.find("\n  "); at != std::string::npos; at = text.find("\n  ", at)) text.replace(at, 3, " ");
  return text;
}

std::size_t display_column(const std::string& line, std::size_t byte_pos) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < byte_pos; ++i)
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) ++n;
  return n;
}

template <class F>
void expect_error(F&& f, const std::string& message_part, const std::string& hint_part = {}) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << message_part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message_part), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find(hint_part), std::string::npos) << e.hint();
  }
}

TEST(CompareKeys, VaryingKeysLeaveOutSeedsAndIgnoredKeys) {
  auto runs = synthetic_runs();
  EXPECT_EQ(varying_keys(runs), std::vector<std::string>{"model.block"});
  EXPECT_EQ(replicate_keys(), (std::vector<std::string>{"train.seed", "train.branch_from.run"}));
  for (std::size_t i = 0; i < runs.size(); ++i)  // each seed's branch from its own stable run: no arm axis
    runs[i].config["train.branch_from.run"] = "results/stable/run" + std::to_string(i);
  EXPECT_EQ(varying_keys(runs), std::vector<std::string>{"model.block"});
  runs[0].config["train.ema"] = "0.999";  // kept files: no part of what the arms compute
  runs[1].config["train.branch_points"] = "[400, 800]";
  runs[1].config["description"] = "free text";
  EXPECT_EQ(varying_keys(runs), std::vector<std::string>{"model.block"});
  runs[0].config["train.schedule.warmup"] = "400";  // present in one run only: differs
  runs[1].config["train.steps"] = "600";
  EXPECT_EQ(varying_keys(runs), (std::vector<std::string>{"model.block", "train.schedule.warmup", "train.steps"}));
  EXPECT_EQ(varying_keys(runs, {"train.steps"}), (std::vector<std::string>{"model.block", "train.schedule.warmup"}));
  EXPECT_TRUE(varying_keys({}).empty());
  EXPECT_TRUE(varying_keys({runs[0]}).empty());
}

TEST(CompareKeys, OptionsThatFollowFromAVaryingPluginDoNotSplitArms) {
  auto runs = synthetic_runs();  // model.block varies
  for (auto& run : runs) {
    const bool pre = run.config.at("model.block") == "pre_norm";
    if (pre) run.config["model.block.final_norm"] = "true";  // exists only with pre_norm
    run.config["model.block.eps"] = "1e-05";
    run.config["backend.threads"] = pre ? "1" : "2";  // an execution key: speed only
  }
  EXPECT_EQ(varying_keys(runs), std::vector<std::string>{"model.block"});
  runs[0].config["model.block.eps"] = "1e-06";  // now differs within an arm: a real axis
  EXPECT_EQ(varying_keys(runs), (std::vector<std::string>{"model.block", "model.block.eps"}));
}

TEST(CompareKeys, TunedKeysAreShownPerArmAndSplitNoArm) {
  // Each block ran at the lr it chose (sweep.tune); the schedule's lr takes the optimizer's.
  std::vector<RunSummary> runs = synthetic_runs();
  for (RunSummary& r : runs) {
    const std::string lr = r.config.at("model.block") == "pre_norm" ? "0.003" : "0.001";
    r.config["train.optimizer.lr"] = r.config["train.schedule.lr"] = lr;
  }
  CompareOptions o;
  EXPECT_EQ(compare(runs, o).keys, (std::vector<std::string>{"model.block", "train.optimizer.lr", "train.schedule.lr"}));
  o.tuned_keys = {"train.optimizer.lr"};
  const Comparison c = compare(runs, o);
  EXPECT_EQ(c.keys, std::vector<std::string>{"model.block"});
  ASSERT_EQ(c.arms.size(), 2u);
  EXPECT_EQ(c.arms[0].label, "post_norm");
  EXPECT_EQ(c.arms[0].tuned.at("train.optimizer.lr"), "0.001");
  EXPECT_EQ(c.arms[1].tuned.at("train.optimizer.lr"), "0.003");
  const std::string table = format_table(c);
  EXPECT_NE(table.find("lr (tuned)"), std::string::npos) << table;
  runs[0].config["train.optimizer.lr"] = "0.01";  // one pre_norm run at another lr
  EXPECT_EQ(compare(runs, o).arms[1].tuned.at("train.optimizer.lr"), "mixed");
}

TEST(CompareCompute, ArmsApartInSizeOrFlopsPerTokenGetANoteNamingThem) {
  const auto notes_of = [](const Comparison& c) {
    std::string all;
    for (const std::string& n : c.notes) all += n + "\n";
    return all;
  };
  std::vector<RunSummary> runs = synthetic_runs();
  for (RunSummary& r : runs) {
    const bool pre = r.config.at("model.block") == "pre_norm";
    r.parameters = pre ? 2040 : 2000;
    r.non_embedding_parameters = pre ? 1040 : 1000;  // 4% apart: within the default 5%
    r.flops_per_token = pre ? 3.3e6 : 3.0e6;         // 10% apart
  }
  CompareOptions o;
  // Each arm's counts, in the report's compute table and in summary.csv / summary.json.
  const Comparison counted = compare(runs, o);
  const Table table = compute_table(counted);
  ASSERT_EQ(table.rows.size(), 2u);
  EXPECT_EQ(table.rows[0], (std::vector<std::string>{"post_norm", "2000", "1000", "3e+06"}));
  EXPECT_EQ(table.rows[1], (std::vector<std::string>{"pre_norm", "2040", "1040", "3.3e+06"}));
  EXPECT_NE(summary_csv(counted).find(",2040,1040,3300000\n"), std::string::npos) << summary_csv(counted);
  EXPECT_NE(summary_json(counted).find(
                "\"compute\": {\"parameters\": 2040, \"non_embedding_parameters\": 1040, \"flops_per_token\": 3300000}"),
            std::string::npos);
  EXPECT_NE(report_markdown(counted).find("## Compute per arm"), std::string::npos);
  EXPECT_TRUE(compute_table(compare(synthetic_runs(), o)).rows.empty());  // not recorded: no table
  std::string notes = notes_of(counted);
  EXPECT_EQ(notes.find("non-embedding parameters"), std::string::npos) << notes;
  EXPECT_NE(notes.find("the arms differ in training FLOPs per token by 10.0% (post_norm: 3e+06, pre_norm: 3.3e+06; "
                       "more than --cost-tolerance 5%)"),
            std::string::npos)
      << notes;
  o.cost_tolerance = 0.02;
  notes = notes_of(compare(runs, o));
  EXPECT_NE(notes.find("the arms differ in non-embedding parameters by 4.0% (post_norm: 1000, pre_norm: 1040"), std::string::npos)
      << notes;
  o.cost_tolerance = 0.2;
  EXPECT_EQ(notes_of(compare(runs, o)).find("the arms differ"), std::string::npos);
  // One FLOPs budget for every run: the compute is matched (in different steps), said as such; a
  // budget that differs between the runs does not count.
  for (RunSummary& r : runs) r.config["train.budget.flops"] = "1e+12";
  notes = notes_of(compare(runs, CompareOptions{}));
  EXPECT_NE(notes.find("by 10.0% (post_norm: 3e+06, pre_norm: 3.3e+06; more than --cost-tolerance 5%): every arm trained "
                       "for the same FLOPs (train.budget.flops 1e+12), so the compute is matched"),
            std::string::npos)
      << notes;
  runs[0].config["train.budget.flops"] = "2e+12";
  notes = notes_of(compare(runs, CompareOptions{}));
  EXPECT_NE(notes.find("equal steps are not equal compute"), std::string::npos) << notes;
  for (RunSummary& r : runs) r.config["train.budget.flops"] = "null";  // a tokens budget: no FLOPs budget
  notes = notes_of(compare(runs, CompareOptions{}));
  EXPECT_NE(notes.find("equal steps are not equal compute"), std::string::npos) << notes;
  for (RunSummary& r : synthetic_runs()) EXPECT_TRUE(std::isnan(r.flops_per_token));  // unknown: no note
  EXPECT_EQ(notes_of(compare(synthetic_runs(), CompareOptions{})).find("the arms differ"), std::string::npos);
}

TEST(CompareKeys, MetricDirectionFromItsName) {
  EXPECT_TRUE(higher_is_better_by_name("exact_match"));
  EXPECT_TRUE(higher_is_better_by_name("token_accuracy"));
  EXPECT_TRUE(higher_is_better_by_name("decoded_bleu"));
  EXPECT_FALSE(higher_is_better_by_name("loss"));
  EXPECT_FALSE(higher_is_better_by_name("perplexity"));
  EXPECT_FALSE(higher_is_better_by_name("decoded_loss"));
  EXPECT_TRUE(higher_is_better_by_name("lossless_rate"));
  // eval.lengths' columns go their metric's way
  EXPECT_FALSE(higher_is_better_by_name("loss_at_128"));
  EXPECT_FALSE(higher_is_better_by_name("test_perplexity_at_512"));
  EXPECT_TRUE(higher_is_better_by_name("token_accuracy_at_64"));
  EXPECT_TRUE(higher_is_better_by_name("loss_at_best"));  // not a length: the name as it stands
  EXPECT_FALSE(higher_is_better_by_name("bits_per_byte"));
  EXPECT_FALSE(higher_is_better_by_name("test_bits_per_byte_at_256"));
  EXPECT_FALSE(higher_is_better_by_name("evals/test/bits_per_byte"));
  EXPECT_FALSE(higher_is_better_by_name("evals/test/loss"));
}

TEST(CompareSynthetic, MeansStdsDeltaAndWelch) {
  const Comparison c = synthetic_comparison();
  EXPECT_EQ(c.metric, "exact_match");  // the default when present
  EXPECT_TRUE(c.higher_is_better);
  EXPECT_TRUE(c.higher_is_better_inferred);
  EXPECT_EQ(c.keys, std::vector<std::string>{"model.block"});
  ASSERT_EQ(c.arms.size(), 2u);
  // Stable order by value, whatever the input order: post_norm < pre_norm, and the first is the baseline.
  EXPECT_EQ(c.arms[0].key_label, "model.block=post_norm");
  EXPECT_EQ(c.arms[1].key_label, "model.block=pre_norm");
  EXPECT_EQ(c.arms[0].label, "post_norm");  // the short label: values only
  EXPECT_EQ(c.baseline, 0u);
  EXPECT_TRUE(c.arms[0].is_baseline);
  EXPECT_FALSE(c.arms[1].is_baseline);

  const Arm& post = c.arms[0];
  EXPECT_EQ(post.n_runs, 3u);
  EXPECT_EQ(post.n(), 3u);
  EXPECT_EQ(post.n_diverged, 0u);
  EXPECT_NEAR(post.mean, 0.90, 1e-12);
  EXPECT_NEAR(post.std, 0.01, 1e-12);
  EXPECT_TRUE(std::isnan(post.delta));

  const Arm& pre = c.arms[1];
  EXPECT_EQ(pre.n_runs, 3u);
  EXPECT_EQ(pre.n_completed, 2u);
  EXPECT_EQ(pre.n_diverged, 1u);
  EXPECT_EQ(pre.n(), 2u);  // the diverged run's 0.10 is not in the mean
  EXPECT_NEAR(pre.mean, 0.96, 1e-12);
  EXPECT_NEAR(pre.std, 0.01414213562373095, 1e-12);
  EXPECT_NEAR(pre.delta, 0.06, 1e-12);
  // mpmath: t = 5.1961524227066319, df = 1.6842105263157895, p = 0.04969146055234231.
  ASSERT_TRUE(pre.test.defined()) << pre.test.note;
  EXPECT_NEAR(pre.test.t, 5.1961524227066319, 1e-9);
  EXPECT_NEAR(pre.test.df, 1.6842105263157895, 1e-9);
  EXPECT_NEAR(pre.test.p, 0.04969146055234231, 1e-9);

  ASSERT_EQ(pre.runs.size(), 3u);
  EXPECT_EQ(pre.runs[2].run_id, "pre-s3");
  EXPECT_EQ(pre.runs[2].status, RunStatus::diverged);
  EXPECT_EQ(pre.runs[2].seed, "3");
  ASSERT_FALSE(c.notes.empty());
  EXPECT_NE(c.notes[0].find("1 diverged run is counted but not in the means"), std::string::npos) << c.notes[0];
}

TEST(CompareSynthetic, StepsToTargetKeepsCensoredRunsAndThroughput) {
  CompareOptions options;
  options.summary = parse_run_value("steps_to:0.9");
  const Comparison c = compare(synthetic_runs(), options);
  EXPECT_EQ(c.value_label, "steps to exact_match ≥ 0.9");
  EXPECT_FALSE(c.higher_is_better);  // fewer steps are better, although exact_match is higher-is-better
  const Arm& post = c.arms[0];
  const Arm& pre = c.arms[1];
  // post_norm reaches 0.9 at steps 300 and 200; seed 3 tops out at 0.89: censored at its last step 300.
  EXPECT_EQ(post.metric_values, (std::vector<double>{300, 200, 300}));
  EXPECT_EQ(post.n_censored, 1u);
  EXPECT_TRUE(post.runs[2].censored);
  EXPECT_NEAR(post.mean, 800.0 / 3.0, 1e-12);
  // pre_norm: steps 200 and 100; the diverged run is not in the statistics.
  EXPECT_EQ(pre.metric_values, (std::vector<double>{200, 100}));
  EXPECT_EQ(pre.n_censored, 0u);
  bool noted = false;
  for (const auto& note : c.notes) noted = noted || note.find("1 run never reached the target") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_NE(format_table(c).find("≥266.7"), std::string::npos) << format_table(c);  // a restricted mean is a lower bound
  // Throughput over completed runs: the diverged run's 10000 tokens/s is left out.
  EXPECT_DOUBLE_EQ(post.tokens_per_s_mean, 1100.0);
  EXPECT_DOUBLE_EQ(pre.tokens_per_s_mean, 925.0);
  EXPECT_EQ(pre.tokens_per_s_n, 2u);
}

TEST(CompareSynthetic, EarlyStoppingMakesStepsToItsTargetTheDefault) {
  auto runs = synthetic_runs();
  for (auto& r : runs) {
    r.config["train.early_stopping.metric"] = "exact_match";
    r.config["train.early_stopping.mode"] = "max";
    r.config["train.early_stopping.target"] = "0.9";
  }
  const Comparison c = compare(runs);
  EXPECT_EQ(c.summary.text(), "steps_to:0.9");
  EXPECT_EQ(c.summary_source, "the runs early-stop at this target");
  EXPECT_EQ(c.arms[1].metric_values, (std::vector<double>{200, 100}));
  runs[0].config["train.early_stopping.target"] = "0.95";  // no shared target: the final value
  EXPECT_EQ(compare(runs).summary.text(), "final");
}

TEST(CompareSynthetic, BaselineOverrideAndLowerIsBetter) {
  CompareOptions options;
  options.metric = "loss";
  options.baseline = "model.block=pre_norm";
  auto runs = synthetic_runs();
  for (auto& r : runs) {  // loss curves: 1 - exact_match
    r.eval_curves["loss"] = r.eval_curves["exact_match"];
    for (auto& [step, v] : r.eval_curves["loss"]) v = 1.0 - v;
  }
  const Comparison c = compare(runs, options);
  EXPECT_EQ(c.metric, "loss");
  EXPECT_FALSE(c.higher_is_better);
  EXPECT_EQ(c.baseline, 1u);
  EXPECT_TRUE(c.arms[1].is_baseline);
  const Arm& post = c.arms[0];
  EXPECT_NEAR(post.mean, 0.10, 1e-12);
  EXPECT_NEAR(post.delta, 0.06, 1e-12);  // loss 0.10 vs 0.04
  EXPECT_NEAR(post.test.t, 5.1961524227066319, 1e-8);
  EXPECT_NEAR(post.test.p, 0.04969146055234231, 1e-8);
  // Lower is better: steps to loss <= 0.1: seed 1 at step 300 (1 - 0.9 = 0.09999999999999998),
  // seed 2 at step 200 (0.09); seed 3 ends at 0.11 (censored at 300).
  options.summary = parse_run_value("steps_to:0.1");
  const Comparison steps = compare(runs, options);
  EXPECT_EQ(steps.arms[0].metric_values, (std::vector<double>{300, 200, 300}));
  EXPECT_EQ(steps.arms[1].metric_values, (std::vector<double>{200, 100}));  // pre_norm: loss 0.05 at 200, 0.08 at 100

  options.summary.reset();
  options.higher_is_better = true;  // an explicit override wins over the name
  const Comparison forced = compare(runs, options);
  EXPECT_TRUE(forced.higher_is_better);
  EXPECT_FALSE(forced.higher_is_better_inferred);
}

TEST(CompareSynthetic, DefaultsToLossWithoutExactMatch) {
  auto runs = synthetic_runs();
  for (auto& r : runs) r.final_metrics.erase("exact_match");
  EXPECT_EQ(compare(runs).metric, "loss");
  for (auto& r : runs) r.final_metrics = {{"token_accuracy", 0.5}};
  expect_error([&] { compare(runs); }, "neither exact_match nor loss", "token_accuracy");
}

TEST(CompareBaseline, NumericOrderAndNumericMatching) {
  std::vector<RunSummary> runs;
  int seed = 0;
  for (const char* lr : {"0.01", "1e-4", "0.001"}) {
    for (const double v : {0.5, 0.6}) {
      RunSummary r;
      r.run_id = std::string("lr") + lr + "-" + std::to_string(++seed);
      r.status = "completed";
      r.config = {{"train.optimizer.lr", lr}, {"train.seed", std::to_string(seed)}};
      r.final_metrics = {{"exact_match", v}};
      runs.push_back(r);
    }
  }
  CompareOptions options;
  Comparison c = compare(runs, options);
  ASSERT_EQ(c.arms.size(), 3u);
  EXPECT_EQ(c.arms[0].key_label, "train.optimizer.lr=1e-4");
  EXPECT_EQ(c.arms[1].key_label, "train.optimizer.lr=0.001");
  EXPECT_EQ(c.arms[2].key_label, "train.optimizer.lr=0.01");
  EXPECT_EQ(c.baseline, 0u);
  options.baseline = "train.optimizer.lr=1e-3";  // matches "0.001" by value
  c = compare(runs, options);
  EXPECT_EQ(c.baseline, 1u);
  // Identical arms: Δ = 0 with equal spread gives t = 0, p = 1, and the best mean is a three-way tie.
  EXPECT_DOUBLE_EQ(c.arms[0].delta, 0.0);
  const auto sentences = interpretation(c);
  EXPECT_EQ(sentences.back(), "The best arms by mean, tied, are 1e-4; 0.001; 0.01 (0.5500).");
  EXPECT_DOUBLE_EQ(c.arms[0].test.p, 1.0);
  // Three arms: two tests against the baseline, Holm-adjusted as one family, and said once.
  bool noted = false;
  for (const auto& note : c.notes) noted = noted || note.find("p(Holm) corrects") != std::string::npos;
  EXPECT_TRUE(noted);
  const std::vector<double> adjusted = holm_adjust(std::vector<double>{c.arms[0].test.p, NAN, c.arms[2].test.p});
  EXPECT_DOUBLE_EQ(c.arms[0].p_holm, adjusted[0]);
  EXPECT_DOUBLE_EQ(c.arms[2].p_holm, adjusted[2]);
  EXPECT_TRUE(std::isnan(c.arms[1].p_holm));
}

TEST(CompareBaseline, SeveralKeysAndBracketedValues) {
  std::vector<RunSummary> runs;
  for (const char* block : {"pre_norm", "post_norm"}) {
    for (const char* betas : {"[0.9, 0.98]", "[0.9, 0.999]"}) {
      RunSummary r;
      r.run_id = std::string(block) + betas;
      r.status = "completed";
      r.config = {{"model.block", block}, {"train.optimizer.betas", betas}};
      r.final_metrics = {{"exact_match", 0.5}};
      runs.push_back(r);
    }
  }
  CompareOptions options;
  options.baseline = "model.block=pre_norm, train.optimizer.betas=[0.9, 0.999]";
  const Comparison c = compare(runs, options);
  ASSERT_EQ(c.arms.size(), 4u);
  EXPECT_EQ(c.arms[c.baseline].key_label, "model.block=pre_norm,train.optimizer.betas=[0.9, 0.999]");
  options.baseline = "model.block=pre_norm";
  expect_error([&] { compare(runs, options); }, "matches 2 arms", "add key=value pairs");
}

TEST(CompareBaseline, AnArmsKeyLabelFindsItEvenWithCommasInAValue) {
  std::vector<RunSummary> runs;
  for (const char* file : {"data/one, two.txt", "data/three, four.txt"}) {
    for (const char* steps : {"500", "1000"}) {
      RunSummary r;
      r.run_id = std::string(file) + steps;
      r.status = "completed";
      r.config = {{"task.file", file}, {"train.steps", steps}};
      r.final_metrics = {{"loss", 2.0}};
      runs.push_back(r);
    }
  }
  CompareOptions options;
  options.baseline = "task.file=data/three, four.txt,train.steps=1000";  // a key_label, as reports pass it on
  const Comparison c = compare(runs, options);
  EXPECT_EQ(c.arms[c.baseline].key_label, options.baseline);
}

// KEY=(unset) names the arm whose runs do not set KEY: a leaderboard's base beside arms that add a
// tokenizer the base does not name, whose other keys are the base's.
TEST(CompareBaseline, UnsetNamesTheArmWithoutTheKey) {
  std::vector<RunSummary> runs;
  for (const char* tokenizer : {"", "sentencepiece", "char"})
    for (int seed = 1; seed <= 2; ++seed) {
      RunSummary r;
      r.run_id = std::string("r_") + tokenizer + std::to_string(seed);
      r.status = "completed";
      r.config = {{"model.block", "pre_norm"}, {"train.seed", std::to_string(seed)}};
      if (*tokenizer) r.config["task.tokenizer"] = tokenizer;
      r.final_metrics = {{"loss", 2.0 + seed}};
      runs.push_back(r);
    }
  CompareOptions options;
  options.baseline = "model.block=pre_norm,task.tokenizer=(unset)";
  const Comparison c = compare(runs, options);
  EXPECT_EQ(c.arms[c.baseline].values.count("task.tokenizer"), 0u);
  EXPECT_EQ(c.arms[c.baseline].runs.size(), 2u);
  options.baseline = "task.tokenizer=(unset)";
  EXPECT_EQ(compare(runs, options).baseline, c.baseline);
  options.baseline = "task.tokenizer=char";
  EXPECT_EQ(compare(runs, options).arms[compare(runs, options).baseline].values.at("task.tokenizer"), "char");
  // What a report hands its figures: each arm's selector names that arm alone, where the unset
  // arm's key_label ("task.tokenizer=(unset)" only when no key is set) would not in general.
  for (std::size_t i = 0; i < c.arms.size(); ++i) {
    options.baseline = arm_selector(c, i);
    EXPECT_EQ(compare(runs, options).baseline, i) << options.baseline;
  }
  EXPECT_EQ(arm_selector(c, c.baseline), "task.tokenizer=(unset)");
}

TEST(CompareBaseline, ErrorsSayWhatIsWrongAndWhatExists) {
  const auto runs = synthetic_runs();
  CompareOptions options;
  options.baseline = "model.block=sandwich";
  expect_error([&] { compare(runs, options); }, "matches no arm", "model.block=post_norm; model.block=pre_norm");
  options.baseline = "train.seed=1";
  expect_error([&] { compare(runs, options); }, "seeds are replicates");
  options.baseline = "train.steps=300";
  expect_error([&] { compare(runs, options); }, "same value in every run", "arms differ in: model.block");
  // Beside a key that defines arms, another setting narrows the arms to those whose runs have it
  // (or lack it: a sweep's base configuration names its plugins' options); at a value no run has,
  // nothing is left.
  options.baseline = "model.block=pre_norm,train.steps=300";
  EXPECT_EQ(compare(runs, options).arms[compare(runs, options).baseline].values.at("model.block"), "pre_norm");
  options.baseline = "model.block=pre_norm,train.steps=999";
  expect_error([&] { compare(runs, options); }, "matches no arm", "model.block=post_norm; model.block=pre_norm");
  options.baseline = "train.steps=300";
  options.baseline_is_default = true;  // a sweep's base configuration that names no arm: the first arm, said so
  const Comparison fallback = compare(runs, options);
  EXPECT_EQ(fallback.baseline, 0u);
  EXPECT_NE(fallback.notes.front().find("the sweep's base configuration (train.steps=300) is not an arm"), std::string::npos)
      << fallback.notes.front();
  options.baseline_is_default = false;
  options.baseline = "model.blok=pre_norm";
  expect_error([&] { compare(runs, options); }, "did you mean model.block?");
  options.baseline = "pre_norm";
  expect_error([&] { compare(runs, options); }, "is not key=value", "key=value[,key=value]");
  options.baseline.clear();
  options.metric = "exact_mach";
  expect_error([&] { compare(runs, options); }, "did you mean 'exact_match'?", "exact_match, loss");
  expect_error([&] { compare({}, {}); }, "no runs");
  auto bad = runs;
  bad[3].status = "exploded";
  expect_error([&] { compare(bad, {}); }, "results/quickstart/post-s2/run.h5: unknown run status 'exploded'", "newer Ablate");
}

TEST(CompareSynthetic, OneSeedPerArmSaysWhyThereIsNoPOnceForEveryArm) {
  std::vector<RunSummary> runs = {make_run("a", "pre_norm", 1, "completed", 0.9, {{100, 0.9}}, 100),
                                  make_run("b", "post_norm", 1, "completed", 0.8, {{100, 0.8}}, 100),
                                  make_run("c", "sandwich", 1, "completed", 0.7, {{100, 0.7}}, 100)};
  const std::string table = format_table(compare(runs));
  const auto first = table.find("p n/a for every arm: ");
  EXPECT_NE(first, std::string::npos) << table;
  EXPECT_EQ(table.find("p n/a", first + 1), std::string::npos) << "one line, not one per arm\n" << table;
}

TEST(CompareSynthetic, FewRunsAndOtherStatusesNeverCrash) {
  auto runs = synthetic_runs();
  runs[2].status = "failed";       // pre-s2: pre_norm keeps one completed run
  runs[3].status = "interrupted";  // post-s2
  runs[5].status = "running";      // post-s3: post_norm keeps one completed run
  const Comparison c = compare(runs);
  EXPECT_EQ(c.arms[0].n(), 1u);
  EXPECT_EQ(c.arms[0].n_interrupted, 1u);
  EXPECT_EQ(c.arms[0].n_running, 1u);
  EXPECT_EQ(c.arms[1].n_failed, 1u);
  EXPECT_TRUE(std::isnan(c.arms[1].std));
  EXPECT_NEAR(c.arms[1].delta, 0.05, 1e-12);
  EXPECT_FALSE(c.arms[1].test.defined());
  EXPECT_NE(c.arms[1].test.note.find("this arm has 1 completed run with a value"), std::string::npos) << c.arms[1].test.note;
  const std::string table = format_table(c);
  EXPECT_NE(table.find("p n/a for pre_norm: this arm has 1 completed run"), std::string::npos) << table;
  EXPECT_NE(unwrapped(table).find("runs counted but not in the means: 1 failed, 1 interrupted, 1 still running"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("2 unfin"), std::string::npos) << table;  // the lost column: interrupted + running
  EXPECT_NE(table.find("1 fail"), std::string::npos) << table;
  EXPECT_NE(unwrapped(table).find("`lost`: runs not in the statistics"), std::string::npos) << table;  // said once

  // A single arm (nothing varies): no baseline comparison, still renders.
  std::vector<RunSummary> same = {synthetic_runs()[1], synthetic_runs()[3]};
  const Comparison one = compare(same);
  ASSERT_EQ(one.arms.size(), 1u);
  EXPECT_EQ(one.arms[0].label, "all runs");
  EXPECT_NE(unwrapped(format_table(one)).find("nothing to compare against"), std::string::npos);

  // Duplicate seeds within an arm are flagged.
  auto dup = synthetic_runs();
  dup[3].config["train.seed"] = "1";
  const Comparison d = compare(dup);
  bool flagged = false;
  for (const auto& note : d.notes) flagged = flagged || note.find("2 runs have train.seed=1") != std::string::npos;
  EXPECT_TRUE(flagged);
}

TEST(CompareReport, TerminalTableIsAlignedAndShowsTheNumbers) {
  const std::string table = format_table(synthetic_comparison());
  const auto lines = lines_of(table);
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines[0], "final exact_match (higher is better; default)") << table;
  EXPECT_EQ(lines[1], "arms by model.block; baseline: post_norm") << table;
  const std::string& head = lines[3];
  const std::string& post = lines[4];
  const std::string& pre = lines[5];
  EXPECT_EQ(head.rfind("arm", 0), 0u);
  EXPECT_NE(post.find("0.9000 ± 0.0100"), std::string::npos) << table;
  EXPECT_NE(pre.find("0.9600 ± 0.0141"), std::string::npos) << table;
  // Δ with Welch's 95% interval: 0.06 ± t_{0.975, 1.684} · 0.011547; p just below 0.05, so it just excludes 0.
  EXPECT_NE(pre.find("+0.0600 [+0.0002, +0.1198]"), std::string::npos) << table;
  EXPECT_NE(pre.find("0.0497*"), std::string::npos) << table;
  EXPECT_NE(post.find("baseline"), std::string::npos) << table;
  EXPECT_NE(pre.find("1 div"), std::string::npos) << table;
  // Columns right-align in display width (the ± and Δ are two bytes each).
  const auto end_of = [](const std::string& line, const std::string& cell) {
    return display_column(line, line.find(cell)) + display_column(cell, cell.size());
  };
  EXPECT_EQ(end_of(head, "Δ [95% CI]"), end_of(pre, "+0.0600 [+0.0002, +0.1198]"));
  EXPECT_EQ(end_of(head, "Δ [95% CI]"), end_of(post, "baseline"));
  EXPECT_NE(unwrapped(table).find("1 diverged run is counted but not in the means"), std::string::npos) << table;
  for (const auto& line : lines) EXPECT_LE(display_column(line, line.size()), 100u) << line;
}

// A 2 x 2 x 2 grid with long values and two seeds, as the README's main job: every line of the
// terminal output fits in 100 columns, and the main effects are printed.
TEST(CompareReport, GridTablesFitIn100Columns) {
  std::vector<RunSummary> runs;
  int i = 0;
  for (const char* block : {"post_norm", "pre_norm"})
    for (const char* pe : {"sinusoidal", "learned"})
      for (const char* ffn : {"relu", "gelu"})
        for (const int seed : {1, 2}) {
          RunSummary r;
          r.run_id = "r" + std::to_string(++i);
          r.status = "completed";
          r.config = {{"model.block", block},
                      {"model.positional_encoding", pe},
                      {"model.ffn", ffn},
                      {"train.seed", std::to_string(seed)}};
          const double steps = 700 + (std::string(pe) == "learned" ? 180 : 0) + (std::string(block) == "pre_norm" ? -40 : 0) +
                               17 * ((i * 7) % 5) + 3 * seed;
          r.eval_curves["exact_match"] = {{static_cast<std::int64_t>(steps), 0.995}};
          r.final_metrics["exact_match"] = 0.995;
          runs.push_back(r);
        }
  CompareOptions options;
  options.summary = parse_run_value("steps_to:0.99");
  options.baseline = "model.block=post_norm,model.positional_encoding=sinusoidal,model.ffn=relu";
  const Comparison c = compare(runs, options);
  EXPECT_TRUE(c.paired);  // seeds 1 and 2 in every arm
  ASSERT_TRUE(c.factorial.defined) << c.factorial.note;
  EXPECT_TRUE(c.factorial.blocked);
  ASSERT_EQ(c.factorial.main_effects.size(), 3u);
  // Keys are sorted; each factor's reference level is the baseline's.
  EXPECT_EQ(c.factorial.main_effects[0].factor, "model.block");
  EXPECT_EQ(c.factorial.main_effects[0].reference, "post_norm");
  EXPECT_EQ(c.factorial.main_effects[2].factor, "model.positional_encoding");
  EXPECT_EQ(c.factorial.main_effects[2].reference, "sinusoidal");
  EXPECT_GT(c.factorial.main_effects[2].estimate, 150.0);
  EXPECT_LT(c.factorial.main_effects[2].p, 0.001);
  const std::string table = format_table(c);
  for (const auto& line : lines_of(table)) EXPECT_LE(display_column(line, line.size()), 100u) << line;
  EXPECT_NE(table.find("model.positional_encoding  learned − sinusoidal"), std::string::npos) << table;
  EXPECT_NE(table.find("post_norm · relu · sinusoidal"), std::string::npos) << table;  // values in sorted key order
  EXPECT_NE(table.find("arms by model.block · model.ffn · model.positional_encoding"), std::string::npos) << table;
  const std::string latex = format_latex(c);
  EXPECT_NE(latex.find("\\toprule"), std::string::npos) << latex;
  EXPECT_NE(latex.find("model.positional\\_encoding & learned $-$ sinusoidal"), std::string::npos) << latex;
}

TEST(CompareReport, MarkdownStatesWhatTheNumbersDoAndDoNotShow) {
  const Comparison c = synthetic_comparison();
  const std::string md = report_markdown(c);
  EXPECT_NE(md.find("| arm | n | mean ± sd | Δ [95% CI] | p | seeds | lost |"), std::string::npos) << md;
  EXPECT_NE(md.find("| pre_norm | 2 | 0.9600 ± 0.0141 | +0.0600 [+0.0002, +0.1198] | 0.0497* | 3 | 1 div |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("pre_norm differs from the baseline by +0.0600 (better)"), std::string::npos) << md;
  EXPECT_NE(md.find("## Caveats"), std::string::npos) << md;
  EXPECT_NE(md.find("1 diverged run is counted but not in the means"), std::string::npos) << md;
  // One boilerplate paragraph per arm is gone: the method is said once.
  EXPECT_EQ(md.find("Welch's t-test", md.find("Welch's t-test") + 1), std::string::npos) << md;

  // A p above 0.05 is reported as "not detected", never as "no difference".
  auto runs = synthetic_runs();
  runs[2].final_metrics["exact_match"] = 0.88;  // pre_norm: 0.95, 0.88
  const std::string md2 = report_markdown(compare(runs));
  EXPECT_NE(md2.find("No arm differs detectably from the baseline"), std::string::npos) << md2;
  EXPECT_NE(md2.find("cannot rule out"), std::string::npos) << md2;
}

// Runs with nothing to conclude from: the sentences say so and why, and name no best arm, in the
// terminal table, report.md and report.html alike; a page whose figures failed says why.
TEST(CompareReport, NothingToCompareIsSaidAndNoArmIsCalledBetter) {
  auto runs = synthetic_runs();
  for (RunSummary& r : runs)
    if (r.config["model.block"] == "post_norm") r.status = "failed";  // the baseline arm
  CompareOptions o;
  o.baseline = "model.block=post_norm";
  const Comparison c = compare(runs, o);
  for (const std::string& text : {report_markdown(c), format_table(c), report_html(c, {}, {}, "No space left on device")}) {
    EXPECT_NE(text.find("Nothing to compare against: the baseline arm post_norm has no value"), std::string::npos) << text;
    EXPECT_NE(text.find("3 failed"), std::string::npos) << text;
    EXPECT_EQ(text.find("No arm differs"), std::string::npos) << text;
    EXPECT_EQ(text.find("best arm"), std::string::npos) << text;
  }
  EXPECT_NE(report_html(c, {}, {}, "No space left on device").find("The figures could not be drawn: No space left on device"),
            std::string::npos);
  for (RunSummary& r : runs) r.status = "failed";
  const std::string md = report_markdown(compare(runs, o));
  EXPECT_NE(md.find("Nothing to compare: no run has a value"), std::string::npos) << md;
  EXPECT_EQ(md.find("best arm"), std::string::npos) << md;
}

TEST(CompareReport, CsvHasHeaderAndOneRowPerArm) {
  const std::string csv = summary_csv(synthetic_comparison());
  const auto lines = lines_of(csv);
  ASSERT_EQ(lines.size(), 3u) << csv;
  EXPECT_EQ(lines[0],
            "arm,key_label,model.block,baseline,runs,completed,diverged,failed,interrupted,running,missing_metric,"
            "censored,metric,summary,n,mean,std,delta,ci_low,ci_high,t,df,p,p_holm,paired,p_note,bootstrap_low,"
            "bootstrap_high,seeds_needed,tokens_per_s_mean,parameters,non_embedding_parameters,flops_per_token");
  const auto post = split_csv_simple(lines[1]);
  const auto pre = split_csv_simple(lines[2]);
  ASSERT_EQ(post.size(), 33u) << lines[1];
  ASSERT_EQ(pre.size(), 33u) << lines[2];
  EXPECT_EQ(std::vector<std::string>(post.begin(), post.begin() + 15),
            (std::vector<std::string>{"post_norm", "model.block=post_norm", "post_norm", "true", "3", "3", "0", "0", "0", "0",
                                      "0", "0", "exact_match", "final", "3"}));
  EXPECT_DOUBLE_EQ(std::stod(post[15]), 0.9);
  EXPECT_NEAR(std::stod(post[16]), 0.01, 1e-15);
  EXPECT_EQ(std::vector<std::string>(post.begin() + 17, post.end()),
            (std::vector<std::string>{"", "", "", "", "", "", "", "", "", "", "", "", "1100", "", "", ""}));  // no Δ, no
                                                                                                              // test, no counts
  EXPECT_EQ(pre[0], "pre_norm");
  EXPECT_NEAR(std::stod(pre[17]), 0.06, 1e-15);
  EXPECT_NEAR(std::stod(pre[20]), 5.1961524227066319, 1e-9);
  EXPECT_NEAR(std::stod(pre[21]), 1.6842105263157895, 1e-9);
  EXPECT_NEAR(std::stod(pre[22]), 0.04969146055234231, 1e-9);
  EXPECT_NEAR(std::stod(pre[23]), 0.04969146055234231, 1e-9);  // one test: Holm leaves it
  EXPECT_EQ(pre[24], "false");                                 // seeds differ (a diverged run): Welch
  EXPECT_NEAR(std::stod(pre[18]), 0.0002, 1e-4);               // p just below 0.05: the CI just excludes 0
  EXPECT_NEAR(std::stod(pre[19]), 0.1198, 1e-4);
  EXPECT_EQ(pre[26], "");         // no bootstrap below 5 values per arm
  EXPECT_FALSE(pre[28].empty());  // seeds needed from the pooled spread

  // Fields with commas or quotes are quoted.
  std::vector<RunSummary> runs;
  for (const char* betas : {"[0.9, 0.98]", "say \"hi\""}) {
    RunSummary r;
    r.status = "completed";
    r.config = {{"train.optimizer.betas", betas}};
    r.final_metrics = {{"loss", 1.0}};
    runs.push_back(r);
  }
  const std::string quoted = summary_csv(compare(runs));
  EXPECT_NE(quoted.find("\"[0.9, 0.98]\",\"train.optimizer.betas=[0.9, 0.98]\",\"[0.9, 0.98]\",true"), std::string::npos)
      << quoted;
  EXPECT_NE(quoted.find("\"say \"\"hi\"\"\",\"train.optimizer.betas=say \"\"hi\"\"\",\"say \"\"hi\"\"\",false"),
            std::string::npos)
      << quoted;
}

// The same seeds in every arm: tests are paired by seed (here the arms differ by a near-constant
// shift that Welch would drown in the seeds' spread), with a bootstrap interval from 5 seeds.
TEST(CompareSynthetic, SameSeedsInEveryArmArePaired) {
  std::vector<RunSummary> runs;
  const std::vector<double> base = {0.70, 0.80, 0.60, 0.90, 0.75}, shift = {0.02, 0.03, 0.025, 0.02, 0.03};
  for (std::size_t s = 0; s < base.size(); ++s)
    for (const bool pre : {false, true}) {
      RunSummary r = make_run((pre ? "pre" : "post") + std::to_string(s), pre ? "pre_norm" : "post_norm", static_cast<int>(s + 1),
                              "completed", base[s] + (pre ? shift[s] : 0.0), {}, 100);
      runs.push_back(r);
    }
  const Comparison c = compare(runs);
  ASSERT_TRUE(c.paired);
  const Arm& pre = c.arms[1];
  EXPECT_TRUE(pre.test.paired);
  std::vector<double> a, b;
  for (std::size_t s = 0; s < base.size(); ++s) {
    a.push_back(base[s] + shift[s]);
    b.push_back(base[s]);
  }
  const WelchTest want = paired_t_test(a, b);
  EXPECT_DOUBLE_EQ(pre.test.p, want.p);
  EXPECT_LT(pre.test.p, 0.001);
  EXPECT_GT(welch_t_test(a, b).p, 0.5);  // unpaired, the shift is invisible
  EXPECT_LE(pre.bootstrap.low, pre.delta);
  EXPECT_GE(pre.bootstrap.high, pre.delta);
  EXPECT_GT(pre.bootstrap.low, 0.0);
  ASSERT_TRUE(pre.seeds_needed.has_value());
  EXPECT_LE(*pre.seeds_needed, 5u);

  // An arm without a value in any run (learned positions scored past their table: NaN) is tested
  // against nothing; the others still pair by seed.
  for (std::size_t s = 0; s < base.size(); ++s)
    runs.push_back(
        make_run("learned" + std::to_string(s), "sandwich_norm", static_cast<int>(s + 1), "completed", std::nan(""), {}, 100));
  const Comparison with_empty = compare(runs);
  EXPECT_TRUE(with_empty.paired);
  for (const Arm& arm : with_empty.arms)
    if (arm.label.find("sandwich_norm") != std::string::npos) {
      EXPECT_TRUE(arm.metric_values.empty());
      EXPECT_FALSE(arm.test.defined());
    } else if (!arm.is_baseline) {
      EXPECT_DOUBLE_EQ(arm.test.p, want.p);
    }
}

// Runs /usr/bin/python3 on `json`, printing what `expression` (of the parsed document d) gives.
std::string python_json(const std::string& json, const std::string& expression) {
  const auto file = std::filesystem::path(testing::TempDir()) / ("compare_summary_" + std::to_string(::getpid()) + ".json");
  std::ofstream(file) << json;
  const std::string command =
      "/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(" + expression + ")' < " + file.string() + " 2>&1";
  std::string out;
  if (FILE* pipe = ::popen(command.c_str(), "r")) {
    char buf[512];
    while (std::fgets(buf, sizeof buf, pipe)) out += buf;
    ::pclose(pipe);
  }
  std::filesystem::remove(file);
  return out;
}

TEST(CompareReport, JsonParsesAndCarriesTheNumbers) {
  if (!std::filesystem::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string json = summary_json(synthetic_comparison());
  EXPECT_EQ(
      python_json(json, "d[\"format_version\"], d[\"metric\"], d[\"summary\"], d[\"baseline\"], d[\"keys\"], d[\"paired\"]"),
      "2 exact_match final post_norm ['model.block'] False\n");
  EXPECT_EQ(python_json(json, "[a[\"key_label\"] for a in d[\"arms\"]], d[\"arms\"][0][\"test\"], d[\"arms\"][0][\"delta\"]"),
            "['model.block=post_norm', 'model.block=pre_norm'] None None\n");
  EXPECT_EQ(python_json(json, "d[\"arms\"][1][\"counts\"], d[\"arms\"][1][\"values_used\"], d[\"arms\"][1][\"mean\"]"),
            "{'runs': 3, 'completed': 2, 'diverged': 1, 'failed': 0, 'interrupted': 0, 'running': 0, 'missing_metric': 0, "
            "'censored': 0} [0.95, 0.97] 0.96\n");
  EXPECT_EQ(python_json(json, "round(d[\"arms\"][1][\"test\"][\"p\"], 8), d[\"arms\"][1][\"test\"][\"name\"], d[\"factorial\"]"),
            "0.04969146 welch_t None\n");
  EXPECT_EQ(python_json(json, "[(r[\"run_id\"], r[\"status\"], r[\"seed\"], r[\"censored\"]) for r in d[\"arms\"][1][\"runs\"]]"),
            "[('pre-s1', 'completed', '1', False), ('pre-s2', 'completed', '2', False), ('pre-s3', 'diverged', '3', False)]\n");

  // Undefined statistics are null, notes and odd characters survive.
  auto runs = synthetic_runs();
  runs[2].status = "failed";
  runs[0].config["model.block"] = "pre\"norm\n";
  runs[4].config["model.block"] = "pre\"norm\n";
  const std::string odd = summary_json(compare(runs));
  EXPECT_EQ(python_json(odd, "d[\"arms\"][1][\"key_label\"], d[\"arms\"][1][\"std\"], d[\"arms\"][1][\"test\"][\"p\"]"),
            "model.block=pre\"norm\n None None\n");
}

}  // namespace
}  // namespace ablate::analysis
