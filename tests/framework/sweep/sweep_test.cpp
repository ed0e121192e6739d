// Tests for the sweep orchestrator (framework/sweep, spec/sweep_expansion): expansion of grid,
// zip, seeds and explicit runs in a fixed order with readable names; stable run ids that ignore
// the thread count; every bad point reported before anything runs; the manifest round trip,
// merge and damage; the sweep lock; each run's phase read from its run file (a killed writer
// counts as interrupted, record_end makes it failed); and the Slurm batch script, executed with a
// stand-in program to check what each array task runs. The executors themselves run in
// sweep_local_test.sh and slurm_sweep_test.sh, with the real `ablate`.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "ablate/error.hpp"
#include "cli/cli.hpp"
#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/results/run_file_test_util.hpp"
#include "framework/spec/spec_test_util.hpp"
#include "results/run_file.hpp"
#include "spec/sweep_expansion.hpp"
#include "sweep/local_executor.hpp"
#include "sweep/manifest.hpp"
#include "sweep/run_state.hpp"
#include "sweep/slurm_executor.hpp"
#include "sweep/sweep_plan.hpp"
#include "train/runner.hpp"
#include "framework/test_dirs.hpp"

namespace ablate::sweep {
namespace {
namespace fs = std::filesystem;
using spec::testing::contains;
using spec::testing::usage_error;
using spec::testing::write_file;

std::vector<std::string> names(const std::vector<spec::SweepPoint>& points) {
  std::vector<std::string> out;
  for (const auto& p : points) out.push_back(p.name);
  return out;
}

spec::SweepSpec sweep_of(const std::string& yaml_sweep) {
  return spec::parse_spec("name: s\ntask: copy\ntrain: {steps: 10}\nsweep:\n" + yaml_sweep).sweep;
}

TEST(SweepLines, ARunsEndFitsInAHundredColumnsAndAFailureNamesItsLog) {
  TaskOutcome o;
  o.name = "block=pre_norm,pe=sinusoidal,ffn=relu,seed=1";
  o.phase = {RunPhase::Completed, 700, "early stopping: exact_match 0.9902 reached target 0.99", false};
  o.seconds = 11;
  o.started = true;
  o.exit_code = 0;
  std::string line = ended_line(o, 1, 16, 100);
  EXPECT_EQ(line, "[1/16] done  block=pre_norm,pe=sinusoidal,ffn=relu,seed=1: step 700, early stopping: exact_... (11s)");
  EXPECT_EQ(line.size(), 100u);
  o.phase.reason = "reached train.steps";  // what "done" says already
  EXPECT_EQ(ended_line(o, 16, 16, 100), "[16/16] done  block=pre_norm,pe=sinusoidal,ffn=relu,seed=1: step 700 (11s)");
  o.name = std::string(150, 'n');
  EXPECT_EQ(ended_line(o, 2, 16, 100).size(), 100u);
  o.name = "a";
  o.phase = {RunPhase::Failed, 3, "ablate: error: spec problem", false};
  o.log = "/a/long/" + std::string(120, 'p') + "/ablate.log";
  line = ended_line(o, 3, 16, 100);
  const auto newline = line.find('\n');
  ASSERT_NE(newline, std::string::npos) << line;
  EXPECT_LE(newline, 100u);
  EXPECT_EQ(line.substr(newline + 1), "    log: " + o.log.string()) << "a path is never cut";
}

TEST(SweepExpansion, GridIsCartesianFirstAxisSlowestAndSeedsFastest) {
  const auto points =
      spec::expand_sweep(sweep_of("  grid: {model.block: [pre_norm, post_norm], model.ffn: [relu, gelu]}\n"
                                  "  seeds: [1, 2]\n"));
  ASSERT_EQ(points.size(), 8u);
  EXPECT_EQ(names(points), (std::vector<std::string>{"block=pre_norm,ffn=relu,seed=1", "block=pre_norm,ffn=relu,seed=2",
                                                     "block=pre_norm,ffn=gelu,seed=1", "block=pre_norm,ffn=gelu,seed=2",
                                                     "block=post_norm,ffn=relu,seed=1", "block=post_norm,ffn=relu,seed=2",
                                                     "block=post_norm,ffn=gelu,seed=1", "block=post_norm,ffn=gelu,seed=2"}));
  EXPECT_EQ(points[5].overrides(), (std::vector<std::string>{"model.block=post_norm", "model.ffn=relu", "train.seed=2"}));
}

TEST(SweepExpansion, ZipAxesMoveInLockstepInsideTheGrid) {
  const auto points =
      spec::expand_sweep(sweep_of("  grid: {model.block: [pre_norm, post_norm]}\n"
                                  "  zip: {train.optimizer.lr: [1.0e-3, 5.0e-4], train.schedule.warmup: [100, 400]}\n"));
  EXPECT_EQ(names(points),
            (std::vector<std::string>{"block=pre_norm,lr=1.0e-3,warmup=100", "block=pre_norm,lr=5.0e-4,warmup=400",
                                      "block=post_norm,lr=1.0e-3,warmup=100", "block=post_norm,lr=5.0e-4,warmup=400"}));
}

TEST(SweepExpansion, ExplicitRunsFollowTheGridAndGetSeedsUnlessTheySetOne) {
  const auto points =
      spec::expand_sweep(sweep_of("  grid: {model.block: [pre_norm]}\n"
                                  "  seeds: [1, 2]\n"
                                  "  runs:\n"
                                  "    - {model.positional_encoding: learned}\n"
                                  "    - {model.ffn: gelu, train.seed: 7}\n"));
  EXPECT_EQ(names(points), (std::vector<std::string>{"block=pre_norm,seed=1", "block=pre_norm,seed=2", "pe=learned,seed=1",
                                                     "pe=learned,seed=2", "ffn=gelu,seed=7"}));
}

TEST(SweepExpansion, NoSweepIsTheBaseRunAndSeedsAloneRepeatIt) {
  EXPECT_EQ(names(spec::expand_sweep({})), std::vector<std::string>{"base"});
  EXPECT_TRUE(spec::expand_sweep({}).front().settings.empty());
  EXPECT_EQ(names(spec::expand_sweep(sweep_of("  seeds: [3, 4]\n"))), (std::vector<std::string>{"seed=3", "seed=4"}));
}

TEST(SweepExpansion, NamesAreFileSafeAndShortKeysStayUnambiguous) {
  const auto points = spec::expand_sweep(sweep_of("  grid: {eval.lengths: ['[8, 16]'], model.dropout: [0.1]}\n"));
  EXPECT_EQ(names(points), std::vector<std::string>{"lengths=_8__16_,dropout=0.1"});
  EXPECT_EQ(spec::short_key("model.positional_encoding", {"model.positional_encoding"}), "pe");
  EXPECT_EQ(spec::short_key("model.dropout", {"model.dropout", "task.dropout"}), "model.dropout");
  EXPECT_EQ(spec::short_key("model.block", {"model.dropout", "model.block"}), "block");
}

class SweepPlanTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = ablate::testing::fresh_dir("sweep_test"); }
  void TearDown() override { fs::remove_all(dir_); }

