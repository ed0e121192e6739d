// Tests for the run file (framework/results): every attribute and dataset round-trips; resume
// trims rows past the checkpoint and appending continues; a reader in another process sees rows
// and state written after it opened; undeclared metrics, misshapen buffers, non-increasing steps,
// invalid layouts, existing files and second writers are refused loudly.
#include "results/run_file.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"
#include "framework/results/run_file_test_util.hpp"

namespace ablate::results {
namespace {
namespace fs = std::filesystem;
using ablate::testing::error_of;
using ablate::testing::TempDir;
using namespace ablate::results::testing;

// A complete run: train rows at 10..60, eval at 20/40/60, attention + decode at 20/40/60, stats at
// 10..60, samples at 30/60; stopped as interrupted at 60.
void write_full_run(const fs::path& file, const RunInfo& info, const RunLayout& l) {
  RunWriter w = RunWriter::create(file, info, l);
  for (std::int64_t step = 10; step <= 60; step += 10) {
    if (step % 20 == 0) {  // by name, in another order
      const std::vector<double> v = train_values(step);
      w.append_train(step,
                     std::map<std::string, double>{{"tokens_per_s", v[3]}, {"loss", v[0]}, {"lr", v[1]}, {"grad_norm", v[2]}});
    } else {
      w.append_train(step, train_values(step));
    }
    w.append_stats(step, stats_data(l, step).log());
    if (step % 20 == 0) {
      w.append_eval(step, eval_values(step));
      w.append_attention(step, attention_data(l, step).log());
    }
    if (step % 30 == 0) w.append_samples(step, samples_data(step));
    w.set_state({RunStatus::Running, "", step, ""});
    w.flush();
  }
  w.set_state({RunStatus::Interrupted, "stopped by SIGTERM", 60, "2025-01-31T13:00:00Z"});
  w.close();
}

void expect_train_rows(const RunReader& r, const std::vector<std::int64_t>& steps) {
  const MetricTable t = r.metrics(MetricSplit::Train);
  ASSERT_EQ(t.steps, steps);
  ASSERT_EQ(t.names, r.layout().train_metrics);
  for (std::size_t i = 0; i < steps.size(); ++i)
    for (std::size_t c = 0; c < t.names.size(); ++c)
      EXPECT_EQ(t.columns[c][i], train_values(steps[i])[c]) << t.names[c] << " @ " << steps[i];
}

void expect_attention_row(const RunReader& r, std::size_t log, std::int64_t step, double variant = 0) {
  const RunLayout& l = r.layout();
  const AttentionData want = attention_data(l, step, variant);
  for (std::size_t s = 0; s < l.attention.size(); ++s) {
    const FloatTensor got = r.attention(s, log);
    EXPECT_EQ(got.shape,
              (std::vector<std::int64_t>{l.probe.examples, l.attention[s].heads, l.attention[s].queries, l.attention[s].keys}));
    EXPECT_EQ(got.values, want.slots[s]) << l.attention[s].path() << " log " << log;
  }
  const DecodeRecord d = r.decode(log);
  EXPECT_EQ(d.tokens, want.tokens);
  EXPECT_EQ(d.lengths, want.lengths);
  ASSERT_EQ(d.cross.size(), want.cross.size());
  for (std::size_t i = 0; i < d.cross.size(); ++i) EXPECT_EQ(d.cross[i].values, want.cross[i]);
}

TEST(RunFile, RoundTripsEveryAttributeAndDataset) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  const RunInfo info = sample_info();
  const RunLayout l = sample_layout();
  write_full_run(file, info, l);

  const RunReader r(file);
  EXPECT_EQ(r.format_version(), kFormatVersion);
  EXPECT_EQ(r.info(), info);
  EXPECT_EQ(r.layout(), l);
  EXPECT_EQ(r.state(), (RunState{RunStatus::Interrupted, "stopped by SIGTERM", 60, "2025-01-31T13:00:00Z"}));
  EXPECT_TRUE(r.resumes().empty());
  EXPECT_FALSE(r.writer_alive());

  expect_train_rows(r, {10, 20, 30, 40, 50, 60});
  const MetricTable eval = r.metrics(MetricSplit::Eval);
  ASSERT_EQ(eval.steps, (std::vector<std::int64_t>{20, 40, 60}));
  for (std::size_t i = 0; i < 3; ++i)
    for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(eval.columns[c][i], eval_values(eval.steps[i])[c]);
  EXPECT_EQ(eval.column("exact_match"), eval.columns[2]);
  EXPECT_NE(error_of([&] { eval.column("bleu"); }).find("loss, token_accuracy, exact_match"), std::string::npos);

