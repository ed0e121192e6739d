// The known answers of scipy and statsmodels (known_answers.json, made by make_known_answers.py
// beside it) that the statistics tests compare Ablate's analysis with, read once with yaml-cpp.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <string>
#include <vector>

namespace ablate::analysis::testing {

inline const YAML::Node& known_answers() {
  static const YAML::Node root = YAML::LoadFile(ABLATE_KNOWN_ANSWERS_JSON);
  return root;
}

// A number of the file; Python writes NaN as the bare word NaN, which YAML reads as text.
inline double number(const YAML::Node& node) {
  const std::string text = node.as<std::string>();
  return text == "NaN" ? NAN : node.as<double>();
}

inline std::vector<double> numbers(const YAML::Node& node) {
  std::vector<double> out;
  for (const auto& v : node) out.push_back(number(v));
  return out;
}

}  // namespace ablate::analysis::testing