  // Plans the sweep of `yaml` (written to spec.yaml) as `ablate sweep` does: every point
  // validated against the plugins.
  SweepPlan plan(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
    const fs::path file = write_file(dir_ / "spec.yaml", yaml);
    std::ostringstream warnings;
    const validation::LoadedSpec base = validation::load_validated_spec(file.string(), {overrides, {}}, warnings);
    return plan_sweep(file, overrides, {}, base, dir_ / "out");
  }
  fs::path dir_;
};

constexpr const char* kSweep =
    "name: s\ntask: copy\nbackend: {plugin: onednn, threads: 2}\ntrain: {steps: 10}\n"
    "sweep:\n  grid: {model.block: [pre_norm, post_norm]}\n  seeds: [1, 2]\n";

TEST_F(SweepPlanTest, RunIdsAreStableDistinctAndIgnoreTheThreadCount) {
  const SweepPlan a = plan(kSweep), b = plan(kSweep);
  ASSERT_EQ(a.runs.size(), 4u);
  std::set<std::string> ids;
  for (std::size_t i = 0; i < a.runs.size(); ++i) {
    EXPECT_EQ(a.runs[i].id, b.runs[i].id);
    EXPECT_EQ(a.runs[i].id.size(), 12u);
    EXPECT_EQ(a.runs[i].folder, a.runs[i].point.name + "-" + a.runs[i].id);
    EXPECT_EQ(a.runs[i].id, train::run_id(a.runs[i].spec));
    ids.insert(a.runs[i].id);
  }
  EXPECT_EQ(ids.size(), 4u);
  const SweepPlan one_thread = plan(kSweep, {"backend.threads=1"});
  EXPECT_EQ(one_thread.runs[0].id, a.runs[0].id) << "threads change speed, not the run";
  const SweepPlan other_lr = plan(kSweep, {"train.optimizer.lr=0.01"});
  EXPECT_NE(other_lr.runs[0].id, a.runs[0].id);
}

