// Example out-of-tree plugin schedule/step: `lr` multiplied by `gamma` every `every` steps (step
// decay, as in the ResNet recipes), after an optional linear warm-up. A template for adding a
// component to Ablate without touching its source tree.
#include <cmath>
#include <string>

#include <ablate/schedule.hpp>

namespace schedule_step {

class Step final : public ablate::Schedule {
 public:
  explicit Step(const ablate::Options& o)
      : lr_(o.get_float("lr")), gamma_(o.get_float("gamma")), every_(o.get_int("every")), warmup_(o.get_int("warmup")) {
    if (!(lr_ > 0.0) || !(gamma_ > 0.0 && gamma_ <= 1.0)) throw ablate::Error("schedule/step: need lr > 0 and gamma in (0, 1]");
    if (every_ < 1 || warmup_ < 0) throw ablate::Error("schedule/step: need every >= 1 and warmup >= 0");
  }
  double learning_rate(std::int64_t step) const override {
    if (step < warmup_) return lr_ * static_cast<double>(step) / static_cast<double>(warmup_);
    return lr_ * std::pow(gamma_, static_cast<double>((step - warmup_) / every_));
  }

 private:
  double lr_, gamma_;
  std::int64_t every_, warmup_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"lr", ablate::OptionType::Float, "0.001", nullptr, "learning rate until the first decay"},
    {"gamma", ablate::OptionType::Float, "0.1", nullptr, "factor applied at every decay"},
    {"every", ablate::OptionType::Int, nullptr, nullptr, "steps between decays (after the warm-up)"},
    {"warmup", ablate::OptionType::Int, "0", nullptr, "steps of linear warm-up from 0"},
};

ablate::Component* create(const ablate::Options& o) { return new Step(o); }

ABLATE_PLUGIN("schedule", "step", "0.1.0", "Step decay: lr times gamma every `every` steps", ablate::options_of(kOptions), create)

}  // namespace schedule_step
