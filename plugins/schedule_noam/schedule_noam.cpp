// Plugin schedule/noam: the schedule of "Attention Is All You Need" (section 5.3):
//   lr(step) = factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)
// linear warm-up for `warmup` steps, then decay with the inverse square root of the step.
#include <algorithm>
#include <cmath>

#include "ablate/schedule.hpp"

namespace schedule_noam {

class Noam final : public ablate::Schedule {
 public:
  explicit Noam(const ablate::Options& o)
      : factor_(o.get_float("factor")), d_model_(o.get_int("d_model")), warmup_(o.get_int("warmup")) {
    if (d_model_ <= 0) throw ablate::Error("schedule/noam: d_model must be > 0, got " + std::to_string(d_model_));
    if (warmup_ <= 0) throw ablate::Error("schedule/noam: warmup must be > 0, got " + std::to_string(warmup_));
    if (factor_ <= 0) throw ablate::Error("schedule/noam: factor must be > 0, got " + std::to_string(factor_));
  }
  double learning_rate(std::int64_t step) const override {
    const double s = static_cast<double>(std::max<std::int64_t>(step, 1));
    return factor_ / std::sqrt(static_cast<double>(d_model_)) *
           std::min(1.0 / std::sqrt(s), s * std::pow(static_cast<double>(warmup_), -1.5));
  }

 private:
  double factor_;
  std::int64_t d_model_;
  std::int64_t warmup_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"d_model", ablate::OptionType::Int, "512", nullptr, "model width; the peak lr scales with d_model^-0.5"},
    {"warmup", ablate::OptionType::Int, "4000", nullptr, "steps of linear warm-up before the inverse-sqrt decay"},
    {"factor", ablate::OptionType::Float, "1.0", nullptr, "multiplier on the whole schedule"},
};

ablate::Component* create(const ablate::Options& o) { return new Noam(o); }

ABLATE_PLUGIN("schedule", "noam", "1.0.0", "Noam warm-up + inverse-sqrt decay (Vaswani et al. 2017)",
              ablate::options_of(kOptions), create)

}  // namespace schedule_noam