TEST_F(SweepPlanTest, PointsThatResolveToOneSpecRunOnce) {
  const SweepPlan p = plan(
      "name: s\ntask: copy\ntrain: {steps: 10}\nmodel: {block: post_norm}\nsweep:\n  grid: {model.block: [pre_norm, post_norm]}\n"
      "  runs: [{model.block: post_norm}]\n");
  ASSERT_EQ(p.runs.size(), 2u);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_TRUE(contains(p.notes[0], "block=post_norm resolves to the same spec as block=post_norm")) << p.notes[0];
}

TEST_F(SweepPlanTest, EveryBadPointIsReportedBeforeAnythingRuns) {
  const std::string e =
      usage_error([&] { plan("name: s\ntask: copy\ntrain: {steps: 10}\nsweep:\n  grid: {model.d_model: [32, -4, wide]}\n"); });
  EXPECT_TRUE(contains(e, "2 runs of the sweep")) << e;
  EXPECT_TRUE(contains(e, "run d_model=-4 (from the sweep at ")) << e;
  EXPECT_TRUE(contains(e, "spec.yaml:5:3")) << e;
  EXPECT_TRUE(contains(e, "run d_model=wide")) << e;
  EXPECT_TRUE(contains(e, "nothing was run")) << e;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(SweepPlanTest, RunArgumentsApplyUserOverridesThenThePointAndThreadsOnlyWhereTheBackendHasThem) {
  const SweepPlan p = plan(kSweep, {"train.steps=5"});
  const std::vector<std::string> args = run_arguments(p, p.runs[1], /*resume=*/true, /*threads=*/1);
  const std::vector<std::string> expected = {"run",      (dir_ / "spec.yaml").string(),
                                             "--set",    "train.steps=5",
                                             "--set",    "model.block=pre_norm",
                                             "--set",    "train.seed=2",
                                             "--set",    "backend.threads=1",
                                             "--out",    (dir_ / "out" / p.runs[1].folder).string(),
                                             "--resume", "--progress",
                                             "lines"};
  EXPECT_EQ(args, expected);
  const SweepPlan reference = plan("name: s\ntask: copy\ntrain: {steps: 10}\nbackend: reference\nsweep: {seeds: [1]}\n");
  const auto ref_args = run_arguments(reference, reference.runs[0], false, 4);
  EXPECT_EQ(std::count(ref_args.begin(), ref_args.end(), "backend.threads=4"), 0)
      << "the reference backend has no threads option";
  EXPECT_EQ(std::count(ref_args.begin(), ref_args.end(), "--resume"), 0);
}

TEST_F(SweepPlanTest, ManifestRoundTripsAndMergeKeepsEarlierRuns) {
  const SweepPlan p = plan(kSweep);
  Manifest m;
  EXPECT_EQ(m.merge(p), 4u);
  m.runs[2].slurm_job = "17_2";
  fs::create_directories(p.dir);
  write_manifest(p.dir, m);
  Manifest back = read_manifest(p.dir);
  ASSERT_EQ(back.runs.size(), 4u);
  EXPECT_EQ(back.experiment, "s");
  EXPECT_EQ(back.spec_file, (dir_ / "spec.yaml").string());
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(back.runs[i].id, p.runs[i].id);
    EXPECT_EQ(back.runs[i].folder, p.runs[i].folder);
    EXPECT_EQ(back.runs[i].settings, p.runs[i].point.settings);
  }
  EXPECT_EQ(back.runs[2].slurm_job, "17_2");
  // The spec grows a seed: one run is added, the four stay as they were.
  const SweepPlan grown = plan(std::string(kSweep).replace(std::string(kSweep).find("[1, 2]"), 6, "[1, 2, 3]"));
  EXPECT_EQ(back.merge(grown), 2u);
  EXPECT_EQ(back.runs.size(), 6u);
  EXPECT_EQ(back.runs[2].slurm_job, "17_2");
  EXPECT_EQ(back.merge(grown), 0u);
}

