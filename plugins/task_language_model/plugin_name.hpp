// What the language-model plugin's modes (markov_chain, text_task, shard_task) share: the plugin's
// name, and its one way to refuse (an ablate::Error that names the plugin).
#pragma once

#include <string>

#include "ablate/error.hpp"

namespace task_language_model {

inline constexpr const char* kPluginName = "task/language_model";

[[noreturn]] inline void fail(const std::string& what, const std::string& hint = {}) {
  throw ablate::Error(std::string(kPluginName) + ": " + what, hint);
}

}  // namespace task_language_model
