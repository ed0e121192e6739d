// What the renderings of `ablate compare` share beyond report.hpp (internal to framework/analysis):
// report_tables.cpp builds the cells and sentences from a Comparison; report_text, _markdown,
// _latex, _html and _summary.cpp lay them out, one file per format.
#pragma once

#include <optional>
#include <string>

#include "analysis/compare.hpp"

namespace ablate::analysis::detail {

// A number as printf's "%g" writes it.
std::string g(double v);

// "higher is better" or "lower is better".
std::string direction(const Comparison& c);

// Why nothing can be concluded from these runs (no arm has a value, or the baseline has none to
// test against), said in the terminal and the reports instead of a verdict; nullopt otherwise.
std::optional<std::string> nothing_to_compare(const Comparison& c);

}  // namespace ablate::analysis::detail
