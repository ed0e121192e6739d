// Plugin schedule/wsd: warmup-stable-decay (MiniCPM, Hu et al. 2024; Hägele et al. 2024): linear
// warm-up from 0 to `lr` over `warmup` steps, `lr` held, then over the last `decay` share of
// `total_steps` a decay to `min_lr` of the chosen shape (linear, cosine, or sqrt: 1 - sqrt(progress),
// Hägele et al.'s best), constant at `min_lr` afterwards.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "ablate/schedule.hpp"

namespace schedule_wsd {

class Wsd final : public ablate::Schedule {
 public:
  explicit Wsd(const ablate::Options& o)
      : lr_(o.get_float("lr")),
        min_lr_(o.get_float("min_lr")),
        warmup_(o.get_int("warmup")),
        total_(o.get_int("total_steps")),
        shape_(o.get_string("shape")) {
    const double decay = o.get_float("decay");
    if (lr_ <= 0 || min_lr_ < 0 || min_lr_ > lr_) throw ablate::Error("schedule/wsd: need 0 <= min_lr <= lr and lr > 0");
    if (!(decay > 0.0 && decay <= 1.0)) throw ablate::Error("schedule/wsd: decay (a share of total_steps) must be in (0, 1]");
    decay_start_ = total_ - static_cast<std::int64_t>(std::llround(decay * static_cast<double>(total_)));
    if (warmup_ < 0 || total_ < 1 || warmup_ > decay_start_)
      throw ablate::Error("schedule/wsd: warm-up (" + std::to_string(warmup_) + " steps) must end by the decay's start (step " +
                              std::to_string(decay_start_) + " of " + std::to_string(total_) + ")",
                          "shorten the warm-up or the decay share");
  }
  double learning_rate(std::int64_t step) const override {
    if (step <= warmup_ && warmup_ > 0)
      return lr_ * static_cast<double>(std::max<std::int64_t>(step, 0)) / static_cast<double>(warmup_);
    if (step <= decay_start_) return lr_;
    const double p = std::min(1.0, static_cast<double>(step - decay_start_) / static_cast<double>(total_ - decay_start_));
    const double left = shape_ == "linear"   ? 1.0 - p
                        : shape_ == "cosine" ? 0.5 * (1.0 + std::cos(std::numbers::pi * p))
                                             : 1.0 - std::sqrt(p);
    return min_lr_ + (lr_ - min_lr_) * left;
  }

 private:
  double lr_, min_lr_;
  std::int64_t warmup_, total_, decay_start_ = 0;
  std::string shape_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"lr", ablate::OptionType::Float, "0.001", nullptr, "the stable learning rate, reached at the end of warm-up"},
    {"min_lr", ablate::OptionType::Float, "0", nullptr, "learning rate at and after total_steps"},
    {"warmup", ablate::OptionType::Int, "0", nullptr, "steps of linear warm-up from 0"},
    {"total_steps", ablate::OptionType::Int, nullptr, nullptr, "step at which the decay reaches min_lr"},
    {"decay", ablate::OptionType::Float, "0.2", nullptr, "share of total_steps the decay takes (the last ones)"},
    {"shape", ablate::OptionType::String, "sqrt", "linear|cosine|sqrt",
     "decay shape: linear, cosine or sqrt (1 - sqrt(progress))"},
};

ablate::Component* create(const ablate::Options& o) { return new Wsd(o); }

ABLATE_PLUGIN("schedule", "wsd", "1.0.0", "Warm-up, stable, then a short decay to min_lr (WSD)", ablate::options_of(kOptions),
              create)

}  // namespace schedule_wsd
