// Tests for the TensorBoard event file writer (framework/results/tensorboard): the CRC-32C against
// its published check value, a file under its name only once published, and a resumed run's file
// cut back to its checkpoint step (torn tails and later steps dropped). What TensorBoard itself reads: ctest results.tensorboard.
#include <gtest/gtest.h>

#include <filesystem>

#include "framework/test_dirs.hpp"
#include "results/tensorboard.hpp"

namespace ablate::results {
namespace {
namespace fs = std::filesystem;

TEST(EventFile, Crc32cMatchesItsCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC-32C catalogue's check value
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_NE(masked_crc32c("123456789"), crc32c("123456789"));
}

TEST(EventFile, ResumeCutsTheFileBackToTheStepAndTornTails) {
  const fs::path dir = ablate::testing::fresh_dir("event_file", false);
  std::uintmax_t after_step2 = 0, after_step3 = 0;
  fs::path path;
  {  // created unpublished, destroyed: nothing is left
    EventFile f = EventFile::create(dir);
    f.scalar(1, "train/loss", 1.0f, 1001.0);
  }
  EXPECT_TRUE(fs::is_empty(dir));
  {
    EventFile f = EventFile::create(dir);
    path = f.path();
    EXPECT_TRUE(path.filename().string().starts_with("events.out.tfevents.")) << path;
    EXPECT_FALSE(fs::exists(path)) << "an event file's name before publish()";
    f.publish();
    EXPECT_TRUE(fs::exists(path));
    for (int step = 1; step <= 5; ++step) {
      f.scalar(step, "train/loss", 1.0f / static_cast<float>(step), 1000.0 + step);
      f.text(step, "samples", "| a | b |", 1000.0 + step);
      f.flush();
      if (step == 2) after_step2 = fs::file_size(path);
      if (step == 3) after_step3 = fs::file_size(path);
    }
  }
  { EventFile f = EventFile::resume(dir, 2); }
  EXPECT_EQ(fs::file_size(path), after_step2);
  {
    EventFile f = EventFile::resume(dir, 2);
    f.scalar(3, "train/loss", 1.0f / 3, 1003.0);
    f.text(3, "samples", "| a | b |", 1003.0);
    f.flush();
    EXPECT_EQ(f.path(), path);  // continued, not a new file
  }
  EXPECT_EQ(fs::file_size(path), after_step3);  // the same bytes a straight run wrote
  fs::resize_file(path, after_step3 + 7);       // a record a killed writer left half written
  { EventFile f = EventFile::resume(dir, 10); }
  EXPECT_EQ(fs::file_size(path), after_step3);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ablate::results