  ASSERT_EQ(r.attention_steps(), (std::vector<std::int64_t>{20, 40, 60}));
  for (std::size_t log = 0; log < 3; ++log) expect_attention_row(r, log, 20 * static_cast<std::int64_t>(log + 1));
  EXPECT_EQ(r.attention_slot("decoder", "cross", 0), 3u);
  EXPECT_NE(error_of([&] { r.attention_slot("decoder", "cross", 5); }).find("/attention/encoder/self/layer_1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { r.attention(0, 3); }).find("it has 3"), std::string::npos);

  const std::vector<std::int64_t> stat_steps{10, 20, 30, 40, 50, 60};
  ASSERT_EQ(r.stats_steps(), stat_steps);
  for (std::size_t t = 0; t < l.stats.size(); ++t) {
    const FloatTensor got = r.stats(l.stats[t].name);
    ASSERT_EQ(got.shape, (std::vector<std::int64_t>{6, 3}));
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t c = 0; c < 3; ++c) EXPECT_EQ(got.values[i * 3 + c], stats_data(l, stat_steps[i]).tables[t][c]);
  }
  for (std::size_t s = 0; s < l.entropy.size(); ++s) {
    const FloatTensor got = r.entropy(r.entropy_slot(l.entropy[s].stack, l.entropy[s].kind, l.entropy[s].layer));
    ASSERT_EQ(got.shape, (std::vector<std::int64_t>{6, 2}));
    for (std::size_t i = 0; i < 6; ++i)
      for (std::size_t h = 0; h < 2; ++h) EXPECT_EQ(got.values[i * 2 + h], stats_data(l, stat_steps[i]).entropy[s][h]);
  }

  ASSERT_EQ(r.sample_steps(), (std::vector<std::int64_t>{30, 60}));
  const SamplesRecord s = r.samples(1);
  const SamplesLog want = samples_data(60);
  EXPECT_EQ(s.step, 60);
  EXPECT_EQ(s.src, want.src);
  EXPECT_EQ(s.reference, want.reference);
  EXPECT_EQ(s.prediction, want.prediction);
}

TEST(RunFile, FillsTheCreationTimeAndKeepsEmptyLists) {
  TempDir dir;
  RunInfo info = sample_info();
  info.created = "";
  info.plugins = {};
  RunLayout l;  // nothing declared: a run that logs nothing but its state
  RunWriter::create(dir.path() / "run.h5", info, l).close();
  const RunReader r(dir.path() / "run.h5");
  EXPECT_EQ(r.info().created.size(), 20u) << r.info().created;  // 2025-01-31T12:00:00Z
  EXPECT_EQ(r.info().created.back(), 'Z');
  EXPECT_TRUE(r.info().plugins.empty());
  EXPECT_EQ(r.layout(), l);
  EXPECT_TRUE(r.metrics(MetricSplit::Train).steps.empty());
  EXPECT_TRUE(r.attention_steps().empty());
  EXPECT_EQ(r.state(), RunState{});
}

TEST(RunFile, ResumeTrimsRowsAfterTheResumeStepAndAppendingContinues) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  const RunLayout l = sample_layout();
  write_full_run(file, sample_info(), l);

