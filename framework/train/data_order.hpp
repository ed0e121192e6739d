// Which training examples each step reads: epoch after epoch, a fresh permutation of the
// training split per epoch, drawn from (seed, epoch) by the Philox RNG. A pure function of the
// step, so a resumed run reads exactly the batches the uninterrupted run would have.
#pragma once

#include <cstdint>
#include <vector>

namespace ablate::train {

class DataOrder {
 public:
  // examples: size of the training split (> 0); batch_size > 0.
  DataOrder(std::int64_t examples, std::int64_t batch_size, std::uint64_t seed);
  // The example indices of optimizer step `step` (1-based): positions (step-1)*B .. step*B-1 of
  // the endless sequence perm(epoch 0), perm(epoch 1), ... (a batch may straddle two epochs).
  std::vector<std::int64_t> batch(std::int64_t step);
  // The permutation of the split used in `epoch` (0-based).
  std::vector<std::int64_t> permutation(std::int64_t epoch) const;

 private:
  std::int64_t examples_, batch_size_;
  std::uint64_t seed_;
  std::int64_t cached_epoch_ = -1;
  std::vector<std::int64_t> cached_;
};

}  // namespace ablate::train
