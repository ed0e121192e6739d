// Small files written all-or-nothing: a temporary file beside the target, fsync, rename over it.
// A reader sees the old contents or the new, never half of either (the sweep manifest).
#pragma once

#include <filesystem>
#include <string_view>

namespace ablate {

// Throws ablate::Error naming the file and the failing step; the old file, if any, is unchanged.
void write_file_atomically(const std::filesystem::path& file, std::string_view contents);

}  // namespace ablate