  {
    RunWriter w = RunWriter::resume(file, 40, &l);
    const RunReader r(file);  // a reader beside the resumed writer
    EXPECT_TRUE(r.writer_alive());
    EXPECT_EQ(r.state(), (RunState{RunStatus::Running, "", 40, ""}));
    expect_train_rows(r, {10, 20, 30, 40});
    EXPECT_EQ(r.metrics(MetricSplit::Eval).steps, (std::vector<std::int64_t>{20, 40}));
    EXPECT_EQ(r.attention_steps(), (std::vector<std::int64_t>{20, 40}));
    EXPECT_EQ(r.stats_steps(), (std::vector<std::int64_t>{10, 20, 30, 40}));
    EXPECT_EQ(r.sample_steps(), (std::vector<std::int64_t>{30}));
    ASSERT_EQ(r.resumes().size(), 1u);
    EXPECT_EQ(r.resumes()[0].step, 40);

    // Rows logged at or before the checkpoint cannot be logged again.
    EXPECT_NE(error_of([&] { w.append_train(40, train_values(40)); }).find("not after the last logged step 40"),
              std::string::npos);
    // The run continues with new values (variant 5) where the dropped rows were.
    w.append_train(50, train_values(50, 5));
    w.append_attention(60, attention_data(l, 60, 5).log());
    w.append_stats(50, stats_data(l, 50).log());
    w.set_state({RunStatus::Completed, "", 60, "2025-01-31T14:00:00Z"});
    w.close();
  }
  {
    const RunReader r(file);
    const MetricTable t = r.metrics(MetricSplit::Train);
    ASSERT_EQ(t.steps, (std::vector<std::int64_t>{10, 20, 30, 40, 50}));
    EXPECT_EQ(t.columns[0][4], train_values(50, 5)[0]);
    EXPECT_EQ(t.columns[0][3], train_values(40)[0]);
    ASSERT_EQ(r.attention_steps(), (std::vector<std::int64_t>{20, 40, 60}));
    expect_attention_row(r, 1, 40);
    expect_attention_row(r, 2, 60, 5);
    EXPECT_EQ(r.stats_steps(), (std::vector<std::int64_t>{10, 20, 30, 40, 50}));
    EXPECT_EQ(r.state().status, RunStatus::Completed);
  }  // (within one process, a writer cannot open a file a reader holds: HDF5 shares one open file)

  // A second resume is recorded after the first; resuming past the last row keeps everything.
  RunWriter::resume(file, 100).close();
  const RunReader again(file);
  ASSERT_EQ(again.resumes().size(), 2u);
  EXPECT_EQ(again.resumes()[1].step, 100);
  EXPECT_EQ(again.metrics(MetricSplit::Train).steps.size(), 5u);
}

TEST(RunFile, ResumeRefusesAFileWhoseLayoutDiffers) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  const RunLayout l = sample_layout();
  write_full_run(file, sample_info(), l);
  RunLayout other = l;
  other.eval_metrics.push_back("bleu");
  const std::string e = error_of([&] { RunWriter::resume(file, 20, &other); });
  EXPECT_NE(
      e.find(
          "eval metrics: the file has [loss, token_accuracy, exact_match], this run declares [loss, token_accuracy, exact_match, bleu]"),
      std::string::npos)
      << e;
  other = l;
  other.attention[1].heads = 4;
  EXPECT_NE(error_of([&] { RunWriter::resume(file, 20, &other); }).find("attention slot 1"), std::string::npos);
  // Nothing changed.
  const RunReader r(file);
  EXPECT_EQ(r.metrics(MetricSplit::Train).steps.size(), 6u);
  EXPECT_EQ(r.state().status, RunStatus::Interrupted);
  EXPECT_TRUE(r.resumes().empty());
}