TEST_F(SweepPlanTest, DamagedManifestIsAClearErrorAndNoManifestIsEmpty) {
  EXPECT_TRUE(read_manifest(dir_).runs.empty());
  write_file(dir_ / kManifestFile, "format: ablate-sweep\nformat_version: 1\nruns: {not: a list}\n");
  try {
    read_manifest(dir_);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), (dir_ / kManifestFile).string() + " is damaged")) << e.what();
    EXPECT_TRUE(contains(e.what(), "runs")) << e.what();
  }
  write_file(dir_ / kManifestFile, "[unclosed\n");
  EXPECT_THROW(read_manifest(dir_), Error);
}

TEST_F(SweepPlanTest, ASecondSweepCannotTakeTheDirectory) {
  const SweepLock first(dir_);
  const std::string e = usage_error([&] { SweepLock second(dir_); });
  EXPECT_TRUE(contains(e, "another `ablate sweep` is running in " + dir_.string())) << e;
}

TEST_F(SweepPlanTest, RunPhaseComesFromTheRunFileAndItsWriter) {
  const fs::path run = dir_ / "run";
  EXPECT_EQ(read_run_phase(run).phase, RunPhase::Pending);
  fs::create_directories(run);
  const fs::path file = run / "run.h5";
  {
    results::RunWriter w = results::RunWriter::create(file, results::testing::sample_info(), results::testing::sample_layout());
    w.set_state({results::RunStatus::Running, "", 40, ""});
    w.flush();
    EXPECT_EQ(read_run_phase(run).phase, RunPhase::Running);
    EXPECT_EQ(read_run_phase(run).step, 40);
    EXPECT_FALSE(read_run_phase(run).writer_died);
  }  // closed while "running": what a killed writer leaves behind
  RunPhaseInfo killed = read_run_phase(run);
  EXPECT_EQ(killed.phase, RunPhase::Interrupted);
  EXPECT_TRUE(killed.writer_died);
  results::RunWriter::record_end(file,
                                 {results::RunStatus::Failed, "ablate run was killed by signal Segmentation fault", 40, "t"});
  const RunPhaseInfo failed = read_run_phase(run);
  EXPECT_EQ(failed.phase, RunPhase::Failed);
  EXPECT_EQ(failed.reason, "ablate run was killed by signal Segmentation fault");
  EXPECT_EQ(failed.step, 40);
  results::RunWriter::record_end(file, {results::RunStatus::Diverged, "loss is nan", 41, "t"});
  EXPECT_EQ(read_run_phase(run).phase, RunPhase::Diverged);
  std::ofstream(file, std::ios::trunc) << "not hdf5";
  EXPECT_EQ(read_run_phase(run).phase, RunPhase::Failed);
  EXPECT_TRUE(contains(read_run_phase(run).reason, "unreadable run file")) << read_run_phase(run).reason;
}

