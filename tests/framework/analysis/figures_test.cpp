// Tests for framework/analysis/figures (draw_figures) and the run-file side of attention_heads, on
// small run files written with RunWriter: two arms whose heads are built to be diagonal or
// previous-token heads, so the scores read back and the figures drawn from them are known.
#include "analysis/figures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "analysis/attention_heads.hpp"
#include "framework/results/run_file_test_util.hpp"
#include "results/run_file.hpp"
#include "framework/test_dirs.hpp"

namespace ablate::analysis {
namespace {
namespace fs = std::filesystem;
using namespace results;
using results::testing::sample_layout;

// Where each valid query puts all its mass: a key < the valid keys.
using Pattern = std::function<std::size_t(std::size_t q, std::size_t k_valid)>;
const Pattern kDiagonal = [](std::size_t q, std::size_t kv) { return std::min(q, kv - 1); };
const Pattern kPrevious = [](std::size_t q, std::size_t kv) { return std::min(q == 0 ? 0 : q - 1, kv - 1); };

// sample_layout() (2 encoder layers, 1 decoder layer, 2 heads, probe of 2 examples) trained to
// steps 10 and 20, every attention head following `pattern`. `repeat`: probe example 0's source
// repeats tokens (5 6 5 6), so the encoder's induction score is defined.
fs::path write_run(const fs::path& dir, const std::string& block, int seed, const Pattern& pattern, bool repeat) {
  RunLayout l = sample_layout();
  if (repeat) l.probe.src.ids = {5, 6, 5, 6, 8, 9, 2, 0};
  RunInfo info = results::testing::sample_info();
  info.run_id = block + "-s" + std::to_string(seed);
  info.seed = seed;
  info.resolved_spec_yaml = "name: t\nmodel: {block: " + block + ", d_model: 32}\ntrain: {seed: " + std::to_string(seed) + "}\n";
  fs::create_directories(dir / info.run_id);
  const fs::path file = dir / info.run_id / "run.h5";
  RunWriter w = RunWriter::create(file, info, l);
  for (const std::int64_t step : {10, 20}) {
    w.append_train(step, results::testing::train_values(step, seed));
    w.append_eval(step, results::testing::eval_values(step));
    results::testing::AttentionData d = results::testing::attention_data(l, step);
    for (std::size_t s = 0; s < l.attention.size(); ++s) {
      const AttentionSlot& slot = l.attention[s];
      const ProbeTokens* qs = probe_side(l.probe, slot.query_tokens);
      const ProbeTokens* ks = probe_side(l.probe, slot.key_tokens);
      const auto H = std::size_t(slot.heads), Q = std::size_t(slot.queries), K = std::size_t(slot.keys);
      std::vector<float>& t = d.slots[s];  // [E, H, Q, K]
      for (std::size_t e = 0; e < std::size_t(l.probe.examples); ++e)
        for (std::size_t h = 0; h < H; ++h)
          for (std::size_t q = 0; q < valid_positions(qs, e, Q); ++q) {
            float* row = t.data() + ((e * H + h) * Q + q) * K;
            std::fill(row, row + K, 0.0f);
            row[pattern(q, valid_positions(ks, e, K))] = 1.0f;
          }
    }
    w.append_attention(step, d.log());
    w.append_stats(step, results::testing::stats_data(l, step).log());
  }
  w.set_state({results::RunStatus::Completed, "", 20, "2025-01-31T12:05:00Z"});
  w.close();
  return file;
}

class FiguresTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ablate::testing::fresh_dir("figures_test"); }
  void TearDown() override { fs::remove_all(dir_); }
  // post_norm: diagonal heads; pre_norm: previous-token heads; seeds 1 and 2 each.
  std::vector<fs::path> two_arms(bool repeat) {
    std::vector<fs::path> files;
    for (int seed : {1, 2}) {
      files.push_back(write_run(dir_ / "runs", "post_norm", seed, kDiagonal, repeat));
      files.push_back(write_run(dir_ / "runs", "pre_norm", seed, kPrevious, repeat));
    }
    return files;
  }
  fs::path dir_;
};

