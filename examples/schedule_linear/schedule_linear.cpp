// Example out-of-tree plugin schedule/linear: linear warm-up from 0 to `lr` over `warmup`
// steps, then linear decay to 0 at `total_steps` (the BERT schedule). A template for adding a
// component to Ablate without touching its source tree.
#include <algorithm>

#include <ablate/schedule.hpp>

namespace schedule_linear {

class Linear final : public ablate::Schedule {
 public:
  explicit Linear(const ablate::Options& o)
      : lr_(o.get_float("lr")), warmup_(o.get_int("warmup")), total_(o.get_int("total_steps")) {
    if (warmup_ < 0 || total_ <= warmup_) throw ablate::Error("schedule/linear: need 0 <= warmup < total_steps");
  }
  double learning_rate(std::int64_t step) const override {
    if (step < warmup_) return lr_ * static_cast<double>(step) / static_cast<double>(warmup_);
    return lr_ * std::max(0.0, static_cast<double>(total_ - step) / static_cast<double>(total_ - warmup_));
  }

 private:
  double lr_;
  std::int64_t warmup_;
  std::int64_t total_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"lr", ablate::OptionType::Float, "0.0001", nullptr, "peak learning rate, reached at the end of warm-up"},
    {"warmup", ablate::OptionType::Int, "10000", nullptr, "steps of linear warm-up from 0"},
    {"total_steps", ablate::OptionType::Int, nullptr, nullptr, "step at which the learning rate reaches 0"},
};

ablate::Component* create(const ablate::Options& o) { return new Linear(o); }

ABLATE_PLUGIN("schedule", "linear", "0.1.0", "Linear warm-up then linear decay to 0 (BERT)", ablate::options_of(kOptions), create)

}  // namespace schedule_linear
