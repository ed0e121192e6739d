// Entry point of the `ablate` executable; all behaviour lives in ablate::cli::run (cli.cpp). One
// thing must happen before: the OpenMP runtime reads its waiting policy when it is loaded, before
// main(), so the policy Ablate wants is set by starting the process again with it. And one after:
// output that could not be written (a full disk, a closed pipe) is an error, not a success.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cli/cli.hpp"

namespace {

// OpenMP threads that wait for work spin 1000 times, then sleep (GOMP_SPINCOUNT=1000). Measured on
// bench config A (2 cores): as fast as libgomp's default spin when the machine is idle, and 1.6x
// faster than it when another process takes a core (the default spins against that process;
// OMP_WAIT_POLICY=PASSIVE matches the loaded case but is 5% slower idle). docs/training.md.
// A user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT is left alone.
void start_with_wait_policy(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (::setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
  ::execv("/proc/self/exe", argv);  // returns only on failure: go on with the runtime's default
}

}  // namespace

int main(int argc, char** argv) {
  start_with_wait_policy(argv);
  errno = 0;
  const int code = ablate::cli::run(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
  std::cout.flush();
  if (std::cout.fail()) {
    const int e = errno;
    std::cerr << "ablate: error: cannot write to standard output" << (e ? std::string(": ") + std::strerror(e) : std::string())
              << "\n  hint: what the command printed is lost; check the disk or the pipe it writes to\n";
    return code == 0 ? 1 : code;  // kExitRunFailed: the command's own failure, if any, stays
  }
  return code;
}
