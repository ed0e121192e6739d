// A task plugin whose data is read in Task::prepare, once the host has handed over the tokenizer
// (TaskContext): the text tasks' factories return one of these, which builds the real task there
// and forwards every call to it. A host (or a test) that never calls prepare gets the task built
// on first use with no tokenizer, as if it had called prepare({}).
#pragma once

#include <functional>
#include <memory>

#include "ablate/error.hpp"
#include "ablate/task.hpp"

namespace ablate_text {

class BOOST_SYMBOL_VISIBLE DeferredTask final : public ablate::Task {
 public:
  using Build = std::function<std::shared_ptr<ablate::Task>(const ablate::TaskContext&)>;
  explicit DeferredTask(Build build) : build_(std::move(build)) {}

  void prepare(const ablate::TaskContext& context) override {
    if (task_) throw ablate::Error("prepare() called twice", "the host prepares a task once, before any other call");
    task_ = build_(context);
  }
  ablate::TaskInfo info() const override { return task().info(); }
  std::int64_t size(ablate::Split split) const override { return task().size(split); }
  ablate::Example example(ablate::Split split, std::int64_t index) const override { return task().example(split, index); }
  ablate::Example train_example(std::int64_t index, std::uint64_t draw) const override {
    return task().train_example(index, draw);
  }
  std::int64_t size_at_length(ablate::Split split, std::int64_t length) const override {
    return task().size_at_length(split, length);
  }
  ablate::Example example_at_length(ablate::Split split, std::int64_t index, std::int64_t length) const override {
    return task().example_at_length(split, index, length);
  }
  std::map<std::string, double> score(const std::vector<ablate::Example>& references,
                                      const std::vector<std::vector<std::int32_t>>& predictions) const override {
    return task().score(references, predictions);
  }
  std::vector<std::string> score_names() const override { return task().score_names(); }
  std::string text(const std::vector<std::int32_t>& tokens, bool target) const override { return task().text(tokens, target); }
  std::vector<std::int32_t> encode(const std::string& text, bool target, std::int64_t* unknown) const override {
    return task().encode(text, target, unknown);
  }
  std::vector<ablate::Example> read_examples(const std::string& file, ablate::ReadReport& report) const override {
    return task().read_examples(file, report);
  }

  // The task built (by prepare, or now with no tokenizer).
  const ablate::Task& task() const { return *built(); }
  const std::shared_ptr<ablate::Task>& built() const {
    if (!task_) task_ = build_(ablate::TaskContext{});
    return task_;
  }

 private:
  Build build_;
  mutable std::shared_ptr<ablate::Task> task_;
};

// `task` as the class T it is, or its built task if it is a DeferredTask; null if neither is a T.
template <class T>
std::shared_ptr<T> built_as(const std::shared_ptr<ablate::Task>& task) {
  if (auto deferred = std::dynamic_pointer_cast<DeferredTask>(task)) return std::dynamic_pointer_cast<T>(deferred->built());
  return std::dynamic_pointer_cast<T>(task);
}

}  // namespace ablate_text
