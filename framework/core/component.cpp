// Out-of-line key function of ablate::Component, so its vtable and type_info live in one place
// (libablate_core) that the host and every plugin share.
#include "ablate/plugin.hpp"

namespace ablate {

Component::~Component() = default;

}  // namespace ablate
