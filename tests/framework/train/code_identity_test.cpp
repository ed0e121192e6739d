// Tests for a run's data identity (framework/train/code_identity, data_identity): every file a
// task option names is hashed, a glob (token shards) file by file, and a file over 64 MiB by its
// size and 64 spread blocks, so that an edited corpus is caught at every start without reading it all.
#include "train/code_identity.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "framework/plugin_host/plugin_test_util.hpp"

namespace ablate::train {
namespace {
namespace fs = std::filesystem;
using ablate::testing::TempDir;

void write_at(const fs::path& f, std::uintmax_t offset, char c) {
  std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
  io.seekp(static_cast<std::streamoff>(offset));
  io.put(c);
}

TEST(DataIdentity, EachFileOfAGlobIsHashedAndALargeFileBySpreadBlocks) {
  TempDir dir;
  for (const char* name : {"a.bin", "b.bin"}) std::ofstream(dir.path() / name) << name;
  const fs::path big = dir.path() / "big.txt";
  std::ofstream(big).close();
  fs::resize_file(big, (std::uintmax_t{65} << 20) + 123);  // past the 64 MiB read whole
  spec::ExperimentSpec spec;
  spec.task.options = {{"shards", (dir.path() / "*.bin").string()}, {"file", big.string()}, {"context", "64"}};
  const std::vector<std::string> before = data_identity(spec);
  ASSERT_EQ(before.size(), 3u) << "the file, and each of the glob's two files; `context` names no file";
  EXPECT_EQ(before[0].substr(0, before[0].rfind(' ')), "task.file=" + big.string());
  EXPECT_NE(before[0].find(" s68157563:"), std::string::npos) << before[0] << ": the size, then the sampled hash";
  EXPECT_EQ(before[1].substr(0, before[1].rfind(' ')), "task.shards=" + (dir.path() / "a.bin").string());
  EXPECT_EQ(before[2].substr(0, before[2].rfind(' ')), "task.shards=" + (dir.path() / "b.bin").string());

  std::ofstream(dir.path() / "b.bin") << "B.bin";
  write_at(big, fs::file_size(big) - 1, 'x');  // the last byte: in the last block
  const std::vector<std::string> after = data_identity(spec);
  EXPECT_NE(after[0], before[0]) << "the end of a large file is sampled";
  EXPECT_EQ(after[1], before[1]);
  EXPECT_NE(after[2], before[2]);
  const auto refusal = [&](DataUse use, const std::vector<fs::path>& kept) {
    try {
      check_data_unchanged(before, spec, "cannot evaluate RUN", use, kept);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("not refused");
  };
  const std::vector<fs::path> kept = {dir.path() / "tokenizer-text.bin"};
  for (const std::string& refused :
       {refusal(DataUse::Examples, {}), refusal(DataUse::Examples, kept), refusal(DataUse::Text, {})})
    EXPECT_NE(refused.find("cannot evaluate RUN: task.file " + big.string() + " changed since the run read it"),
              std::string::npos)
        << refused;
  EXPECT_NE(refusal(DataUse::Text, {}).find("vocabularies would be rebuilt"), std::string::npos)
      << "a run that keeps no vocabularies would read text with new ones";
  EXPECT_NE(refusal(DataUse::Examples, kept).find("its splits drawn anew"), std::string::npos);
  const std::vector<std::string> warned = check_data_unchanged(before, spec, "cannot evaluate RUN", DataUse::Text, kept);
  ASSERT_EQ(warned.size(), 2u) << "the large file and b.bin changed; a.bin did not";
  EXPECT_NE(warned[0].find("task.file " + big.string() + " changed since the run read it"), std::string::npos) << warned[0];
  EXPECT_NE(warned[0].find("read with the run's own tokenizer-text.bin"), std::string::npos) << warned[0];
  EXPECT_NE(warned[1].find("task.shards " + (dir.path() / "b.bin").string()), std::string::npos) << warned[1];
  EXPECT_TRUE(check_data_unchanged(after, spec, "x", DataUse::Examples, {}).empty()) << "files as recorded: nothing to say";
  write_at(big, 100 << 10, 'y');  // 100 KiB: between the first block and the second (at ~1 MiB)
  EXPECT_EQ(data_identity(spec)[0], after[0]) << "a byte between two sampled blocks is not seen (the documented limit)";
}

}  // namespace
}  // namespace ablate::train