TEST(RunFile, RefusesUndeclaredMetricNames) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  RunWriter w = RunWriter::create(file, sample_info(), sample_layout());
  std::string e = error_of([&] { w.append_train(10, std::map<std::string, double>{{"loss", 1.0}, {"bleu", 2.0}}); });
  EXPECT_NE(e.find("'bleu' is not a declared metric of /metrics/train (declared: loss, lr, grad_norm, tokens_per_s)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(file.string()), std::string::npos) << e;
  EXPECT_NE(e.find("declare every metric in RunLayout"), std::string::npos) << e;
  e = error_of([&] { w.append_eval(10, std::map<std::string, double>{{"perplexity", 2.0}}); });
  EXPECT_NE(e.find("'perplexity' is not a declared metric of /metrics/eval"), std::string::npos) << e;
  e = error_of([&] { w.append_train(10, std::vector<double>{1.0, 2.0}); });
  EXPECT_NE(e.find("got 2 values for the 4 declared metrics [loss, lr, grad_norm, tokens_per_s]"), std::string::npos) << e;

  // Declared names left out are NaN.
  w.append_eval(10, std::map<std::string, double>{{"loss", 0.5}});
  w.close();
  const RunReader r(file);
  EXPECT_TRUE(r.metrics(MetricSplit::Train).steps.empty());  // nothing half-written
  const MetricTable eval = r.metrics(MetricSplit::Eval);
  ASSERT_EQ(eval.steps, std::vector<std::int64_t>{10});
  EXPECT_EQ(eval.columns[0][0], 0.5);
  EXPECT_TRUE(std::isnan(eval.columns[1][0]));
}

TEST(RunFile, RefusesWronglyShapedBuffers) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  const RunLayout l = sample_layout();
  RunWriter w = RunWriter::create(file, sample_info(), l);

  AttentionData d = attention_data(l, 10);
  d.slots[1].pop_back();
  std::string e = error_of([&] { w.append_attention(10, d.log()); });
  EXPECT_NE(e.find("attention slot /attention/encoder/self/layer_1 got 63 values, expected [E=2, H=2, Q=4, K=4] = 64"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find(file.string()), std::string::npos);

  d = attention_data(l, 10);
  d.slots.pop_back();
  EXPECT_NE(error_of([&] { w.append_attention(10, d.log()); }).find("got 3 attention buffers for 4 declared slots"),
            std::string::npos);
  d = attention_data(l, 10);
  d.cross.clear();
  EXPECT_NE(error_of([&] { w.append_attention(10, d.log()); }).find("0 decode cross-attention buffers for 1 declared layers"),
            std::string::npos);
  d = attention_data(l, 10);
  d.cross[0].push_back(0.f);
  EXPECT_NE(error_of([&] {
              w.append_attention(10, d.log());
            }).find("/attention/decode/cross/layer_0 got 97 values, expected [E=2, H=2, T=6, S=4] = 96"),
            std::string::npos);
  d = attention_data(l, 10);
  d.lengths[0] = 7;
  EXPECT_NE(error_of([&] { w.append_attention(10, d.log()); }).find("a decode length of 7 is outside 0..6"), std::string::npos);

  StatsData s = stats_data(l, 10);
  s.tables[0].push_back(1.f);
  EXPECT_NE(error_of([&] { w.append_stats(10, s.log()); }).find("/stats/residual_norm got 4 values for 3 declared columns"),
            std::string::npos);
  s = stats_data(l, 10);
  s.entropy[3].pop_back();
  EXPECT_NE(
      error_of([&] { w.append_stats(10, s.log()); }).find("/stats/attention_entropy/decoder/cross/layer_0 got 1 values for H=2"),
      std::string::npos);
  SamplesLog sm = samples_data(10);
  sm.prediction.pop_back();
  EXPECT_NE(error_of([&] { w.append_samples(10, sm); }).find("prediction has 1 texts, declared 2"), std::string::npos);

  // Texts longer than declared are cut at a character boundary.
  sm = samples_data(10);
  sm.prediction[0] = "0123456789abcdeé";  // 17 bytes: 'é' would straddle byte 16
  w.append_samples(10, sm);
  w.close();
  const RunReader r(file);
  EXPECT_TRUE(r.attention_steps().empty());  // nothing half-written
  EXPECT_TRUE(r.stats_steps().empty());
  EXPECT_EQ(r.samples(0).prediction[0], "0123456789abcde");
}

TEST(RunFile, RefusesStepsThatDoNotIncrease) {
  TempDir dir;
  const RunLayout l = sample_layout();
  RunWriter w = RunWriter::create(dir.path() / "run.h5", sample_info(), l);
  w.append_train(10, train_values(10));
  EXPECT_NE(error_of([&] { w.append_train(10, train_values(10)); }).find("train metrics at step 10"), std::string::npos);
  EXPECT_NE(error_of([&] { w.append_train(5, train_values(5)); }).find("not after the last logged step 10"), std::string::npos);
  EXPECT_NE(error_of([&] { w.append_eval(-1, eval_values(0)); }).find("steps are not negative"), std::string::npos);
  w.append_eval(5, eval_values(5));  // tables are independent
  w.append_attention(10, attention_data(l, 10).log());
  EXPECT_NE(error_of([&] { w.append_attention(10, attention_data(l, 10).log()); }).find("attention logs at step 10"),
            std::string::npos);
}

TEST(RunFile, RefusesToCreateOverAnExistingFile) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  RunWriter::create(file, sample_info(), sample_layout()).close();
  const std::string e = error_of([&] { RunWriter::create(file, sample_info(), sample_layout()); });
  EXPECT_NE(e.find("refusing to overwrite " + file.string()), std::string::npos) << e;
  EXPECT_NE(e.find("results are never overwritten"), std::string::npos) << e;
  EXPECT_EQ(RunReader(file).info(), sample_info());  // intact

  const fs::path other = dir.path() / "notes.h5";
  std::ofstream(other) << "not a run";
  EXPECT_NE(error_of([&] { RunWriter::create(other, sample_info(), sample_layout()); }).find("refusing to overwrite"),
            std::string::npos);
  EXPECT_EQ(read_text(other), "not a run");
  // No half-built file is left behind, and the parent directory must exist.
  EXPECT_NE(error_of([&] {
              RunWriter::create(dir.path() / "missing" / "run.h5", sample_info(), sample_layout());
            }).find("no directory"),
            std::string::npos);
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir.path())) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"notes.h5", "run.h5"}));
}

