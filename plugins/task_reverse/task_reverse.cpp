// Plugin task/reverse: output the source backwards (tgt = reversed src), which needs attention
// to travel across the whole sequence; examples from ablate/synthetic.hpp.
#include <algorithm>

#include "ablate/synthetic.hpp"

namespace task_reverse {

ablate::Component* create(const ablate::Options& o) {
  return new ablate::synthetic::Seq2Seq(o, "task/reverse", [](std::vector<std::int32_t> src) {
    std::reverse(src.begin(), src.end());
    return src;
  });
}

ABLATE_PLUGIN("task", "reverse", "1.1.0", "Synthetic seq2seq: reverse the source",
              ablate::options_of(ablate::synthetic::kOptions), create)

}  // namespace task_reverse
