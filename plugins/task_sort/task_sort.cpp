// Plugin task/sort: output the source tokens in ascending order (tgt = sorted src), a
// content-based (not positional) mapping; examples from plugins/common/synthetic_seq2seq.hpp.
#include <algorithm>

#include "../common/synthetic_seq2seq.hpp"

namespace task_sort {

ablate::Component* create(const ablate::Options& o) {
  return new ablate_synthetic::Seq2Seq(o, "task/sort", [](std::vector<std::int32_t> src) {
    std::sort(src.begin(), src.end());
    return src;
  });
}

ABLATE_PLUGIN("task", "sort", "1.1.0", "Synthetic seq2seq: sort the source tokens ascending",
              ablate::options_of(ablate_synthetic::kOptions), create)

}  // namespace task_sort