TEST(RunFile, RefusesInvalidLayouts) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  auto refused = [&](RunLayout l) { return error_of([&] { RunWriter::create(file, sample_info(), l); }); };
  RunLayout l = sample_layout();
  l.train_metrics.push_back("step");
  EXPECT_NE(refused(l).find("train metric 'step': the name is reserved"), std::string::npos);
  l = sample_layout();
  l.eval_metrics.push_back("a/b");
  EXPECT_NE(refused(l).find("eval metric 'a/b': use only letters, digits"), std::string::npos);
  l = sample_layout();
  l.train_metrics.push_back("loss");
  EXPECT_NE(refused(l).find("train metric 'loss' is declared twice"), std::string::npos);
  l = sample_layout();
  l.attention[0].stack = "middle";
  EXPECT_NE(refused(l).find("stack 'middle' is not one of encoder, decoder"), std::string::npos);
  l = sample_layout();
  l.attention[2].heads = 0;
  EXPECT_NE(refused(l).find("attention slot 2 (/attention/decoder/self/layer_0): heads must be at least 1"), std::string::npos);
  l = sample_layout();
  l.attention.push_back(l.attention[0]);
  EXPECT_NE(refused(l).find("is declared twice"), std::string::npos);
  l = sample_layout();
  l.probe.src.ids.pop_back();
  EXPECT_NE(refused(l).find("probe src: ids has 7 values, expected [E=2, L=4]"), std::string::npos);
  l = sample_layout();
  l.probe.tgt.lengths[1] = 6;
  EXPECT_NE(refused(l).find("probe tgt: a length of 6 is outside 0..5"), std::string::npos);
  l = sample_layout();
  l.stats[1].name = "attention_entropy";
  EXPECT_NE(refused(l).find("reserved"), std::string::npos);
  l = RunLayout{};
  l.attention = sample_layout().attention;
  EXPECT_NE(refused(l).find("attention logs need a probe batch"), std::string::npos);
  const std::string e = refused(l);
  EXPECT_NE(e.find("invalid run layout"), std::string::npos);
  EXPECT_NE(e.find("docs/results-format.md"), std::string::npos);  // the hint
  EXPECT_FALSE(fs::exists(file));
}

TEST(RunFile, RefusesASecondWriter) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  RunWriter w = RunWriter::create(file, sample_info(), sample_layout());
  EXPECT_TRUE(RunReader(file).writer_alive());
  const std::string e = error_of([&] { RunWriter::resume(file, 0); });
  EXPECT_NE(e.find("another process is writing " + file.string()), std::string::npos) << e;
  w.append_train(10, train_values(10));  // the first writer is unharmed
  w.close();
  EXPECT_FALSE(RunReader(file).writer_alive());
  RunWriter again = RunWriter::resume(file, 10);
  again.append_train(20, train_values(20));
  again.close();
  EXPECT_EQ(RunReader(file).metrics(MetricSplit::Train).steps, (std::vector<std::int64_t>{10, 20}));
  EXPECT_NE(error_of([&] { again.append_train(30, train_values(30)); }).find("is closed"), std::string::npos);
}

