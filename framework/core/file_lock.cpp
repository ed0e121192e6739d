// FileLock (file_lock.hpp): flock(LOCK_EX | LOCK_NB, or waiting) on a file opened for it; the lock goes with
// the descriptor, so a killed holder leaves no stale lock behind.
#include "core/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ablate/error.hpp"

namespace ablate {

FileLock::FileLock(const std::filesystem::path& file, const std::string& busy, const std::string& hint) {
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw Error("cannot open " + file.string() + ": " + std::strerror(errno), "check that its directory is writable");
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    if (e == EWOULDBLOCK) {
      ::close(fd_);
      fd_ = -1;
      throw UsageError(busy, hint);
    }
  }
}

FileLock::FileLock(const std::filesystem::path& file) {
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd_ < 0) throw Error("cannot open " + file.string() + ": " + std::strerror(errno), "check that its directory is writable");
  while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace ablate
