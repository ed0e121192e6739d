// The exit codes of `ablate`, fixed and documented (README "Exit codes", `ablate --help`).
#pragma once

namespace ablate::cli {

inline constexpr int kExitOk = 0;             // success
inline constexpr int kExitRunFailed = 1;      // a run or sweep failed (or an internal error)
inline constexpr int kExitUsage = 2;          // bad command line, spec or option value
inline constexpr int kExitPluginError = 3;    // a plugin could not be found, loaded or created, or failed in a run
inline constexpr int kExitDiverged = 4;       // a run stopped on a NaN/Inf loss or gradient
inline constexpr int kExitInterrupted = 130;  // a run stopped by Ctrl-C / SIGTERM (checkpointed, resumable)

}  // namespace ablate::cli
