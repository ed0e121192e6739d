// The plugin test kit: what a plugin's own tests need, public headers only, so that a plugin built
// out of tree (ablate_add_plugin(... TESTS ...)) is tested the way `ablate` will load and run it:
// backends and components created by name from the plugins `ablate` finds, with their declared
// option defaults filled; a cache-equivalence check for attention and positional-encoding plugins;
// and gradcheck/parameter_gradcheck (ablate/testing/gradcheck.hpp). Worked example: examples/ffn_reglu.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "ablate/attention.hpp"
#include "ablate/backend.hpp"
#include "ablate/components.hpp"
#include "ablate/error.hpp"
#include "ablate/task.hpp"
#include "ablate/testing/gradcheck.hpp"

namespace ablate::testing {

// Option overrides by name, values written as in a spec ("true", "64", "0.1", "layer_norm").
using OptionOverrides = std::map<std::string, std::string>;

// Adds the plugins of `path` (a plugin file, or a directory: its *.so files) to the kit's registry.
// The registry starts with what `ablate` finds: the built-in plugin dir of the installed (or built)
// libablate, then ABLATE_PLUGIN_PATH. A file already loaded is skipped. Throws ablate::PluginError
// naming the file when it cannot be used (not a plugin, another ABI, a duplicate (kind, name)).
void load_plugins(const std::filesystem::path& path);

// Backend plugin `name` ("reference", "onednn", "cudnn", or one of your own), a new instance with
// `options` over its declared defaults. Unknown name or option: ablate::Error (UsageError or
// PluginError) whose message names the available plugins or options.
std::shared_ptr<Backend> make_backend(const std::string& name, const OptionOverrides& options = {});

// Component `name` of kind `kind` ("ffn", "block", ...), with `overrides` over its declared
// defaults exactly as a run resolves a spec's options. Errors as make_backend. Prefer the template.
std::shared_ptr<Component> make_component(const std::string& kind, const std::string& name,
                                          const OptionOverrides& overrides = {});

// A component of kind interface Kind (FeedForward, Block, PositionalEncoding, Attention, Schedule,
// Task, ...), e.g. make_component<FeedForward>("reglu", {{"hidden", "8"}}). Shared like every plugin
// object: it keeps its plugin's library loaded; the kit's registry lives until the process ends.
template <class Kind>
std::shared_ptr<Kind> make_component(const std::string& name, const OptionOverrides& overrides = {}) {
  std::shared_ptr<Component> made = make_component(Kind::kKind, name, overrides);
  if (auto typed = std::dynamic_pointer_cast<Kind>(made)) return typed;
  throw PluginError(
      std::string(Kind::kKind) + "/" + name + " created an object that does not implement the '" + Kind::kKind + "' interface",
      "the plugin was probably built against a different interface header");
}

// Task plugin `name` made and prepared as the host does (Task::prepare with `context`: a
// tokenizer for text tasks, or none), so a task that reads its data on prepare fails here with the
// plugin's message and hint. Errors as make_backend.
std::shared_ptr<Task> make_task(const std::string& name, const OptionOverrides& overrides = {}, const TaskContext& context = {});

// The cache-equivalence check for attention and positional-encoding plugins: one causal
// self-attention over x [B, T, D] (random, with the encoding's forward applied at its positions)
// in one full pass, against the same computed incrementally, `prompt` positions then one position
// per step, through a KeyValueCache of capacity T + extra_capacity. Each call gets the positions as
// the model hands them: q and k rotated at absolute positions offset .. offset+T'-1 (EncodingPositions)
// when its capabilities say it rotates; logit_bias(g, T', S, offset, 0) in the mask when it biases logits
// (S: T in the full pass, the cache capacity when cached); a causal mask with query_offset = offset
// and key_lengths = the positions so far. Dropout is off (an evaluation graph).
struct CacheCheckOptions {
  std::int64_t batch = 2;           // B
  std::int64_t length = 7;          // T
  std::int64_t prompt = 3;          // positions of the first cached call (1 .. T)
  std::int64_t extra_capacity = 2;  // cache rows never written (hidden by key_lengths)
  double atol = 1e-4;               // |full - cached| <= atol + rtol * |full|, every element
  double rtol = 1e-4;
  std::uint64_t seed = 1;  // of x and of the parameters' initial values
};

struct CacheCheckResult {
  bool ok = true;
  double max_abs_error = 0.0;
  std::int64_t checked = 0;  // output elements compared (B * T * D)
  std::string report;        // what ran, and the worst error of each position (and where it fails)
};

// Builds `attention` (AttentionRole::Self) and `positions` (may be null: no positional encoding) with
// `dims` in a parameter store of its own, then compares as above. Pass fresh, unbuilt instances
// (make_component<Attention>("mha"), your own). Throws ablate::Error for options out of range
// (prompt outside 1 .. length); what the plugins throw propagates.
CacheCheckResult cache_equivalence(Backend& backend, Attention& attention, PositionalEncoding* positions, const ModelDims& dims,
                                   const CacheCheckOptions& options = {});

}  // namespace ablate::testing
