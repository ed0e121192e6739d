// Plugin task/sort: output the source tokens in ascending order (tgt = sorted src), a
// content-based (not positional) mapping; examples from ablate/synthetic.hpp.
#include <algorithm>

#include "ablate/synthetic.hpp"

namespace task_sort {

ablate::Component* create(const ablate::Options& o) {
  return new ablate::synthetic::Seq2Seq(o, "task/sort", [](std::vector<std::int32_t> src) {
    std::sort(src.begin(), src.end());
    return src;
  });
}

ABLATE_PLUGIN("task", "sort", "1.1.0", "Synthetic seq2seq: sort the source tokens ascending",
              ablate::options_of(ablate::synthetic::kOptions), create)

}  // namespace task_sort
