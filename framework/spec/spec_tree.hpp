// The experiment spec as a marked tree: YAML parsed once by yaml-cpp into plain maps, lists and
// scalars that remember where each value came from (file:line:column, or `--set k=v`), so that
// `extends:` merging and `--set` overrides keep exact error positions for the typed layer.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ablate::spec {

// The largest spec file read (bytes): specs are small YAML files; anything larger (or a device,
// a FIFO, a directory) is refused before it is read.
inline constexpr std::uintmax_t kMaxSpecBytes = 1 << 20;

// Where a value was written: "FILE:LINE:COLUMN" (1-based), or an origin without a position
// such as "--set model.d_model=256".
struct SourceMark {
  std::string origin;  // a file path, or "--set k=v"
  int line = 0;        // 0: no position (an override, or a default)
  int column = 0;
  std::string str() const;
};

// Problems found while reading a spec, reported together as one UsageError whose message has one
// line per problem: "FILE:LINE:COLUMN: KEY.PATH: what is wrong; expected ...".
class SpecErrors {
 public:
  void add(const SourceMark& mark, const std::string& path, const std::string& what);
  bool empty() const { return problems_.empty(); }
  // One line per problem, in file order (files in the order first named, then line and column).
  std::vector<std::string> lines() const;
  // Throws UsageError (all lines, with `hint`) if any problem was added.
  void throw_if_any(const std::string& hint = {}) const;

 private:
  std::vector<std::pair<SourceMark, std::string>> problems_;
};

struct SpecTree {
  enum class Kind { Null, Scalar, Sequence, Map };
  Kind kind = Kind::Null;
  std::string text;                                       // Scalar
  std::vector<SpecTree> items;                            // Sequence
  std::vector<std::pair<std::string, SpecTree>> entries;  // Map, in written order
  std::vector<SourceMark> key_marks;                      // Map: where each key was written
  SourceMark mark;                                        // where the value starts

  bool is_map() const { return kind == Kind::Map; }
  bool is_scalar() const { return kind == Kind::Scalar; }
  const SpecTree* find(const std::string& key) const;
  SpecTree* find(const std::string& key);
  const SourceMark* key_mark(const std::string& key) const;
  void erase(const std::string& key);
  // The value as one line of flow YAML ("pre_norm", "[0.9, 0.999]", "{plugin: noam, warmup: 400}").
  std::string flow() const;
};

// Parses YAML text (one document) into a tree whose marks name `origin`. A syntax error, a
// duplicate key or a non-scalar key is a UsageError "ORIGIN:LINE:COLUMN: ...".
SpecTree parse_yaml(const std::string& text, const std::string& origin);

// What the schema holds at a key path: a plugin reference ("model.block", "train.schedule", ...),
// a spec key in a plugin's own map beside its options ("train.optimizer.lr"), or anything else.
enum class PathKind { other, plugin, key_below_plugin };
using IsPluginRef = std::function<PathKind(const std::string& path)>;

// Overlays `top` on `base` (the child overrides): maps merge key by key, everything else is
// replaced; an empty value over a map changes nothing. At a plugin reference the options merge only if `top` keeps the plugin (names none
// or the same one); naming another plugin replaces the reference with its options (the spec keys
// beside them, train.optimizer's lr say, stay unless `top` sets them).
void merge_into(SpecTree& base, const SpecTree& top, const std::string& path, const IsPluginRef& is_plugin_ref);

// Loads `file` and, depth-first, the files it `extends:` (relative to the file), merged with the
// child overriding. `plugin_paths` entries become absolute (relative to the file naming them).
// A cycle is a UsageError naming the chain. Without `with_sweep`, every file's `sweep:` is left
// out (a sweep's points). Each file is read and parsed once per version (size, time) per process.
SpecTree load_tree(const std::filesystem::path& file, const IsPluginRef& is_plugin_ref, bool with_sweep = true);

// The tree of one override "a.b.c=VALUE" (VALUE parsed as YAML): {a: {b: {c: VALUE}}}.
// Throws UsageError for text without '=' or an empty path. Returns the tree and the path.
std::pair<SpecTree, std::string> parse_override(const std::string& assignment);

}  // namespace ablate::spec
