// Plugin optimizer/adam: Adam (Kingma & Ba 2015) with weight decay as an L2 term added to the
// gradient (PyTorch's torch.optim.Adam); the rule is plugins/common/adam_rule.hpp.
#include "../common/adam_rule.hpp"

namespace optimizer_adam {

ablate::Component* create(const ablate::Options& o) { return new ablate_plugins::AdamRule(o, false, "optimizer/adam"); }

ABLATE_PLUGIN("optimizer", "adam", "1.0.0", "Adam; weight decay added to the gradient (L2)",
              ablate::options_of(ablate_plugins::kAdamOptions), create)

}  // namespace optimizer_adam
