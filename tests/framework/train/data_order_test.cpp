// Tests for the training data order (framework/train/data_order.hpp): fixed batches walk each
// epoch's permutation once; token batches (train.batch_tokens) hold every example once an epoch,
// stay within their budget, group similar lengths and come in a seeded order that a resumed run
// recomputes; a budget below the longest example is refused, in DataOrder and in the spec; a split
// too large for a table is permuted by a keyed bijection.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "cli/exit_codes.hpp"
#include "framework/cli/cli_test_util.hpp"
#include "framework/test_dirs.hpp"
#include "framework/tiny_run.hpp"
#include "train/data_order.hpp"

namespace ablate::train {
namespace {

TEST(DataOrder, FixedBatchesWalkEachEpochsPermutationOnce) {
  DataOrder order(10, 4, 7);
  std::vector<std::int64_t> stream;
  for (std::int64_t n = 1; n <= 5; ++n) {
    const std::vector<std::int64_t> b = order.batch(n);
    ASSERT_EQ(b.size(), 4u);
    stream.insert(stream.end(), b.begin(), b.end());
  }
  const std::vector<std::int64_t> e0 = order.permutation(0), e1 = order.permutation(1);
  EXPECT_EQ(std::vector<std::int64_t>(stream.begin(), stream.begin() + 10), e0) << "epoch 0, then epoch 1";
  EXPECT_EQ(std::vector<std::int64_t>(stream.begin() + 10, stream.end()), e1);
  EXPECT_NE(e0, e1);
  EXPECT_EQ(std::set<std::int64_t>(e0.begin(), e0.end()).size(), 10u);
  EXPECT_EQ(DataOrder(10, 4, 7).batch(5), order.batch(5)) << "a pure function of the batch number";
  EXPECT_THROW(order.batch(0), Error);
}

TEST(DataOrder, TheTablelessPermutationIsABijectionThatDependsOnSeedAndEpoch) {
  for (const std::int64_t n : {1, 2, 3, 7, 64, 1000, 4097}) {
    std::vector<std::int64_t> seen;
    for (std::int64_t i = 0; i < n; ++i) seen.push_back(DataOrder::permuted_index(i, n, 5, 0));
    std::vector<std::int64_t> sorted = seen;
    std::sort(sorted.begin(), sorted.end());
    for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<std::size_t>(i)], i) << "n " << n << ": every index once";
    if (n < 64) continue;
    std::int64_t fixed = 0, same_epoch1 = 0, same_seed6 = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t p = seen[static_cast<std::size_t>(i)];
      fixed += p == i;
      same_epoch1 += p == DataOrder::permuted_index(i, n, 5, 1);
      same_seed6 += p == DataOrder::permuted_index(i, n, 6, 0);
    }
    EXPECT_LT(fixed, n / 16) << "n " << n << ": shuffled, not the identity";
    EXPECT_LT(same_epoch1, n / 16) << "n " << n << ": another epoch, another order";
    EXPECT_LT(same_seed6, n / 16) << "n " << n << ": another seed, another order";
  }
  EXPECT_THROW(DataOrder::permuted_index(5, 5, 1, 0), Error);
  EXPECT_THROW(DataOrder::permuted_index(-1, 5, 1, 0), Error);
}

TEST(DataOrder, ASplitLargerThanATableReadsEachExampleOnceAnEpochInConstantMemory) {
  const std::int64_t n = DataOrder::kShuffledExamples + 3, b = 1 << 16;
  DataOrder order(n, b, 11);
  std::vector<char> seen(static_cast<std::size_t>(n), 0);
  const std::int64_t batches = (n + b - 1) / b;  // the last one straddles into epoch 1
  for (std::int64_t k = 1; k <= batches; ++k) {
    const std::vector<std::int64_t> batch = order.batch(k);
    for (std::size_t j = 0; j < batch.size(); ++j) {
      const std::int64_t pos = (k - 1) * b + static_cast<std::int64_t>(j);
      if (pos >= n) break;
      ASSERT_EQ(seen[static_cast<std::size_t>(batch[j])]++, 0) << "example " << batch[j] << " twice in epoch 0";
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), n);
  EXPECT_EQ(order.batch(3), DataOrder(n, b, 11).batch(3)) << "a pure function of the batch number";
  EXPECT_EQ(order.permutation(0)[5], order.batch(1)[5]) << "permutation() lists the order batch() reads";
}