TEST_F(FiguresTest, HeadScoresOfARunFileUseTheProbeLengths) {
  const fs::path diag = write_run(dir_, "post_norm", 1, kDiagonal, false);
  const fs::path prev = write_run(dir_, "pre_norm", 1, kPrevious, false);
  const RunHeadScores d = run_head_scores(RunReader(diag));
  const RunHeadScores p = run_head_scores(RunReader(prev));
  EXPECT_EQ(d.step, 20);
  ASSERT_EQ(d.heads.size(), 8u);  // 4 slots x 2 heads
  EXPECT_EQ(d.heads[0], "enc.self L0 H0");
  EXPECT_EQ(d.heads[7], "dec.cross L0 H1");
  for (std::size_t h = 0; h < 6; ++h) {  // the self-attention heads: example 1 is padded (src 3 of 4, tgt 4 of 5)
    SCOPED_TRACE(d.heads[h]);
    EXPECT_DOUBLE_EQ(d.example0[h].diagonal, 1.0);
    EXPECT_DOUBLE_EQ(d.mean[h].diagonal, 1.0);
    EXPECT_DOUBLE_EQ(d.mean[h].previous_token, 0.0);
    EXPECT_DOUBLE_EQ(p.mean[h].previous_token, 1.0);
    const double want =
        d.heads[h].starts_with("enc") ? (3 / 4.0 + 2 / 3.0) / 2 : (4 / 5.0 + 3 / 4.0) / 2;  // distance 1 but at q = 0
    EXPECT_NEAR(p.mean[h].mean_distance, want, 1e-12);
  }
  EXPECT_THROW(run_head_scores(read_attention_log(RunReader(diag), 2)), Error);  // logs 0 and 1 only
}

TEST_F(FiguresTest, DrawsEveryFigureForTwoArms) {
  FigureOptions o;
  o.out_dir = dir_ / "figures";
  const FigureReport r = draw_figures(two_arms(true), o);
  EXPECT_TRUE(r.notes.empty()) << r.notes.front();
  for (const char* name :
       {"curves_loss.png", "curves_token_accuracy.png", "curves_exact_match.png", "curves_train_loss.png",
        "attention_encoder_self.png", "attention_decoder_self.png", "attention_decoder_cross.png", "decode_cross.png",
        "entropy.png", "head_scores.png", "head_differences.png", "rollout_encoder.png", "rollout_decoder.png"}) {
    EXPECT_TRUE(fs::is_regular_file(o.out_dir / name)) << name;
    EXPECT_NE(std::find(r.written.begin(), r.written.end(), o.out_dir / name), r.written.end()) << name;
  }
  EXPECT_EQ(r.written.size(), 13u);
  // The probe repeats tokens: every score has its panel.
  EXPECT_EQ(r.head_score_panels, (std::vector<std::string>{"diagonal (self)", "previous token", "first token (sink)", "induction",
                                                           "distance (normalized)", "entropy (normalized)"}));
}

// One arm's drill-down (report.html): its runs' curves, one line each, and its first run's attention;
// a heatmap's SVG embeds its cells as one image the viewer must not interpolate.
TEST_F(FiguresTest, DrawsOneArmsDrillDown) {
  const std::vector<fs::path> runs = two_arms(true);
  const FigureReport r = draw_arm_figures({runs.front()}, "exact_match", dir_ / "arm", "svg");
  EXPECT_TRUE(r.notes.empty()) << r.notes.front();
  std::vector<std::string> names;
  for (const auto& f : r.written) names.push_back(f.filename().string());
  EXPECT_EQ(names, (std::vector<std::string>{"runs_exact_match.svg", "attention_decoder_cross.svg", "attention_decoder_self.svg",
                                             "attention_encoder_self.svg", "decode_cross.svg"}));
  std::ifstream in(dir_ / "arm" / "attention_encoder_self.svg");
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(svg.find("<image style=\"image-rendering:pixelated\""), std::string::npos);
  EXPECT_EQ(figure_caption("runs_exact_match"), "eval exact_match of each run of the arm");
  EXPECT_EQ(figure_caption("nothing_we_draw"), "");
}

