// The host's side of every call into a plugin's code: what a plugin throws is caught at the call,
// while the plugin's library is surely loaded, and becomes a PluginFault: a host-owned error that
// names the plugin (kind/name version and file), the call, and what was thrown.
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "ablate/error.hpp"
#include "ablate/plugin.hpp"

namespace ablate {

// A plugin's code failed (threw) in a call from the host. Its message:
//   "plugin ffn/bad 1.0.0 (/path/ffn_bad.so) failed in forward[ at step 12]: <what it threw>"
// and its hint is the plugin's own. Every string lives in the host, so the fault outlives the
// plugin's library. Exit code 3, like every PluginError.
class PluginFault : public PluginError {
 public:
  PluginFault(std::string plugin, std::string call, std::string context, std::string detail, std::string hint,
              bool reported = true);
  const std::string& plugin() const { return plugin_; }    // "ffn/bad 1.0.0 (/path/ffn_bad.so)"
  const std::string& call() const { return call_; }        // "forward", "build", "create", ...
  const std::string& context() const { return context_; }  // "at step 12 (training)", or empty
  const std::string& detail() const { return detail_; }    // what the plugin threw
  // True when the plugin threw an ablate::Error: it reported a problem the documented way (bad
  // options, data it cannot use); false for anything else it let escape, and for a PluginError
  // (it misused the plugin API, e.g. read an option it never declared): a defect in the plugin.
  bool reported() const { return reported_; }
  // The same fault with `context` (where the run was) in its message, if it has none yet.
  PluginFault with_context(const std::string& context) const;

 private:
  std::string plugin_, call_, context_, detail_;
  bool reported_;
};

// "kind/name version (file)" of a component the registry created; a placeholder for one it did
// not (a component a test made directly).
std::string plugin_of(const Component& component);

// The plugin host's record of which plugin made a component (PluginRegistry::create, its deleter).
void remember_plugin_of(const Component* component, std::string text);
void forget_plugin_of(const Component* component);

// What the exception being handled says, in host-owned strings: its message (for something that
// is not a std::exception, its type) and its hint. Call only inside a catch block.
struct ThrownText {
  std::string what, hint;
  bool ablate_error = false;  // an ablate::Error other than PluginError: a problem reported the documented way
};
ThrownText thrown_text();

// Called inside a catch block around a call into `component`: rethrows a PluginFault unchanged
// (an inner call already attributed it) and turns anything else into one naming the component.
[[noreturn]] void throw_plugin_fault(const Component& component, const std::string& call);

// Called inside a catch block: the exception being handled, as one that is safe to keep and to
// report after any plugin library is gone: a PluginFault with `context` added ("at step 12
// (training)"), an ablate::Error or std::exception as it is, anything else as an Error that says
// what was thrown and where.
std::exception_ptr in_context(const std::string& context);

// The component whose plugin code this thread is running (the innermost plugin_call), or null.
// Graph::record keeps it with each backward function, so backward names the plugin too.
const Component* running_plugin();

// Marks `component` as running on this thread for its lifetime (nested scopes stack).
class RunningPlugin {
 public:
  explicit RunningPlugin(const Component& component);
  ~RunningPlugin();
  RunningPlugin(const RunningPlugin&) = delete;
  RunningPlugin& operator=(const RunningPlugin&) = delete;

 private:
  const Component* previous_;
};

// Runs f() (a call into `component`'s plugin code) and turns whatever it throws into a PluginFault.
template <class F>
decltype(auto) plugin_call(const Component& component, const char* call, F&& f) {
  try {
    RunningPlugin running(component);
    return std::forward<F>(f)();
  } catch (...) {
    throw_plugin_fault(component, call);
  }
}

}  // namespace ablate