// 300 examples of 2 to 41 tokens, a budget of 96 tokens a batch.
class TokenBatches : public ::testing::Test {
 protected:
  static std::vector<std::int64_t> sizes() {
    std::vector<std::int64_t> s;
    for (std::int64_t i = 0; i < 300; ++i) s.push_back(2 + (i * 37 + i / 7) % 40);
    return s;
  }
  static constexpr std::int64_t kBudget = 96;
};

TEST_F(TokenBatches, HoldEveryExampleOnceAnEpochWithinTheBudget) {
  const std::vector<std::int64_t> size = sizes();
  DataOrder order = DataOrder::by_tokens(size, kBudget, 3);
  std::int64_t n = 0, padded = 0, real = 0;
  std::vector<std::vector<std::int64_t>> epochs(3);
  std::vector<std::vector<std::int64_t>> first_batches;
  for (auto& epoch : epochs) {
    std::set<std::int64_t> seen;
    while (seen.size() < size.size()) {
      const std::vector<std::int64_t> b = order.batch(++n);
      ASSERT_FALSE(b.empty());
      std::int64_t widest = 0;
      for (std::int64_t i : b) {
        EXPECT_TRUE(seen.insert(i).second) << "example " << i << " twice in an epoch (batch " << n << ")";
        widest = std::max(widest, size[static_cast<std::size_t>(i)]);
        real += size[static_cast<std::size_t>(i)];
      }
      EXPECT_LE(static_cast<std::int64_t>(b.size()) * widest, kBudget) << "batch " << n;
      padded += static_cast<std::int64_t>(b.size()) * widest;
      if (epoch.empty()) first_batches.push_back(b);
      epoch.insert(epoch.end(), b.begin(), b.end());
    }
  }
  EXPECT_EQ(n % 3, 0) << "every epoch has the same number of batches";
  EXPECT_LT(static_cast<double>(padded - real) / static_cast<double>(padded), 0.1) << "similar lengths share a batch";
  EXPECT_NE(first_batches[0], first_batches[1]) << "each epoch shuffles the batches anew";
  EXPECT_NE(epochs[0], epochs[1]);
  DataOrder resumed = DataOrder::by_tokens(size, kBudget, 3);
  EXPECT_EQ(resumed.batch(n - 1), order.batch(n - 1)) << "a fresh order (a resumed run) reads the same batch";
  EXPECT_NE(DataOrder::by_tokens(size, kBudget, 4).batch(1), order.batch(1)) << "another seed, another order";
}

TEST_F(TokenBatches, ABudgetBelowTheLongestExampleIsRefused) {
  try {
    DataOrder::by_tokens({3, 9, 4}, 8, 1);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a batch of 8 tokens cannot hold the longest training example (9 tokens"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.hint().find("at least 9"), std::string::npos) << e.hint();
  }
  EXPECT_THROW(DataOrder::by_tokens({}, 8, 1), Error);
}

// End to end: a run of token batches (two micro-batches a step) trains; a budget below the task's
// longest example (copy, max_len 6: 7 tokens) is a spec error at train.batch_tokens.
TEST_F(TokenBatches, ARunTrainsOnThemAndTheSpecRefusesTooSmallABudget) {
  const std::filesystem::path dir = ablate::testing::fresh_dir("data_order_test");
  std::ofstream(dir / "spec.yaml") << ablate::testing::TinyRun{.task = ablate::testing::sequence_task(500, 32, 10, 6),
                                                               .backend = "{plugin: onednn, threads: 1}",
                                                               .steps = 20,
                                                               .eval_every = 20}
                                          .yaml();
  const auto run = [&](const std::string& out, const std::string& tokens) {
    return ablate::testing::run_cli({"run", (dir / "spec.yaml").string(), "--out", (dir / out).string(), "--progress", "quiet",
                                     "--set", "train.batch_tokens=" + tokens, "--set", "train.accumulate=2"});
  };
  const auto ok = run("ok", "64");
  EXPECT_EQ(ok.code, cli::kExitOk) << ok.out << ok.err;
  const auto small = run("small", "6");
  EXPECT_EQ(small.code, cli::kExitUsage);
  EXPECT_NE(small.err.find("train.batch_tokens: 6 tokens cannot hold the task's longest example (7 tokens"), std::string::npos)
      << small.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "small"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ablate::train
