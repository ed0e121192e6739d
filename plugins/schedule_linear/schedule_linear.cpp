// Plugin schedule/linear: linear warm-up from 0 to `lr` over `warmup` steps, then linear decay to
// `min_lr` at `total_steps` (BERT's schedule; Hugging Face's get_linear_schedule_with_warmup at
// min_lr 0), constant at `min_lr` afterwards.
#include <algorithm>
#include <string>

#include "ablate/schedule.hpp"

namespace schedule_linear {

class Linear final : public ablate::Schedule {
 public:
  explicit Linear(const ablate::Options& o)
      : lr_(o.get_float("lr")), min_lr_(o.get_float("min_lr")), warmup_(o.get_int("warmup")), total_(o.get_int("total_steps")) {
    if (lr_ <= 0 || min_lr_ < 0 || min_lr_ > lr_) throw ablate::Error("schedule/linear: need 0 <= min_lr <= lr and lr > 0");
    if (warmup_ < 0 || total_ <= warmup_)
      throw ablate::Error("schedule/linear: need 0 <= warmup < total_steps, got warmup " + std::to_string(warmup_) +
                          ", total_steps " + std::to_string(total_));
  }
  double learning_rate(std::int64_t step) const override {
    if (step <= warmup_)
      return lr_ * static_cast<double>(std::max<std::int64_t>(step, 0)) / static_cast<double>(std::max<std::int64_t>(warmup_, 1));
    const double progress = std::min(1.0, static_cast<double>(step - warmup_) / static_cast<double>(total_ - warmup_));
    return lr_ - (lr_ - min_lr_) * progress;
  }

 private:
  double lr_, min_lr_;
  std::int64_t warmup_, total_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"lr", ablate::OptionType::Float, "0.001", nullptr, "peak learning rate, reached at the end of warm-up"},
    {"min_lr", ablate::OptionType::Float, "0", nullptr, "learning rate at and after total_steps"},
    {"warmup", ablate::OptionType::Int, "0", nullptr, "steps of linear warm-up from 0"},
    {"total_steps", ablate::OptionType::Int, nullptr, nullptr, "step at which the decay reaches min_lr"},
};

ablate::Component* create(const ablate::Options& o) { return new Linear(o); }

ABLATE_PLUGIN("schedule", "linear", "1.0.0", "Linear warm-up then linear decay to min_lr (BERT)", ablate::options_of(kOptions),
              create)

}  // namespace schedule_linear
