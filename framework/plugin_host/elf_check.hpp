// A structural check of a shared-object file before it is handed to the dynamic loader.
// dlopen maps segments straight from the file: a truncated or corrupt .so can crash the
// process (SIGBUS) instead of failing, so the host validates the ELF headers and that every
// segment and section lies inside the file first.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ablate {

// Why `file` cannot be a loadable shared library for this machine, or nullopt if it looks sound.
std::optional<std::string> elf_problem(const std::filesystem::path& file);

}  // namespace ablate
