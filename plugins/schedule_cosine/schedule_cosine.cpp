// Plugin schedule/cosine: linear warm-up from 0 to `lr` over `warmup` steps, then cosine decay
// to `min_lr` at `total_steps`, constant at `min_lr` afterwards.
#include <algorithm>
#include <cmath>
#include <numbers>

#include "ablate/schedule.hpp"

namespace schedule_cosine {

class Cosine final : public ablate::Schedule {
 public:
  explicit Cosine(const ablate::Options& o)
      : lr_(o.get_float("lr")), min_lr_(o.get_float("min_lr")), warmup_(o.get_int("warmup")), total_(o.get_int("total_steps")) {
    if (lr_ <= 0 || min_lr_ < 0 || min_lr_ > lr_) throw ablate::Error("schedule/cosine: need 0 <= min_lr <= lr and lr > 0");
    if (warmup_ < 0 || total_ <= warmup_)
      throw ablate::Error("schedule/cosine: need 0 <= warmup < total_steps, got warmup " + std::to_string(warmup_) +
                          ", total_steps " + std::to_string(total_));
  }
  double learning_rate(std::int64_t step) const override {
    if (step <= warmup_)
      return lr_ * static_cast<double>(std::max<std::int64_t>(step, 0)) / static_cast<double>(std::max<std::int64_t>(warmup_, 1));
    const double progress = std::min(1.0, static_cast<double>(step - warmup_) / static_cast<double>(total_ - warmup_));
    return min_lr_ + 0.5 * (lr_ - min_lr_) * (1.0 + std::cos(std::numbers::pi * progress));
  }

 private:
  double lr_;
  double min_lr_;
  std::int64_t warmup_;
  std::int64_t total_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"lr", ablate::OptionType::Float, "0.001", nullptr, "peak learning rate, reached at the end of warm-up"},
    {"min_lr", ablate::OptionType::Float, "0", nullptr, "learning rate at and after total_steps"},
    {"warmup", ablate::OptionType::Int, "0", nullptr, "steps of linear warm-up from 0"},
    {"total_steps", ablate::OptionType::Int, nullptr, nullptr, "step at which the cosine reaches min_lr"},
};

ablate::Component* create(const ablate::Options& o) { return new Cosine(o); }

ABLATE_PLUGIN("schedule", "cosine", "1.0.0", "Linear warm-up then cosine decay to min_lr", ablate::options_of(kOptions), create)

}  // namespace schedule_cosine
