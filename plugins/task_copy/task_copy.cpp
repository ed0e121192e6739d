// Plugin task/copy: reproduce the source sequence (tgt = src), the simplest seq2seq sanity
// task; examples come from the shared synthetic generator (ablate/synthetic.hpp).
#include "ablate/synthetic.hpp"

namespace task_copy {

ablate::Component* create(const ablate::Options& o) {
  return new ablate::synthetic::Seq2Seq(o, "task/copy", [](std::vector<std::int32_t> src) { return src; });
}

ABLATE_PLUGIN("task", "copy", "1.1.0", "Synthetic seq2seq: copy the source (tgt = src)",
              ablate::options_of(ablate::synthetic::kOptions), create)

}  // namespace task_copy
