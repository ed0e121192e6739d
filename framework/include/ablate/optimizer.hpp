// Kind "optimizer": the update rule a run trains with (adam, adamw, lion, sgd, ... in
// plugins/optimizer_*), and the driver that runs one over a ParameterStore the same way in training
// and in a plugin's own tests: global gradient-norm clipping, parameter groups, packed updates.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ablate/parameters.hpp"
#include "ablate/plugin.hpp"

namespace ablate {

// What a parameter is, for rules that treat kinds apart (Muon orthogonalises matrices only; the
// usual groups take weight decay off norms and biases). The host reads it from the parameter's
// dotted name and shape (parameter_role): "embedding" for token and learned-position tables,
// "output" for an untied output projection or classifier weight, "norm" for the norms' gains and
// biases and the blocks' scalar gates, "matrix" for every other weight of rank >= 2, "vector" for
// the rest (biases).
enum class ParameterRole : std::uint8_t { matrix = 0, vector = 1, embedding = 2, norm = 3, output = 4 };
inline constexpr ParameterRole kParameterRoles[] = {ParameterRole::matrix, ParameterRole::vector, ParameterRole::embedding,
                                                    ParameterRole::norm, ParameterRole::output};
const char* parameter_role_name(ParameterRole role);
ParameterRole parameter_role(const std::string& name, const Shape& shape);

// Parameters that share settings, updated by one Optimizer::update call (train.optimizer.groups;
// one group, "default", when the spec names none).
struct OptimizerGroup {
  std::string name;
  double lr_scale = 1.0;               // the group's learning rate is the schedule's times this
  double weight_decay = 0.0;           // how the rule applies it is the rule's (adam: L2; adamw, lion: decoupled)
  std::vector<Parameter*> parameters;  // side by side in the store's packing order
  std::vector<ParameterRole> roles;    // [parameters.size()]
  PackedSpan packed;                   // [Ng] views spanning `parameters` (zero gaps between them)
};

struct OptimizerStep {
  double lr = 0.0;          // the schedule's learning rate (a group's is lr * lr_scale)
  std::int64_t step = 1;    // 1-based count of updates, this one included (bias corrections)
  float grad_scale = 1.0f;  // multiply every gradient by this first (global-norm clipping)
};

class BOOST_SYMBOL_VISIBLE Optimizer : public Component {
 public:
  static constexpr const char* kKind = "optimizer";
  // The state this rule keeps for a parameter of `role` and `shape` (Parameter::m, ::v).
  virtual OptimizerState state(ParameterRole role, const Shape& shape) const = 0;
  // Once, before the first update, with every group (their state packed): check what the rule
  // needs (throw ablate::Error naming it: a backend op it lacks, no matrix for Muon) and allocate
  // scratch tensors, so that update() allocates nothing.
  virtual void prepare(Backend& backend, const std::vector<OptimizerGroup>& groups);
  // One update of one group: its F32 master values and, when the store computes in bf16 (compute
  // is not value), their bf16 copies; its state. Gradients are read, never changed.
  virtual void update(Backend& backend, const OptimizerStep& step, OptimizerGroup& group) = 0;
};

// A rule of train.optimizer.groups: the parameters whose role is one of `roles` (empty: any) and
// whose dotted name matches the glob `match` (`*` any run of characters, `?` one; "": any) join the
// group `name`; a parameter joins the first rule it matches, or "default".
struct OptimizerGroupRule {
  std::string name;
  std::vector<ParameterRole> roles;
  std::string match;
  std::optional<double> lr_scale;      // unset: 1
  std::optional<double> weight_decay;  // unset: the optimizer's (train.optimizer.weight_decay)
};

bool glob_match(const std::string& pattern, const std::string& text);

class BOOST_SYMBOL_VISIBLE OptimizerDriver {
 public:
  OptimizerDriver(Backend& backend, std::shared_ptr<Optimizer> rule, double weight_decay,
                  std::vector<OptimizerGroupRule> groups = {});

  // Updates every parameter of `store` with learning rate `lr`, after scaling the gradients so
  // their global L2 norm is at most `clip_norm` (0: no clipping). Returns the norm before
  // clipping (what training logs as grad_norm). Does not zero the gradients. A non-finite norm
  // (NaN/Inf somewhere in the gradients) updates nothing and counts no step: the caller stops.
  // The first call forms the groups (and packs each side by side when there are several).
  double step(ParameterStore& store, double lr, double clip_norm);

  // The groups as formed (empty before the first step, or call form_groups).
  const std::vector<OptimizerGroup>& groups() const { return groups_; }
  void form_groups(ParameterStore& store);
  // The rules of train.optimizer.groups that matched no parameter (after form_groups): a run warns.
  const std::vector<std::string>& unmatched_rules() const { return unmatched_; }

  std::int64_t steps_taken() const { return steps_; }
  void set_steps_taken(std::int64_t steps) { steps_ = steps; }  // on resume from a checkpoint

 private:
  Backend& backend_;
  std::shared_ptr<Optimizer> rule_;
  double weight_decay_;
  std::vector<OptimizerGroupRule> rules_;
  std::vector<OptimizerGroup> groups_;
  std::vector<std::string> unmatched_;
  const void* packed_at_ = nullptr;  // the packed value the groups' views point into
  std::int64_t steps_ = 0;
};

}  // namespace ablate
