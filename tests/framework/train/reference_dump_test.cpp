// Tests for `ablate run --dump-reference FILE.h5` (framework/train/reference_dump.hpp): the dump
// holds the model's initial parameters, and one row per step run of the batch the step read
// (rebuilt here from the data order) and of its loss and learning rate, as run.h5 logs them; a
// decoder-only model has no source; an existing file and --resume are refused.
#include "train/reference_dump.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "cli/exit_codes.hpp"
#include "validation/validation.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "results/run_file.hpp"
#include "train/data_order.hpp"
#include "train/experiment.hpp"
#include "framework/test_dirs.hpp"
#include "framework/tiny_run.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;
using testing::run_cli;

// Variable lengths (2..5 tokens): batches are padded, and narrower than the dump's rows.
std::string tiny_spec() {
  return testing::TinyRun{.name = "dump_copy",
                          .task = testing::sequence_task(500, 8, /*vocab_size=*/9, /*max_len=*/5),
                          .d_model = 16,
                          .embedding_dropout = true,
                          .block = "",
                          .steps = 5,
                          .batch_size = 6,
                          .lr = "1.0e-3",
                          .schedule = "{plugin: noam, warmup: 4}",
                          .clip_grad_norm = false,
                          .seed = 3,
                          .log_every = 1,
                          .eval_every = 5,
                          .eval_batches = 1,
                          .metrics = "loss"}
      .yaml();
}
const std::vector<std::string> kLanguageModel = {"--set", "task={plugin: language_model, vocab_size: 12, min_len: 3, max_len: 6}",
                                                 "--set", "model.arch=decoder"};

class ReferenceDumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ablate::testing::fresh_dir("dump_test");
    std::ofstream(dir_ / "spec.yaml") << tiny_spec();
  }
  void TearDown() override { fs::remove_all(dir_); }

  testing::CliResult run(const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> args = {"run", (dir_ / "spec.yaml").string(), "--out", (dir_ / out).string(), "--progress", "quiet"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_cli(args);
  }

  // The dump of run `out` against a fresh build of the same experiment: initial parameters,
  // batches rebuilt from the data order, losses and learning rates of run.h5's per-step rows.
  void expect_dump_matches(const std::string& out, const std::vector<std::string>& sets, std::int64_t steps) {
    const ReferenceData d = read_reference_dump(dir_ / (out + ".h5"));
    std::vector<std::string> overrides;
    for (std::size_t i = 1; i < sets.size(); i += 2) overrides.push_back(sets[i]);
    std::ostringstream err;
    const validation::LoadedSpec loaded = validation::load_validated_spec((dir_ / "spec.yaml").string(), {overrides, {}}, err);
    Experiment ex(loaded.spec, *loaded.registry);
    EXPECT_NE(d.spec_yaml.find("name: dump_copy"), std::string::npos) << d.spec_yaml;
    EXPECT_EQ(d.ignore_index, HostBatch::kIgnore);

    ASSERT_EQ(d.params.size(), ex.store->all().size());
    for (Parameter* p : ex.store->all()) {
      ASSERT_EQ(d.params.count(p->name), 1u) << p->name;
      const DumpArray<float>& a = d.params.at(p->name);
      EXPECT_EQ(a.dims, p->value.shape().dims()) << p->name;
      EXPECT_EQ(a.values, host_floats(*ex.backend, p->value)) << p->name << " is not its initial value";
    }

    const bool source = loaded.spec.model.arch != spec::Arch::Decoder;
    EXPECT_EQ(d.batches.count("src"), source ? 1u : 0u);
    EXPECT_EQ(d.batches.count("src_lengths"), source ? 1u : 0u);
    const std::int64_t B = loaded.spec.train.batch_size, S = ex.task_info.max_src_len, T = ex.task_info.max_tgt_len + 1;
    DataOrder order(ex.task->size(Split::Train), B, static_cast<std::uint64_t>(loaded.spec.train.seed));
    for (std::int64_t step = 1; step <= steps; ++step) {
      const HostBatch hb = make_batch(ex.examples(Split::Train, order.batch(step)));
      // Row `step` of batch dataset `name`: [B, width] cut back to the batch's own `used`
      // columns, or [B] (width 0).
      auto row = [&](const std::string& name, std::int64_t width, std::int64_t used) {
        const DumpArray<std::int32_t>& a = d.batches.at(name);
        std::vector<std::int64_t> dims = {steps, B};
        if (width > 0) dims.push_back(width);
        EXPECT_EQ(a.dims, dims) << name;
        const std::int64_t stride = width > 0 ? width : 1, keep = width > 0 ? used : 1;
        std::vector<std::int32_t> out;
        for (std::int64_t b = 0; b < B; ++b) {
          const auto first = a.values.begin() + ((step - 1) * B + b) * stride;
          out.insert(out.end(), first, first + keep);
        }
        return out;
      };
      if (source) {
        EXPECT_EQ(row("src", S, hb.S), hb.src) << "step " << step;
        EXPECT_EQ(row("src_lengths", 0, 0), hb.src_lengths) << "step " << step;
      }
      EXPECT_EQ(row("tgt_in", T, hb.T), hb.tgt_in) << "step " << step;
      EXPECT_EQ(row("tgt_out", T, hb.T), hb.tgt_out) << "step " << step;
      EXPECT_EQ(row("tgt_lengths", 0, 0), hb.tgt_lengths) << "step " << step;
    }
    const results::MetricTable t = results::RunReader(dir_ / out / "run.h5").metrics(results::MetricSplit::Train);
    ASSERT_EQ(d.loss.size(), static_cast<std::size_t>(steps));
    ASSERT_EQ(d.lr.size(), static_cast<std::size_t>(steps));
    ASSERT_EQ(t.steps.size(), static_cast<std::size_t>(steps));
    const auto column = [&](const std::string& name) {
      return t.columns[static_cast<std::size_t>(std::find(t.names.begin(), t.names.end(), name) - t.names.begin())];
    };
    for (std::int64_t i = 0; i < steps; ++i) {
      const auto k = static_cast<std::size_t>(i);
      EXPECT_EQ(static_cast<double>(d.loss[k]), column("loss")[k]) << "step " << i + 1;  // log.every 1: the step's own loss
      EXPECT_EQ(d.lr[k], column("lr")[k]) << "step " << i + 1;
    }
  }

  fs::path dir_;
};

