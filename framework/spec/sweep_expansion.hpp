// Sweep expansion: the `sweep:` section of a spec (grid, zip, seeds, explicit runs) turned into
// the list of run points, each a set of `--set`-style assignments over the base spec, with a
// readable name ("block=pre_norm,pe=learned,seed=2"). The orchestrator (framework/sweep) loads
// each point as a spec of its own and gives it a stable id.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "spec/experiment_spec.hpp"

namespace ablate::spec {

struct SweepPoint {
  // Key path -> value as flow YAML, in the order: grid axes, zip axes, explicit-run keys, train.seed.
  std::vector<std::pair<std::string, std::string>> settings;
  std::string name;  // readable and file-name safe: "block=pre_norm,pe=learned,seed=2"; "base" without settings
  // The settings as "KEY.PATH=VALUE" overrides, for load_spec / `ablate run --set`.
  std::vector<std::string> overrides() const;
};

// Every combination of the axes' values (KEY, [values]), the first axis slowest; one empty
// combination for no axes.
std::vector<std::vector<std::pair<std::string, std::string>>> cartesian(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& axes);

// Every point of the sweep, in a fixed order: the grid's cartesian product (first axis slowest)
// with the zipped axes in lockstep as its fastest axis, then each explicit run; every one of
// these once per seed (seed fastest), except explicit runs that set train.seed themselves. An
// empty grid and zip give one point, the base configuration; an empty sweep gives that point alone.
// Points are not deduplicated here: two points may resolve to the same spec (the orchestrator
// merges them by run id).
std::vector<SweepPoint> expand_sweep(const SweepSpec& sweep);
// Points of the given settings (in this order), each named as expand_sweep names its points.
std::vector<SweepPoint> name_points(std::vector<std::vector<std::pair<std::string, std::string>>> points);

// The short name of a swept key in run names: "pe" for model.positional_encoding, "seed" for
// train.seed, else the last path segment ("model.block" -> "block"); the full path where two
// keys of `all_keys` would get the same short name.
std::string short_key(const std::string& key, const std::vector<std::string>& all_keys);

}  // namespace ablate::spec