TEST_F(FiguresTest, InductionPanelOnlyWhereTheProbeRepeatsTokens) {
  FigureOptions o;
  o.out_dir = dir_ / "svg";
  o.format = "svg";
  const FigureReport r = draw_figures(two_arms(false), o);
  EXPECT_EQ(r.head_score_panels.size(), 5u);
  EXPECT_EQ(std::count(r.head_score_panels.begin(), r.head_score_panels.end(), "induction"), 0);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("induction"), std::string::npos) << r.notes[0];
  EXPECT_TRUE(fs::is_regular_file(o.out_dir / "head_scores.svg"));
  EXPECT_TRUE(fs::is_regular_file(o.out_dir / "head_differences.svg"));
}

TEST_F(FiguresTest, OptionsAreCheckedAndUnreadableRunsSkipped) {
  std::vector<fs::path> files = two_arms(false);
  FigureOptions o;
  o.out_dir = dir_ / "figures";
  o.baseline = "model.block=pre_norm";
  EXPECT_NO_THROW(draw_figures(files, o));
  o.baseline = "model.block=no_such_block";
  EXPECT_THROW(draw_figures(files, o), UsageError);
  o.baseline.clear();
  o.attention_step = 15;
  try {
    draw_figures(files, o);
    ADD_FAILURE() << "step 15 was accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.hint(), "logged steps: 10, 20");
  }
  o.attention_step = 10;
  o.attention_run = files[1].parent_path();
  EXPECT_NO_THROW(draw_figures(files, o));
  o.attention_run = dir_ / "runs";  // four runs
  EXPECT_THROW(draw_figures(files, o), UsageError);
  o.attention_run.reset();
  o.format = "pdf";
  EXPECT_THROW(draw_figures(files, o), UsageError);
  o.format = "png";

  fs::create_directories(dir_ / "broken");
  std::ofstream(dir_ / "broken" / "run.h5") << "not hdf5";
  files.push_back(dir_ / "broken" / "run.h5");
  const FigureReport r = draw_figures(files, o);
  ASSERT_FALSE(r.notes.empty());
  EXPECT_NE(r.notes[0].find("warning: skipping unreadable run file " + (dir_ / "broken" / "run.h5").string()), std::string::npos)
      << r.notes[0];
  EXPECT_TRUE(fs::is_regular_file(o.out_dir / "head_scores.png"));
  EXPECT_THROW(draw_figures({dir_ / "broken" / "run.h5"}, o), UsageError);
}

// Placing a step on a cumulative axis, by hand: rows (10, 100) and (20, 300).
TEST(CurveAxisTest, PlacesAStepOnTheLoggedAxisByLinearInterpolation) {
  const StepCurve rows = {{10, 100.0}, {20, 300.0}};
  EXPECT_DOUBLE_EQ(place_on_axis(rows, 10), 100.0);      // a logged row
  EXPECT_DOUBLE_EQ(place_on_axis(rows, 15), 200.0);      // halfway between rows
  EXPECT_DOUBLE_EQ(place_on_axis(rows, 5), 50.0);        // from 0 at step 0
  EXPECT_DOUBLE_EQ(place_on_axis(rows, 25), 400.0);      // past the end at the last rows' rate (20 per step)
  EXPECT_DOUBLE_EQ(place_on_axis({{4, 8.0}}, 6), 12.0);  // one row: its rate from step 0
  EXPECT_TRUE(std::isnan(place_on_axis({}, 3)));
  EXPECT_EQ(parse_curve_axis("flops"), CurveAxis::flops);
  EXPECT_EQ(curve_axis_title(CurveAxis::tokens), "tokens seen");
  try {
    parse_curve_axis("epochs");
    ADD_FAILURE() << "epochs accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'epochs'"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("step, tokens, flops"), std::string::npos) << e.hint();
  }
}

