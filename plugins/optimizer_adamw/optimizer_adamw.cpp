// Plugin optimizer/adamw: Adam with decoupled weight decay (Loshchilov & Hutter 2019;
// torch.optim.AdamW): w -= lr * decay * w beside Adam's step. The rule is plugins/common/adam_rule.hpp.
#include "../common/adam_rule.hpp"

namespace optimizer_adamw {

ablate::Component* create(const ablate::Options& o) { return new ablate_plugins::AdamRule(o, true, "optimizer/adamw"); }

ABLATE_PLUGIN("optimizer", "adamw", "1.0.0", "Adam with decoupled weight decay (AdamW)",
              ablate::options_of(ablate_plugins::kAdamOptions), create)

}  // namespace optimizer_adamw
