// Test plugin task/fixture_copy: a stand-in task with one required and one defaulted option, so
// the `ablate validate` tests can check a spec that validates end to end before the real task
// plugins exist. Built into its own directory (ABLATE_SPEC_FIXTURE_DIR) by tests/CMakeLists.txt.
#include "ablate/plugin.hpp"

namespace spec_fixture_task {

class Task final : public ablate::Component {};

constexpr ablate::OptionInfo kOptions[] = {
    {"vocab_size", ablate::OptionType::Int, nullptr, nullptr, "symbols in the vocabulary"},
    {"length", ablate::OptionType::Int, "16", nullptr, "sequence length in tokens"},
};

ablate::Component* create(const ablate::Options&) { return new Task; }

ABLATE_PLUGIN("task", "fixture_copy", "0.0.1", "A copy-task stand-in (spec test fixture)", ablate::options_of(kOptions), create)

}  // namespace spec_fixture_task
