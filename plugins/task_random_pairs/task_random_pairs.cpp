// Plugin task/random_pairs: source and target are independent uniformly random sequences, so
// nothing generalises: the loss starts at about ln(vocab_size - 3) and falls below it only by
// memorising the train pairs (the "Annotated Transformer" random-data experiment).
#include "ablate/synthetic.hpp"

namespace task_random_pairs {

class RandomPairs final : public ablate::Task {
 public:
  explicit RandomPairs(const ablate::Options& o) : s_(o, kName) {}

  ablate::TaskInfo info() const override { return {ablate::TaskType::Seq2Seq, s_.vocab_size, s_.max_len, s_.max_len, 0, true}; }
  std::int64_t size(ablate::Split split) const override { return s_.size(split); }
  ablate::Example example(ablate::Split split, std::int64_t index) const override {
    s_.check_index(split, index, kName);
    auto r = ablate::synthetic::Stream::of(s_, split, index);
    ablate::Example e;
    e.src = ablate::synthetic::random_sequence(s_, r);
    e.tgt = ablate::synthetic::random_sequence(s_, r);  // the same stream, further on: independent of src
    return e;
  }

 private:
  static constexpr const char* kName = "task/random_pairs";
  ablate::synthetic::Settings s_;
};

ablate::Component* create(const ablate::Options& o) { return new RandomPairs(o); }

ABLATE_PLUGIN("task", "random_pairs", "1.1.0",
              "Synthetic seq2seq: independent random source and target (learnable only by memorising)",
              ablate::options_of(ablate::synthetic::kOptions), create)

}  // namespace task_random_pairs
