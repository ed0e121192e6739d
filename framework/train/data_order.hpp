// Which training examples each step reads: epoch after epoch, a fresh permutation of the
// training split per epoch, drawn from (seed, epoch) by the Philox RNG, cut into batches of a
// fixed number of examples or (by_tokens) into length-bucketed batches of a token budget. A pure
// function of the batch number, so a resumed run reads exactly the batches the uninterrupted run
// would have.
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
  // The permutation of the split used in `epoch` (0-based).
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
