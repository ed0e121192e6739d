// FileLock: an exclusive advisory lock (flock) on a small file, held while the object lives. One
// `ablate sweep` per sweep directory (.sweep.lock), one `ablate eval` per run (.eval.lock); one
// training of a cached tokenizer (framework/train/tokenizer_store.hpp).
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
  // Creates `file` if needed and waits until the lock is free (a cache entry one process makes
  // while the others wait for it). Throws Error when the file cannot be opened.
  explicit FileLock(const std::filesystem::path& file);
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

 private:
  int fd_ = -1;
};

}  // namespace ablate
