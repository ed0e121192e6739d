// FileLock: an exclusive advisory lock (flock) on a small file, held while the object lives. One
// `ablate sweep` per sweep directory (.sweep.lock), one `ablate eval` per run (.eval.lock).
#pragma once

#include <filesystem>
#include <string>

namespace ablate {

class FileLock {
 public:
  // Creates `file` if needed and locks it. Throws UsageError(busy, hint) when another process
  // holds the lock, Error when the file cannot be opened. Where the file system has no locks
  // (some network file systems), goes on without the guard.
  FileLock(const std::filesystem::path& file, const std::string& busy, const std::string& hint);
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  int fd_ = -1;
};

}  // namespace ablate
