// Plugin schedule/constant: the same learning rate at every step (the tutorials' "no schedule").
#include "ablate/schedule.hpp"

namespace schedule_constant {

class Constant final : public ablate::Schedule {
 public:
  explicit Constant(const ablate::Options& o) : lr_(o.get_float("lr")) {
    if (lr_ <= 0) throw ablate::Error("schedule/constant: lr must be > 0, got " + std::to_string(lr_));
  }
  double learning_rate(std::int64_t /*step*/) const override { return lr_; }

 private:
  double lr_;
};

constexpr ablate::OptionInfo kOptions[] = {
    {"lr", ablate::OptionType::Float, "0.001", nullptr, "learning rate used at every step"},
};

ablate::Component* create(const ablate::Options& o) { return new Constant(o); }

ABLATE_PLUGIN("schedule", "constant", "1.0.0", "Constant learning rate", ablate::options_of(kOptions), create)

}  // namespace schedule_constant
