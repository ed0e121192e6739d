// Plugin schedule/inverse_sqrt: linear warm-up from 0 to `lr` over `warmup` steps, then decay with
// the inverse square root of the step, lr * sqrt(warmup / step) (fairseq's inverse_sqrt; Noam's
// shape with the peak given as a learning rate instead of through d_model).
#include <algorithm>
#include <cmath>
#include <string>

#include "ablate/schedule.hpp"

namespace schedule_inverse_sqrt {

class InverseSqrt final : public ablate::Schedule {
 public:
  explicit InverseSqrt(const ablate::Options& o) : lr_(o.get_float("lr")), warmup_(o.get_int("warmup")) {
    if (lr_ <= 0) throw ablate::Error("schedule/inverse_sqrt: lr must be > 0, got " + std::to_string(lr_));
    if (warmup_ < 1) throw ablate::Error("schedule/inverse_sqrt: warmup must be >= 1, got " + std::to_string(warmup_));
  }
  double learning_rate(std::int64_t step) const override {
    const double s = static_cast<double>(std::max<std::int64_t>(step, 0)), w = static_cast<double>(warmup_);
    return s <= w ? lr_ * s / w : lr_ * std::sqrt(w / s);
  }

 private:
  double lr_;
  std::int64_t warmup_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"lr", ablate::OptionType::Float, "0.001", nullptr, "peak learning rate, at the end of warm-up"},
    {"warmup", ablate::OptionType::Int, "4000", nullptr, "steps of linear warm-up from 0; then lr * sqrt(warmup / step)"},
};

ablate::Component* create(const ablate::Options& o) { return new InverseSqrt(o); }

ABLATE_PLUGIN("schedule", "inverse_sqrt", "1.0.0", "Linear warm-up, then lr * sqrt(warmup / step) (fairseq)",
              ablate::options_of(kOptions), create)

}  // namespace schedule_inverse_sqrt
