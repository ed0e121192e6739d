// Exports a plugin defined with ABLATE_PLUGIN in namespace `ns` under the two aliases the
// host looks up: `ablate_plugin_info` and `ablate_create`. Used by the export translation
// unit that ablate_add_plugin generates; plugin authors do not include this directly.
#pragma once

#include <boost/dll/alias.hpp>

#include "ablate/plugin.hpp"

// The alias names differ from the aliased names on purpose: an unqualified function whose name
// equals its alias makes Boost.DLL's alias point at itself (a crash at load, seen with 1.74).
#define ABLATE_EXPORT_PLUGIN(ns)                       \
  ABLATE_DECLARE_PLUGIN(ns)                            \
  BOOST_DLL_ALIAS(ns::plugin_info, ablate_plugin_info) \
  BOOST_DLL_ALIAS(ns::plugin_create, ablate_create)