TEST(RunFile, EvaluationsAreRecordedBesideTheTrainingRecordAndNeverWrittenOver) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  const RunLayout l = sample_layout();
  write_full_run(file, sample_info(), l);
  const std::string scores = R"({"metrics": {"bleu": 21.5, "loss": 2.25}})";
  RunWriter::record_evaluation(file, {"test", 60, scores, "2025-02-01T10:00:00Z"});
  RunWriter::record_evaluation(file, {"test_beam4", 60, "{}", ""});  // one checkpoint, two evaluations
  {
    const RunReader r(file);
    EXPECT_TRUE(r.records_evaluations());
    const std::vector<EvalRecord> e = r.evaluations();
    ASSERT_EQ(e.size(), 2u);
    EXPECT_EQ(e[0], (EvalRecord{"test", 60, scores, "2025-02-01T10:00:00Z"}));
    EXPECT_EQ(e[1].name, "test_beam4");
    EXPECT_EQ(e[1].checkpoint_step, 60);
    EXPECT_EQ(e[1].time.size(), 20u) << e[1].time;  // "now", ISO-8601 UTC
    // The training record is as it was.
    expect_train_rows(r, {10, 20, 30, 40, 50, 60});
    EXPECT_EQ(r.state(), (RunState{RunStatus::Interrupted, "stopped by SIGTERM", 60, "2025-01-31T13:00:00Z"}));
    EXPECT_EQ(r.attention_steps(), (std::vector<std::int64_t>{20, 40, 60}));
  }
  // Refused, changing nothing: a name recorded already, an empty or too long name, too long scores.
  std::string e = error_of([&] { RunWriter::record_evaluation(file, {"test", 60, "{}", ""}); });
  EXPECT_NE(e.find("records an evaluation of that name already"), std::string::npos) << e;
  e = error_of([&] { RunWriter::record_evaluation(file, {"", 60, "{}", ""}); });
  EXPECT_NE(e.find("its name must be 1 to 128 bytes"), std::string::npos) << e;
  e = error_of([&] { RunWriter::record_evaluation(file, {std::string(kEvalNameBytes + 1, 'n'), 60, "{}", ""}); });
  EXPECT_NE(e.find("its name must be 1 to 128 bytes"), std::string::npos) << e;
  e = error_of([&] { RunWriter::record_evaluation(file, {"big", 60, std::string(kEvalScoresBytes + 1, ' '), ""}); });
  EXPECT_NE(e.find("more than the 16384 a record holds"), std::string::npos) << e;
  EXPECT_EQ(RunReader(file).evaluations().size(), 2u);

  // A resume keeps them (they are not rows of the training record), and resuming twice from one
  // checkpoint is recorded twice.
  RunWriter::resume(file, 60).close();
  RunWriter::resume(file, 60).close();
  const RunReader r(file);
  EXPECT_EQ(r.evaluations().size(), 2u);
  ASSERT_EQ(r.resumes().size(), 2u);
  EXPECT_EQ(r.resumes()[1].step, 60);
}

TEST(RunFile, EvaluationIsRefusedWhileAWriterHoldsTheFile) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  RunWriter w = RunWriter::create(file, sample_info(), sample_layout());
  w.append_train(10, train_values(10));
  const std::string e = error_of([&] { RunWriter::record_evaluation(file, {"test", 10, "{}", ""}); });
  EXPECT_NE(e.find("another process is writing " + file.string()), std::string::npos) << e;
  w.close();
  EXPECT_TRUE(RunReader(file).evaluations().empty());
  RunWriter::record_evaluation(file, {"test", 10, "{}", ""});
  EXPECT_EQ(RunReader(file).evaluations().size(), 1u);
}

TEST(RunFile, ReaderRefusesFilesThatAreNotRunFiles) {
  TempDir dir;
  EXPECT_NE(error_of([&] { RunReader(dir.path() / "none.h5"); }).find("no such file"), std::string::npos);
  std::ofstream(dir.path() / "text.h5") << "hello";
  const std::string e = error_of([&] { RunReader(dir.path() / "text.h5"); });
  EXPECT_NE(e.find("cannot open run file " + (dir.path() / "text.h5").string()), std::string::npos) << e;
  EXPECT_NE(e.find("HDF5:"), std::string::npos) << e;
}

