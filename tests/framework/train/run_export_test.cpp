// Tests for `ablate export` (framework/train/run_export, framework/cli/cmd_export), in-process: a
// tiny run is trained and exported; the file is read back by the safetensors layout (header
// length, JSON header, data) and every tensor equals the checkpoint's weights bit for bit; the
// metadata carries the spec; an existing file is never written over.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/exit_codes.hpp"
#include "validation/validation.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "train/run_export.hpp"
#include "framework/test_dirs.hpp"
#include "framework/tiny_run.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;
using testing::run_cli;

std::string tiny_spec() {
  return testing::TinyRun{.name = "export_reverse",
                          .task = testing::sequence_task(500, 32, /*vocab_size=*/10, /*max_len=*/5, "reverse"),
                          .d_model = 16,
                          .block = "",
                          .steps = 10,
                          .batch_size = 16,
                          .lr = "",
                          .clip_grad_norm = false,
                          .seed = 5,
                          .log_every = 5,
                          .eval_every = 10,
                          .eval_batches = 1,
                          .metrics = "loss"}
      .yaml();
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class RunExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ablate::testing::fresh_dir("run_export_test");
    std::ofstream(dir_ / "spec.yaml") << tiny_spec();
    const auto r = run_cli({"run", (dir_ / "spec.yaml").string(), "--out", (dir_ / "run").string(), "--progress", "quiet"});
    ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RunExportTest, FileFollowsTheSafetensorsLayoutAndHoldsTheCheckpointWeights) {
  const auto r = run_cli({"export", (dir_ / "run").string()});
  ASSERT_EQ(r.code, cli::kExitOk) << r.out << r.err;
  const std::string file = slurp(dir_ / "run" / "model.safetensors");
  ASSERT_GE(file.size(), 8u);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(file[i])) << (8 * i);
  ASSERT_LE(8 + n, file.size());
  EXPECT_EQ((8 + n) % 8, 0u);  // the data starts aligned
  const std::string header = file.substr(8, n);
  EXPECT_NE(header.find("\"__metadata__\": {\"format\": \"pt\""), std::string::npos) << header.substr(0, 300);
  EXPECT_NE(header.find("\"checkpoint_step\": \"10\""), std::string::npos);
  EXPECT_NE(header.find("name: export_reverse"), std::string::npos);  // the resolved spec
  const char* data = file.data() + 8 + n;

  // The weights the checkpoint holds, loaded as `ablate eval` loads them.
  std::ostringstream err;
  validation::LoadedSpec loaded = validation::load_run_spec(dir_ / "run", {}, err);
  TrainedRun run = open_trained_run(dir_ / "run", loaded.spec, *loaded.registry, std::cerr);
  std::uint64_t expected_offset = 0;
  int tensors = 0;
  for (Parameter* p : run.experiment->store->all()) {
    // "NAME": {"dtype": "F32", "shape": [a, b], "data_offsets": [begin, end]}
    const std::size_t at = header.find("\"" + p->name + "\": {");
    ASSERT_NE(at, std::string::npos) << p->name;
    const std::string entry = header.substr(at, header.find('}', at) - at);
    EXPECT_NE(entry.find("\"dtype\": \"F32\""), std::string::npos) << entry;
    std::string shape = "[";
    for (int d = 0; d < p->value.shape().rank(); ++d) shape += (d ? ", " : "") + std::to_string(p->value.shape()[d]);
    EXPECT_NE(entry.find("\"shape\": " + shape + "]"), std::string::npos) << entry;
    const std::size_t off = entry.find("\"data_offsets\": [");
    ASSERT_NE(off, std::string::npos) << entry;
    std::uint64_t begin = 0, end = 0;
    ASSERT_EQ(std::sscanf(entry.c_str() + off, "\"data_offsets\": [%lu, %lu]", &begin, &end), 2) << entry;
    EXPECT_EQ(begin, expected_offset) << p->name;  // back to back, in creation order
    std::vector<float> host(static_cast<std::size_t>(p->value.numel()));
    run.experiment->backend->copy_to_host(host.data(), p->value);
    ASSERT_EQ(end - begin, host.size() * sizeof(float)) << p->name;
    EXPECT_EQ(std::memcmp(data + begin, host.data(), end - begin), 0) << p->name;
    expected_offset = end;
    ++tensors;
  }
  EXPECT_GT(tensors, 10);
  EXPECT_EQ(8 + n + expected_offset, file.size());  // nothing after the last tensor
}

TEST_F(RunExportTest, AnExistingFileIsNeverWrittenOver) {
  const fs::path target = dir_ / "weights.safetensors";
  std::ofstream(target) << "mine";
  const auto r = run_cli({"export", (dir_ / "run").string(), "--out", target.string()});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(target), "mine");
  const auto bad = run_cli({"export", (dir_ / "run").string(), "--format", "onnx", "--out", (dir_ / "x").string()});
  EXPECT_EQ(bad.code, cli::kExitUsage);
  EXPECT_NE(bad.err.find("expected safetensors"), std::string::npos) << bad.err;
  const auto none = run_cli({"export", dir_.string(), "--out", (dir_ / "y").string()});
  EXPECT_EQ(none.code, cli::kExitUsage);
  EXPECT_NE(none.err.find("no checkpoint in"), std::string::npos) << none.err;
  EXPECT_FALSE(fs::exists(dir_ / "x"));
  EXPECT_FALSE(fs::exists(dir_ / "y"));
}

}  // namespace
}  // namespace ablate::train
