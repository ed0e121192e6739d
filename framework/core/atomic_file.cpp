// write_file_atomically, read_small_file, file_fnv1a64 and input_file_problem (atomic_file.hpp).
#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ablate/error.hpp"
#include "core/text.hpp"

namespace ablate {

void write_file_atomically(const std::filesystem::path& file, std::string_view contents) {
  std::filesystem::path temp = file;
  temp += ".tmp." + std::to_string(::getpid());
  auto fail = [&](const std::string& doing, int e) {
    ::unlink(temp.c_str());
    throw Error("cannot write " + file.string() + ": " + doing + " failed: " + std::strerror(e),
                "check free space and permissions of " + file.parent_path().string() + "; the previous file is unchanged");
  };
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail("creating " + temp.string(), errno);
  for (std::size_t done = 0; done < contents.size();) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      fail("writing " + temp.string(), e);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    fail("syncing " + temp.string(), e);
  }
  if (::close(fd) != 0) fail("closing " + temp.string(), errno);
  if (::rename(temp.c_str(), file.c_str()) != 0) fail("renaming " + temp.string() + " over it", errno);
}

std::string read_small_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string file_fnv1a64(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file.string() + ": cannot be read", "check the file's permissions");
  std::uint64_t hash = kFnv1a64Basis;
  std::vector<char> chunk(std::size_t{1} << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    hash = fnv1a64(chunk.data(), static_cast<std::size_t>(in.gcount()), hash);
  }
  return hex16(hash);
}

std::string input_file_problem(const std::filesystem::path& file) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(file, ec);
  if (!std::filesystem::exists(st)) return "no such file";
  if (std::filesystem::is_directory(st)) return "is a directory";
  if (!std::filesystem::is_regular_file(st)) return "is not a regular file (a device, FIFO or socket)";
  return {};
}

}  // namespace ablate