// Two seeds of one arm on a FLOPs axis: each step's point sits at the seeds' mean FLOPs there, and
// a seed that lacks the axis is left out, not drawn by step.
TEST(CurveAxisTest, AnArmsLineSitsAtTheSeedsMeanPositionOnTheAxis) {
  const StepCurve a = {{10, 2.0}, {20, 1.0}}, b = {{10, 4.0}, {20, 3.0}};
  const StepCurve flops_a = {{10, 1e9}, {20, 2e9}}, flops_b = {{10, 3e9}, {20, 6e9}};
  const Series s = band_series("arm", {{&a, &flops_a}, {&b, &flops_b}});
  EXPECT_EQ(s.x, (std::vector<double>{2e9, 4e9}));
  EXPECT_EQ(s.mean, (std::vector<double>{3.0, 2.0}));
  EXPECT_EQ(s.lower, (std::vector<double>{2.0, 1.0}));
  EXPECT_EQ(s.upper, (std::vector<double>{4.0, 3.0}));
  const Series by_step = band_series("arm", {{&a, nullptr}});
  EXPECT_EQ(by_step.x, (std::vector<double>{10, 20}));
  const StepCurve none;
  const Series unplaced = band_series("arm", {{&a, &none}});  // an axis with no rows: no point
  EXPECT_TRUE(unplaced.x.empty());
}

// --x on run files: runs that log tokens and FLOPs are drawn against them; runs from before
// Ablate logged them are left out with a warning naming the column, and with none left the
// curves are not drawn (said, not an empty figure).
TEST_F(FiguresTest, CurvesOnATokensOrFlopsAxisNeedTheLoggedColumns) {
  RunLayout l = sample_layout();
  l.train_metrics = {"loss", "tokens", "flops", "elapsed_s"};
  std::vector<fs::path> files;
  for (const std::string block : {"pre_norm", "post_norm"}) {
    RunInfo info = results::testing::sample_info();
    info.run_id = block + "-compute";
    info.resolved_spec_yaml = "name: t\nmodel: {block: " + block + ", d_model: 32}\ntrain: {seed: 1}\n";
    fs::create_directories(dir_ / "compute" / info.run_id);
    files.push_back(dir_ / "compute" / info.run_id / "run.h5");
    RunWriter w = RunWriter::create(files.back(), info, l);
    for (const std::int64_t step : {10, 20}) {
      const double s = static_cast<double>(step), cost = block == "pre_norm" ? 1.0 : 2.0;
      const std::vector<double> train = {1.0 / s, 512 * s, 3e6 * cost * 512 * s, 0.1 * s};
      w.append_train(step, train);
      w.append_eval(step, results::testing::eval_values(step));
    }
    w.set_state({results::RunStatus::Completed, "", 20, "2025-01-31T12:05:00Z"});
    w.close();
  }
  FigureOptions o;
  o.out_dir = dir_ / "flops";
  o.x = CurveAxis::flops;
  FigureReport r = draw_figures(files, o);
  for (const std::string& note : r.notes) EXPECT_EQ(note.find("warning"), std::string::npos) << note;
  EXPECT_TRUE(fs::is_regular_file(o.out_dir / "curves_loss.png"));
  EXPECT_TRUE(fs::is_regular_file(o.out_dir / "curves_train_loss.png"));

  const std::vector<fs::path> old = two_arms(false);  // their train log: loss, lr, grad_norm, tokens_per_s
  std::vector<fs::path> mixed = files;
  mixed.push_back(old.front());
  o.out_dir = dir_ / "mixed";
  o.x = CurveAxis::tokens;
  const auto said = [&](const std::string& text) {
    return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
  };
  r = draw_figures(mixed, o);
  EXPECT_TRUE(said("warning: 1 of 3 runs have no `tokens` column in their train log")) << ::testing::PrintToString(r.notes);
  EXPECT_TRUE(fs::is_regular_file(o.out_dir / "curves_loss.png"));

  o.out_dir = dir_ / "old";
  o.x = CurveAxis::time;
  r = draw_figures(old, o);
  EXPECT_FALSE(fs::exists(o.out_dir / "curves_loss.png"));
  EXPECT_TRUE(said("warning: 4 of 4 runs have no `elapsed_s` column")) << ::testing::PrintToString(r.notes);
  EXPECT_TRUE(said("no finite values of eval loss against wall time (s); curves_loss.png not drawn"));
}

}  // namespace
}  // namespace ablate::analysis
