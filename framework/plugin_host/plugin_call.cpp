// PluginFault and the translation of whatever a plugin throws (plugin_call.hpp). The component
// -> plugin names map is filled by PluginRegistry::create and emptied by the component's deleter.
#include "plugin_host/plugin_call.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <typeinfo>

#include "plugin_host/plugin_registry.hpp"

namespace ablate {
namespace {

std::mutex g_mutex;
thread_local const Component* t_running = nullptr;
std::map<const Component*, std::string>& names() {
  static auto* m = new std::map<const Component*, std::string>();  // never destroyed: deleters may run at exit
  return *m;
}

std::string fault_message(const std::string& plugin, const std::string& call, const std::string& context,
                          const std::string& detail) {
  return "plugin " + plugin + " failed in " + call + (context.empty() ? "" : " " + context) + ": " + detail;
}

// The demangled name of the type of the exception being handled ("int", "my::Oops").
std::string current_exception_type() {
  const std::type_info* t = abi::__cxa_current_exception_type();
  if (t == nullptr) return "unknown";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t->name(), nullptr, nullptr, &status), std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(t->name());
}

}  // namespace

PluginFault::PluginFault(std::string plugin, std::string call, std::string context, std::string detail, std::string hint,
                         bool reported)
    : PluginError(fault_message(plugin, call, context, detail), std::move(hint)),
      plugin_(std::move(plugin)),
      call_(std::move(call)),
      context_(std::move(context)),
      detail_(std::move(detail)),
      reported_(reported) {}

PluginFault PluginFault::with_context(const std::string& context) const {
  return PluginFault(plugin_, call_, context_.empty() ? context : context_, detail_, hint(), reported_);
}

const Component* running_plugin() { return t_running; }

RunningPlugin::RunningPlugin(const Component& component) : previous_(t_running) { t_running = &component; }
RunningPlugin::~RunningPlugin() { t_running = previous_; }

void remember_plugin_of(const Component* component, std::string text) {
  std::lock_guard<std::mutex> lock(g_mutex);
  names()[component] = std::move(text);
}

void forget_plugin_of(const Component* component) {
  std::lock_guard<std::mutex> lock(g_mutex);
  names().erase(component);
}

std::string plugin_of(const Component& component) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = names().find(&component);
  return it != names().end() ? it->second : std::string("(a component not created by the plugin host)");
}

ThrownText thrown_text() {
  try {
    throw;
  } catch (const PluginError& e) {  // the plugin misused the API (an undeclared option): a defect
    return {e.what(), e.hint(), false};
  } catch (const Error& e) {
    return {e.what(), e.hint(), true};
  } catch (const std::exception& e) {
    return {std::string(e.what()) + " (" + current_exception_type() + ")", {}};
  } catch (...) {
    return {"it threw a non-standard exception of type " + current_exception_type(),
            "plugins report errors by throwing ablate::Error (docs/writing-plugins.md)"};
  }
}

void throw_plugin_fault(const Component& component, const std::string& call) {
  try {
    throw;
  } catch (const PluginFault&) {
    throw;  // an inner call (e.g. the backend under a block) was the one that failed
  } catch (...) {
    ThrownText t = thrown_text();
    throw PluginFault(plugin_of(component), call, {}, std::move(t.what), std::move(t.hint), t.ablate_error);
  }
}

std::exception_ptr in_context(const std::string& context) {
  try {
    throw;
  } catch (const PluginFault& f) {
    return std::make_exception_ptr(f.with_context(context));
  } catch (const std::exception&) {
    return std::current_exception();
  } catch (...) {
    ThrownText t = thrown_text();
    return std::make_exception_ptr(Error(t.what + " " + context, t.hint));
  }
}

}  // namespace ablate