TEST_F(ReferenceDumpTest, EncoderDecoderDumpHoldsInitialParametersAndEveryStep) {
  const auto r = run("ed", {"--dump-reference", (dir_ / "ed.h5").string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  expect_dump_matches("ed", {}, 5);
}

TEST_F(ReferenceDumpTest, DecoderOnlyDumpHasNoSource) {
  std::vector<std::string> args = kLanguageModel;
  args.insert(args.end(), {"--dump-reference", (dir_ / "lm.h5").string()});
  const auto r = run("lm", args);
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  expect_dump_matches("lm", kLanguageModel, 5);
}

TEST_F(ReferenceDumpTest, StoppedRunDumpsTheStepsItRan) {
  const auto r = run("stop", {"--dump-reference", (dir_ / "stop.h5").string(), "--stop-after", "3"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  expect_dump_matches("stop", {}, 3);
}

TEST_F(ReferenceDumpTest, ExistingFileAndResumeAreRefused) {
  std::ofstream(dir_ / "taken.h5") << "not a dump";
  const auto taken = run("taken", {"--dump-reference", (dir_ / "taken.h5").string()});
  EXPECT_EQ(taken.code, cli::kExitUsage);
  EXPECT_NE(taken.err.find("already exists"), std::string::npos) << taken.err;
  EXPECT_FALSE(fs::exists(dir_ / "taken")) << "a refused run leaves no run directory";
  std::ifstream in(dir_ / "taken.h5");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "not a dump");

  ASSERT_EQ(run("first", {"--stop-after", "2"}).code, cli::kExitOk);
  const auto resumed = run("first", {"--resume", "--dump-reference", (dir_ / "resumed.h5").string()});
  EXPECT_EQ(resumed.code, cli::kExitUsage);
  EXPECT_NE(resumed.err.find("--resume"), std::string::npos) << resumed.err;
  EXPECT_FALSE(fs::exists(dir_ / "resumed.h5"));
}

}  // namespace
}  // namespace ablate::train