TEST_F(SweepPlanTest, SlurmScriptRunsEachArrayTaskWithItsArgumentsAndResumesExistingRuns) {
  std::vector<Task> tasks(2);
  tasks[0] = {"a", dir_ / "runs" / "a", {"run", "spec.yaml", "--set", "task.text=it's a \"test\" $HOME"}, 10, false};
  tasks[1] = {"b", dir_ / "runs" / "b,seed=1", {"run", "spec.yaml", "--out", "x"}, 10, false};
  SlurmOptions o;
  o.job_name = "ablate-s";
  o.partition = "gpu";
  o.cpus_per_task = 3;
  o.extra_lines = {"--qos=high", "#SBATCH --exclusive"};
  const std::string script = sbatch_script("/bin/echo", tasks, dir_ / "slurm", o);
  for (const char* line : {"#SBATCH --job-name=ablate-s\n", "#SBATCH --array=0-1\n", "#SBATCH --cpus-per-task=3\n",
                           "#SBATCH --partition=gpu\n", "#SBATCH --qos=high\n", "#SBATCH --exclusive\n"})
    EXPECT_TRUE(contains(script, line)) << line << "\n" << script;
  EXPECT_FALSE(contains(script, "--time=")) << "unset options are left to Slurm's defaults";
  const fs::path file = write_file(dir_ / "job.sbatch", script);
  auto run_task = [&](int index) {
    const std::string cmd = "SLURM_ARRAY_TASK_ID=" + std::to_string(index) + " SLURM_ARRAY_JOB_ID=9 bash " + file.string();
    return std::system(cmd.c_str());
  };
  auto log_of = [&](const Task& t) {
    std::ifstream in(t.dir / "ablate.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  ASSERT_EQ(run_task(0), 0);
  EXPECT_TRUE(contains(log_of(tasks[0]), "slurm job 9_0")) << log_of(tasks[0]);
  EXPECT_TRUE(contains(log_of(tasks[0]), "run spec.yaml --set task.text=it's a \"test\" $HOME\n")) << log_of(tasks[0]);
  write_file(tasks[1].dir / "run.h5", "");  // a run file: the task resumes the run
  ASSERT_EQ(run_task(1), 0);
  EXPECT_TRUE(contains(log_of(tasks[1]), "run spec.yaml --out x --resume\n")) << log_of(tasks[1]);
  EXPECT_NE(run_task(2), 0) << "no run for array task 2";
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

// The command itself, in-process, where it runs nothing: --dry-run, --status and option errors.
TEST_F(SweepPlanTest, DryRunAndStatusListTheRunsAndRunNothing) {
  const fs::path spec = write_file(dir_ / "spec.yaml", std::string(kSweep) + "  runs: [{model.ffn: gelu, train.seed: 5}]\n");
  const fs::path out = dir_ / "out";
  const auto dry = testing::run_cli({"sweep", spec.string(), "--out", out.string(), "--dry-run"});
  ASSERT_EQ(dry.code, cli::kExitOk) << dry.err;
  const SweepPlan p = plan(std::string(kSweep) + "  runs: [{model.ffn: gelu, train.seed: 5}]\n");
  EXPECT_TRUE(contains(dry.out, "sweep s: 5 runs in " + out.string())) << dry.out;
  // One line per run, "  <id>  <name>-<id>" (ids of the plugin-resolved specs, which this plan() does not resolve).
  for (const SweepRun& r : p.runs) {
    const std::regex line("\n  ([0-9a-f]{12})  " + std::regex_replace(r.point.name, std::regex("[.]"), "\\.") + "-\\1\n");
    EXPECT_TRUE(std::regex_search(dry.out, line)) << r.point.name << "\n" << dry.out;
  }
  EXPECT_TRUE(contains(dry.out, "model.ffn=gelu train.seed=5")) << dry.out;
  EXPECT_FALSE(fs::exists(out)) << "a dry run creates nothing";

  const auto status = testing::run_cli({"sweep", spec.string(), "--out", out.string(), "--status"});
  ASSERT_EQ(status.code, cli::kExitOk) << status.err;
  EXPECT_TRUE(contains(status.out, "5 runs: 0 done, 0 running, 0 failed, 0 diverged, 5 pending")) << status.out;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(SweepPlanTest, OptionsOfTheOtherExecutorAreUsageErrors) {
  const fs::path spec = write_file(dir_ / "spec.yaml", kSweep);
  auto code_and_err = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"sweep", spec.string(), "--out", (dir_ / "out").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return testing::run_cli(args);
  };
  const auto wait = code_and_err({"--wait"});
  EXPECT_EQ(wait.code, cli::kExitUsage);
  EXPECT_TRUE(contains(wait.err, "--wait is an option of --executor slurm")) << wait.err;
  const auto jobs = code_and_err({"--executor", "slurm", "--jobs", "2"});
  EXPECT_EQ(jobs.code, cli::kExitUsage);
  EXPECT_TRUE(contains(jobs.err, "--jobs is an option of --executor local")) << jobs.err;
  const auto summary = code_and_err({"--summary", "steps_to:never"});  // refused before any run starts
  EXPECT_EQ(summary.code, cli::kExitUsage);
  EXPECT_TRUE(contains(summary.err, "steps_to:TARGET needs a number")) << summary.err;
  const auto other = code_and_err({"--executor", "kubernetes"});
  EXPECT_EQ(other.code, cli::kExitUsage);
  EXPECT_TRUE(contains(other.err, "'kubernetes' is not one of local, slurm")) << other.err;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

// The comparison's default baseline names the base configuration over every varied key: an explicit
// run that also changes another key (learned positions at 8 heads) must not leave it ambiguous.
TEST(SweepBaseline, TheBaseArmNamesEveryKeyTheGridAndTheRunsVary) {
  const std::string base = "name: s\ntask: copy\ntrain: {steps: 10}\nmodel: {heads: 8}\n";
  EXPECT_EQ(cli::base_arm(spec::parse_spec(base + "sweep: {grid: {model.heads: [1, 8]}, seeds: [1, 2]}\n", "s.yaml")),
            "model.heads=8");
  EXPECT_EQ(cli::base_arm(spec::parse_spec(base + "sweep:\n  grid: {model.heads: [1, 8]}\n  runs:\n"
                                                  "    - {model.heads: 8, model.positional_encoding: learned}\n",
                                           "s.yaml")),
            "model.heads=8,model.positional_encoding=sinusoidal");
  EXPECT_EQ(cli::base_arm(spec::parse_spec(base + "sweep: {grid: {model.heads: [1, 4]}}\n", "s.yaml")), "")
      << "the base configuration (8 heads) is not an arm of the grid";
}

// Without a grid the base is a point beside the explicit runs (a leaderboard: one component changed
// per run), and it is the baseline; a key the base does not set (an option only another plugin has,
// a tokenizer where the base reads the task's own tokens) is one the base's runs lack: (unset).
TEST(SweepBaseline, WithoutAGridTheBaseConfigurationIsTheBaselineOfTheRuns) {
  const std::string base = "name: s\ntask: copy\ntrain: {steps: 10}\nmodel: {heads: 8, block: pre_norm}\n";
  EXPECT_EQ(cli::base_arm(spec::parse_spec(base + "sweep:\n  runs:\n    - {model.ffn: gelu}\n"
                                                  "    - {model.block: rezero, model.block.gate: channel}\n"
                                                  "    - {task.tokenizer: sentencepiece}\n",
                                           "s.yaml")),
            "model.ffn=relu,model.block=pre_norm,model.block.gate=(unset),task.tokenizer=(unset)");
  EXPECT_EQ(cli::base_arm(spec::parse_spec(base + "sweep: {seeds: [1, 2]}\n", "s.yaml")), "")
      << "one point: no arm to compare it with";
}

}  // namespace
}  // namespace ablate::sweep