// A writer in another process, driven stage by stage: step() runs the next stage there and waits
// for it (the readers under test must not share the writer's open file, as they would in-process).
class ForkedWriter {
 public:
  explicit ForkedWriter(std::vector<std::function<void()>> stages) {
    int to[2], from[2];
    if (::pipe(to) != 0 || ::pipe(from) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      char c = 0;
      for (auto& stage : stages) {
        if (::read(to[0], &c, 1) != 1) ::_exit(2);
        try {
          stage();
          c = 'k';
        } catch (const std::exception& e) {
          std::fprintf(stderr, "writer stage failed: %s\n", e.what());
          c = 'x';
        }
        if (::write(from[1], &c, 1) != 1 || c != 'k') ::_exit(3);
      }
      ::_exit(0);
    }
    ::close(to[0]);
    ::close(from[1]);
    to_ = to[1];
    from_ = from[0];
  }
  ~ForkedWriter() {
    ::close(to_);
    ::close(from_);
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  void step() {
    char c = 'g';
    ASSERT_EQ(::write(to_, &c, 1), 1);
    ASSERT_EQ(::read(from_, &c, 1), 1);
    ASSERT_EQ(c, 'k') << "the writer process failed (see stderr)";
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
};

TEST(RunFile, LiveReaderSeesRowsAppendedAfterItOpened) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  const RunLayout l = sample_layout();
  std::optional<RunWriter> w;  // lives in the child
  ForkedWriter writer({[&] {
                         w.emplace(RunWriter::create(file, sample_info(), l));
                         w->append_train(10, train_values(10));
                         w->append_train(20, train_values(20));
                         w->flush();
                       },
                       [&] {
                         for (std::int64_t step = 30; step <= 50; step += 10) {
                           w->append_train(step, train_values(step));
                           w->append_attention(step, attention_data(l, step).log());
                           w->append_stats(step, stats_data(l, step).log());
                         }
                         w->flush();
                       },
                       [&] {
                         w->append_attention(60, attention_data(l, 60).log());
                         w->flush();
                       },
                       [&] { w->close(); }});
  writer.step();
  const RunReader r(file);
  EXPECT_TRUE(r.writer_alive());
  expect_train_rows(r, {10, 20});
  EXPECT_TRUE(r.attention_steps().empty());
  writer.step();
  expect_train_rows(r, {10, 20, 30, 40, 50});
  EXPECT_EQ(r.attention_steps(), (std::vector<std::int64_t>{30, 40, 50}));
  expect_attention_row(r, 2, 50);
  EXPECT_EQ(r.stats("grad_norm").shape, (std::vector<std::int64_t>{3, 3}));
  writer.step();
  expect_attention_row(r, 3, 60);  // a row index not seen yet is looked up afresh
  writer.step();
  EXPECT_FALSE(r.writer_alive());
  EXPECT_EQ(r.attention_steps().size(), 4u);
}

TEST(RunFile, StatusRewriteIsVisibleToALiveReader) {
  TempDir dir;
  const fs::path file = dir.path() / "run.h5";
  std::string reason = "loss is NaN at step 130: ";
  while (reason.size() < kReasonBytes + 44) reason += "é";
  std::optional<RunWriter> w;  // lives in the child
  ForkedWriter writer({[&] {
                         w.emplace(RunWriter::create(file, sample_info(), sample_layout()));
                         w->flush();
                       },
                       [&] {
                         w->set_state({RunStatus::Running, "", 120, ""});
                         w->flush();
                       },
                       [&] {
                         w->set_state({RunStatus::Diverged, reason, 130, "2025-01-31T15:00:00Z"});
                         w->flush();
                       },
                       [&] { w->close(); }});
  writer.step();
  const RunReader r(file);
  EXPECT_EQ(r.state(), RunState{});
  writer.step();
  EXPECT_EQ(r.state().step, 120);
  writer.step();
  const RunState s = r.state();
  EXPECT_EQ(s.status, RunStatus::Diverged);
  EXPECT_EQ(s.step, 130);
  EXPECT_EQ(s.finished, "2025-01-31T15:00:00Z");
  // A reason longer than its kReasonBytes (1024) bytes is cut at a character boundary.
  EXPECT_EQ(s.reason.size(), kReasonBytes - 1);  // 25 ASCII bytes + 499 two-byte characters
  EXPECT_EQ(s.reason, reason.substr(0, kReasonBytes - 1));
  writer.step();
  EXPECT_EQ(r.state(), s);
}

TEST(RunFile, RefusesAFinishedTimeTooLongForItsAttribute) {
  TempDir dir;
  RunWriter w = RunWriter::create(dir.path() / "run.h5", sample_info(), sample_layout());
  EXPECT_NE(error_of([&] {
              w.set_state({RunStatus::Failed, "", 1, std::string(40, '2')});
            }).find("longer than 32 bytes"),
            std::string::npos);
}

}  // namespace
}  // namespace ablate::results
