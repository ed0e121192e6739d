// The exit codes of `ablate`, fixed and documented (README "Exit codes", `ablate --help`).
#pragma once

namespace ablate::cli {

inline constexpr int kExitOk = 0;           // success
inline constexpr int kExitRunFailed = 1;    // a run or sweep failed (or an internal error)
inline constexpr int kExitUsage = 2;        // bad command line, spec or option value
inline constexpr int kExitPluginError = 3;  // a plugin could not be found, loaded or created

}  // namespace ablate::cli
