// Which training examples each step reads: epoch after epoch, a fresh permutation of the
// training split per epoch, drawn from (seed, epoch) by the Philox RNG, cut into batches of a
// fixed number of examples or (by_tokens) into length-bucketed batches of a token budget. A pure
// function of the batch number, so a resumed run reads exactly the batches the uninterrupted run
// would have (the data cursor of a checkpoint is its step). A split larger than
// kShuffledExamples (token shards of a corpus that never fits in memory) is permuted without a
// table: a keyed bijection, so the order's memory does not grow with the corpus.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ablate::train {

// What an example of `src_len` and `tgt_len` content tokens takes in a batch row: its longer side,
// the target with bos/eos. The size token batches count (train.batch_tokens), and what the spec's
// check bounds with the task's longest lengths.
inline std::int64_t row_tokens(std::int64_t src_len, std::int64_t tgt_len) { return std::max(src_len, tgt_len + 1); }

class DataOrder {
 public:
  // Splits up to this many examples are shuffled as a table (Fisher-Yates, 8 bytes an example);
  // larger ones by permuted_index, in constant memory.
  static constexpr std::int64_t kShuffledExamples = std::int64_t{1} << 20;
  // Position `i` of a keyed pseudo-random permutation of [0, n): a 4-round Feistel network over
  // the smallest even number of bits covering n, keyed by Philox (seed, epoch), walking cycles
  // until the value falls inside [0, n) (under 4 steps on average). A bijection of [0, n) for every key.
  static std::int64_t permuted_index(std::int64_t i, std::int64_t n, std::uint64_t seed, std::int64_t epoch);

  // examples: size of the training split (> 0); batch_size > 0 examples a batch.
  DataOrder(std::int64_t examples, std::int64_t batch_size, std::uint64_t seed);
  // Batches of about `budget` tokens (fairseq's --max-tokens): sizes[i] is what example i takes
  // in a batch row (row_tokens), and a batch holds rows while rows x its largest
  // size <= budget. Each epoch the permutation is sorted by size (ties in permutation order), cut
  // greedily into batches, and the batches shuffled by (seed, epoch): every example once an epoch,
  // batches of similar lengths (little padding), in random order. Throws ablate::Error when an
  // example is larger than the budget.
  static DataOrder by_tokens(std::vector<std::int64_t> sizes, std::int64_t budget, std::uint64_t seed);

  // The example indices of batch `n` (1-based) of the endless sequence of epochs' batches. With
  // fixed batches: positions (n-1)*B .. n*B-1 of perm(epoch 0), perm(epoch 1), ... (a batch may
  // straddle two epochs).
  std::vector<std::int64_t> batch(std::int64_t n);
  // The permutation of the split used in `epoch` (0-based), as a table (any size; the order
  // itself reads a split larger than kShuffledExamples through permuted_index instead).
  std::vector<std::int64_t> permutation(std::int64_t epoch) const;

 private:
  // Token batches: epoch's batches, in their shuffled order.
  std::vector<std::vector<std::int64_t>> token_batches(std::int64_t epoch) const;

  std::int64_t examples_, batch_size_;
  std::uint64_t seed_;
  std::vector<std::int64_t> sizes_;  // by_tokens: [examples]; empty for fixed batches
  std::int64_t budget_ = 0, batches_per_epoch_ = 0;
  std::int64_t cached_epoch_ = -1;
  std::vector<std::int64_t> cached_;                       // fixed: the epoch's permutation
  std::vector<std::vector<std::int64_t>> cached_batches_;  // by_tokens: the epoch's batches
};

}  // namespace ablate::train
