// Small files written all-or-nothing: a temporary file beside the target, fsync, rename over it.
// A reader sees the old contents or the new, never half of either (the sweep manifest). And the
// whole of a small file read back, a file's content hash, and the check that a file given to read
// is one.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace ablate {

// Throws ablate::Error naming the file and the failing step; the old file, if any, is unchanged.
void write_file_atomically(const std::filesystem::path& file, std::string_view contents);

// The file's bytes; "" when it cannot be read.
std::string read_small_file(const std::filesystem::path& file);

// FNV-1a 64 of the file's bytes, as 16 hex digits (a plugin library's code, a data file's
// content). Throws ablate::Error when it cannot be read.
std::string file_fnv1a64(const std::filesystem::path& file);

// Why `file` cannot be read as a file given on the command line ("no such file", "is a
// directory", "is not a regular file (a device, FIFO or socket)"), or "" when it is a regular file.
// A device or FIFO would be read without end (/dev/zero), so only regular files are taken.
std::string input_file_problem(const std::filesystem::path& file);

}  // namespace ablate
